"""Answers that are not derivations are reported to the teacher (honesty.py), never a
correct form.

- The reference, the catalogue's right bodies (right_bodies.py) and the correct
  alternative forms of the attention backward (test_assignment_diagnosis.VARIANTS)
  raise no flag.
- A complex-step backward of layernorm, softmax, gelu and cross_entropy is reported with
  its file, line and source line; the GELU, LayerNorm and softmax ones get full marks
  from the output tests alone (exact to rounding), so only the reading can tell them;
  with --refuse-flagged each scores 0. The flags are in the table, the JSON and a hidden Gradescope test.
- A lookup in expected.npz is reported as a file loaded; deleting the markers hides
  nothing (the whole graded function is read), nor does a helper the student added.
- A correct backward computed in float32 (rel err ~1e-7) is called so, in the grader and
  in the copy's check, not "a finite-difference gradient?" (which a finite difference
  still gets).
"""

import json
import shutil

import numpy as np
import pytest

from doors import nt
from numpy_transformer.course.classroom.gradescope import gradescope_results
from numpy_transformer.course.classroom.grade import grade
from numpy_transformer.course.classroom.honesty import review
from numpy_transformer.course.grading.local_check import numeric_message
from numpy_transformer.course.copies.make import PACKAGE
from numpy_transformer.course.selftest.right_bodies import RIGHT
from test_assignment_diagnosis import ATTENTION, VARIANTS
from test_assignment_grader import replace_regions
from test_assignment_hidden import FILES, FORGED, LOOKUP
from test_student_check import check

COMPLEX_STEP = {    # qualname -> a backward by complex-step differentiation (h = 1e-30)
    "GELU.backward": """
x, t = self.saved_for_backward()
h = 1e-30
return dy * (self.forward(x + 1j * h).imag / h)""",
    "LayerNorm.backward": """
xhat, r = self.saved_for_backward()
x, D, h = xhat / r, self.d_model, 1e-30
dx = xp.zeros(dy.shape)
for i in range(D):
    step = xp.zeros(D, dtype=complex)
    step[i] = h * 1j
    dx[..., i] = (dy * self.forward(x + step).imag).sum(axis=-1) / h
self.saved = (xhat, r)
self.grads["gamma"] += (dy * xhat).reshape(-1, D).sum(axis=0)
self.grads["beta"] += dy.reshape(-1, D).sum(axis=0)
return dx""",
    "softmax_backward": """
x, h = xp.log(xp.where(p > 0, p, 1.0)), 1e-30
dx = xp.zeros(p.shape)
for i in range(p.shape[axis]):
    step = xp.zeros(p.shape, dtype=xp.complex128)
    xp.moveaxis(step, axis, -1)[..., i] = h * 1j
    q = xp.imag(softmax(x + step, axis=axis, mask=p > 0)) / h
    xp.moveaxis(dx, axis, -1)[..., i] = (dp * q).sum(axis=axis)
return dx * (p > 0)""",
    "CrossEntropyLoss.backward": """
h, logits = 1e-30, xp.log(p).reshape(shape)
dx = xp.zeros(p.shape)
for v in range(shape[-1]):
    bumped = logits.astype("complex128")
    bumped[..., v] += complex(0, h)
    dx[:, v] = self.forward(bumped, t.reshape(shape[:-1])).imag / h
return float(dloss) * dx.reshape(shape)""",
}
PARTS = {"GELU.backward": "gelu", "LayerNorm.backward": "layernorm",
         "softmax_backward": "softmax", "CrossEntropyLoss.backward": "cross_entropy"}


def fresh(copy, tmp_path, name="copy"):
    return shutil.copytree(copy, tmp_path / name, ignore=shutil.ignore_patterns("notebooks"))


def test_the_reference_and_every_correct_form_raise_no_flag(solution_copy, tmp_path):
    assert review(PACKAGE.parent) == {} and review(solution_copy) == {}
    copy = fresh(solution_copy, tmp_path, "right")
    replace_regions(copy, RIGHT)
    assert review(copy) == {}
    for name, body in VARIANTS.items():
        copy = fresh(solution_copy, tmp_path, name)
        replace_regions(copy, {ATTENTION: body})
        assert review(copy) == {}, name


def test_a_complex_step_backward_is_reported_with_its_line(solution_copy, tmp_path):
    copy = fresh(solution_copy, tmp_path)
    replace_regions(copy, COMPLEX_STEP)
    flags = review(copy)
    assert set(flags) == set(PARTS.values()), flags
    for qualname, part in PARTS.items():
        kinds = {k for f in flags[part] for k in f.kinds}
        assert {"complex", "imag"} <= kinds, (part, flags[part])
        for f in flags[part]:
            line = (copy / "numpy_transformer" / f.path).read_text().splitlines()[f.line - 1]
            assert f.source == line.strip() and f.source in COMPLEX_STEP[qualname], f
    assert any("forward" in f.kinds for f in flags["gelu"])
    assert any("forward" in f.kinds for f in flags["softmax"])   # softmax in softmax_backward


