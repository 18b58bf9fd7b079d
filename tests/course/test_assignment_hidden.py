"""The grader's tests are its own: no input or output of the grader's is in a student copy.

- The copy's expected.npz (for `assignment check`) holds public inputs and outputs
  drawn from another stream than the grader's (harness.task_seed), and the sinusoidal
  table, which depends on its sizes alone, at another d_model: no array the grader
  sends or expects is in it, whatever the grading secret.
- A forgery that looks its outputs up in expected.npz (the inputs matched, the stored
  outputs returned) passes `assignment check` in the copy, and scores 0 in the grader;
  a correct copy still passes the check and gets full marks.
- The grading secret: a new random one per process by default, `seed=N` (the Python
  API, `assignment grade --seed N`, `assignment autograder --seed N`) to reproduce a
  grade; a bad seed is refused naming it.
- `assignment autograder --reveal-after DATE`: the checks that would be visible are
  Gradescope's after_due_date when graded before DATE, visible after it; a bad date is
  refused naming the option.
"""

import json
import shutil
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from doors import nt, raises_naming
from numpy_transformer.course.parts import PARTS
from numpy_transformer.course.classroom.autograder import build_autograder
from numpy_transformer.course.classroom.grade import grade
from numpy_transformer.course.classroom.gradescope import gradescope_results, read_visibility
from numpy_transformer.course.grading.local_check import load
from numpy_transformer.course.grading.scoring import SECRET, reference_results
from numpy_transformer.errors import InputError
from test_assignment_grader import replace_regions
from test_student_check import check

LOOKUP = '''

def _looked_up(name, *arrays):
    """The output `name` stored in the copy's expected.npz for the task whose inputs hold
    one of `arrays`: the forger's answer, with no derivation."""
    import os
    import numpy
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with numpy.load(os.path.join(here, "course", "grading", "expected.npz")) as data:
        stored = {key: data[key] for key in data.files if key != "plan"}
    for key, value in stored.items():
        if key.startswith("in:") and any(numpy.shape(a) == value.shape
                                         and numpy.array_equal(numpy.asarray(a), value)
                                         for a in arrays):
            found = stored.get(f"out:{key.split(':')[1]}:{name}")
            if found is not None:
                return found
    return None
'''

FORGED = {      # qualname -> a body that returns what expected.npz holds for these inputs
    "softmax_backward": """
found = _looked_up("dx.0", dp)
return xp.zeros_like(dp) if found is None else found""",
    "GELU.backward": """
found = _looked_up("dx.0", dy)
return xp.zeros_like(dy) if found is None else found""",
    "Dropout.backward": """
found = _looked_up("dx.0", dy)
return xp.zeros_like(dy) if found is None else found""",
    "Dropout.reapply": """
found = _looked_up("reapplied", x)
return xp.zeros_like(x) if found is None else found""",
    "Embedding.backward": """
found = _looked_up("grad.weight", dy)
if found is not None:
    self.grads["weight"][...] = found
return None""",
}
FILES = ("layers/softmax.py", "layers/activations.py", "layers/dropout.py",
         "layers/embedding.py")
FORGED_PARTS = ["softmax", "gelu", "dropout", "embedding"]


def float_arrays(arrays):
    """The arrays worth comparing: floats with more than one value, not all zero."""
    return [a for a in arrays if a.dtype.kind == "f" and a.size > 1 and np.any(a)]


@pytest.mark.slow
def test_the_copy_holds_no_input_or_output_of_the_graders(student_copy):
    _, shipped = load(student_copy / "numpy_transformer/course/grading/expected.npz")
    by_shape = {}
    for a in float_arrays(shipped.values()):
        by_shape.setdefault(a.shape, []).append(a)
    for secret in (None, 0, 7):
        for part in PARTS:
            ref = reference_results(part, secret)
            graders = float_arrays(ref.inputs.values()) + float_arrays(
                [a for outputs in ref.expected.values() for a in outputs.values()])
            for a in graders:
                if a.size > 1 and np.all(a == a.flat[0]):   # one value everywhere: a constant
                    continue        # of the task's public settings (AdamW's slip -lr wd), no input
                if not np.isfinite(a).any():    # a slip's division by zero (Adam's step count
                    continue        # one early): signs only, equal to a shipped one 1 time in 32
                assert not any(np.allclose(a, b, rtol=1e-9, atol=0)
                               for b in by_shape.get(a.shape, ())), (part, secret, a.shape)


