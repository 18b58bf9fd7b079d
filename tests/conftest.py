"""Shared fixtures: gradient checks run in float64, and the dtype is restored after.

The suite also runs on a device: `NUMPY_TRANSFORMER_BACKEND=simulator python -m pytest`
(a CPU stand-in as strict as CuPy, see numpy_transformer/testing/device_simulator.py) or
`=cupy` on a GPU. Then the `rng` fixture hands out device arrays, as the data
pipeline does, and NumPy's assertions compare on the host (`to_numpy` first):
the tests stay written in NumPy and the package's code meets only device arrays.
"""

import functools
import sys
from pathlib import Path

import numpy as np
import pytest

from numpy_transformer.backend import (get_backend, get_default_dtype, set_default_dtype,
                                       to_numpy, xp)

ON_DEVICE = get_backend() != "numpy"

# The tests live by concern in core/, library/, cli/ (the doors) and course/; the helpers they
# share (doors.py: running commands as a user does) stay here. This folder and those four are
# importable from every test (a few tests reuse another file's helpers).
HERE = Path(__file__).resolve().parent
for folder in (HERE, *(HERE / name for name in ("core", "library", "cli", "course"))):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


@pytest.fixture
def float64():
    """Build modules in float64 for the duration of a test."""
    saved = get_default_dtype()
    set_default_dtype(np.float64)
    yield
    set_default_dtype(saved)


class DeviceRandom:
    """A NumPy Generator whose arrays land on the active device (numpy: unchanged)."""

    def __init__(self, generator):
        self.generator = generator

    def __getattr__(self, name):
        attribute = getattr(self.generator, name)
        if not callable(attribute) or name in ("bit_generator", "spawn"):
            return attribute

        @functools.wraps(attribute)
        def draw(*args, **kwargs):
            out = attribute(*args, **kwargs)
            return xp.asarray(out) if isinstance(out, np.ndarray) else out
        return draw


@pytest.fixture(scope="module")
def solution_copy(tmp_path_factory):
    """A copy of the package made by `assignment make --solutions` (reference code kept)."""
    from numpy_transformer.course.copies.make import make
    out = tmp_path_factory.mktemp("solution") / "copy"
    make(out, solutions=True)
    return out


@pytest.fixture(scope="module")
def student_copy(tmp_path_factory):
    """A student copy with every part stubbed."""
    from numpy_transformer.course.copies.make import make
    out = tmp_path_factory.mktemp("student") / "copy"
    make(out)
    return out


@pytest.fixture
def rng():
    generator = np.random.default_rng(0)
    return DeviceRandom(generator) if ON_DEVICE else generator


def on_host(value):
    """`value` with every device array in it (lists, tuples, dicts walked) copied to NumPy."""
    if isinstance(value, (list, tuple)):
        return type(value)(on_host(v) for v in value)
    if isinstance(value, dict):
        return {k: on_host(v) for k, v in value.items()}
    if type(value).__module__.startswith(("cupy", "numpy_transformer.testing.device_simulator")):
        return to_numpy(value)
    return value


def _compare_on_host(assertion):
    @functools.wraps(assertion)
    def compare(*args, **kwargs):
        return assertion(*on_host(args), **on_host(kwargs))
    return compare


if ON_DEVICE:
    for _name in ("assert_allclose", "assert_array_equal", "assert_equal", "assert_array_less",
                  "assert_array_almost_equal", "assert_almost_equal", "assert_array_max_ulp"):
        setattr(np.testing, _name, _compare_on_host(getattr(np.testing, _name)))
