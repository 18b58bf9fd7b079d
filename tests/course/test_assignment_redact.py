"""A grade report states no part's formula, the student's and the teacher's alike.

The checks' "Expected: ..." sentences say what each check tests, never how to compute it
(test_assignment_meaning.py reads them by meaning). formulas.redact stays as a net for any
other sentence of a student's report (the table, --json, --gradescope, the class CSV): a
clause that states a formula gives way to where the part is taught; the student's own
line, quoted back by the diagnosis, is theirs and stays. Checked on every check's
sentence, and end to end on a copy whose Linear.backward doubles dW.
"""

import pytest

from numpy_transformer.course.copies.formulas import formula_hits, redact
from numpy_transformer.course.classroom.grade import grade
from numpy_transformer.course.copies.make import make
from numpy_transformer.course.grading.scoring import CHECKS
from numpy_transformer.course.parts import LESSONS


def failing_message(c):
    return f"dW (rel err 1.0e+00). Expected: {c.why} [a correct answer: {c.expect}]"


def test_no_check_sentence_states_a_formula_so_redacting_changes_none():
    for part, checks in CHECKS.items():
        for c in checks:
            message = failing_message(c)
            assert not formula_hits(message), (part, c.name, message)
            assert redact(message, part) == message


def test_a_sentence_with_a_formula_says_where_the_part_is_taught_instead():
    shown = redact("dx (rel err 1.0e+00). Expected: dx = dy W^T, dW = x^T dy [a correct "
                   "answer: exact]", "linear")
    assert shown == (f"dx (rel err 1.0e+00). Expected: the result derived in {LESSONS['linear']}"
                     " (a student's report shows no formula) [a correct answer: exact]")
    reworded = redact("dx: multiply dout by the transposed weight; db: kept", "linear")
    assert reworded == "(a formula, left out); db: kept"
    assert redact("grads: ADD with +=", "linear") == "grads: ADD with +="


def test_the_students_own_line_quoted_back_is_not_redacted():
    message = ("task 1: ValueError: line 61 of layers/linear.py: shapes (6, 4) and (3, 4) do "
               "not match; the line reads `return dy @ W.T`. Expected: the gradients of the "
               "input [a correct answer: exact]")
    assert redact(message, "linear") == message


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


def test_the_students_and_the_teachers_reports_name_no_formula(doubled_dw):
    student = grade(doubled_dw, parts=["linear"])
    teacher = grade(doubled_dw, parts=["linear"], teacher=True)
    assert student.points == teacher.points < student.max_points     # the same verdicts
    said = [c.message for r in student.parts for c in r.checks] + [student.table()]
    assert not any(formula_hits(m) for m in said), said
    assert any("Expected: the gradients of the input, the weight and the bias" in m for m in said)
    assert said[:-1] == [c.message for r in teacher.parts for c in r.checks]
