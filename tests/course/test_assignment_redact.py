"""A student's grade report states no part's formula; the teacher's (`--teacher`) keeps them.

The checks' "Expected: ..." sentences name the formula a wrong answer missed. In a
student's report (the default: the table, --json, --gradescope, the class CSV) such a
sentence says which lesson derives the result instead (formulas.redact); `grade
--teacher` keeps it. Checked on every check's sentence, and end to end on a copy whose
Linear.backward doubles dW.
"""

import pytest

from numpy_transformer.course.assignment.formulas import formula_hits, redact
from numpy_transformer.course.assignment.grade import grade
from numpy_transformer.course.assignment.make import make
from numpy_transformer.course.assignment.parts import CHECKS


def failing_message(c):
    return f"dW (rel err 1.0e+00). Expected: {c.why} [a correct answer: {c.expect}]"


def test_no_check_sentence_states_a_formula_once_redacted():
    stated = 0
    for part, checks in CHECKS.items():
        for c in checks:
            message = failing_message(c)
            stated += bool(formula_hits(message))
            shown = redact(message, part)
            assert not formula_hits(shown), (part, c.name, shown)
            assert shown.startswith("dW (rel err 1.0e+00). Expected: ")
            assert shown.endswith(f"[a correct answer: {c.expect}]")
    assert stated >= 15                       # the sentences that did state one


def test_a_redacted_sentence_says_where_the_part_is_taught():
    shown = redact("dx (rel err 1.0e+00). Expected: dx = dy W^T, dW = x^T dy [a correct "
                   "answer: exact]", "linear")
    assert shown == ("dx (rel err 1.0e+00). Expected: the result derived in lesson 3 (a "
                     "student's report shows no formula) [a correct answer: exact]")
    assert redact("grads: ADD with +=", "linear") == "grads: ADD with +="


@pytest.fixture(scope="module")
def doubled_dw(tmp_path_factory):
    """A copy of part linear whose backward adds 2 x^T dy into dW."""
    out = tmp_path_factory.mktemp("doubled") / "copy"
    make(out, parts=["linear"], solutions=True)
    path = out / "numpy_transformer" / "layers" / "linear.py"
    text = path.read_text(encoding="utf-8")
    assert text.count("+= x2.T @ dy2") == 1
    path.write_text(text.replace("+= x2.T @ dy2", "+= 2 * (x2.T @ dy2)"), encoding="utf-8")
    return out


def test_a_students_report_names_no_formula_and_the_teachers_does(doubled_dw):
    student = grade(doubled_dw, parts=["linear"])
    teacher = grade(doubled_dw, parts=["linear"], teacher=True)
    assert student.points == teacher.points < student.max_points     # the same verdicts
    said = [c.message for r in student.parts for c in r.checks] + [student.table()]
    assert not any(formula_hits(m) for m in said), said
    assert any("derived in lesson 3" in m for m in said)
    assert any(formula_hits(c.message) for r in teacher.parts for c in r.checks)
