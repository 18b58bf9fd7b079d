"""The lessons call a layer through its front door, `layer(x)` (Module.__call__: check_inputs,
then forward), and call `.forward(` only where a cell shows the body of a forward: a Module's
own forward calling its parts, or a model's forward replayed stage by stage. Each such call is
counted here, lesson by lesson, so that direct calls, which skip every input check (a negative
token id wraps to the table's last row), do not creep back."""

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
LESSONS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))

# The `.forward(` calls each lesson keeps, every one in a cell that shows a forward's body.
KEPT = {
    "04": 1,   # ffn.forward(h) between a SublayerConnection's enter and exit: EncoderBlock.forward's body
    "06": 6,   # the stages of Transformer.forward, one by one (src_embed, src_pos, encoder, tgt_embed, ...)
    "07": 1,   # LossOfLogits.forward calls its loss's forward
    "08": 2,   # TiedModel.forward calls its embedding's and its projection's forward
}


def forward_calls(book):
    """[(cell index, line)] of every `.forward(` in the notebook's code cells, once per call."""
    cells = json.loads(book.read_text(encoding="utf-8"))["cells"]
    return [(i, line.strip()) for i, cell in enumerate(cells) if cell["cell_type"] == "code"
            for line in "".join(cell["source"]).split("\n")
            for _ in re.finditer(r"\.forward\(", line)]


def test_the_lessons_are_found():
    assert len(LESSONS) >= 17 and set(KEPT) <= {book.name[:2] for book in LESSONS}


@pytest.mark.parametrize("book", LESSONS, ids=lambda book: book.name[:2])
def test_a_lesson_calls_forward_only_where_it_shows_the_body(book):
    calls, kept = forward_calls(book), KEPT.get(book.name[:2], 0)
    assert len(calls) <= kept, (
        f"{book.name} calls .forward( {len(calls)} times, {kept} allowed: call a layer as "
        "layer(x) (its input checks, then forward), keeping .forward( only in a cell that "
        "shows a forward's body (then raise KEPT here, saying why):\n"
        + "\n".join(f"  cell {i}: {line}" for i, line in calls))


def test_the_lessons_keep_no_more_than_the_counted_calls():
    total = sum(len(forward_calls(book)) for book in LESSONS)
    assert total <= sum(KEPT.values()) == 10
