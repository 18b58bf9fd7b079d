"""The README stays short enough to scan, and everything it moved to docs/ is reachable from it.

README.md holds at most 220 lines and opens with a table of contents whose anchors are its own
headings (GitHub's anchors: lowercase, punctuation dropped, spaces as hyphens). Every link of
the README and of the docs/ pages to a file of this repository resolves, anchor included; every
docs/ page is linked from the README, and every section the README once held is a heading of
the README or of a page it links.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
LINK = re.compile(r"\]\(([^)\s]+)\)")
MOVED = ["The main job", "Nothing you made is lost", "Errors", "Every command", "Real data",
         "The paper's recipe: subwords, shared embeddings, token batches, averaging, beam search",
         "One training step, by hand", "Speed", "Data-parallel training on MPI", "On a GPU",
         "Every backward, checked", "Checkpoints are safe to load", "Coming from PyTorch",
         "Making and grading a student copy", "Gradescope", "How BLEU is scored"]


def prose(path):
    """The page's text outside its fenced code blocks."""
    return re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.M | re.S)


def headings(path, levels="#{1,6}"):
    return re.findall(rf"^{levels} (.+?)\s*$", prose(path), flags=re.M)


def slug(heading):
    """GitHub's anchor of a heading: lowercase, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def anchors(path):
    """The anchor of every heading of the page (a repeated one gets -1, -2, ...)."""
    found = []
    for heading in headings(path):
        found.append(slug(heading) if slug(heading) not in found
                     else f"{slug(heading)}-{found.count(slug(heading))}")
    return found


def links(path):
    return [link for link in LINK.findall(prose(path)) if not re.match(r"\w+:", link)]


def test_the_readme_has_at_most_220_lines():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 220


def test_the_readme_opens_with_a_table_of_contents_of_its_own_headings():
    text = prose(README)
    contents = text.split("\n## Contents\n", 1)[1].split("\n## ", 1)[0]
    listed = LINK.findall(contents)
    assert len(listed) >= 5 and all(link.startswith("#") for link in listed), listed
    sections = [slug(h) for h in headings(README, "##") if h != "Contents"]
    assert [link[1:] for link in listed] == sections
    assert set(sections) <= set(anchors(README))


@pytest.mark.parametrize("page", [README, ROOT / "SECURITY.md", *DOCS],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_to_a_file_of_the_repository_resolves(page):
    for link in links(page):
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        assert target.exists(), f"{page.name}: {link} names no file"
        if anchor and target.suffix == ".md":
            assert anchor in anchors(target), f"{page.name}: {link}: no such heading"


def test_every_docs_page_is_linked_from_the_readme():
    linked = {(ROOT / link.partition("#")[0]).resolve() for link in links(README)}
    assert [page.name for page in DOCS if page.resolve() not in linked] == []


def test_every_section_the_readme_moved_is_a_heading_of_a_page_it_links():
    linked = [ROOT / link.partition("#")[0] for link in links(README)
              if link.partition("#")[0].endswith(".md")]
    shown = {h for page in [README, *linked] for h in headings(page)}
    assert [section for section in MOVED if section not in shown] == []
