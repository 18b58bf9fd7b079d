"""docs/gradcheck.md's table is what `python -m numpy_transformer gradcheck` prints.

The page quotes the report's largest relative error for every case. Here the report runs (seed
0, as the command does; numpy_transformer/tools/gradcheck_report.py) and the table must list
exactly the cases it runs, in its order, under the names it prints, each error within a factor
of 10 of the one measured now (finite differences in float64 round differently on other BLAS
builds, never by a factor of 10), and the page's count of cases must be the report's.
"""

import re
from pathlib import Path

import pytest

from numpy_transformer.backend import get_backend
from numpy_transformer.tools.gradcheck_report import run_report

PAGE = Path(__file__).resolve().parents[2] / "docs" / "gradcheck.md"
LINE = re.compile(r"^(?:ok  |FAIL) (.*?)\s+max rel err\s+(\S+)\s")
ROW = re.compile(r"^\| (.+?) \| (\d\.\d+e[-+]\d+) \|$", re.M)


@pytest.fixture(scope="module")
def report():
    """(whether every case passed, [(case name, max relative error)]) of the report."""
    lines = []
    passed = run_report(out=lines.append)
    rows = [m.groups() for m in map(LINE.match, lines) if m]
    return passed, [(name.strip(), float(error)) for name, error in rows]


def table():
    """[(case name, max relative error)] of the page's table."""
    return [(name, float(error)) for name, error in ROW.findall(PAGE.read_text("utf-8"))]


def test_the_table_lists_exactly_the_cases_the_report_runs(report):
    passed, measured = report
    assert passed and len(measured) >= 40
    assert [name for name, _ in table()] == [name for name, _ in measured]
    text = " ".join(PAGE.read_text("utf-8").split())
    assert f"for each of its {len(measured)} cases" in text


@pytest.mark.skipif(get_backend() != "numpy", reason="the table is the report NumPy prints; "
                    "another array module draws other inputs, so other round-off errors")
def test_every_error_in_the_table_is_within_a_factor_of_10_of_the_report(report):
    for (name, printed), (_, now) in zip(table(), report[1]):
        assert printed / 10 <= now <= printed * 10, (name, printed, now)
