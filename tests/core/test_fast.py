"""layers/fast.py: each faster form gives what its plain NumPy call gives."""

import numpy as np
import pytest

from numpy_transformer.backend import to_numpy, xp
from numpy_transformer.layers import fast

SHAPES = [(7,), (5, 3), (1, 4), (4, 1), (2, 3, 4), (2, 3, 1, 70), (3, 2, 5, 33), (0, 4)]


def cases():
    for shape in SHAPES:
        for axis in range(-len(shape), len(shape)):
            for keepdims in (False, True):
                yield shape, axis, keepdims


@pytest.mark.filterwarnings("ignore:Mean of empty slice")
@pytest.mark.filterwarnings("ignore:invalid value encountered")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["sum", "mean", "max"])
def test_same_as_the_plain_numpy_call(rng, name, dtype):
    for shape, axis, keepdims in cases():
        if name == "max" and 0 in shape:
            continue                              # plain max of nothing raises; so does fast.max
        a = (rng.normal(size=shape) * 3).astype(dtype)
        got = getattr(fast, name)(a, axis, keepdims=keepdims)
        want = getattr(a, name)(axis=axis, keepdims=keepdims)
        assert np.shape(got) == np.shape(want), (shape, axis, keepdims)
        assert to_numpy(got).dtype == to_numpy(want).dtype
        if name == "max":
            np.testing.assert_array_equal(got, want)             # exact: no arithmetic
        else:
            tol = 1e-6 if dtype == np.float32 else 1e-14
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(to_numpy(a)).max(initial=1))


def test_max_keeps_infinities_and_nan(rng):
    a = rng.normal(size=(3, 4, 5))
    a[0, 0] = -np.inf                             # a fully masked row
    a[1, 2, 3] = np.inf
    a[2, 1, 0] = np.nan
    np.testing.assert_array_equal(fast.max(a, -1, keepdims=True), a.max(-1, keepdims=True))


def test_inputs_are_not_changed(rng):
    a = rng.normal(size=(2, 3, 4))
    before = a.copy()
    for f in (fast.sum, fast.mean, fast.max):
        for axis in (0, -1):
            f(a, axis, keepdims=True)
    np.testing.assert_array_equal(a, before)


ADD_AT_CASES = {                               # name: (V, index), the index as host integers
    "repeated ids": (7, np.array([[3, 1, 3, 0], [6, 3, 1, 1]])),
    "all the same id": (5, np.full((3, 4), 2)),
    "length one": (4, np.array([[3]])),
    "every id once, flat": (6, np.array([5, 0, 4, 1, 3, 2])),
    "no ids": (3, np.zeros((2, 0), dtype=np.int64)),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", list(ADD_AT_CASES))
def test_add_at_is_numpys_add_at(rng, case, dtype):
    V, index = ADD_AT_CASES[case]
    a = rng.normal(size=(V, 3, 2)).astype(dtype)
    values = rng.normal(size=index.shape + (3, 2)).astype(dtype)
    want = to_numpy(a).copy()
    np.add.at(want, index, to_numpy(values))
    values_before = to_numpy(values).copy()
    assert fast.add_at(a, xp.asarray(index), values) is None   # in place, as add.at
    assert to_numpy(a).dtype == dtype
    tol = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(to_numpy(a), want, rtol=tol, atol=tol)
    np.testing.assert_array_equal(to_numpy(values), values_before)
