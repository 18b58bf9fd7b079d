"""A training run killed with SIGKILL resumes from its last checkpoint and ends exactly where
an uninterrupted run ends: same weights, bit for bit. Nothing is lost but the steps after the
last checkpoint, which are redone identically."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from numpy_transformer import load_checkpoint

STEPS = 240
ARGS = ["-m", "numpy_transformer", "train", "--task", "reverse", "--quick", "--steps", str(STEPS),
        "--warmup", "20", "--dropout", "0.1", "--checkpoint-every", "20", "--eval-every", "1000",
        "--no-figures", "--no-progress", "--seed", "3"]


def run(out, *extra):
    return subprocess.run([sys.executable, *ARGS, "--out", str(out), *extra],
                          capture_output=True, text=True, timeout=300)


def weights(path):
    ckpt = load_checkpoint(path)
    return ckpt.metadata["step"], ckpt.model.state_dict()


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    out = tmp_path_factory.mktemp("full")
    full = run(out)
    assert full.returncode == 0, full.stderr
    return weights(out / "last.npz")


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
@pytest.mark.parametrize("kill_after", [pytest.param(40, marks=pytest.mark.slow), 120,
                                        pytest.param(200, marks=pytest.mark.slow)])
def test_sigkill_then_resume_matches_uninterrupted_run(tmp_path, uninterrupted, kill_after):
    crashed = tmp_path / "crashed"
    proc = subprocess.Popen([sys.executable, *ARGS, "--out", str(crashed)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    last = crashed / "last.npz"
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        if last.exists():
            try:
                if load_checkpoint(last).metadata["step"] >= kill_after:
                    break
            except (ValueError, OSError):     # being replaced right now: look again
                pass
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be killed; raise STEPS"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    step_at_crash, _ = weights(last)          # the last checkpoint survived the kill intact
    assert kill_after <= step_at_crash < STEPS

    resumed = run(crashed, "--resume", str(last))
    assert resumed.returncode == 0, resumed.stderr
    step_a, expected = uninterrupted
    step_b, got = weights(last)
    assert step_a == step_b == STEPS
    for name in expected:
        assert np.array_equal(expected[name], got[name]), name