def test_grading_secrets_draw_other_inputs_and_the_same_secret_the_same():
    one, again, other = (reference_results("layernorm", s) for s in (5, 5, 6))
    assert one is again                                # cached per (part, secret)
    assert one.inputs.keys() == other.inputs.keys()
    assert all(np.array_equal(one.inputs[k], again.inputs[k]) for k in one.inputs)
    assert not any(np.array_equal(one.inputs[k], other.inputs[k]) for k in one.inputs
                   if one.inputs[k].dtype.kind == "f")
    assert reference_results("layernorm") is reference_results("layernorm", SECRET)


def forged_copy(copy):
    replace_regions(copy, FORGED)
    for path in FILES:
        file = copy / "numpy_transformer" / path
        file.write_text(file.read_text() + LOOKUP)
    return copy


@pytest.mark.slow
def test_looking_answers_up_in_the_copy_scores_zero(student_copy, tmp_path):
    copy = forged_copy(shutil.copytree(student_copy, tmp_path / "copy",
                                       ignore=shutil.ignore_patterns("notebooks")))
    # The forgery is real: the copy's own check, on the inputs it ships, passes it...
    status, lines = check(copy, *FORGED_PARTS)
    assert status == 0 and set(lines.values()) == {"pass"}, lines
    # ...but the grader's inputs are in no file of the copy: nothing to look up.
    for seed in (None, 3):
        report = grade(copy, parts=FORGED_PARTS, seed=seed)
        assert {r.part: r.points for r in report.parts} == dict.fromkeys(FORGED_PARTS, 0), \
            report.table()


def test_a_correct_copy_passes_the_check_and_gets_full_marks(solution_copy):
    status, lines = check(solution_copy, *FORGED_PARTS, "positional_encoding")
    assert status == 0 and set(lines.values()) == {"pass"}, lines
    for seed in (None, 11):
        report = grade(solution_copy, parts=[*FORGED_PARTS, "positional_encoding"], seed=seed)
        assert report.points == report.max_points, report.table()


def test_the_grading_seed_is_checked_and_given_by_the_command_line(solution_copy, tmp_path):
    for bad in (-1, 1.5, "7", True):
        with raises_naming(InputError, "seed", repr(bad)):
            grade(solution_copy, parts=["linear"], seed=bad)
    done = nt("assignment", "grade", str(solution_copy), "--parts", "softmax", "--seed", "12",
              "--json", str(tmp_path / "grade.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((tmp_path / "grade.json").read_text())["points"] == 10
    done = nt("assignment", "grade", str(solution_copy), "--seed", "-1")
    assert done.returncode == 2 and "--seed" in done.stderr, done.stderr


def test_the_autograder_keeps_the_teachers_seed_or_none(tmp_path):
    for seed in (None, 99):
        out = tmp_path / f"autograder{seed}.zip"
        build_autograder(out, parts=["linear"], seed=seed)
        with zipfile.ZipFile(out) as archive:
            assert json.loads(archive.read("autograder.json"))["seed"] == seed
    with pytest.raises(InputError, match="seed"):
        build_autograder(tmp_path / "bad.zip", parts=["linear"], seed=-5)


def test_checks_revealed_after_a_date(solution_copy, tmp_path):
    report = grade(solution_copy, parts=["softmax"], seed=0)
    config = build_autograder(tmp_path / "a.zip", parts=["softmax"], reveal_after="2999-01-01",
                              visibility={"softmax/softmax_other_axis": "hidden"})
    assert config["reveal_after"] == "2999-01-01T00:00:00+00:00"
    before = gradescope_results(report, read_visibility(config["visibility"],
                                                        config["reveal_after"]))
    shown = {t["name"]: t["visibility"] for t in before["tests"]}
    assert shown == {"softmax/softmax_gradients": "after_due_date",
                     "softmax/softmax_other_axis": "hidden",
                     "softmax/softmax_fully_masked_row": "after_due_date",
                     "softmax/derivation (graded by hand)": "after_due_date"}
    assert "hidden until 2999-01-01 00:00" in before["output"]
    after = gradescope_results(report, read_visibility(None, "2000-01-01T08:00+02:00"))
    assert {t["visibility"] for t in after["tests"]} == {"visible"}
    assert "hidden until" not in after["output"]
    done = nt("assignment", "autograder", "--out", str(tmp_path / "b.zip"), "--reveal-after",
              "next week")
    assert done.returncode == 2 and "--reveal-after" in done.stderr, done.stderr
    assert not (tmp_path / "b.zip").exists()
