"""The grader's promises: isolated, honest, and each mistake in its own part.

- A blank but well-shaped submission (every solution region returns zeros or does
  nothing) scores 0 in every part.
- Forgeries score 0: a stub that looks for the reference solution (through
  sys.modules, under another module name, or by importing the teacher's package
  again), an __init__.py that writes fake results wherever a results channel
  could be and prints fake JSON, a package whose import calls os._exit(0).
- Each part runs only its own solution regions (traced in this process), so a
  mistake cannot cost points elsewhere; graded end to end in two batches too.
"""

import ast
import shutil
import sys
from pathlib import Path

import pytest

from doors import nt
from numpy_transformer.assignment import PARTS, grade, make
from numpy_transformer.assignment.make import PACKAGE, package_regions
from numpy_transformer.assignment.mistakes import MISTAKES
from numpy_transformer.assignment.parts import Package, Read, reference_results, run_task
from numpy_transformer.assignment.runner import HARNESS_FILES

BLANK = {     # qualname -> the body of a blank answer: zeros of the right shape, or nothing
    "GELU.backward": "return xp.zeros_like(dy)",
    "scaled_dot_product_attention_backward":
        "return xp.zeros_like(q), xp.zeros_like(k), xp.zeros_like(v)",
    "MultiHeadAttentionBase.backward":
        "return tuple(xp.zeros_like(merge_heads(a)) for a in self.saved)",
    "MultiHeadAttention.project_backward":
        "return xp.zeros_like(dQ), xp.zeros_like(dK), xp.zeros_like(dV)",
    "Dropout.backward": "return xp.zeros_like(dy)",
    "Dropout.reapply": "return xp.zeros_like(x)",
    "Embedding.backward": "return None",
    "FeedForward.backward": "return xp.zeros_like(dy)",
    "MultiHeadLatentAttention.project_backward":
        "return xp.zeros_like(dQ), xp.zeros_like(dK), xp.zeros_like(dK)",
    "Linear.backward": "return xp.zeros_like(self.saved)",
    "LayerNorm.backward": "return xp.zeros_like(dy)",
    "sinusoidal_table": "return xp.zeros((max_len, d_model), dtype=get_default_dtype())",
    "PositionalEncoding.backward": "return xp.zeros_like(dy)",
    "softmax_backward": "return xp.zeros_like(dp)",
    "CrossEntropyLoss.backward": "return xp.zeros(shape, dtype=p.dtype)",
    "DecoderBlock.backward":
        "return xp.zeros_like(dout), xp.zeros_like(self.cross_attn.saved[1])",
    "DecoderBlock.cross_attention_backward":
        "return xp.zeros_like(dy), xp.zeros_like(self.cross_attn.saved[1])",
    "Decoder.backward":
        "return xp.zeros_like(dout), xp.zeros_like(self.layers[0].cross_attn.saved[1])",
    "EncoderBlock.backward": "return xp.zeros_like(dout)",
    "Encoder.backward": "return xp.zeros_like(dout)",
    "Adam._update": "pass",
    "AdamW.decay": "pass",
}


@pytest.fixture(scope="module")
def solution_copy(tmp_path_factory):
    out = tmp_path_factory.mktemp("solution") / "copy"
    make(out, solutions=True)
    return out


@pytest.fixture(scope="module")
def student_copy(tmp_path_factory):
    out = tmp_path_factory.mktemp("student") / "copy"
    make(out)
    return out


def fresh(copy, tmp_path, name="copy"):
    return shutil.copytree(copy, tmp_path / name, ignore=shutil.ignore_patterns("notebooks"))


def replace_regions(root, bodies):
    """Replace the body of every solution region whose qualname is in `bodies`."""
    package = Path(root) / "numpy_transformer"
    regions = [r for r in package_regions(package) if r.qualname in bodies]
    for path in sorted({r.path for r in regions}):
        lines = (package / path).read_text().split("\n")
        for r in sorted((r for r in regions if r.path == path), key=lambda r: -r.begin):
            lines[r.begin + 1:r.end] = [r.indent + line for line in bodies[r.qualname].split("\n")]
        (package / path).write_text("\n".join(lines))


def add_import(root, path, line):
    file = Path(root) / "numpy_transformer" / path
    text = file.read_text()
    first = text.index("\nfrom ")
    file.write_text(text[:first] + "\n" + line + text[first:])


def test_blank_submission_scores_zero_everywhere(solution_copy, tmp_path):
    copy = fresh(solution_copy, tmp_path)
    assert {r.qualname for r in package_regions()} == set(BLANK)
    replace_regions(copy, BLANK)
    for path in ("layers/attention.py", "layers/feedforward.py", "models/decoder.py",
                 "models/encoder.py"):
        add_import(copy, path, "from ..backend import xp")
    report = grade(copy)
    assert {r.part: r.points for r in report.parts} == {p: 0 for p in PARTS}, report.table()
    for result in report.parts:          # graded (no crash, no stub): the arrays are wrong
        assert not result.message.startswith(("crashed", "not implemented", "timed out")), result


