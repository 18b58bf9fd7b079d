"""Assignments: markers, student copies, the grader, and the mistake catalogue it must catch.

Grading runs each part in a worker process on the copy under test and compares its
arrays with the reference's (the isolation, honesty and forgery tests are in
test_assignment_grader.py); copies are made once per module and copied again where
a test needs to change them.
"""

import json
import shutil

import pytest

from numpy_transformer.course.parts import PARTS
from numpy_transformer.course.classroom.grade import grade, grade_assignment
from numpy_transformer.course.copies.make import make, reveal
from numpy_transformer.course.copies.make import package_regions, read_manifest
from numpy_transformer.course.copies.markers import (MarkerError, parse_regions,
                                                  regions_in_source, stub_lines)
from numpy_transformer.course.selftest.mistakes import MISTAKES
from numpy_transformer.course.grading.scoring import CHECKS, PARTS as ALL_PARTS, max_points, run_part
from numpy_transformer.course.parts import LESSONS

from doors import raises_naming


def fresh(copy, tmp_path):
    """A private copy of a module-level copy, for a test that changes files."""
    return shutil.copytree(copy, tmp_path / "copy")


# Markers.

def test_every_part_has_well_formed_regions_inside_functions():
    regions = package_regions()                  # raises MarkerError on any malformed region
    assert {r.part for r in regions} == set(ALL_PARTS)
    for r in regions:
        assert r.qualname and r.hint, r.where
    assert all(max_points(part) == 10 and len(CHECKS[part]) >= 2 for part in ALL_PARTS)


@pytest.mark.parametrize("source, fragment", [
    ("# BEGIN SOLUTION linear\nx = 1\n", "without an END"),
    ("x = 1\n# END SOLUTION\n", "without a BEGIN"),
    ("# BEGIN SOLUTION a\n# BEGIN SOLUTION b\nx = 1\n# END SOLUTION\n", "do not nest"),
    ("# BEGIN SOLUTION a\nx = 1\n# END SOLUTION b\n", "closes"),
    ("def f():\n    # BEGIN SOLUTION a\n    x = 1\n# END SOLUTION\n", "not indented like"),
    ("# BEGIN SOLUTION a\n# just a comment\n# END SOLUTION\n", "no code"),
    ("x = 1  # BEGIN SOLUTION a\n", "line of its own"),
])
def test_malformed_markers_are_rejected(source, fragment):
    with pytest.raises(MarkerError, match=fragment):
        parse_regions(source.splitlines())


def test_stub_keeps_signature_docstring_and_markers():
    source = ('def f(x):\n    """Doc."""\n    # BEGIN SOLUTION linear\n    # HINT: double it\n'
              '    return 2 * x\n    # END SOLUTION\n')
    stub = "\n".join(stub_lines(source.split("\n"), regions_in_source(source)))
    lines = stub.split("\n")
    assert lines[:3] == ["def f(x):", '    """Doc."""', "    # BEGIN SOLUTION linear"]
    assert lines[3].startswith("    raise NotImplementedError('f: double it")   # (+ the part)
    assert lines[4:] == ["    # END SOLUTION", ""]


# Making copies.

def test_student_copy_holds_stubs_readme_and_no_catalogue(student_copy):
    package = student_copy / "numpy_transformer"
    linear = (package / "layers" / "linear.py").read_text()
    assert "def backward(self, dy):" in linear and "x2.T @ dy2" not in linear
    assert (f"raise NotImplementedError('Linear.backward: write this part (see "
            f"{LESSONS['linear']}" in linear)     # a hint says where to look, not what to write
    assert not (package / "course" / "selftest").exists()
    assert "| linear | 10 |" in (student_copy / "README.md").read_text()
    assert read_manifest(student_copy)["stubbed"] == list(PARTS)
    for book in (student_copy / "notebooks").glob("*.ipynb"):
        for cell in json.loads(book.read_text())["cells"]:
            lines = "".join(cell["source"]).split("\n")
            for r in regions_in_source("\n".join(lines)) if cell["cell_type"] == "code" else []:
                assert r.end == r.begin + 2, (book.name, lines[r.begin:r.end])
                assert lines[r.begin + 1].strip().startswith("raise NotImplementedError(")


def test_bad_arguments_give_clear_errors(tmp_path, student_copy):
    with raises_naming(ValueError, "'lin'", "linear", "layernorm"):
        make(tmp_path / "a", parts=["lin"])
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    with pytest.raises(ValueError, match="not an empty folder"):
        make(tmp_path / "full")
    with pytest.raises(ValueError, match="is not a student copy"):
        grade(tmp_path / "full")
    with pytest.raises(ValueError, match="unknown part 'adamx'"):
        grade(student_copy, parts=["adamx"])


