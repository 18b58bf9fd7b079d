"""What makes a student copy work on its own: installable, and lessons that use it.

    finish_copy(out)   writes out/pyproject.toml (`pip install -e .` in the copy installs
                       the copy's numpy_transformer) and opens every lesson's first code
                       cell with three lines that put the copy first on sys.path and print
                       "numpy_transformer from <path>", the package the lesson uses

The lessons' kernel starts in notebooks/, so the copy is the folder above it (found
by its assignment.json); a lesson run elsewhere, with the copy installed, prints
where that package is.
"""

import json
from pathlib import Path

PYPROJECT = '''[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

# A student copy of numpy_transformer: `pip install -e .` here (in a virtual environment
# of its own) makes `import numpy_transformer` this copy, your code included.
[project]
name = "numpy_transformer"
version = "0.1.0+student"
description = "A student copy of numpy_transformer: the assignment's backward passes to write."
requires-python = ">=3.10"
dependencies = ["numpy>=1.24"]

[project.optional-dependencies]
notebooks = ["jupyter", "matplotlib>=3.6", "tqdm>=4.60"]

[tool.setuptools.packages.find]
include = ["numpy_transformer*"]

[tool.setuptools.package-data]
"*" = ["*.json", "*.npz", "*.txt", "*.md"]
'''

FIRST_LINES = [
    "import pathlib, sys                       # this student copy's package first, and which\n",
    "sys.path[:0] = [str(p) for p in (pathlib.Path.cwd(), pathlib.Path.cwd().parent)\n",
    "                if (p / \"assignment.json\").is_file()]\n",
    "import numpy_transformer; print(\"numpy_transformer from\", "
    "pathlib.Path(numpy_transformer.__file__).parent)\n",
]


def open_lesson(path):
    """Put FIRST_LINES at the top of the lesson's first code cell (after its % magics)."""
    book = json.loads(path.read_text(encoding="utf-8"))
    cell = next((c for c in book.get("cells", []) if c.get("cell_type") == "code"), None)
    if cell is None:
        return
    source = cell.get("source", [])
    lines = "".join(source if isinstance(source, list) else [source]).splitlines(True)
    magics = 0
    while magics < len(lines) and lines[magics].startswith("%"):
        magics += 1
    cell["source"] = lines[:magics] + FIRST_LINES + lines[magics:]
    path.write_text(json.dumps(book, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def finish_copy(out):
    """The copy at `out` made installable, its lessons made to use it."""
    out = Path(out)
    (out / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    for path in sorted((out / "notebooks").glob("[0-9]*.ipynb")):
        open_lesson(path)
