"""docs/python.md's Python blocks run as written: training from Python (the Trainer with
its callbacks, evaluation and checkpoints), one step by hand, and (slow: it trains two
runs first) the trained runs used from Python."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from doors import nt, ok

DOC = Path(__file__).resolve().parents[2] / "docs" / "python.md"


def block(heading):
    """The Python block under `## heading` in docs/python.md."""
    section = DOC.read_text(encoding="utf-8").split(f"\n## {heading}\n", 1)[1].split("\n## ")[0]
    [code] = re.findall(r"```python\n(.*?)```", section, re.S)
    return code


def run(code, cwd):
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_training_from_python_runs_as_written(tmp_path):
    out = run(block("Training from Python"), tmp_path).splitlines()
    assert "40 40 runs/python/last.npz" in out
    assert "['exact_match', 'loss', 'perplexity', 'predictions', 'token_accuracy']" in out
    assert out[-2:] == ["60", "seq2seq"]
    assert (tmp_path / "runs" / "python" / "best.npz").exists()


def test_one_training_step_by_hand_prints_its_loss(tmp_path):
    out = run(block("One training step, by hand"), tmp_path)
    assert out.strip() == "loss 5.0666"


@pytest.mark.slow
def test_a_trained_run_from_python_runs_as_written(tmp_path):
    quick = ["--quick", "--no-figures", "--no-progress"]
    ok(nt("train", "--task", "reverse", *quick, "--out", "runs/reverse", cwd=tmp_path))
    (tmp_path / "t.txt").write_text("ROMEO: to be or not to be\n" * 60)
    ok(nt("train-lm", "--text", "t.txt", *quick, "--out", "runs/lm", cwd=tmp_path))
    out = run(block("A trained run"), tmp_path).split()
    assert out == ["seq2seq", "True", "lm", "True"]