# Grading.

@pytest.mark.slow
def test_reference_solution_gets_full_marks(solution_copy, tmp_path):
    report_file = tmp_path / "grades.json"
    lines = []
    assert grade_assignment(solution_copy, json_out=report_file, out=lines.append) == 0
    report = json.loads(report_file.read_text())
    assert report["points"] == report["max_points"] == 10 * len(PARTS)
    for part in report["parts"]:
        assert part["max_rel_error"] < 1e-7, part
    assert lines[0].startswith("sandbox: ")          # the protections in force, first
    assert any("total                   160  160" in line for line in lines[1:]), lines
    assert not list(solution_copy.rglob("__pycache__")), "grading wrote into the copy"


@pytest.mark.slow
def test_fresh_student_copy_imports_and_scores_zero_everywhere(student_copy):
    report = grade(student_copy)
    for result in report.parts:
        assert result.points == 0, result
        assert result.message.startswith("not implemented: "), result


@pytest.mark.slow
@pytest.mark.parametrize("part", ["linear", "mla"])
def test_filling_in_one_part_scores_exactly_that_part(student_copy, tmp_path, part):
    copy = fresh(student_copy, tmp_path)
    reveal(copy, [part])
    scores = {r.part: r.points for r in grade(copy).parts}
    assert scores == {p: (10 if p == part else 0) for p in PARTS}


@pytest.mark.slow
def test_a_mistake_costs_points_only_in_its_own_part(solution_copy, tmp_path):
    """Every other part runs with the reference in place of the part under test, so a
    broken Linear (which everything uses) costs points in `linear` only."""
    copy = fresh(solution_copy, tmp_path)
    next(m for m in MISTAKES if m.name == "linear_overwrites").apply(copy)
    scores = {r.part: r.points for r in grade(copy).parts}
    assert scores["linear"] < 10
    assert all(scores[p] == 10 for p in PARTS if p != "linear"), scores


def test_crash_and_time_out_cost_only_their_part(solution_copy, tmp_path):
    copy = fresh(solution_copy, tmp_path)
    for path, old, new in [
        ("layers/linear.py", "        x = self.saved_for_backward()\n        x2",
         "        import os\n        os._exit(3)\n        x2"),
        ("layers/normalization.py", "        xhat, r = self.saved_for_backward()\n",
         "        while True:\n            pass\n")]:
        file = copy / "numpy_transformer" / path
        file.write_text(file.read_text().replace(old, new, 1))
    # Two runs, so that no healthy part races a short limit: the endless loop is given 2 s
    # (it times out however busy the machine is), the others far more than they need.
    report = grade(copy, parts=["linear", "softmax"], timeout=600).by_part()
    assert report["linear"].points == 0 and "exited with status 3" in report["linear"].message
    assert report["softmax"].points == 10
    [layernorm] = grade(copy, parts=["layernorm"], timeout=2).parts
    assert layernorm.points == 0 and "timed out" in layernorm.message


# The mistake catalogue: each mistake must be caught, in its own part (where each applies,
# whatever the comments and padding of the reference: test_assignment_catalogue.py).

def test_catalogue_covers_the_required_mistakes():
    assert len(MISTAKES) >= 35 and len({m.name for m in MISTAKES}) == len(MISTAKES)
    assert {m.part for m in MISTAKES} == set(ALL_PARTS)
    names = {m.name for m in MISTAKES}
    assert {"embedding_repeated_ids", "linear_bias_batch_axis_only",
            "cross_entropy_counts_ignored_rows", "cross_entropy_ignored_rows_not_zeroed",
            "decoder_memory_overwritten", "dropout_without_scale",
            "softmax_ignores_axis"} <= names


FIRST_OF_EACH_PART = {m.part: m.name for m in reversed(MISTAKES)}.values()   # the rest: slow


@pytest.mark.parametrize("mistake", [
    pytest.param(m, marks=() if m.name in FIRST_OF_EACH_PART else pytest.mark.slow)
    for m in MISTAKES], ids=[m.name for m in MISTAKES])
def test_mistake_fails_its_part(mistake, solution_copy, tmp_path):
    copy = fresh(solution_copy, tmp_path)
    mistake.apply(copy)
    [result] = grade(copy, parts=[mistake.part]).parts
    assert result.points < result.max_points, f"{mistake.description}: not caught"
    assert not result.message.startswith(("crashed", "timed out", "not implemented")), result


def test_checks_pass_in_process_on_the_reference():
    """The same checks without a worker (the installed package is the reference)."""
    for part in ALL_PARTS:
        result = run_part(part)
        assert result.points == result.max_points, result
