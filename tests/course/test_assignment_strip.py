"""What a student copy's text becomes where it stated a stubbed part's formula (strip.py).

- A lesson's paragraph stating a formula gives way to its own question, a hidden line
  `<!-- student: ... -->` in it (else to one sentence saying what to derive); a question
  naming a part replaces its paragraph whenever that part is stubbed, formula or not; an
  empty one leaves nothing; questions of paragraphs that stay are not shown.
- A docstring block is judged whole (a formula wrapped over two lines goes) and the
  sentence in its place keeps its heading ("Table: derive it yourself").
- An exercise's hint that states a formula names the part instead; a table row loses
  only the cell that states one.
- A lesson's region or question may name several parts (lesson 4's residual backward
  answers both stacks): a copy stubs or asks it when it stubs any of them, its stub naming
  a part the copy assigns; a region of the package names one part (a graded body).
"""

import json

import pytest


from numpy_transformer.course.copies.make import PACKAGE, make, notebook_regions
from numpy_transformer.course.copies.markers import (MarkerError, Region, find_regions,
                                                     regions_in_source, stubbed_as)
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


TWO = """def block(dy):
    # BEGIN SOLUTION encoder_stack decoder_stack
    # HINT: both paths
    dx = dy + 1
    # END SOLUTION encoder_stack decoder_stack
    return dx
"""


def test_a_lessons_region_may_name_several_parts_and_is_stubbed_for_any():
    [region] = regions_in_source(TWO, "04_x.ipynb cell 11")
    assert region.part == "encoder_stack" and region.parts == ("encoder_stack", "decoder_stack")
    assert stubbed_as(region, ["linear"]) is None
    assert stubbed_as(region, ["decoder_stack"]).parts == ("decoder_stack",)   # its stub's part
    assert stubbed_as(region, ["decoder_stack", "encoder_stack"]).part == "encoder_stack"
    exercise = regions_in_source(TWO.replace(" encoder_stack decoder_stack", ""))[0]
    assert exercise.parts == () and stubbed_as(exercise, []) is exercise


def test_a_package_region_names_one_part_and_a_lesson_only_known_ones(tmp_path):
    (tmp_path / "layers").mkdir()
    (tmp_path / "layers" / "block.py").write_text(TWO)
    with pytest.raises(MarkerError, match="names parts encoder_stack, decoder_stack"):
        find_regions(tmp_path)
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": TWO.replace("decoder_stack", "decoder")}
    (tmp_path / "books").mkdir()
    (tmp_path / "books" / "04_x.ipynb").write_text(json.dumps({"cells": [cell]}))
    with pytest.raises(MarkerError, match="unknown part 'decoder'"):
        notebook_regions(tmp_path / "books")


def test_a_question_naming_two_parts_replaces_its_paragraph_for_either():
    lines = ["In both, x feeds two paths and the two gradients add.",
             "<!-- student encoder_stack decoder_stack: What becomes of the two gradients? -->"]
    for parts in (["encoder_stack"], ["decoder_stack"]):
        assert strip_prose(lines, parts) == ["What becomes of the two gradients?"]
    assert strip_prose(lines, ["linear"]) == lines[:1]


def test_a_copy_stubbing_only_the_decoder_stack_asks_lesson_4s_residual_backward(tmp_path):
    """Lesson 4's residual backward (cell 11) and its paragraphs (cell 10) answer both
    stacks: a copy that stubs only decoder_stack stubs and asks them too."""
    make(tmp_path / "copy", parts=["decoder_stack"])
    book = next((tmp_path / "copy" / "notebooks").glob("04_*.ipynb"))
    cells = ["".join(c["source"]) for c in json.loads(book.read_text(encoding="utf-8"))["cells"]]
    assert "exit_backward(dy)" not in cells[11] and "enter_backward(ffn" not in cells[11]
    assert "[assignment part decoder_stack]" in cells[11]
    assert "the two gradients **add**" not in cells[10]
    assert "what becomes of their gradients?" in cells[10]
    assert "Given $dy$, what is $dx$ in each" in cells[10]
