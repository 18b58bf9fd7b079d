"""backend: default dtype, backend switching, to_numpy, and the "array math through xp" rule."""

import ast
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from numpy_transformer import backend
from numpy_transformer.backend import (default_dtype, get_backend, get_default_dtype, set_backend,
                                       set_default_dtype, to_numpy, xp)

from doors import raises_naming

PACKAGE = Path(backend.__file__).resolve().parent


@pytest.fixture
def restore_dtype():
    saved = get_default_dtype()
    yield
    set_default_dtype(saved)


@pytest.mark.parametrize("dtype", [np.float64, "float64", np.dtype("float64")])
def test_set_default_dtype_accepts_float64(restore_dtype, dtype):
    set_default_dtype(dtype)
    assert get_default_dtype() == np.float64


@pytest.mark.parametrize("dtype", ["int32", np.int64, bool, "junk", "not a dtype"])
def test_set_default_dtype_rejects_non_floats(restore_dtype, dtype):
    before = get_default_dtype()
    with pytest.raises(TypeError, match="dtype"):
        set_default_dtype(dtype)
    assert get_default_dtype() == before


def test_default_dtype_is_float32_and_context_manager_restores():
    assert get_default_dtype() == np.float32
    with default_dtype("float64") as dt:
        assert dt == np.float64 and get_default_dtype() == np.float64
    assert get_default_dtype() == np.float32


@pytest.fixture
def restore_backend():
    """Tests that switch the backend put back the one the suite runs on."""
    saved = get_backend()
    yield
    set_backend(saved)


numpy_only = pytest.mark.skipif(get_backend() != "numpy", reason="the suite runs on a device")


@numpy_only
def test_xp_is_numpy_by_default():
    assert get_backend() == "numpy"
    assert xp.zeros is np.zeros and xp.float64 is np.float64
    assert "numpy" in repr(xp)


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed")
def test_cupy_without_cupy_is_a_helpful_import_error(restore_backend):
    before = get_backend()
    with raises_naming(ImportError, "CuPy", "pip install"):
        set_backend("cupy")
    assert get_backend() == before


def test_unknown_backend_raises(restore_backend):
    before = get_backend()
    with raises_naming(ValueError, "backend", "('numpy', 'cupy', 'simulator')", "'torch'"):
        set_backend("torch")
    assert get_backend() == before


def test_set_backend_numpy_is_a_no_op(restore_backend):
    set_backend("numpy")
    assert get_backend() == "numpy" and xp.ones is np.ones


def test_to_numpy():
    a = np.arange(3.0)
    assert to_numpy(a) is a
    out = to_numpy([1.0, 2.0])
    assert isinstance(out, np.ndarray) and out.tolist() == [1.0, 2.0]


# The compute code must do its array math through `xp`, so that it runs on CuPy
# unchanged. NumPy may be imported only for the CPU random generator.

def compute_files():
    files = sorted((PACKAGE / "layers").glob("*.py")) + sorted((PACKAGE / "models").glob("*.py"))
    for name in ("losses", "optim", "module", "decoding"):
        files += [PACKAGE / f"{name}.py"] + sorted((PACKAGE / name).glob("*.py"))
    return [f for f in files if f.is_file()]


def numpy_violations(path, root=PACKAGE.parent):
    """'file:line: ...' for every use of NumPy other than `np.random...`."""
    tree = ast.parse(path.read_text(), filename=str(path))
    rel = path.relative_to(root)
    aliases, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases |= {a.asname or a.name for a in node.names if a.name == "numpy"}
            found += [f"{rel}:{node.lineno}: import {a.name}" for a in node.names
                      if a.name.startswith("numpy.") and a.name != "numpy.random"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "numpy":
            if node.module != "numpy.random" and any(a.name != "random" for a in node.names):
                found.append(f"{rel}:{node.lineno}: from {node.module} import ...")
    bases = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in aliases and node.attr != "random"):
            found.append(f"{rel}:{node.lineno}: {node.value.id}.{node.attr}")
        elif isinstance(node, ast.Name) and node.id in aliases and id(node) not in bases:
            found.append(f"{rel}:{node.lineno}: bare use of {node.id}")
    return sorted(found, key=lambda v: int(v.split(":")[1]))


def test_scanner_catches_numpy_math(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import numpy as np\nfrom numpy import exp\nrng = np.random.default_rng(0)\n"
                     "def f(rng: np.random.Generator, x):\n    return np.exp(x) + np.float32(1)\n"
                     "g = np\n")
    assert [v.split(": ", 1)[1] for v in numpy_violations(probe, tmp_path)] == [
        "from numpy import ...", "np.exp", "np.float32", "bare use of np"]


def test_compute_code_uses_xp_not_numpy():
    files = compute_files()
    assert any(f.name == "linear.py" for f in files)
    violations = [v for f in files for v in numpy_violations(f)]
    assert not violations, ("array math must go through `xp` (NumPy only for np.random):\n  "
                            + "\n  ".join(violations))
