#!/usr/bin/env bash
# One command on a GPU machine: test, train and time numpy_transformer on CuPy, in a budget.
#
#     bash benchmarks/gpu_check.sh --offline --out DIR     # the device call: nothing installed
#     bash benchmarks/gpu_check.sh                         # installs ".[gpu,dev]" first
#     bash benchmarks/gpu_check.sh --rehearse --out DIR    # on a CPU: simulator + PyTorch CPU
#
# Options: --offline (alias --no-install) installs nothing and runs the project from this
# checkout; --out DIR (default benchmarks/results/gpu-<UTC date-time>); --budget SECONDS for
# all steps together (default 480, divided between them, see benchmarks/gpu_check.py);
# --workers N pytest-xdist workers (default 4); --rehearse: no GPU needed, the device
# simulator stands in for CuPy and PyTorch runs on the CPU, small sizes (what CI runs).
#
# Steps: 0. an NVIDIA GPU must be there (nvidia-smi), checked before anything is installed;
# without one the script stops with a message (exit 2). 1. the install (unless --offline);
# CuPy must then reach the GPU. 2-5. versions and device; base, then tiny and small, timed
# against PyTorch CUDA eager by benchmarks/gpu_timing.py (both our paths, launches and busy
# time from CUPTI; float32, TF32 off on both sides); the tests under CuPy (the fused and
# flat-optimizer tests first) with the main job (train --task reverse) beside them. A step
# that reaches its share of the budget is stopped and says how far it got. The prepared
# call of a device loan: --offline --budget 360 --workers 12 (docs/gpu.md).
# Writes DIR/gpu_check.md (the tables), gpu_check.json, gpu_check.log, timing_base.json,
# timing_tiny_small.json and main_job_results.json, after every step. $PYTHON picks the
# interpreter (default python, else python3). Exit 0 when every step passed, 1 when one failed or was
# stopped, 2 without GPU/CuPy or for a bad option.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."          # the repository root
PYTHON=${PYTHON:-$(command -v python || command -v python3 || echo python)}   # python3 where no python

no_gpu() {
    echo "gpu_check.sh: no NVIDIA GPU here ($1). This script needs an NVIDIA GPU with its" \
         "driver (nvidia-smi) and CUDA 12 or 13; nothing was installed or run. Without a GPU," \
         "run the suite under the device simulator instead:" \
         "NUMPY_TRANSFORMER_BACKEND=simulator python -m pytest" >&2
    exit 2
}

usage() { echo "gpu_check.sh: $1 (try --help)" >&2; exit 2; }

INSTALL=1 REHEARSE=0 OUT="" BUDGET=480 WORKERS=4      # options: nothing is done yet
while [ $# -gt 0 ]; do
    case "$1" in
        --no-install|--offline) INSTALL=0 ;;
        --rehearse) REHEARSE=1 INSTALL=0 ;;
        --out|--budget|--workers)
            [ $# -ge 2 ] || usage "$1 needs a value"
            case "$1" in --out) OUT=$2 ;; --budget) BUDGET=$2 ;; --workers) WORKERS=$2 ;; esac
            shift ;;
        -h|--help) sed -n '2,25p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) usage "unknown option $1" ;;
    esac
    shift
done
[[ "$BUDGET" =~ ^[0-9]+$ ]] || usage "--budget: expected a whole number of seconds, got $BUDGET"
[[ "$WORKERS" =~ ^[1-9][0-9]*$ ]] || usage "--workers: expected a count >= 1, got $WORKERS"

# 0. The GPU, before anything else (and before any install); not for the rehearsal.
if [ "$REHEARSE" -eq 0 ]; then
    command -v nvidia-smi >/dev/null 2>&1 || no_gpu "nvidia-smi not found"
    nvidia-smi -L >/dev/null 2>&1 || no_gpu "nvidia-smi found no usable GPU"
fi

OUT=${OUT:-${GPU_CHECK_RESULTS:-benchmarks/results}/gpu-$(date -u +%Y%m%d-%H%M)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# 1. Install, then make sure CuPy reaches the GPU.
if [ "$INSTALL" -eq 1 ]; then
    "$PYTHON" -m pip install -e ".[gpu,dev]" "torch==2.13.0" 2>&1 | tee -a "$OUT/gpu_check.log"
fi
if [ "$REHEARSE" -eq 0 ] &&
   ! why=$("$PYTHON" -c "import cupy; assert cupy.cuda.runtime.getDeviceCount() > 0" 2>&1)
then
    echo "$why" >>"$OUT/gpu_check.log"
    echo "gpu_check.sh: CuPy is missing or cannot use the GPU ($(echo "$why" | tail -n 1))." \
         "Install it with python -m pip install -e \".[gpu]\" (cupy-cuda12x, for a CUDA 12" \
         "driver) or \".[gpu-cuda13]\" (cupy-cuda13x, for a CUDA 13 driver)." >&2
    exit 2
fi

# 2-5. The budgeted steps (versions, tests, main job, timing and decoding) and the report:
# benchmarks/gpu_check.py, with the checkout importable (nothing more is installed).
ARGS=(--out "$OUT" --budget "$BUDGET" --workers "$WORKERS")
[ "$REHEARSE" -eq 1 ] && ARGS+=(--rehearse)
rc=0
"$PYTHON" benchmarks/gpu_check.py "${ARGS[@]}" || rc=$?
[ "$REHEARSE" -eq 1 ] || nvidia-smi >>"$OUT/gpu_check.log" 2>&1 || true
exit "$rc"
