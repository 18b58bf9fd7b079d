"""What a student copy's text becomes where it stated a stubbed part's formula (strip.py).

- A lesson's paragraph stating a formula gives way to its own question, a hidden line
  `<!-- student: ... -->` in it (else to one sentence saying what to derive); a question
  naming a part replaces its paragraph whenever that part is stubbed, formula or not; an
  empty one leaves nothing; questions of paragraphs that stay are not shown.
- A docstring block is judged whole (a formula wrapped over two lines goes) and the
  sentence in its place keeps its heading ("Table: derive it yourself").
- An exercise's hint that states a formula names the part instead; a table row loses
  only the cell that states one.
"""

from numpy_transformer.course.copies.make import PACKAGE, make
from numpy_transformer.course.copies.markers import Region
from numpy_transformer.course.parts import LESSONS
from numpy_transformer.course.copies.strip import (strip_inline, strip_prose, strip_source,
                                                       where_hint)

LESSON = """## The backward

Each output row is a copy of one row of W. So the gradient of row v collects the upstream
gradients of every position that looked it up.
<!-- student: What is the gradient of row v? -->

A token used twice gets both contributions.
<!-- student embedding: Careful with a token used twice. -->

We check it in float64.
<!-- student: This question is never shown. -->

$$dx = dy\\,W^\\top$$
<!-- student: -->

The end.""".split("\n")


def test_a_paragraph_stating_a_formula_gives_way_to_its_question():
    out = strip_prose(LESSON, ["embedding", "linear"])
    assert out == ["## The backward", "", "What is the gradient of row v?", "",
                   "Careful with a token used twice.", "", "We check it in float64.", "",
                   "The end."]


def test_a_named_question_waits_for_its_part_and_no_question_shows_unasked():
    out = strip_prose(LESSON, ["linear"])
    assert "A token used twice gets both contributions." in out
    assert "What is the gradient of row v?" not in out           # embedding is not stubbed
    assert not any("<!--" in line for line in out)


def test_a_paragraph_without_a_question_says_what_to_derive():
    out = strip_prose(["Multiply dout by the transposed weight", "to get dx."], ["linear"])
    assert out == ["*Derive this yourself (assignment part linear: this step is left out of "
                   "the student copy).*"]


def test_a_docstring_block_goes_whole_and_keeps_its_heading():
    source = '''def table(n, d):
    """The table of the paper.

    Table: PE(pos, 2i) = sin(pos /
        10000^(2i/D)).

    Columns: an odd D gets one more sine column.
    """
'''
    out = strip_source(source, ["positional_encoding"])
    assert (f"    Table: derive it yourself (assignment part positional_encoding: "
            f"{LESSONS['positional_encoding']}).") in out
    assert "10000" not in out and "Columns: an odd D gets one more sine column." in out


def test_a_hint_stating_a_formula_names_its_part_and_a_table_loses_one_cell():
    region = Region("", "lesson.ipynb", 0, 3, "", "# HINT: p *= 1 - lr * wd", "step")
    region.hint = "p *= 1 - lr * wd"
    assert where_hint(region, ["adamw"]) == (
        f"its hint is left out of this copy: it states the answer of assignment part adamw "
        f"({LESSONS['adamw']})")
    assert strip_inline("| 07 | the loss and its (p - onehot) / N gradient | 3 |",
                        ["cross_entropy"]) == "| 07 | (derive it) | 3 |"


def test_no_copy_shows_a_lessons_hidden_questions(tmp_path):
    """Every lesson holds some; a copy stubbing one part asks those that replace its
    paragraphs and holds no other."""
    assert any("<!-- student" in book.read_text(encoding="utf-8")
               for book in (PACKAGE.parent / "notebooks").glob("*.ipynb"))
    make(tmp_path / "copy", parts=["linear"])
    assert not [book.name for book in (tmp_path / "copy" / "notebooks").glob("*.ipynb")
                if "<!-- student" in book.read_text(encoding="utf-8")]
