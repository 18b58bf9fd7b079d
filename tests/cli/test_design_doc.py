"""docs/design.md's tables are tested against the code: the line counts of "Reading the core"
and the core's size, every file a table names, and the course's rooms listing every file.

On a failure the message prints the row as it should read, so the table is updated by copying
it (`python -m pytest tests/cli/test_design_doc.py` prints every row that is off)."""

import fnmatch
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "numpy_transformer"
DESIGN = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
CODE = re.compile(r"`([^`]+)`")


def lines_of(path):
    return path.read_bytes().count(b"\n")


def table(heading):
    """The rows (lists of cells) of the first table after `heading`."""
    text = DESIGN[DESIGN.index(heading):]
    rows = [line for line in text.split("\n")[1:] if line.startswith("|")]
    first = text.split("\n").index(rows[0].rstrip("\n"))
    rows = []
    for line in text.split("\n")[first:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows[2:]                       # past the header and its rule


def files_of(cell, folder=""):
    """The files a cell names: a bare name takes the folder of the one before it."""
    found = []
    for name in CODE.findall(cell):
        if "/" in name:
            folder = name.rpartition("/")[0]
        elif folder:
            name = f"{folder}/{name}"
        found.append(name)
    return found


def test_reading_the_core_counts_the_lines_of_today():
    wrong = []
    for row in table("## Reading the core"):
        files = files_of(row[1])
        counts = " + ".join(str(lines_of(PACKAGE / f)) for f in files)
        if counts != row[2]:
            wrong.append(f"| {row[0]} | {row[1]} | {counts} | ...   (the table says {row[2]})")
    assert not wrong, "\n".join(wrong)


def test_the_cores_size_is_today_s():
    names = ["backend.py", "errors.py", "gradcheck.py", "gradcheck_cases.py", "kv_cache.py",
             "losses.py", "masks.py", "module.py", "validation.py", "version.py", "__init__.py"]
    files = [PACKAGE / n for n in names] + [p for folder in ("layers", "models", "optim")
                                            for p in sorted((PACKAGE / folder).glob("*.py"))]
    said = re.search(r"The core: ([\d,]+) lines in (\d+) files", DESIGN)
    today = f"{sum(map(lines_of, files)):,} lines in {len(files)} files"
    assert said and said.group(0) == f"The core: {today}", f"The core: {today}"


def test_every_file_the_tables_name_exists():
    tables = ["## Reading the core", "## Where each concern lives", "## The course"]
    missing = []
    for heading in tables:
        for row in table(heading):
            room = row[0].strip("`") if heading == "## The course" else ""
            for name in files_of(" ".join(row[1:2] if heading != "## Where each concern lives"
                                          else row[1:])):
                if not name.endswith(".py") or "<" in name or "*" in name:
                    continue
                candidates = [PACKAGE / "course" / room / name, PACKAGE / name, ROOT / name,
                              *(PACKAGE / folder / name for folder in
                                ("course", "training", "cli", "data", "checkpoint", "system",
                                 "tools", "testing", "decoding", "layers", "optim"))]
                if not any(c.is_file() for c in candidates):
                    missing.append(f"{heading}: {name}")
    assert not missing, missing


def test_the_course_table_lists_every_file_of_each_room():
    for row in table("## The course"):
        room = row[0].strip("`").rstrip("/")
        if not (PACKAGE / "course" / room).is_dir():
            continue
        listed = CODE.findall(row[1])
        here = {p.name for p in (PACKAGE / "course" / room).glob("*.py")} - {"__init__.py"}
        unlisted = {n for n in here if not any(fnmatch.fnmatch(n, pattern) for pattern in listed)}
        assert not unlisted, f"course/{room}/ holds {sorted(unlisted)}, not in design.md"


def test_the_style_section_holds():
    """design.md's "Style, as this code writes it": no `self.cache`, a test file per layer,
    no branch in Linear's graded body."""
    assert not [p for p in PACKAGE.rglob("*.py") if "self.cache " in p.read_text(encoding="utf-8")
                or "self.cache=" in p.read_text(encoding="utf-8")]
    layers = [p.stem for p in (PACKAGE / "layers").glob("*.py") if p.stem != "__init__"]
    assert [n for n in layers if not (ROOT / "tests" / "core" / f"test_{n}.py").is_file()] == []
    linear = (PACKAGE / "layers" / "linear.py").read_text(encoding="utf-8")
    assert "class TiedLinear(" in linear and "transposed" not in linear
