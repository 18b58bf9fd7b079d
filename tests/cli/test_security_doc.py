"""SECURITY.md cites only tests that exist.

Each row of SECURITY.md names the tests that prove its guarantee, as `tests/<concern>/test_x.py`,
`tests/<concern>/test_x.py::test_name`, or a bare `test_name` that belongs to the last file named
before it in the same cell (any test file when none is). Every file named must exist and
every test must be a `def test_name` in its file, so the document cannot cite a test that
was renamed or removed.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
CITED = re.compile(r"`(tests/(?:\w+/)?test_\w+\.py)(?:::(test_\w+))?[^`]*`|`(test_\w+)`")


def citations():
    """[(row number, file or None, test name or None)] of every test SECURITY.md cites."""
    found = []
    rows = [line for line in (ROOT / "SECURITY.md").read_text(encoding="utf-8").splitlines()
            if line.startswith("| ") and not line.startswith("| ---")][1:]   # no header
    for number, row in enumerate(rows, 1):
        cells = row.strip("|").split(" | ")
        for cell in cells[2:]:                    # "proved by" (cells[0:2] describe)
            file = None
            for match in CITED.finditer(cell):
                file = match[1] or file
                found.append((number, file, match[2] or match[3]))
    return found


def defined_in(path):
    return set(re.findall(r"^def (test_\w+)\(", path.read_text(encoding="utf-8"), re.M))


def test_security_md_cites_tests():
    assert len(citations()) > 40                  # the parser finds the document's rows


@pytest.mark.parametrize("row, file, name", citations())
def test_every_test_security_md_cites_exists(row, file, name):
    if file is not None:
        assert (ROOT / file).is_file(), f"SECURITY.md row {row} cites {file}, which is gone"
    if name is None:
        return
    where = [ROOT / file] if file else sorted(TESTS.glob("*/test_*.py"))
    assert any(name in defined_in(path) for path in where), (
        f"SECURITY.md row {row} cites {name}, which is not a test in {file or 'tests/'}")
