"""The written derivations (issue 49, item 3): a question per assigned part in the copy,
the student's answer carried by every grade output as an item graded by hand.

A copy of two cheap parts (linear, softmax) is made once, as a solution copy so that its
code scores; one student answers linear's question and leaves softmax's as it came. The
grade's JSON, Gradescope's results.json (by `assignment grade --gradescope` and by the
autograder's run on a fake /autograder layout) and the class summary carry the answer,
and "not answered" for the other. The questions themselves state no formula of any part
(formulas.py, by meaning): the full copy's scans in test_assignment_leaks.py and
test_assignment_meaning.py read them too.
"""

import json
import shutil
from pathlib import Path

import pytest

from numpy_transformer.course.classroom.autograder_run import find_derivations, grade_submission
from numpy_transformer.course.classroom.grade_command import grade_command
from numpy_transformer.course.copies import derivations
from numpy_transformer.course.copies.derivations import (NOT_ANSWERED, PLACEHOLDER, QUESTIONS,
                                                         read_answer, read_answers, template)
from numpy_transformer.course.copies.formulas import formula_hits
from numpy_transformer.course.copies.make import make
from numpy_transformer.course.parts import PARTS
from numpy_transformer.errors import InputError

ASSIGNED = ["linear", "softmax"]
ANSWER = ("Entry-wise, $y_{btj}$ is a sum over $i$, so each gradient is a sum over the "
          "positions <b>and</b> the batch: my own words, not a template's.")


def answer(copy, part, text=ANSWER):
    """Write `text` into the answer area of the copy's derivations/<part>.md."""
    path = copy / "derivations" / f"{part}.md"
    path.write_text(path.read_text().replace(PLACEHOLDER, text), encoding="utf-8")


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    """A solution copy of linear and softmax (3 points a derivation), without its lessons;
    linear's question answered, softmax's left as it came."""
    out = tmp_path_factory.mktemp("derivations") / "ada"
    make(out, parts=ASSIGNED, solutions=True, derivation_points=3)
    shutil.rmtree(out / "notebooks", ignore_errors=True)
    answer(out, "linear")
    return out


def test_every_part_asks_a_question_that_states_no_formula():
    """Each of the 16 parts has its question; no line of a template, nor two lines read
    together, states a key formula of any part (a question, never the answer)."""
    assert sorted(QUESTIONS) == sorted(PARTS)
    for part in PARTS:
        lines = template(part, 5).split("\n")
        said = [(i, formula_hits(line)) for i, line in enumerate(lines) if formula_hits(line)]
        said += [(i, formula_hits(a + " " + b)) for i, (a, b) in enumerate(zip(lines, lines[1:]))
                 if formula_hits(a + " " + b)]
        assert not said, f"{part}: {[(i, hits, lines[i]) for i, hits in said]}"
        text = "\n".join(lines)
        assert "## Question" in text and "## Your answer" in text and "| ? |" in text
        assert "5 points, graded by hand" in text


def test_a_copy_has_a_question_file_for_each_assigned_part_only(copy):
    assert sorted(p.name for p in (copy / "derivations").iterdir()) == ["linear.md",
                                                                        "softmax.md"]
    manifest = json.loads((copy / "assignment.json").read_text())
    assert manifest["derivation_points"] == 3
    readme = (copy / "README.md").read_text()
    assert "## Written derivations" in readme and "worth 3 points each" in readme
    assert (copy / "derivations" / "softmax.md").read_text() == template("softmax", 3)


def test_an_unchanged_template_is_not_answered_and_an_answer_is_read_back(copy, tmp_path):
    linear, softmax = read_answers(copy, ASSIGNED, 3)
    assert linear.answered and ANSWER in linear.text and PLACEHOLDER not in linear.text
    assert linear.text.startswith("## Shapes")           # the student's part, not the question
    assert not softmax.answered and softmax.text == NOT_ANSWERED
    folder = tmp_path / "derivations"
    folder.mkdir()
    (folder / "gelu.md").write_text("\r\n".join(template("gelu", 7).split("\n")) + "\n\n")
    assert not read_answer(folder, "gelu").answered        # line ends and points alone differ
    assert read_answer(folder, "dropout").text == (f"{NOT_ANSWERED}: no derivations/dropout.md "
                                                   "was submitted")
    (folder / "adam.md").symlink_to(copy / "derivations" / "linear.md")
    assert not read_answer(folder, "adam").answered       # a link is not the student's file
    (folder / "adamw.md").write_text("x" * (derivations.MAX_CHARS + 10))
    assert read_answer(folder, "adamw").text.endswith("characters]")


def test_points_of_a_derivation_are_a_whole_number(tmp_path):
    with pytest.raises(InputError, match="--derivation-points"):
        make(tmp_path / "c", parts=["linear"], derivation_points=-1)
    assert not (tmp_path / "c").exists()


@pytest.fixture(scope="module")
def graded(copy, tmp_path_factory):
    """`assignment grade` of the copy with --json and --gradescope."""
    out = tmp_path_factory.mktemp("graded")
    said = []
    status = grade_command([copy], json_out=out / "grade.json", gradescope_out=out / "gs.json",
                           out=said.append, seed=3)
    return status, said, out


