"""Linear: y = x W + b, its gradients, accumulation and bad input."""

import numpy as np
import pytest

from numpy_transformer.backend import xp
from numpy_transformer.gradcheck import assert_gradients_close
from numpy_transformer.layers.linear import Linear

from doors import raises_naming


@pytest.mark.parametrize("shape", [(2, 3, 4), (1, 1, 4), (5, 4), (2, 3, 2, 4)])
def test_gradients(float64, rng, shape):
    layer = Linear(4, 5, rng=rng)
    layer.params["bias"] += rng.normal(size=5)           # no all-zero bias
    x, dout = rng.normal(size=shape), rng.normal(size=shape[:-1] + (5,))
    assert_gradients_close(layer, x, dout=dout, rtol=1e-7)


def test_gradients_without_bias(float64, rng):
    layer = Linear(4, 3, bias=False, rng=rng)
    assert list(layer.params) == ["weight"]
    assert_gradients_close(layer, rng.normal(size=(2, 3, 4)), rtol=1e-7)


def test_forward_matches_formula(float64, rng):
    layer = Linear(4, 5, rng=rng)
    layer.params["bias"] += rng.normal(size=5)
    x = rng.normal(size=(2, 3, 4))
    W, b = layer.params["weight"], layer.params["bias"]
    expected = np.einsum("btd,de->bte", x, W) + b
    np.testing.assert_allclose(layer.forward(x), expected, rtol=1e-13)


def test_init(rng):
    layer = Linear(400, 300, rng=rng)
    W = layer.params["weight"]
    assert W.shape == (400, 300) and W.dtype == np.float32
    assert abs(W.std() - 400**-0.5) < 1e-3
    assert np.all(layer.params["bias"] == 0)
    assert layer.forward(xp.ones((2, 400), dtype=np.float32)).dtype == np.float32


def test_two_backward_calls_double_grads(float64, rng):
    layer = Linear(4, 5, rng=rng)
    x, dout = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 5))
    layer.forward(x)
    layer.backward(dout)
    once = {k: g.copy() for k, g in layer.grads.items()}
    layer.backward(dout)
    for k in once:
        np.testing.assert_allclose(layer.grads[k], 2 * once[k], rtol=1e-15)


def test_bad_inputs_raise(rng):
    layer = Linear(4, 5, rng=rng)
    with raises_naming(ValueError, "x", "4", "in_features", "(2, 3, 5)"):
        layer(rng.normal(size=(2, 3, 5)))
    with raises_naming(TypeError, "x", "int64"):
        layer(np.ones((2, 4), dtype=np.int64))
    with raises_naming(TypeError, "x", "list"):
        layer([[1.0, 2.0, 3.0, 4.0]])
