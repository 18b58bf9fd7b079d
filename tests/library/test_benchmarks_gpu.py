"""The GPU benchmark, on a machine without a GPU: gpu_step.py runs under the device
simulator against PyTorch on the CPU, and gpu_check.sh stops with a clear message
(before installing anything) where there is no NVIDIA GPU or no CuPy."""

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
         "--markdown", str(md), "--beam", "3"], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["machine"]["backend"] == "simulator"
    assert report["machine"]["torch_device"] == "cpu"
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
    """benchmarks/gpu_profile.py on a CPU: step and queue times of both sides; the columns
    only a GPU can fill (CUPTI's kernels, the CUDA graph) say n/a."""
    pytest.importorskip("torch")
    out, md = tmp_path / "profile.json", tmp_path / "profile.md"
    proc = subprocess.run(
        [sys.executable, "benchmarks/gpu_profile.py", "--config", "tiny", "--steps", "1",
         "--device-backend", "simulator", "--torch-device", "cpu", "--json", str(out),
         "--markdown", str(md)], cwd=ROOT, env=dict(os.environ, OMP_NUM_THREADS="1"),
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    tiny = json.loads(out.read_text())["tiny"]
    assert tiny["ours"]["step_ms"] > 0 and 0 < tiny["ours"]["queue_ms"] <= tiny["ours"]["step_ms"]
    assert tiny["torch"]["step_ms"] > 0 and tiny["ours"]["kernels"] is None
    assert tiny["ours"]["graph_error"] == "no GPU"
    table = md.read_text()
    assert "| tiny | ours |" in table and "| tiny | torch |" in table and "n/a" in table


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
    assert list(steps) == ["versions", "main-job", "tests", "timing", "profile"]  # main job
    assert steps["profile"]["passed"], report["steps"]                           # beside tests
    assert report["profile"]["tiny"]["ours"]["step_ms"] > 0
    assert steps["versions"]["passed"] and "torch" in steps["versions"]["last_line"]
    assert steps["main-job"]["passed"] and steps["timing"]["passed"], report["steps"]
    tests = steps["tests"]
    assert tests["passed"] or tests["outcome"].startswith("stopped at its share"), tests
    assert " passed" in tests["last_line"] and "failed" not in tests["last_line"], tests
    # The budget is the script's own guarantee (each step is stopped at its share), so its
    # total holds on any machine; how long a step took beside another is not asserted.
    assert sum(s["seconds"] for s in report["steps"] if s["step"] != "main-job") < 150 + 30
    # The device call brings back 8 files: the main job's run folder stays out of --out.
    assert sorted(f.name for f in out.iterdir()) == [
        "gpu_check.json", "gpu_check.log", "gpu_check.md", "main_job_results.json",
        "profile.json", "profile.md", "timing.json", "timing.md"]
    assert report["main_job"]["exact_match"] >= 0 and report["timing"]["results"]
    (timing,) = report["timing"]["results"]
    assert timing["config"] == "tiny" and timing["parity"]["ok"] and timing["beam"]["beam"] == 4
    md = (out / "gpu_check.md").read_text()
    assert "| tiny |" in md and "Main job" in md and "held-out exact match" in md
    assert "- tests: " in md and "TF32 off on both sides" in md
    assert "| tiny | ours |" in md and "- profile: " in md
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
