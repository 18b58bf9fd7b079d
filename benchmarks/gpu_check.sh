#!/usr/bin/env bash
# One command on a GPU machine: install, test, train and time numpy_transformer on CuPy.
#
#     bash benchmarks/gpu_check.sh               # from any directory
#     bash benchmarks/gpu_check.sh --no-install  # use the environment as it is (offline)
#
# Steps (each logged; a failing step is reported and the next ones still run):
#   0. an NVIDIA GPU must be there (nvidia-smi) -- checked first, before anything is
#      installed; without one the script stops with a message (exit 2)
#   1. python -m pip install -e ".[gpu,dev]" torch==2.13.0 ; CuPy must then reach the GPU
#   2. the device and versions (nvidia-smi)
#   3. the test suite under CuPy:  NUMPY_TRANSFORMER_BACKEND=cupy pytest -q -p no:nbmake
#   4. the lessons under CuPy:     NUMPY_TRANSFORMER_BACKEND=cupy pytest -q --nbmake notebooks
#   5. the main job under CuPy:    python -m numpy_transformer train --task reverse
#   6. the step timing (benchmarks/gpu_step.py): tiny, small, base in float32, ours on CuPy
#      against PyTorch CUDA eager on the same weights, and greedy decoding with the KV cache
#
# Writes benchmarks/results/gpu-<UTC date-time>.{md,json,log} (folder: $GPU_CHECK_RESULTS
# if set): the Markdown table (with the device and each step's outcome appended), the
# JSON of the timings, and the whole log. $PYTHON picks the interpreter (default python).
# Exit 0 when every step passed, 1 when one failed, 2 without GPU/CuPy.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."          # the repository root
PYTHON=${PYTHON:-python}

no_gpu() {
    echo "gpu_check.sh: no NVIDIA GPU here ($1). This script needs an NVIDIA GPU with its" \
         "driver (nvidia-smi) and CUDA 12; nothing was installed or run. Without a GPU," \
         "run the suite under the device simulator instead:" \
         "NUMPY_TRANSFORMER_BACKEND=simulator python -m pytest" >&2
    exit 2
}

INSTALL=1                                       # options: nothing is done yet
for arg in "$@"; do
    case "$arg" in
        --no-install) INSTALL=0 ;;
        -h|--help) sed -n '2,21p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) echo "gpu_check.sh: unknown option $arg (try --help)" >&2; exit 2 ;;
    esac
done

# 0. The GPU, before anything else (and before any install).
command -v nvidia-smi >/dev/null 2>&1 || no_gpu "nvidia-smi not found"
nvidia-smi -L >/dev/null 2>&1 || no_gpu "nvidia-smi found no usable GPU"

STAMP=$(date -u +%Y%m%d-%H%M)
RESULTS=${GPU_CHECK_RESULTS:-benchmarks/results}  # where the report goes
mkdir -p "$RESULTS"
BASE="$RESULTS/gpu-$STAMP"
LOG="$BASE.log"
SUMMARY=()
FAILED=0

# Run one step: its output into the log (and the terminal), its outcome and last line
# (pytest's summary, say) into SUMMARY.
step() {
    local name=$1; shift
    local start=$SECONDS rc=0 out last
    out=$(mktemp)
    echo -e "\n=== $name: $*" | tee -a "$LOG"
    "$@" 2>&1 | tee -a "$LOG" "$out" || rc=$?
    last=$(grep -v '^[[:space:]]*$' "$out" | tail -n 1 | tr -d '=' | cut -c1-160 \
           | sed 's/^[[:space:]]*//; s/[[:space:]]*$//' || true)
    rm -f "$out"
    local line="$name: $([ "$rc" -eq 0 ] && echo passed || echo "FAILED (exit $rc)")"
    line="$line in $((SECONDS - start)) s${last:+ -- last line: $last}"
    [ "$rc" -eq 0 ] || FAILED=1
    SUMMARY+=("$line")
    echo "--- $line" | tee -a "$LOG"
}

# 1. Install, then make sure CuPy reaches the GPU.
if [ "$INSTALL" -eq 1 ]; then
    step install "$PYTHON" -m pip install -e ".[gpu,dev]" "torch==2.13.0"
fi
if ! why=$("$PYTHON" -c "import cupy; assert cupy.cuda.runtime.getDeviceCount() > 0" 2>&1)
then
    echo "$why" >>"$LOG"
    echo "gpu_check.sh: CuPy is missing or cannot use the GPU ($(echo "$why" | tail -n 1))." \
         "Install it with python -m pip install -e \".[gpu]\" (cupy-cuda12x needs a CUDA 12" \
         "driver)." >&2
    exit 2
fi

# 2. The device.
step device nvidia-smi
step versions "$PYTHON" -c "import sys, numpy, cupy, torch; print(sys.version.split()[0], \
'numpy', numpy.__version__, 'cupy', cupy.__version__, 'torch', torch.__version__, \
'torch CUDA', torch.version.cuda, torch.cuda.is_available())"

# 3-5. Tests, lessons and the main job, all under CuPy.
export NUMPY_TRANSFORMER_BACKEND=cupy
step tests "$PYTHON" -m pytest -q -p no:nbmake
step lessons "$PYTHON" -m pytest -q --nbmake notebooks
step main-job "$PYTHON" -m numpy_transformer train --task reverse --out runs/gpu_reverse \
    --overwrite

# 6. The step timing: writes the table and the JSON.
step timing "$PYTHON" benchmarks/gpu_step.py --config tiny small base --dtype float32 \
    --device-backend cupy --torch-device cuda --json "$BASE.json" --markdown "$BASE.md"

# The outcome of every step, below the table.
{
    [ -f "$BASE.md" ] || echo "(no timing table: the timing step failed, see $LOG)"
    echo
    echo "Device: $(nvidia-smi --query-gpu=name,driver_version,memory.total \
        --format=csv,noheader 2>/dev/null | head -1)"
    echo
    echo "Steps of benchmarks/gpu_check.sh (log: $LOG):"
    echo
    for line in "${SUMMARY[@]}"; do echo "- $line"; done
} >>"$BASE.md"

echo -e "\n$(cat "$BASE.md")\n\nwritten: $BASE.md $BASE.json $LOG"
exit "$FAILED"