def test_complex_step_passes_the_output_tests_and_is_refused_with_the_flag(solution_copy,
                                                                           tmp_path):
    copy = fresh(solution_copy, tmp_path)
    replace_regions(copy, COMPLEX_STEP)
    reported = grade(copy, parts=["gelu", "layernorm", "softmax", "linear"], seed=1,
                     teacher=True)
    for part in ("gelu", "layernorm", "softmax"):         # exact to rounding: full marks
        result = reported.by_part()[part]
        assert result.points == result.max_points and result.max_rel_error < 1e-12, \
            reported.table()
    assert not reported.by_part()["linear"].flags
    assert "flagged: layers/activations.py:" in reported.table()
    flags = {d["part"]: d["flags"] for d in reported.to_dict()["parts"]}
    assert ".imag / h)" in json.dumps(flags["gelu"]) and flags["linear"] == []
    refused = grade(copy, parts=list(PARTS.values()), seed=1, refuse_flagged=True)
    for result in refused.parts:
        assert result.points == 0 and result.message.startswith("refused: "), refused.table()
        assert all(c.points == 0 and c.message.startswith("refused: ") for c in result.checks)
    results = gradescope_results(refused)
    hidden = [t for t in results["tests"] if t["name"].endswith("/flagged for review")]
    assert {t["name"].split("/")[0] for t in hidden} == set(PARTS.values())
    assert all(t["visibility"] == "hidden" and t["max_score"] == 0 for t in hidden)
    assert results["score"] == 0


def test_a_lookup_in_the_copy_is_reported_as_a_file_loaded(student_copy, tmp_path):
    copy = fresh(student_copy, tmp_path)
    replace_regions(copy, FORGED)
    for path in FILES:
        file = copy / "numpy_transformer" / path
        file.write_text(file.read_text() + LOOKUP)      # a helper the student added
    flags = review(copy)
    assert set(flags) == {"softmax", "gelu", "dropout", "embedding"}, flags
    for found in flags.values():
        assert any("file" in f.kinds and "numpy.load(" in f.source for f in found), found


@pytest.mark.parametrize("qualname", ["GELU.backward"])
def test_deleting_the_markers_hides_nothing(solution_copy, tmp_path, qualname):
    copy = fresh(solution_copy, tmp_path)
    replace_regions(copy, {qualname: COMPLEX_STEP[qualname]})
    file = copy / "numpy_transformer" / "layers" / "activations.py"
    text = file.read_text()
    file.write_text("\n".join(line for line in text.split("\n")
                              if "BEGIN SOLUTION gelu" not in line
                              and "END SOLUTION" not in line))
    assert "gelu" in review(copy)


def test_the_command_line_reports_and_refuses(solution_copy, tmp_path):
    copy = fresh(solution_copy, tmp_path)
    replace_regions(copy, {"GELU.backward": COMPLEX_STEP["GELU.backward"]})
    done = nt("assignment", "grade", str(copy), "--parts", "gelu", "--seed", "4")
    assert done.returncode == 0 and "flagged: layers/activations.py:" in done.stdout, done
    done = nt("assignment", "grade", str(copy), "--parts", "gelu", "--refuse-flagged",
              "--json", str(tmp_path / "grade.json"))
    assert done.returncode == 1 and "refused: " in done.stdout, done
    [part] = json.loads((tmp_path / "grade.json").read_text())["parts"]
    assert part["points"] == 0 and part["flags"][0]["path"] == "layers/activations.py"


GELU_FLOAT32 = """
x, t = self.saved_for_backward()
x, t, dy = x.astype("float32"), t.astype("float32"), dy.astype("float32")
du_dx = self.C * (1.0 + 3.0 * self.A * x**2)
return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du_dx)"""
FLOAT32 = "at float32 round-off: computed in float32? compute in the inputs' dtype"
FINITE = "not exact: is this a finite-difference gradient?"


def test_float32_round_off_is_told_from_a_finite_difference():
    want = np.random.default_rng(0).normal(size=(4, 5))
    as_float32 = want.astype(np.float32).astype(np.float64)
    err = np.abs(as_float32 - want).max() / np.abs(want).max()
    assert 1e-9 < err < 1e-6 and FLOAT32 in numeric_message("dx", want, as_float32, err)
    rounded_late = want * (1 + 3e-8 * np.sign(want))          # float32 steps in between
    assert FLOAT32 in numeric_message("dx", want, rounded_late, 3e-8)
    finite = want + 2e-9 * np.abs(want).max()                 # off by the same amount
    assert FINITE in numeric_message("dx", want, finite, 2e-9)
    assert FINITE in numeric_message("dx", want, want + 1e-13, 1e-13 / np.abs(want).max())


def test_a_float32_backward_is_called_so(solution_copy, tmp_path):
    copy = fresh(solution_copy, tmp_path)
    replace_regions(copy, {"GELU.backward": GELU_FLOAT32})
    [result] = grade(copy, parts=["gelu"], seed=2).parts
    assert result.points == 0 and FLOAT32 in result.message and FINITE not in result.message
    status, lines = check(copy, "gelu")
    assert status == 1 and FLOAT32 in lines["gelu"], lines
