"""A student copy works as a student uses it: the commands run in it, `gradcheck` reports
every stub as "not implemented" and carries on, and a lesson stops only at the cell that
needs a missing part, with a message that names the part.

Every command runs in a fresh process inside the copy (cwd = the copy, so that
`python -m numpy_transformer` imports the copy's package); the lessons run in a
Jupyter kernel whose PYTHONPATH is the copy.
"""

import os
import re
import subprocess
import sys

import pytest
from doors import error, nt, ok

from numpy_transformer.course.copies.make import make


@pytest.fixture(scope="module")
def layernorm_copy(tmp_path_factory):
    out = tmp_path_factory.mktemp("layernorm") / "copy"
    make(out, parts=["layernorm"])
    return out


def report_lines(done):
    """{status: [case names]} of a gradcheck report, and its last line."""
    assert done.returncode == 1, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    rows = {}
    for line in done.stdout.splitlines():
        status = line.split(" ", 1)[0]
        if status in ("ok", "FAIL", "todo"):
            rows.setdefault(status, []).append(line)
    return rows, done.stdout.strip().splitlines()[-1]


def test_commands_run_in_a_student_copy_and_grading_points_to_the_teacher(student_copy):
    assert "assignment" in ok(nt("--help", cwd=student_copy))
    error(nt("assignment", "grade", ".", cwd=student_copy), 2, "student copy",
          "teacher's installed")
    error(nt("assignment", "make", "--out", "x", cwd=student_copy), 2, "student copy")


def test_gradcheck_in_a_student_copy_reports_each_stub_and_carries_on(student_copy):
    rows, last = report_lines(nt("gradcheck", "--layers-only", cwd=student_copy))
    assert not rows.get("FAIL"), rows["FAIL"]
    assert any(line.startswith("ok   ReLU") for line in rows["ok"])          # after the stubs
    stubs = rows["todo"]
    assert any("Linear(4, 5)" in line and "[assignment part linear]" in line for line in stubs)
    assert any("LayerNorm(5)" in line and "[assignment part layernorm]" in line
               for line in stubs)
    assert all("not implemented: " in line for line in stubs)
    assert re.fullmatch(rf"{len(stubs)} cases not implemented \(assignment parts: .*linear.*\); "
                        r"the others agree", last), last


def test_gradcheck_with_one_part_stubbed_names_only_that_part(layernorm_copy):
    rows, last = report_lines(nt("gradcheck", "--layers-only", cwd=layernorm_copy))
    assert not rows.get("FAIL")
    assert all("[assignment part layernorm]" in line for line in rows["todo"])
    assert any("Linear(4, 5)" in line for line in rows["ok"])
    assert last == (f"{len(rows['todo'])} cases not implemented (assignment parts: layernorm); "
                    "the others agree")


def run_lesson(copy, name, monkeypatch):
    """Execute notebooks/<name>*.ipynb of `copy` until its first error:
    (index of the failing cell, error text, cells executed before it)."""
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    path = next((copy / "notebooks").glob(f"{name}_*.ipynb"))
    book = nbformat.read(path, as_version=4)
    monkeypatch.setenv("PYTHONPATH", str(copy))           # the kernel imports the copy
    monkeypatch.setenv("MPLBACKEND", "Agg")
    client = nbclient.NotebookClient(book, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    with pytest.raises(nbclient.exceptions.CellExecutionError) as failure:
        client.execute()
    ran = [i for i, c in enumerate(book.cells)
           if c.cell_type == "code" and c.get("execution_count")]
    failing = next(i for i, c in enumerate(book.cells) if c.cell_type == "code" and any(
        o.get("output_type") == "error" for o in c.get("outputs", [])))
    return failing, str(failure.value), ran


def test_a_lesson_stops_at_the_cell_needing_the_missing_part(layernorm_copy, monkeypatch):
    """Lesson 4 with only `layernorm` stubbed: the forward cells run, the first backward
    (cell 5) stops with the part's name; nothing before it fails."""
    failing, message, ran = run_lesson(layernorm_copy, "04", monkeypatch)
    assert failing == 5, message
    assert "NotImplementedError" in message and "[assignment part layernorm]" in message
    assert ran == [1, 3, 5]


def test_a_lesson_runs_past_parts_that_are_written(tmp_path, monkeypatch):
    """Lesson 7 with only `adam` stubbed: the cross-entropy cells (their part is in place)
    run, and the lesson stops at the bias-correction plot, a region of the `adam` part
    (it computes Adam's bias correction, so a student copy does not show it)."""
    make(tmp_path / "copy", parts=["adam"])
    failing, message, ran = run_lesson(tmp_path / "copy", "07", monkeypatch)
    assert failing == 12, message
    assert "[assignment part adam]" in message and "07_loss_label_smoothing_adam" in message
    assert ran == [1, 3, 5, 7, 9, 10, 12]


def test_a_lesson_imports_the_copy_and_says_so(layernorm_copy, monkeypatch):
    """With no PYTHONPATH, the kernel (started in notebooks/) still imports the copy: the
    first code cell puts it first on sys.path and prints where the package comes from."""
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    path = next((layernorm_copy / "notebooks").glob("04_*.ipynb"))
    book = nbformat.read(path, as_version=4)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    client = nbclient.NotebookClient(book, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    with pytest.raises(nbclient.exceptions.CellExecutionError) as failure:
        client.execute()                                  # stops at the layernorm stub
    assert "[assignment part layernorm]" in str(failure.value)
    first = next(c for c in book.cells if c.cell_type == "code")
    said = "".join(o.get("text", "") for o in first.outputs)
    assert said.strip() == f"numpy_transformer from {layernorm_copy / 'numpy_transformer'}"


def test_a_copy_installs_and_is_then_the_package(layernorm_copy, tmp_path):
    """`pip install -e .` works in a copy (here into a throwaway virtual environment that
    sees this Python's packages, pip included, with no download): its Python then imports
    the copy."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                    str(venv)], check=True)     # this Python's pip and setuptools, not older
    python = venv / ("Scripts" if os.name == "nt" else "bin") / "python"
    if subprocess.run([str(python), "-c", "import numpy, pip"], capture_output=True).returncode:
        pytest.skip("this Python is itself a virtual environment: a venv made from it sees "
                    "its base interpreter's packages, and there no numpy or pip")
    done = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-index",
                           "--no-build-isolation", "-q", "-e", str(layernorm_copy)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    where = subprocess.run([str(python), "-c", "import numpy_transformer as nt; "
                            "print(nt.__file__)"], capture_output=True, text=True,
                           cwd=tmp_path, env={k: v for k, v in os.environ.items()
                                              if k != "PYTHONPATH"}, timeout=120)
    assert where.stdout.strip() == str(layernorm_copy / "numpy_transformer" / "__init__.py"), (
        where.stdout + where.stderr)
