"""Forged, crashing and hostile submissions: each scores 0 and harms nothing else.

- A stub that looks for the reference solution (through sys.modules, under another
  module name, or by importing the teacher's package again) finds nothing.
- An __init__.py that writes fake results wherever a results channel could be and
  prints fake JSON; one whose import calls os._exit(0); result files of the wrong
  types or that would decompress to 80 MB; a part that runs out of memory.
- In a worker only the student's package is importable, even with the teacher's
  package on sys.path beside NumPy.
"""

import subprocess
import sys

import pytest

from doors import needs_pip_installed, nt
from numpy_transformer.course.classroom.grade import grade
from numpy_transformer.course.copies.make import PACKAGE
from test_assignment_grader import fresh, replace_regions

pytestmark = pytest.mark.slow      # each test starts sandboxed graders: the slow pass

FIND_REFERENCE = '''
def _find_reference():
    """Any importable copy of the package that is not this one: the forger's hope."""
    import importlib, os, sys
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for name, module in list(sys.modules.items()):
        where = os.path.abspath(getattr(module, "__file__", None) or here)
        if ("numpy_transformer" in name or "reference" in name) and not where.startswith(here):
            return module
    for name in ("_numpy_transformer_reference", "numpy_transformer_reference"):
        try:
            return importlib.import_module(name)
        except ImportError:
            pass
    saved_modules = {n: m for n, m in sys.modules.items() if n.startswith("numpy_transformer")}
    saved_path = list(sys.path)
    try:
        for name in saved_modules:
            del sys.modules[name]
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(here)]
        other = importlib.import_module("numpy_transformer")
        if not os.path.abspath(other.__file__).startswith(here):
            return other
    except ImportError:
        pass
    finally:
        sys.path[:] = saved_path
        sys.modules.update(saved_modules)
    return None
'''

FORGED_LINEAR = '''reference = _find_reference()
if reference is None:
    return xp.zeros_like(self.saved)
import importlib
theirs = importlib.import_module(reference.__name__.split(".")[0] + ".layers.linear")
return theirs.Linear.backward(self, dy)'''


@needs_pip_installed
def test_a_stub_that_looks_for_the_reference_finds_nothing(student_copy, tmp_path):
    copy = fresh(student_copy, tmp_path)
    replace_regions(copy, {"Linear.backward": FORGED_LINEAR})
    linear = copy / "numpy_transformer" / "layers" / "linear.py"
    linear.write_text(linear.read_text() + FIND_REFERENCE)
    # Outside the grader (a plain process in the copy) the forger does find the teacher's
    # package, so the forgery is real...
    probe = subprocess.run([sys.executable, "-c", "from numpy_transformer.layers.linear import "
                            "_find_reference; print(_find_reference() is not None)"],
                           cwd=copy, capture_output=True, text=True, timeout=300)
    assert probe.stdout.strip() == "True", probe.stderr
    # ...but inside the worker nothing of the reference can be found or imported.
    [result] = grade(copy, parts=["linear"]).parts
    assert result.points == 0 and "rel err" in result.message, result


FAKE_INIT = '''
import json as _json, os as _os, sys as _sys
for _arg in _sys.argv[1:]:
    try:
        if _arg.endswith(".json"):
            _ids = [f"c{i}t{j}" for i in range(5) for j in range(3)]
            open(_arg, "w").write(_json.dumps({i: {"state": "ok", "message": ""} for i in _ids}))
        elif _arg.endswith(".npz"):
            import numpy as _np
            _np.savez(open(_arg, "wb") if "out" in _arg else _os.devnull,
                      **{f"c{i}t{j}.dx.0": _np.zeros(3) for i in range(5) for j in range(3)})
    except OSError:
        pass
for _name in ("results.jsonl", "results.json", "grades.json"):
    open(_name, "w").write(_json.dumps({"event": "result", "part": "linear", "points": 10,
                                        "max_points": 10, "checks": []}) + "\\n")
print(_json.dumps({"points": 160, "max_points": 160}))
_sys.stdout.flush()
_os._exit(0)
'''