def test_the_grade_json_carries_each_derivation_apart_from_the_points(graded):
    status, said, out = graded
    data = json.loads((out / "grade.json").read_text())
    assert status == 0 and data["points"] == data["max_points"] == 20     # the code's alone
    linear, softmax = data["derivations"]
    assert (linear["part"], linear["status"], linear["answered"]) == ("linear", "answered", True)
    assert ANSWER in linear["text"] and linear["max_points"] == 3
    assert linear["graded"] == "by hand"
    assert (softmax["status"], softmax["text"]) == (NOT_ANSWERED, NOT_ANSWERED)
    assert data["derivation_max_points"] == 6
    assert any(line.startswith("derivations: 1 of 2 answered, graded by hand (6 points")
               and line.endswith("not answered: softmax") for line in "\n".join(said).split("\n"))


def derivation_tests(results):
    return {t["name"]: t for t in results["tests"] if "derivation" in t.get("tags", [])}


def check_results(results):
    """Gradescope's results.json with the derivations as 0-of-0 tests, graded by hand."""
    tests = derivation_tests(results)
    assert sorted(tests) == ["linear/derivation (graded by hand)",
                             "softmax/derivation (graded by hand)"]
    linear, softmax = tests.values()
    assert (linear["score"], linear["max_score"], linear["output_format"]) == (0, 0, "md")
    assert "status" not in linear and ANSWER in linear["output"]
    assert linear["extra_data"] == {"derivation": True, "answered": True, "max_points": 3}
    assert softmax["output"].endswith(f"\n\n{NOT_ANSWERED}")
    assert not softmax["extra_data"]["answered"]
    assert results["score"] == sum(t["score"] for t in results["tests"]) == 20
    assert "graded by hand (6 points), apart from this score" in results["output"]


def test_gradescope_results_carry_the_answers_as_items_graded_by_hand(graded):
    check_results(json.loads((graded[2] / "gs.json").read_text()))


def test_the_autograder_finds_the_derivations_beside_the_package(copy, tmp_path):
    """On a fake /autograder layout: a whole copy submitted inside a zip's extra folder."""
    root = tmp_path / "autograder"
    (root / "source").mkdir(parents=True)
    (root / "source" / "numpy_transformer").symlink_to(Path(derivations.__file__).parents[3])
    manifest = json.loads((copy / "assignment.json").read_text())
    (root / "source" / "autograder.json").write_text(json.dumps(
        {"format": 1, "parts": ASSIGNED, "timeout": 60, "seed": 3, "visibility": {},
         "manifest": manifest}))
    shutil.copytree(copy, root / "submission" / "hw")
    check_results(grade_submission(root))


def test_derivations_are_found_beside_the_package_or_else_the_shallowest(tmp_path):
    for folder in ("a/numpy_transformer", "a/derivations", "b/c/derivations", "d/derivations"):
        (tmp_path / folder).mkdir(parents=True)
    assert find_derivations(tmp_path, tmp_path / "a" / "numpy_transformer") == \
        tmp_path / "a" / "derivations"
    shutil.rmtree(tmp_path / "a" / "derivations")
    assert find_derivations(tmp_path, tmp_path / "a" / "numpy_transformer") == \
        tmp_path / "d" / "derivations"
    assert find_derivations(tmp_path / "a", tmp_path / "a" / "numpy_transformer") is None


def test_the_class_report_shows_each_derivation_beside_the_code(copy, tmp_path):
    """Two students: ada answered linear's question, bob (her copy, templates as they came)
    none; the page shows ada's answer (escaped) beside her code, and bob's marked."""
    pytest.importorskip("copydetect")
    pytest.importorskip("matplotlib")
    ada = shutil.copytree(copy, tmp_path / "ada")
    bob = shutil.copytree(copy, tmp_path / "bob")
    shutil.rmtree(bob / "derivations")
    make(tmp_path / "fresh", parts=ASSIGNED, derivation_points=3)
    shutil.copytree(tmp_path / "fresh" / "derivations", bob / "derivations")
    grade_command([ada, bob], csv_out=tmp_path / "class.csv", report=tmp_path / "summary",
                  parts=["linear"], out=lambda line: None, seed=3)
    page = (tmp_path / "summary" / "index.html").read_text()
    assert "<h2>Written derivations (graded by hand)</h2>" in page
    assert "<td>linear</td><td>1 of 2</td><td>bob</td>" in page
    assert "&lt;b&gt;and&lt;/b&gt;" in page and "<b>and</b>" not in page     # escaped
    assert "ada: answered; code 10/10" in page and "bob: NOT ANSWERED; code 10/10" in page
    assert page.count('<td class="pair unanswered">') == 1                   # bob's, marked
    assert 'self.grads[&quot;weight&quot;]' in page                          # ada's code
    data = json.loads((tmp_path / "class.json").read_text())
    assert [s["derivations"][0]["answered"] for s in data["students"]] == [True, False]
