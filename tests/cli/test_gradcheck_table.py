"""docs/gradcheck.md's table is what `python -m numpy_transformer gradcheck --markdown` prints.

The page's table is the command's Markdown output (seed 0), pasted as printed. Here the report
runs as the command runs it (numpy_transformer/tools/gradcheck_report.py) and the table must be
the one it prints, row for row and every digit shown: the same cases, in its order, under the
names it prints, with the same errors (2 significant digits, MARKDOWN_DIGITS: those this
machine's runs reproduce); and the page's count of cases must be the report's.

The digits are compared under the NumPy backend only: under NUMPY_TRANSFORMER_BACKEND=simulator
(the suite's second pass) the cases with dropout give other errors (6 of 40), so there only the
cases and their order are compared.
"""

import re
from pathlib import Path

import pytest

from doors import nt, ok
from numpy_transformer.backend import get_backend
from numpy_transformer.tools.gradcheck_report import run_report

PAGE = Path(__file__).resolve().parents[2] / "docs" / "gradcheck.md"
ROW = re.compile(r"^\| (.+?) \| (.+?) \|$")
NUMPY_ONLY = pytest.mark.skipif(
    get_backend() != "numpy", reason="the table is the report NumPy prints; under the "
    "simulator the cases with dropout give other errors")


@pytest.fixture(scope="module")
def report():
    """(whether every case passed, the lines of `gradcheck --markdown`) of the report."""
    lines = []
    passed = run_report(out=lines.append, markdown=True)
    return passed, lines


def table():
    """The page's table: its lines, header included."""
    return [line for line in PAGE.read_text("utf-8").splitlines() if line.startswith("| ")]


def names(lines):
    return [ROW.match(line).group(1) for line in lines[2:]]


@pytest.mark.slow          # the whole report, 17 s: CI's slow pass
def test_the_table_lists_exactly_the_cases_the_report_runs(report):
    passed, printed = report
    assert passed and len(printed) - 2 >= 40
    assert table()[:2] == printed[:2] == ["| case | max relative error |", "| --- | ---: |"]
    assert names(table()) == names(printed)
    text = " ".join(PAGE.read_text("utf-8").split())
    assert f"for each of its {len(printed) - 2} cases" in text
    assert "gradcheck --markdown" in text


@pytest.mark.slow
@NUMPY_ONLY
def test_every_digit_of_the_table_is_what_the_command_prints(report):
    for shown, now in zip(table(), report[1], strict=True):
        assert shown == now
    assert all(re.fullmatch(r"\d\.\de-\d\d", ROW.match(row).group(2)) for row in table()[2:])


@pytest.mark.slow
@NUMPY_ONLY
def test_the_command_prints_the_pages_rows(tmp_path):
    """`gradcheck --markdown --layers-only` as a user types it: the page's rows of the
    layers and stacks, and nothing else."""
    out = ok(nt("gradcheck", "--markdown", "--layers-only", cwd=tmp_path)).splitlines()
    assert len(out) > 30 and out == table()[:len(out)]
