"""Every path the package reads goes through the one regular-file check (files.py).

A FIFO where a file is expected would block its reader forever. Planted where the grader
reads a student's file or its configuration (assignment.json, autograder.json, a module of
the student's package), or where a run folder keeps its lock and config.json, it gives a
clear error, or 0 points for that part with the reason, well within a subprocess timeout.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from doors import nt
from test_assignment_grader import fresh

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")


def python(code, timeout=300):
    """Run `code` in a fresh interpreter; a hang fails the test (TimeoutExpired)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def fifo_at(path):
    path = Path(path)
    if path.exists():
        path.unlink()
    os.mkfifo(path)
    return path


def test_a_fifo_as_assignment_json_is_a_clear_error(tmp_path):
    copy = tmp_path / "copy"
    (copy / "numpy_transformer").mkdir(parents=True)
    (copy / "numpy_transformer" / "__init__.py").write_text("")
    fifo_at(copy / "assignment.json")
    done = nt("assignment", "grade", copy, cwd=tmp_path, timeout=300)
    assert done.returncode not in (0, 1), done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert "a FIFO" in done.stderr and "assignment.json" in done.stderr, done.stderr


def test_a_fifo_as_a_student_module_costs_its_part_not_a_hang(solution_copy, tmp_path):
    copy = fresh(solution_copy, tmp_path)
    fifo_at(copy / "numpy_transformer" / "layers" / "activations.py")
    done = nt("assignment", "grade", copy, "--parts", "gelu", "--timeout", "200",
              "--json", tmp_path / "grade.json", cwd=tmp_path, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    [part] = json.loads((tmp_path / "grade.json").read_text())["parts"]
    assert part["points"] == 0
    assert "numpy_transformer.layers.activations" in part["message"], part["message"]
    assert "timed out" not in part["message"], part["message"]


def test_the_workers_loader_refuses_a_fifo_at_once(tmp_path):
    module = fifo_at(tmp_path / "module.py")
    done = python("from numpy_transformer.course.sandbox.forgiving_loader import RepairingLoader\n"
                  f"RepairingLoader('module', {str(module)!r}).get_data({str(module)!r})")
    assert done.returncode == 1 and "not a regular file" in done.stderr, done.stderr


def test_a_fifo_among_a_copys_files_is_refused_by_the_marker_reader(tmp_path):
    package = tmp_path / "numpy_transformer"
    package.mkdir()
    fifo_at(package / "layers.py")
    done = python("from numpy_transformer.course.copies.markers import find_regions\n"
                  f"find_regions({str(package)!r})")
    assert done.returncode == 1 and "InputError" in done.stderr, done.stderr
    assert "a FIFO" in done.stderr, done.stderr


def test_a_fifo_as_autograder_json_scores_zero_with_the_reason(tmp_path):
    (tmp_path / "source").mkdir()
    (tmp_path / "submission").mkdir()
    fifo_at(tmp_path / "source" / "autograder.json")
    done = python("from numpy_transformer.course.classroom.autograder_run import main\n"
                  f"main([{str(tmp_path)!r}])")
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((tmp_path / "results" / "results.json").read_text())
    assert results["score"] == 0
    assert "autograder.json" in results["output"] and "a FIFO" in results["output"]


@pytest.mark.parametrize("name", ["config.json", ".lock"])
def test_a_fifo_in_a_run_folder_never_hangs_the_claim(tmp_path, name):
    folder = tmp_path / "run"
    folder.mkdir()
    fifo_at(folder / name)
    done = python("from numpy_transformer.training.run_folder import RunFolder\n"
                  f"RunFolder({str(folder)!r}).claim()")
    assert done.returncode == 1 and "InputError" in done.stderr, done.stderr
    assert "Traceback" in done.stderr and ("holds other files" in done.stderr
                                           or "regular file" in done.stderr), done.stderr
