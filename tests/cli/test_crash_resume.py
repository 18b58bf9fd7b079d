"""A training run killed with SIGKILL resumes from its last checkpoint and ends exactly where
an uninterrupted run ends: same weights, bit for bit. Nothing is lost but the steps after the
last checkpoint, which are redone identically."""

import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from numpy_transformer import load_checkpoint

STEPS = 240
ARGS = ["-m", "numpy_transformer", "train", "--task", "reverse", "--quick", "--steps", str(STEPS),
        "--warmup", "20", "--dropout", "0.1", "--checkpoint-every", "20", "--eval-every", "1000",
        "--no-figures", "--no-progress", "--seed", "3"]


KILLED = """
import os, runpy, signal, sys
from numpy_transformer.training import loop
at, after_step = int(sys.argv.pop(1)), loop.Trainer._after_step
def killed_at(trainer):
    after_step(trainer)
    if trainer.state.step == at:                  # between two checkpoints, at a set step
        os.kill(os.getpid(), signal.SIGKILL)
loop.Trainer._after_step = killed_at
runpy.run_module("numpy_transformer", run_name="__main__")
"""


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
    # SIGKILL 10 steps after the checkpoint of step kill_after, sent by the run itself: where
    # it stops depends on no clock (a busy machine only makes it later)
    proc = subprocess.run([sys.executable, "-c", KILLED, str(kill_after + 10), *ARGS[2:],
                           "--out", str(crashed)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    last = crashed / "last.npz"
    step_at_crash, _ = weights(last)          # the last checkpoint survived the kill intact
    assert step_at_crash == kill_after

    resumed = run(crashed, "--resume", str(last))
    assert resumed.returncode == 0, resumed.stderr
    step_a, expected = uninterrupted
    step_b, got = weights(last)
    assert step_a == step_b == STEPS
    for name in expected:
        assert np.array_equal(expected[name], got[name]), name
