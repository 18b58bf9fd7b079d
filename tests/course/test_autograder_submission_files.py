"""A Gradescope submission holding a FIFO or a file over the size limit scores 0 with one
line naming the file relative to the submission and the limit, never the grader's own paths
(classroom/autograder_run.py, issue 52)."""

import json
import os

import pytest

from numpy_transformer.course.classroom import autograder_run


def fake_root(root):
    """ROOT/source with the autograder.json fields grade_submission reads, and a submitted
    package in ROOT/submission/a/numpy_transformer."""
    (root / "source" / "numpy_transformer").mkdir(parents=True)
    (root / "source" / "autograder.json").write_text(json.dumps(
        {"parts": ["linear"], "visibility": {}, "manifest": {}, "timeout": 10}))
    package = root / "submission" / "a" / "numpy_transformer"
    (package / "layers").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    return package


def graded(root):
    results = autograder_run.grade_submission(root)
    assert results["score"] == 0
    assert str(root) not in json.dumps(results)
    return results["output"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_in_a_submission_is_named_relative_to_it(tmp_path):
    os.mkfifo(fake_root(tmp_path) / "layers" / "pipe")
    output = graded(tmp_path)
    assert "a/numpy_transformer/layers/pipe is a FIFO" in output, output


def test_a_file_over_the_limit_is_named_with_the_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(autograder_run, "MAX_FILE_MB", 1)
    (fake_root(tmp_path) / "layers" / "big.npy").write_bytes(b"0" * (2 * 2**20))
    output = graded(tmp_path)
    assert "a/numpy_transformer/layers/big.npy holds 2 MiB" in output, output
    assert "at most 1 MiB" in output, output