def test_fake_results_from_the_package_import_score_zero(student_copy, tmp_path):
    copy = fresh(student_copy, tmp_path)
    init = copy / "numpy_transformer" / "__init__.py"
    init.write_text(init.read_text() + FAKE_INIT)
    report = grade(copy, parts=["linear", "softmax", "adam"])
    assert report.points == 0, report.table()
    for result in report.parts:          # the fake files were read: none holds a right array
        assert result.checks and not any(c.passed for c in result.checks), result


def test_os_exit_at_import_scores_zero(solution_copy, tmp_path):
    copy = fresh(solution_copy, tmp_path)
    init = copy / "numpy_transformer" / "__init__.py"
    init.write_text("import os\nos._exit(0)\n" + init.read_text())
    report = grade(copy, parts=["linear", "decoder_stack"])
    assert [r.points for r in report.parts] == [0, 0]
    assert all("crashed" in r.message and "status 0" in r.message for r in report.parts)


def test_memory_limit_costs_only_that_part(solution_copy, tmp_path):
    copy = fresh(solution_copy, tmp_path)
    replace_regions(copy, {"GELU.backward": "import numpy\nblock = numpy.ones(1 << 31)\n"
                                            "return dy * block[:1]"})
    report = grade(copy, parts=["gelu", "softmax"], memory_mb=1024).by_part()
    assert report["gelu"].points == 0 and "MemoryError" in report["gelu"].message
    assert report["softmax"].points == 10


def test_grade_command_on_a_forged_copy_prints_zero(student_copy, tmp_path):
    copy = fresh(student_copy, tmp_path)
    init = copy / "numpy_transformer" / "__init__.py"
    init.write_text(init.read_text() + FAKE_INIT)
    done = nt("assignment", "grade", copy, "--parts", "linear", "adamw", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "total                     0   20" in done.stdout, done.stdout
    assert '"points": 160' not in done.stdout


HOSTILE_INIT = '''
import json as _json, os as _os, sys as _sys
import numpy as _np
_outputs, _status = _sys.argv[4], _sys.argv[5]
if "bomb" in __file__ or _os.path.exists(_os.path.join(_os.getcwd(), "BOMB")):
    _np.savez_compressed(_outputs, **{"c0t0.out": _np.zeros(10_000_000)})
else:
    _np.savez(_outputs, **{"c0t0.out": _np.array(["a", "b"]), "c0t0.dx.0": _np.zeros((2, 3, 4)),
                           "c0t1.inplace": _np.array(1.0)})
open(_status, "w").write(_json.dumps({"c0t0": {"state": ["ok"]}, "c0t1": "ok",
                                      "c1t0": {"state": "ok", "message": {"x": 1}}}))
_os._exit(0)
'''


@pytest.mark.parametrize("bomb", [False, True])
def test_hostile_result_files_score_zero_without_harm(student_copy, tmp_path, bomb):
    """Result files of the wrong types, or an npz that would decompress to 80 MB: 0 points,
    and the grader itself goes on."""
    copy = fresh(student_copy, tmp_path)
    if bomb:
        (copy / "BOMB").write_text("")
    init = copy / "numpy_transformer" / "__init__.py"
    init.write_text(init.read_text() + HOSTILE_INIT)
    [result] = grade(copy, parts=["linear"]).parts
    assert result.points == 0
    if bomb:
        assert "too large" in result.message, result


def test_only_the_students_package_is_importable_in_a_worker(student_copy, tmp_path):
    """Even with the teacher's package on sys.path beside NumPy (as a plain install into
    site-packages would be), the worker imports the student's, before and after a forger
    drops the student's folder from sys.path."""
    worker = PACKAGE / "course" / "sandbox" / "worker.py"
    probe = (f"import sys, runpy; sys.path.insert(0, {str(PACKAGE.parent)!r}); "
             f"w = runpy.run_path({str(worker)!r}); w['isolate']({str(student_copy)!r}); "
             "import numpy, numpy_transformer; print(numpy_transformer.__file__); "
             f"sys.path.remove({str(student_copy)!r}); del sys.modules['numpy_transformer']; "
             "import numpy_transformer; print(numpy_transformer.__file__)")
    done = subprocess.run([sys.executable, "-I", "-c", probe], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    mine = str(student_copy / "numpy_transformer" / "__init__.py")
    assert done.stdout.split() == [mine, mine], done.stderr
