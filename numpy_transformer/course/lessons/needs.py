"""What a lesson can use but runs without: the modules it imports under `except ImportError`.

Lesson 16 compares against PyTorch: `try: import torch` / `except ImportError: torch = None`,
and without PyTorch each comparison prints "skipped". Built into the website here, such a page
would show skipped cells; `missing_modules` finds them beforehand so the build can say so.

    optional_modules(path)     -> ["torch"]: top-level modules imported inside a `try` whose
                                  `except` catches ImportError (or ModuleNotFoundError)
    missing_modules(path)      -> those of them not installed here
    how_to_install(module)     -> the pip command that brings one
"""

import ast
from importlib.util import find_spec

from ...system.files import read_notebook_cells

INSTALLS = {"torch": "pip install torch==2.13.0",
            "cupy": 'pip install "numpy_transformer[gpu]" (from a clone: pip install -e ".[gpu]") '
                    'on a machine with an NVIDIA GPU'}
CATCHES = {"ImportError", "ModuleNotFoundError", "Exception"}


def optional_modules(path):
    """The top-level modules a notebook imports where an ImportError is caught, in order."""
    found = []
    for cell in read_notebook_cells(path):
        if cell.get("cell_type") != "code":
            continue
        for node in ast.walk(_parse("".join(cell.get("source", "")))):
            if isinstance(node, ast.Try) and any(map(_catches_import_error, node.handlers)):
                found += _imported(node.body)
    return list(dict.fromkeys(found))


def missing_modules(path):
    """The optional modules of a notebook that are not installed here."""
    return [name for name in optional_modules(path) if find_spec(name) is None]


def how_to_install(module):
    """The pip command that installs `module` ("pip install NAME" unless known otherwise)."""
    return INSTALLS.get(module, f"pip install {module}")


def _parse(source):
    """A cell's code as a tree; IPython lines (%magic, !shell) are blanked, and a cell that is
    still not Python (%%bash...) is an empty tree."""
    lines = ["" if line.lstrip().startswith(("%", "!")) else line
             for line in source.splitlines()]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return ast.Module(body=[], type_ignores=[])


def _catches_import_error(handler):
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return handler.type is None or any(isinstance(k, ast.Name) and k.id in CATCHES for k in kinds)


def _imported(body):
    names = []
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Import):
            names += [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module.split(".")[0])
    return [name for name in names if name != "numpy_transformer"]
