"""Kernel launches per training step never rise: the CI guard of issue 50's launch count.

The device simulator (numpy_transformer/testing/device_simulator.py) counts the launches
CuPy would make; benchmarks/launches.py counts a training step (gpu_profile.py's step) and
benchmarks/results/launches.json holds the committed figures. A change that adds launches
to a step fails here; one that removes some passes and says to lower the figure. No
wall-clock anywhere: counts only.
"""

import json
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)        # benchmarks/ is not installed with the package

FIGURES = os.path.join(ROOT, "benchmarks", "results", "launches.json")

try:
    from benchmarks.launches import count_step
    from numpy_transformer.backend import (get_backend, get_default_dtype, set_backend,
                                           set_default_dtype, xp)
    from numpy_transformer.testing import device_simulator
except ImportError as err:                          # pragma: no cover - a partial checkout
    pytest.skip(f"the launch counter cannot be imported: {err}", allow_module_level=True)


@pytest.fixture(autouse=True)
def restore_dtype():
    """The benchmark harness sets the default dtype; put it back after each test."""
    saved = get_default_dtype()
    yield
    set_default_dtype(saved)


@pytest.fixture
def device():
    """The simulator as `xp` for one test (and the suite's backend back after it)."""
    saved = get_backend()
    set_backend("simulator")
    yield device_simulator
    set_backend(saved)


def committed(name):
    """The committed launches per step of configuration `name` (skip when there are none)."""
    if not os.path.exists(FIGURES):
        pytest.skip(f"no committed figures ({os.path.relpath(FIGURES, ROOT)})")
    with open(FIGURES) as f:
        figures = json.load(f)
    if name not in figures:
        pytest.skip(f"no committed figure for {name}")
    return figures[name]


def check_no_rise(name):
    want = committed(name)
    got = count_step(name)
    for key in ("launches", "optimizer"):
        assert got[key] <= want[key], (
            f"{name}: {got[key]:,} {key} a step, above the committed {want[key]:,} "
            f"(benchmarks/results/launches.json); by phase {got['phases']}, most: {got['top']}")
        if got[key] < want[key]:
            print(f"\n{name}: {got[key]:,} {key} a step, below the committed {want[key]:,}: "
                  "lower the figure (python benchmarks/launches.py --json "
                  "benchmarks/results/launches.json)")
    assert sum(got["phases"].values()) == got["launches"]


def test_tiny_step_launches_do_not_rise():
    check_no_rise("tiny")


def test_small_step_launches_do_not_rise():
    check_no_rise("small")


@pytest.mark.slow
def test_base_step_launches_do_not_rise():
    check_no_rise("base")


# The counting rules, one by one.

def counted(function):
    with device_simulator.count_launches() as launches:
        function()
    return launches


def test_counting_is_off_by_default(device):
    a = xp.ones((4, 3), dtype=np.float32)
    before = counted(lambda: None)
    a * 2.0                                     # no counter on: nothing to count into
    assert before.total == 0 and not device_simulator._counters


def test_views_cost_nothing_and_operations_one_launch_each(device):
    a = xp.ones((4, 6), dtype=np.float32)
    views = counted(lambda: (a.reshape(2, 12), a.T, a.transpose(1, 0), a[1:3], a[:, ::2],
                             xp.broadcast_to(a[0], (5, 6)), xp.expand_dims(a, 0),
                             a.reshape(4, 2, 3).swapaxes(1, 2), a[None], a[..., 0], a[2]))
    assert views.total == 0, views.by_name
    assert counted(lambda: a + a).kernels == 1
    assert counted(lambda: xp.exp(a)).kernels == 1
    assert counted(lambda: np.exp(a)).kernels == 1                    # NumPy's ufunc on it
    assert counted(lambda: a.sum(axis=0)).kernels == 1
    assert counted(lambda: xp.maximum.reduce(a, axis=1)).kernels == 1
    assert counted(lambda: xp.where(a > 0, a, 0.0)).kernels == 2      # compare, where

    def in_place():
        b = a.copy()
        b *= 2.0
        b += a
        xp.multiply(a, a, out=b)
    got = counted(in_place)
    assert (got.kernels, got.copies) == (3, 1)                        # copy: a memcpy
    assert counted(lambda: a.astype(np.float64)).kernels == 1


def test_copies_fills_memsets_and_indexing(device):
    a = xp.ones((4, 6), dtype=np.float32)
    strided = a.T
    assert counted(lambda: strided.reshape(-1)).kernels == 1          # NumPy copied: so does CuPy
    assert counted(lambda: strided.copy()).kernels == 1               # a copy kernel
    assert counted(lambda: xp.zeros((3, 3))).memsets == 1
    assert counted(lambda: xp.empty((3, 3))).total == 0
    assert counted(lambda: a.fill(0)).memsets == 1
    assert counted(lambda: a.fill(2.0)).kernels == 1
    index = xp.asarray(np.array([0, 2]))
    assert counted(lambda: a[index]).kernels == 1                      # gather
    got = counted(lambda: a.__setitem__(index, 1.0))
    assert got.kernels == 1
    got = counted(lambda: a.__setitem__((slice(None), 0), 0.0))
    assert got.kernels == 1
    mask = a > 0                                                       # CuPy: scan, count back,
    got = counted(lambda: a.__setitem__(mask, 0.0))                    # scatter
    assert (got.kernels, got.copies) == (3, 1)
    got = counted(lambda: xp.concatenate([a, a, a]))
    assert got.kernels == 3
    got = counted(lambda: xp.asarray(np.ones(3)))                      # host to device
    assert (got.kernels, got.copies) == (0, 1)
    got = counted(lambda: float(a.sum()))                              # and back
    assert (got.kernels, got.copies) == (1, 1)


def test_matrix_products_and_their_copies(device):
    x = xp.ones((8, 4), dtype=np.float32)
    w = xp.ones((4, 5), dtype=np.float32)
    assert counted(lambda: x @ w).total == 1
    assert counted(lambda: x.T.T @ w).total == 1
    assert counted(lambda: w.T @ x.T).total == 1                       # cuBLAS transposes
    vector = xp.ones(4, dtype=np.float32)
    assert counted(lambda: x @ vector).total == 1                      # gemv
    q = xp.ones((2, 3, 4, 5), dtype=np.float32)                        # (B, H, T, Dh)
    heads = xp.ones((2, 4, 3, 5), dtype=np.float32).transpose(0, 2, 1, 3)
    assert counted(lambda: q @ q.swapaxes(-1, -2)).total == 2          # one operand copied
    assert counted(lambda: heads @ heads.swapaxes(-1, -2)).total == 3  # both copied


def test_a_fused_kernel_counts_as_one(device):
    a = xp.ones((4, 6), dtype=np.float32)

    @device_simulator.counted_as_one("scale_shift")
    def fused(x):
        return (x * 2.0 + 1.0) / 3.0

    got = counted(lambda: fused(a))
    assert got.total == 1 and got.by_name == {"fused:scale_shift": 1}
    with device_simulator.count_launches() as outer:
        with device_simulator.counted_as_one("outer"):
            fused(a)
            xp.exp(a)
        with device_simulator.count_launches() as inner:              # counters nest
            a + a
    assert (outer.total, inner.total) == (2, 1)
    np.testing.assert_allclose(fused(a).get(), np.ones((4, 6)))        # still the plain math
