"""lesson_needs: the modules a lesson imports under `except ImportError` (it runs without them,
its cells saying "skipped"), found by reading its code cells, never by running them."""

import json
from pathlib import Path

import pytest

from numpy_transformer.course.lessons.needs import (how_to_install, missing_modules,
                                                   optional_modules)

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def notebook(tmp_path, *sources):
    """A notebook of one code cell per source (and a markdown cell that is not read)."""
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "try: import markdown_only"}]
    cells += [{"cell_type": "code", "metadata": {}, "source": s, "outputs": [],
               "execution_count": None} for s in sources]
    path = tmp_path / "01_lesson.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                "nbformat_minor": 5}))
    return path


def test_lesson_16_needs_torch_and_lesson_11_cupy():
    assert optional_modules(next(NOTEBOOKS.glob("16_*.ipynb"))) == ["torch"]
    assert optional_modules(next(NOTEBOOKS.glob("11_*.ipynb"))) == ["cupy"]
    assert optional_modules(next(NOTEBOOKS.glob("01_*.ipynb"))) == []


def test_only_imports_whose_import_error_is_caught_count(tmp_path):
    path = notebook(
        tmp_path,
        "%matplotlib inline\nimport numpy as np\n!echo hi\n"
        "try:\n    import torch.nn.functional as F\n    import torch\nexcept ImportError:\n"
        "    torch = None",
        "def gpu():\n    try:\n        from cupy import cuda\n"
        "    except (ValueError, ModuleNotFoundError):\n        return None",
        "try:\n    import scipy\nexcept ValueError:\n    pass",          # not an ImportError
        "try:\n    from numpy_transformer import layers\nexcept ImportError:\n    pass",
        "%%bash\necho not python")
    assert optional_modules(path) == ["torch", "cupy"]


def test_missing_modules_are_those_not_installed(tmp_path):
    path = notebook(tmp_path, "try:\n    import json, no_such_module_xyz\nexcept ImportError:"
                              "\n    pass")
    assert optional_modules(path) == ["json", "no_such_module_xyz"]
    assert missing_modules(path) == ["no_such_module_xyz"]


@pytest.mark.parametrize("module, command", [
    ("torch", "pip install torch==2.13.0"),
    ("cupy", 'pip install "numpy_transformer[gpu]" (from a clone: pip install -e ".[gpu]") on a '
             'machine with an NVIDIA GPU'),
    ("tqdm", "pip install tqdm")])
def test_how_to_install(module, command):
    assert how_to_install(module) == command
