"""ReLU and GELU: values against their formulas and gradients."""

import math

import numpy as np
import pytest

from numpy_transformer.backend import get_backend, xp
from numpy_transformer.gradcheck import assert_gradients_close
from numpy_transformer.layers.activations import GELU, ReLU


def test_relu_values():
    x = xp.asarray([[-2.0, -0.0, 0.0, 0.5, 3.0]])
    relu = ReLU()
    np.testing.assert_array_equal(relu.forward(x), [[0, 0, 0, 0.5, 3.0]])
    np.testing.assert_array_equal(relu.backward(xp.ones_like(x)), [[0, 0, 0, 1, 1]])


def test_gelu_matches_formula(rng):
    x = np.linspace(-6, 6, 121)
    expected = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    y = GELU().forward(xp.asarray(x))
    # A GPU's tanh may differ from the host's in the last bit, which 1 + tanh(..) near -1
    # (x < -4) turns into relative errors up to 1e-6 of values below 1e-4: there the
    # comparison is absolute, at 1e-15.
    atol = 1e-15 if get_backend() != "numpy" else 1e-300
    np.testing.assert_allclose(y, expected, rtol=1e-14, atol=atol)
    exact = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x])   # the erf form
    np.testing.assert_allclose(y, exact, atol=1e-3)


@pytest.mark.parametrize("shape", [(2, 3, 4), (1, 1, 1)])
@pytest.mark.parametrize("make", [ReLU, GELU])
def test_gradients(float64, rng, make, shape):
    x = rng.normal(size=shape) * 2
    x[abs(x) < 1e-3] = 0.5                    # keep ReLU's kink out of the stencil
    assert_gradients_close(make(), x, rtol=1e-7)


def test_gelu_large_inputs_finite():
    x = xp.asarray([-1e4, -50.0, 50.0, 1e4])
    gelu = GELU()
    y = gelu.forward(x)
    np.testing.assert_allclose(y, [0, 0, 50, 1e4], atol=1e-12)
    np.testing.assert_allclose(gelu.backward(xp.ones(4)), [0, 0, 1, 1], atol=1e-12)


def test_dtype_preserved():
    x = xp.ones((2, 3), dtype=np.float32)
    assert ReLU().forward(x).dtype == np.float32
    assert GELU().forward(x).dtype == np.float32
