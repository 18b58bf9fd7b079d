"""LayerNorm: statistics, formula, gradients, accumulation, bad input."""

import numpy as np
import pytest

from numpy_transformer.backend import xp
from numpy_transformer.gradcheck import assert_gradients_close
from numpy_transformer.layers.normalization import LayerNorm

from doors import raises_naming


def randomize(ln, rng):
    """Replace the default gamma = 1, beta = 0, which would hide bugs."""
    ln.params["gamma"] += rng.normal(size=ln.params["gamma"].shape)
    ln.params["beta"] += rng.normal(size=ln.params["beta"].shape)


def test_statistics_before_gamma_beta(float64, rng):
    ln = LayerNorm(16)
    x = 3.0 + 5.0 * rng.normal(size=(2, 3, 16))
    y = ln.forward(x)                                  # gamma = 1, beta = 0: y is xhat
    np.testing.assert_allclose(y.mean(axis=-1), 0.0, atol=1e-14)
    np.testing.assert_allclose(y.var(axis=-1), 1.0, rtol=1e-6)   # eps / var ~ 4e-7


def test_forward_matches_formula(float64, rng):
    ln = LayerNorm(4, eps=1e-3)
    randomize(ln, rng)
    x = rng.normal(size=(2, 3, 4))
    mu = x.sum(axis=-1, keepdims=True) / 4
    var = ((x - mu) ** 2).sum(axis=-1, keepdims=True) / 4      # biased variance
    expected = (x - mu) / np.sqrt(var + 1e-3) * ln.params["gamma"] + ln.params["beta"]
    np.testing.assert_allclose(ln.forward(x), expected, rtol=1e-13)


def test_constant_rows_give_beta(float64, rng):
    ln = LayerNorm(4)
    randomize(ln, rng)
    y = ln.forward(xp.full((2, 3, 4), 7.0))
    np.testing.assert_allclose(y, np.broadcast_to(ln.params["beta"], (2, 3, 4)), atol=1e-12)
    assert np.all(np.isfinite(ln.backward(xp.ones((2, 3, 4)))))


@pytest.mark.parametrize("shape", [(2, 3, 4), (1, 1, 4), (1, 5, 4), (3, 4), (2, 3, 2, 4)])
def test_gradients(float64, rng, shape):
    ln = LayerNorm(4)
    randomize(ln, rng)
    x = rng.normal(size=shape) * 2.0 + 0.5
    assert_gradients_close(ln, x, dout=rng.normal(size=shape), rtol=1e-7)


def test_gradients_large_eps(float64, rng):
    ln = LayerNorm(3, eps=0.5)                         # eps matters in the backward too
    randomize(ln, rng)
    assert_gradients_close(ln, rng.normal(size=(2, 4, 3)) * 0.3, rtol=1e-7)


def test_two_backward_calls_double_grads(float64, rng):
    ln = LayerNorm(4)
    randomize(ln, rng)
    x, dout = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4))
    ln.forward(x)
    dx1 = ln.backward(dout)
    once = {k: g.copy() for k, g in ln.grads.items()}
    dx2 = ln.backward(dout)
    np.testing.assert_array_equal(dx1, dx2)
    for k in once:
        np.testing.assert_allclose(ln.grads[k], 2 * once[k], rtol=1e-15)


def test_default_dtype_float32(rng):
    ln = LayerNorm(4)
    assert ln.params["gamma"].dtype == np.float32
    y = ln.forward(rng.normal(size=(2, 4)).astype(np.float32))
    assert y.dtype == np.float32


def test_bad_inputs_raise(rng):
    ln = LayerNorm(4)
    with raises_naming(ValueError, "x", "4", "d_model", "(2, 3, 5)"):
        ln(rng.normal(size=(2, 3, 5)))
    with raises_naming(TypeError, "x", "int32"):
        ln(np.ones((2, 4), dtype=np.int32))
    with raises_naming(ValueError, "eps"):
        LayerNorm(4, eps=0.0)
    with pytest.raises(TypeError, match="eps"):
        LayerNorm(4, eps="small")
    with pytest.raises(ValueError, match="d_model"):
        LayerNorm(-1)