FIND_REFERENCE = '''
def _find_reference():
    """Any importable copy of the package that is not this one: the forger's hope."""
    import importlib, os, sys
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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


def test_a_stub_that_looks_for_the_reference_finds_nothing(student_copy, tmp_path):
    copy = fresh(student_copy, tmp_path)
    replace_regions(copy, {"Linear.backward": FORGED_LINEAR})
    linear = copy / "numpy_transformer" / "layers" / "linear.py"
    linear.write_text(linear.read_text() + FIND_REFERENCE)
    # Outside the grader (a plain process in the copy) the forger does find the teacher's
    # package, so the forgery is real...
    import subprocess
    probe = subprocess.run([sys.executable, "-c", "from numpy_transformer.layers.linear import "
                            "_find_reference; print(_find_reference() is not None)"],
                           cwd=copy, capture_output=True, text=True, timeout=60)
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


def test_harness_imports_nothing_of_the_package():
    """The worker loads these files by path: no import of numpy_transformer (nor `..x`)."""
    here = PACKAGE / "assignment"
    local = {name[:-3] for name in HARNESS_FILES}
    for name in HARNESS_FILES:
        for node in ast.walk(ast.parse((here / name).read_text())):
            if isinstance(node, ast.ImportFrom):
                assert node.level in (0, 1), (name, node.module)
                assert node.level == 0 or (node.module or "") in local | {""}, (name, node.module)
                assert node.level == 1 or node.module.split(".")[0] in ("numpy", "importlib")
            elif isinstance(node, ast.Import) and name != "worker.py":    # the worker imports
                assert all(a.name.split(".")[0] != "numpy_transformer"       # the student's
                           for a in node.names), name


def regions_run_by(part):
    """(path, qualname) of every solution region whose lines run while `part`'s tasks run."""
    regions = package_regions()
    by_file = {}
    for r in regions:
        by_file.setdefault(str(PACKAGE / r.path), []).append(r)
    hit = set()

    def tracer(frame, event, arg):
        for r in by_file.get(frame.f_code.co_filename, ()):
            if event == "line" and r.begin + 1 < frame.f_lineno <= r.end:
                hit.add((r.part, r.qualname))
        return tracer

    ref = reference_results(part)
    sys.settrace(tracer)
    try:
        for spec in ref.tasks:
            prefix = spec["id"] + "."
            arrays = {k[len(prefix):]: v for k, v in ref.inputs.items() if k.startswith(prefix)}
            run_task(Package("numpy_transformer"), spec, Read(arrays))
    finally:
        sys.settrace(None)
    return hit


@pytest.mark.parametrize("part", PARTS)
def test_each_part_runs_its_own_regions_only(part):
    """Isolation by design: grading `part` executes every region of `part` and no line of
    another part's, so a mistake anywhere else cannot change its score."""
    hit = regions_run_by(part)
    assert {p for p, _ in hit} == {part}, hit
    assert {q for _, q in hit} == {r.qualname for r in package_regions() if r.part == part}


@pytest.mark.parametrize("half", [0, 1])
def test_mistakes_in_half_the_parts_leave_the_other_half_full(solution_copy, tmp_path, half):
    """End to end: one catalogue mistake in every other part; graded parts without a mistake
    keep full marks and every part with one loses points."""
    broken = PARTS[half::2]
    copy = fresh(solution_copy, tmp_path)
    for part in broken:
        next(m for m in MISTAKES if m.part == part).apply(copy)
    scores = {r.part: r.points for r in grade(copy).parts}
    assert all(scores[p] < 10 for p in broken), scores
    assert all(scores[p] == 10 for p in PARTS if p not in broken), scores


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
    worker = PACKAGE / "assignment" / "worker.py"
    probe = (f"import sys, runpy; sys.path.insert(0, {str(PACKAGE.parent)!r}); "
             f"w = runpy.run_path({str(worker)!r}); w['isolate']({str(student_copy)!r}); "
             "import numpy, numpy_transformer; print(numpy_transformer.__file__); "
             f"sys.path.remove({str(student_copy)!r}); del sys.modules['numpy_transformer']; "
             "import numpy_transformer; print(numpy_transformer.__file__)")
    import subprocess
    done = subprocess.run([sys.executable, "-I", "-c", probe], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    mine = str(student_copy / "numpy_transformer" / "__init__.py")
    assert done.stdout.split() == [mine, mine], done.stderr
