"""`assignment check` in a student copy gives the grader's verdicts, with no grader in the copy.

- A solution copy: every part passes, exit status 0 (and `check PART` checks one part).
- A blank copy: no part passes (each says "not implemented", or "check PART first"
  for a composite part whose other parts are not written), exit status 1.
- Catalogue mistakes (mistakes.py) planted in a solution copy, across the layers,
  cross_entropy, adam and adamw: for every part, `check` passes exactly when
  `assignment grade` gives full marks; the one exception is a composite part that
  runs the mistaken part's code (the grader isolates it with stand-ins), and there
  `check` says "check <the mistaken part> first", never pass.
- What the check ships is numbers (expected.npz) and code that holds no formula
  (the copy's leak scan: test_assignment_leaks.py; here, the copy holds no grader).
"""

import os
import shutil
import subprocess
import sys

import pytest

from numpy_transformer.course.classroom.grade import grade
from numpy_transformer.course.grading.local_check import USES
from numpy_transformer.course.selftest.mistakes import MISTAKES

PLANTED = ("linear_overwrites", "layernorm_missing_term", "softmax_elementwise",
           "gelu_finite_difference", "attention_fresh_dropout_mask", "dropout_scales_twice",
           "cross_entropy_divides_twice", "cross_entropy_counts_ignored_rows",
           "adam_no_bias_correction", "adamw_also_l2_decay", "adamw_decay_without_lr",
           "decoder_memory_overwritten")


def check(copy, *parts):
    """(exit status, {part: line}) of `python -m numpy_transformer assignment check` in `copy`."""
    env = {**os.environ, "PYTHONPATH": str(copy)}
    done = subprocess.run([sys.executable, "-m", "numpy_transformer", "assignment", "check",
                           *parts], cwd=copy, env=env, capture_output=True, text=True,
                          timeout=300)
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stdout.splitlines()[:-1]
    return done.returncode, {line.split()[0]: line.split(None, 1)[1] for line in lines}


def test_a_solution_copy_passes_every_part(solution_copy):
    status, lines = check(solution_copy)
    assert status == 0 and len(lines) == 16
    assert all(line == "pass" for line in lines.values()), lines
    assert check(solution_copy, "adam", "cross_entropy") == (0, {"cross_entropy": "pass",
                                                                 "adam": "pass"})


@pytest.mark.slow
def test_a_blank_copy_passes_no_part(student_copy):
    assert (student_copy / "numpy_transformer/course/grading/expected.npz").is_file()
    assert not (student_copy / "numpy_transformer/course/grading/standins.py").exists()
    status, lines = check(student_copy)
    report = grade(student_copy)
    assert status == 1 and report.points == 0
    for part, line in lines.items():
        assert line.startswith(("fail: not implemented: ", "check first: check ")), line
        assert part in USES or f"[assignment part {part}]" in line, line


def planted(solution_copy, tmp_path, name):
    copy = shutil.copytree(solution_copy, tmp_path / name,
                           ignore=shutil.ignore_patterns("notebooks"))
    mistake = next(m for m in MISTAKES if m.name == name)
    mistake.apply(copy)
    return copy, mistake.part


QUICK = ("linear_overwrites", "softmax_elementwise", "adam_no_bias_correction",
         "decoder_memory_overwritten")     # the rest in the slow pass (2 s each)


@pytest.mark.parametrize("name", [n if n in QUICK else pytest.param(n, marks=pytest.mark.slow)
                                  for n in PLANTED])
def test_check_gives_the_graders_verdict_on_a_planted_mistake(solution_copy, tmp_path, name):
    copy, part = planted(solution_copy, tmp_path, name)
    users = [p for p, used in USES.items() if part in used]
    report = grade(copy, parts=[part, *users]).by_part()
    status, lines = check(copy)
    assert status == 1
    assert report[part].points < report[part].max_points
    assert lines[part].startswith("fail: "), lines[part]
    for other, line in lines.items():
        if other == part:
            continue
        if other in users and line != "pass":
            assert line.startswith("check first: ") and part in line, line
        full = other not in report or report[other].points == report[other].max_points
        assert full and (line == "pass" or other in users), (other, line)


def test_the_check_needs_no_helper_of_the_copy(solution_copy, tmp_path):
    """The check imports the modules under test, not the copy's gradient checker."""
    copy = shutil.copytree(solution_copy, tmp_path / "copy",
                           ignore=shutil.ignore_patterns("notebooks"))
    (copy / "numpy_transformer" / "gradcheck.py").write_text("raise ImportError('broken')\n")
    assert check(copy, "linear", "encoder_stack") == (0, {"linear": "pass",
                                                          "encoder_stack": "pass"})


def test_a_wrong_part_name_is_refused(solution_copy):
    env = {**os.environ, "PYTHONPATH": str(solution_copy)}
    done = subprocess.run([sys.executable, "-m", "numpy_transformer", "assignment", "check",
                           "lineaar"], cwd=solution_copy, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and "unknown part 'lineaar'" in done.stderr, done.stderr


def test_a_copy_for_some_parts_checks_those_parts_only(tmp_path):
    """`check` reports the parts the copy assigns, as the grader's table does, and never
    says "check X first" of a part it does not assign: that part is the reference's code
    (asked for with every part taken as assigned, each one that runs no assigned part's
    code passes)."""
    from numpy_transformer.course.copies.make import make, package_regions
    from numpy_transformer.course.copies.markers import write_region_bodies
    from numpy_transformer.course.selftest.right_bodies import RIGHT
    copy = tmp_path / "copy"
    make(copy, parts=["softmax", "multihead_attention"])
    package = copy / "numpy_transformer"       # multi-head attention written, softmax not
    written = [r for r in package_regions(package) if r.part == "multihead_attention"]
    write_region_bodies(package, written, [RIGHT[r.qualname] for r in written])
    status, lines = check(copy)
    assert status == 1 and set(lines) == {"softmax", "multihead_attention"}, lines
    assert {r.part for r in grade(copy).parts} == set(lines)
    assert lines["multihead_attention"] == ("check first: check softmax first (this part runs "
                                            "their code too, and they fail)")
    env = {**os.environ, "PYTHONPATH": str(copy)}
    others = [p for p in ("linear", "layernorm", "gelu", "dropout", "attention", "feedforward",
                          "encoder_stack") if p not in lines and not set(USES.get(p, ())) & set(lines)]
    done = subprocess.run([sys.executable, "-m", "numpy_transformer", "assignment", "check",
                           "linear"], cwd=copy, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and "not a part of this assignment" in done.stderr, done.stderr
    code = ("from numpy_transformer.course.grading.local_check import check_parts, PARTS\n"
            f"v = check_parts({others!r}, assigned=PARTS)\n"
            "assert all(verdict == ('pass', '') for verdict in v.values()), v\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=copy, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
