"""The GPU benchmarks, on a machine without a GPU: gpu_timing.py (the one timing method,
both paths), gpu_step.py and gpu_profile.py run under the device simulator against
PyTorch on the CPU, gpu_check.sh's prepared call is rehearsed in its budget, and it stops
with a clear message (before installing anything) where there is no NVIDIA GPU or no CuPy.
No wall-clock assertion: times are checked for being there and consistent, not fast."""

import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmarks", "gpu_check.sh")


@pytest.mark.slow
@pytest.mark.torch
def test_gpu_step_runs_under_the_simulator(tmp_path):
    pytest.importorskip("torch")
    out, md = tmp_path / "gpu.json", tmp_path / "gpu.md"
    env = dict(os.environ, OMP_NUM_THREADS="1")        # two shared cores: stay polite
    proc = subprocess.run(
        [sys.executable, "benchmarks/gpu_step.py", "--config", "tiny", "--steps", "2",
         "--device-backend", "simulator", "--torch-device", "cpu", "--json", str(out),
         "--markdown", str(md), "--beam", "3", "--blocks", "2"], cwd=ROOT, env=env,
        capture_output=True, text=True,
        timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["machine"]["backend"] == "simulator"
    assert report["machine"]["torch_device"] == "cpu"
    assert report["blocks"] == 2 and report["method"] == "benchmarks/gpu_timing.py"
    (r,) = report["results"]
    assert r["config"] == "tiny" and r["dtype"] == "float32"
    assert r["parity"]["ok"] and r["parity"]["loss_rel_diff"] < 1e-4
    assert r["parity"]["loss2_rel_diff"] < 1e-4
    for side in ("ours", "torch"):
        assert r[side]["n"] == 2 and len(r[side]["steps_ms"]) == 2
        assert r[side]["median_ms"] > 0 and r[side]["tokens_per_s"] > 0
    assert math.isclose(r["ratio"], r["ours"]["median_ms"] / r["torch"]["median_ms"])
    assert r["decode"]["generated"] == r["length"] == 16
    assert r["decode"]["ms_per_token"] > 0 and r["decode"]["tokens_per_s"] > 0
    assert r["beam"]["beam"] == 3 and 1 <= r["beam"]["generated"] <= r["length"]
    assert r["beam"]["ms_per_token"] > 0
    table = md.read_text()
    assert "| tiny |" in table and "ours / PyTorch" in table


@pytest.mark.slow
@pytest.mark.torch
def test_gpu_profile_runs_under_the_simulator(tmp_path):
    """benchmarks/gpu_profile.py on a CPU: the launch counts of gpu_timing's step (the
    simulator's for ours, on both paths); what only a GPU can fill (CUPTI's kernels and
    busy time, the CUDA graph) says n/a."""
    pytest.importorskip("torch")
    out, md = tmp_path / "profile.json", tmp_path / "profile.md"
    proc = subprocess.run(
        [sys.executable, "benchmarks/gpu_profile.py", "--config", "tiny", "--steps", "1",
         "--path", "both", "--device-backend", "simulator", "--torch-device", "cpu",
         "--json", str(out), "--markdown", str(md)], cwd=ROOT,
        env=dict(os.environ, OMP_NUM_THREADS="1"), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    sides = json.loads(out.read_text())["tiny"]["sides"]
    assert set(sides) == {"torch", "new", "old"}, sides
    for path in ("new", "old"):
        assert sides[path]["launches"] > 0 and sides[path]["busy_ms"] is None, sides[path]
        assert sides[path]["source"] == "device simulator" and sides[path]["top"]
    assert sides["new"]["graph_error"] == "no GPU"
    assert sides["torch"]["launches"] is None
    table = md.read_text()
    assert "| tiny | new |" in table and "| tiny | torch |" in table and "n/a" in table


def run_timing(tmp_path, *args):
    """benchmarks/gpu_timing.py on the CPU (simulator; PyTorch CPU): (report, table, proc)."""
    out, md = tmp_path / "timing.json", tmp_path / "timing.md"
    proc = subprocess.run(
        [sys.executable, "benchmarks/gpu_timing.py", "--steps", "1", "--blocks", "2",
         "--device-backend", "simulator", "--torch-device", "cpu", "--json", str(out),
         "--markdown", str(md), *args], cwd=ROOT, env=dict(os.environ, OMP_NUM_THREADS="1"),
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(out.read_text()), md.read_text(), proc


def check_timing_rows(report, configs, paths):
    """The report's rows: one per configuration and side, the docs table's columns."""
    rows = report["rows"]
    assert [(r["config"], r["path"]) for r in rows] == [
        (c, p) for c in configs for p in (None, *paths)], rows
    for r in rows:
        assert r["ms_per_step"] > 0 and r["min_ms"] <= r["ms_per_step"] <= r["max_ms"]
        assert 0 < r["queue_ms"] <= r["max_ms"] * 1.001 and r["busy_ms"] is None
        if r["side"] == "PyTorch":
            assert r["ratio"] is None and r["launches"] is None
        else:                               # the simulator counts ours' launches
            assert r["parity_ok"] and r["loss_rel_diff"] < 1e-4
            (torch,) = [t for t in rows if t["config"] == r["config"] and t["path"] is None]
            assert math.isclose(r["ratio"], r["ms_per_step"] / torch["ms_per_step"])
            assert r["launches"] == r["kernels"] + r["copies"] + r["memsets"] > 0
            assert r["host_copies"] == 0 and r["count_source"] == "device simulator"


@pytest.mark.slow
@pytest.mark.torch
def test_gpu_timing_times_both_paths_by_one_method_under_the_simulator(tmp_path):
    """benchmarks/gpu_timing.py --path both on a CPU: every side timed in blocks, the
    parity of both our paths, the simulator's launch count beside each, no host copy
    inside our step (the loss's token count comes from the host), the table and JSON."""
    pytest.importorskip("torch")
    report, table, _ = run_timing(tmp_path, "--config", "tiny", "--path", "both")
    m = report["method"]
    assert m["blocks"] == 2 and m["steps_per_block"] == {"tiny": 1} and m["warmup"] == 3
    tiny = report["results"]["tiny"]
    assert set(tiny["sides"]) == {"torch", "new", "old"} and not tiny["errors"]
    for side in tiny["sides"].values():
        assert side["blocks"] == 2 and len(side["blocks_ms"]) == 2
    assert set(tiny["ratio"]) == {"new", "old"} and not report["interrupted"]
    check_timing_rows(report, ["tiny"], ["new", "old"])
    assert set(report["paths"]) == {"new", "old"}
    assert "| tiny | PyTorch |" in table and "| tiny | ours | new |" in table
    assert "| tiny | ours | old |" in table and "ours / PyTorch" in table


@pytest.mark.slow
@pytest.mark.torch
def test_gpu_timing_stopped_at_its_share_keeps_the_rounds_done(tmp_path):
    """The SIGINT that stops a timing step at its share (gpu_check.py) leaves the JSON of
    the blocks already timed, marked interrupted, and exit code 1."""
    import signal
    import time
    pytest.importorskip("torch")
    out = tmp_path / "timing.json"
    proc = subprocess.Popen(
        [sys.executable, "benchmarks/gpu_timing.py", "--config", "tiny", "--path", "new",
         "--steps", "1", "--blocks", "100000", "--device-backend", "simulator",
         "--torch-device", "cpu", "--json", str(out)], cwd=ROOT,
        env=dict(os.environ, OMP_NUM_THREADS="1"), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    try:
        for _ in range(1200):               # the parity is written after the warm-up
            if out.exists() and json.loads(out.read_text())["results"].get("tiny", {}).get(
                    "parity"):
                break
            time.sleep(0.1)
        time.sleep(1.0)                     # some blocks
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 1, output[-2000:]
    report = json.loads(out.read_text())
    assert report["interrupted"] and "interrupted" in output
    tiny = report["results"]["tiny"]
    assert tiny["parity"]["new"]["ok"] and tiny["sides"]["torch"]["blocks"] >= 1
    assert [r["path"] for r in report["rows"]][:1] == [None]


@pytest.mark.torch
def test_gpu_timing_one_path_quick(tmp_path):
    """The quick pass's check of the timing module, in this process (no new interpreter):
    one path, one block of one step, no profile; the backend and dtype put back after."""
    pytest.importorskip("torch")
    sys.path.insert(0, ROOT)
    from benchmarks import gpu_timing
    from numpy_transformer.backend import (get_backend, get_default_dtype, set_backend,
                                           set_default_dtype)
    saved = get_backend(), get_default_dtype()
    out, md = tmp_path / "timing.json", tmp_path / "timing.md"
    try:
        code = gpu_timing.main([
            "--config", "tiny", "--path", "old", "--steps", "1", "--blocks", "1",
            "--warmup", "2", "--profile-steps", "0", "--device-backend", "simulator",
            "--torch-device", "cpu", "--json", str(out), "--markdown", str(md)])
    finally:
        set_backend(saved[0])
        set_default_dtype(saved[1])
    assert code == 0
    report, table = json.loads(out.read_text()), md.read_text()
    assert set(report["results"]["tiny"]["sides"]) == {"torch", "old"}
    assert report["rows"][1]["launches"] is None         # no profile asked for
    assert "| tiny | ours | old |" in table


def test_gpu_timing_degrades_where_the_tree_lacks_a_path(monkeypatch):
    """Without numpy_transformer.layers.fused, or with an Adam that refuses
    fast="per-array", the old path still builds, and says what it ran."""
    import builtins
    sys.path.insert(0, ROOT)
    from benchmarks import gpu_timing
    real_import = builtins.__import__

    def no_fused(name, globals=None, locals=None, fromlist=(), level=0):
        if name == "numpy_transformer.layers" and fromlist and "fused" in fromlist:
            raise ImportError("no fused here")
        return real_import(name, globals, locals, fromlist, level)
    monkeypatch.setattr(builtins, "__import__", no_fused)
    fused, note = gpu_timing.fused_module()
    monkeypatch.setattr(builtins, "__import__", real_import)
    assert fused is None and "fused drop-ins not in this tree" in note
    with gpu_timing.fused_off(None):                    # nothing to switch off: no error
        pass
    built = []

    class Refusing:
        def __init__(self, setup, state=None, fast=True):
            if fast == "per-array":
                raise TypeError("fast: expected True or False, got 'per-array'")
            built.append(fast)
    monkeypatch.setattr(gpu_timing, "NumpyTrainer", Refusing)
    notes = []
    _, description = gpu_timing.build_ours(None, "old", None, None, notes)
    assert built == [True] and "per-array" in description
    assert notes and 'no fast="per-array"' in notes[0]


@pytest.mark.parametrize("args, message", [
    (["--steps", "0"], "--steps: expected at least 1, got 0"),
    (["--warmup", "1"], "--warmup: expected at least 2"),
    (["--path", "older"], "invalid choice")])
def test_gpu_timing_refuses_bad_options(args, message):
    proc = subprocess.run([sys.executable, "benchmarks/gpu_timing.py", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr


def fake_bin(tmp_path, gpu):
    """A folder for PATH's front: `python`, `python3` and `pip` that only leave a mark
    (so any use of them, an install say, shows), and a fake `nvidia-smi` when `gpu`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mark = tmp_path / "python-was-run"
    for name in ("python", "python3", "pip", "pip3"):
        (bin_dir / name).write_text(f'#!/bin/sh\necho "$0 $*" >> "{mark}"\nexit 1\n')
        (bin_dir / name).chmod(0o755)
    if gpu:
        (bin_dir / "nvidia-smi").write_text('#!/bin/sh\necho "GPU 0: a pretend GPU"\n')
        (bin_dir / "nvidia-smi").chmod(0o755)
    return bin_dir, mark


def run_check(tmp_path, bin_dir, *args, python=None):
    """benchmarks/gpu_check.sh run from an unrelated directory, with `bin_dir` first on PATH
    and $PYTHON set to `python` (unset: the script's default, `python` from PATH)."""
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
               GPU_CHECK_RESULTS=str(tmp_path / "results"))
    env.pop("PYTHON", None)
    if python:
        env["PYTHON"] = python
    return subprocess.run(["bash", SCRIPT, *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.skipif(shutil.which("nvidia-smi") is not None,
                    reason="an NVIDIA GPU is here: the script would really run")
def test_gpu_check_stops_without_a_gpu_and_installs_nothing(tmp_path):
    bin_dir, mark = fake_bin(tmp_path, gpu=False)
    proc = run_check(tmp_path, bin_dir)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "no NVIDIA GPU here" in proc.stderr and "Traceback" not in proc.stderr
    assert "simulator" in proc.stderr                   # it says what to do instead
    assert not mark.exists(), mark.read_text()          # no python, no pip: nothing installed
    assert not (tmp_path / "results").exists()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_gpu_check_stops_without_cupy(tmp_path):
    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("CuPy is installed here")
    bin_dir, _ = fake_bin(tmp_path, gpu=True)
    proc = run_check(tmp_path, bin_dir, "--no-install", python=sys.executable)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "CuPy is missing or cannot use the GPU" in proc.stderr
    assert "No module named 'cupy'" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_gpu_check_rehearsal_runs_every_step_in_its_budget(tmp_path):
    """The device call's script, rehearsed on the CPU (what CI runs so that a broken step
    is found before device time is spent): every step runs within the budget; the test
    step, stopped at its share, says how many tests passed; the report is complete."""
    pytest.importorskip("torch")
    pytest.importorskip("xdist")
    out = tmp_path / "out"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("NUMPY_TRANSFORMER_BACKEND", None)
    proc = subprocess.run(["bash", SCRIPT, "--rehearse", "--budget", "150", "--workers", "1",
                           "--out", str(out)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=150 + 3 * 60)
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((out / "gpu_check.json").read_text())
    steps = {s["step"]: s for s in report["steps"]}
    assert list(steps) == ["versions", "timing-base", "timing-tiny-small", "main-job",
                           "tests"]                   # the main job beside the tests
    assert steps["versions"]["passed"] and "torch" in steps["versions"]["last_line"]
    for name in ("timing-base", "timing-tiny-small", "main-job"):
        assert steps[name]["passed"], report["steps"]
    tests = steps["tests"]
    assert tests["passed"] or tests["outcome"].startswith("stopped at its share"), tests
    assert " passed" in tests["last_line"] and "failed" not in tests["last_line"], tests
    # The budget is the script's own guarantee (each step is stopped at its share), so its
    # total holds on any machine; how long a step took beside another is not asserted.
    assert sum(s["seconds"] for s in report["steps"] if s["step"] != "main-job") < 150 + 30
    # The device call brings back 8 files at most: the main job's run folder stays out.
    assert sorted(f.name for f in out.iterdir()) == [
        "gpu_check.json", "gpu_check.log", "gpu_check.md", "main_job_results.json",
        "timing_base.json", "timing_tiny_small.json"]
    assert report["main_job"]["exact_match"] >= 0
    # The timing of both paths by one method: tiny standing in for base, small for the rest.
    assert set(report["timing"]) == {"timing-base", "timing-tiny-small"}
    check_timing_rows(report["timing"]["timing-base"], ["tiny"], ["new", "old"])
    check_timing_rows(report["timing"]["timing-tiny-small"], ["small"], ["new", "old"])
    assert [(r["config"], r["path"]) for r in report["rows"]] == [
        ("tiny", None), ("tiny", "new"), ("tiny", "old"),
        ("small", None), ("small", "new"), ("small", "old")]
    md = (out / "gpu_check.md").read_text()
    assert "| tiny | ours | new |" in md and "| small | ours | old |" in md
    assert "Main job" in md and "held-out exact match" in md
    assert "- tests: " in md and "TF32 off on both sides" in md and "- timing-base: " in md
    assert (out / "gpu_check.log").stat().st_size > 0


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("args, message", [
    (["--budget", "soon"], "--budget: expected a whole number of seconds, got soon"),
    (["--workers", "0"], "--workers: expected a count >= 1, got 0"),
    (["--out"], "--out needs a value"),
    (["--fast"], "unknown option --fast")])
def test_gpu_check_refuses_bad_options_before_any_work(tmp_path, args, message):
    bin_dir, mark = fake_bin(tmp_path, gpu=True)
    proc = run_check(tmp_path, bin_dir, *args)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert not mark.exists() and not (tmp_path / "results").exists()


def test_gpu_check_py_refuses_a_small_budget(tmp_path):
    proc = subprocess.run([sys.executable, "benchmarks/gpu_check.py", "--out", str(tmp_path),
                           "--budget", "10"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2 and "--budget: expected at least 60 seconds, got 10" in proc.stderr
