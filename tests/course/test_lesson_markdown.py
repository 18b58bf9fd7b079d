"""The lessons' markdown renders as written: a student copy's hidden question
(`<!-- student ...: -->`) inside a bulleted list is indented as the item's text, so the site
and Jupyter show one list, not two (an HTML comment at the margin ends the list)."""

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("[0-9][0-9]_*.ipynb"))
ITEM = re.compile(r"(\s*)([-*+]|\d+\.) ")


def comments_splitting_a_list(path):
    """(cell, line) of each comment at the margin between two items of one list."""
    found = []
    for c, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        lines = "".join(cell["source"]).split("\n")
        in_list = False
        for i, line in enumerate(lines):
            if ITEM.match(line):
                in_list = True
            elif not line.strip():
                in_list = False
            elif line.startswith("<!--") and in_list and i + 1 < len(lines) \
                    and ITEM.match(lines[i + 1]):
                found.append((c, i))
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_a_hidden_question_does_not_split_a_list(path):
    assert comments_splitting_a_list(path) == []


def test_an_indented_comment_keeps_the_list_whole():
    mistune = pytest.importorskip("mistune")       # the renderer of nbconvert's pages
    split = "- one\n<!-- student: - q -->\n- two\n"
    whole = "- one\n  <!-- student: - q -->\n- two\n"
    assert mistune.html(split).count("<ul>") == 2 and mistune.html(whole).count("<ul>") == 1
