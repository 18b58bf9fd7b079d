"""Linear, LayerNorm, softmax and log_softmax agree with PyTorch (float64) forward and backward."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from numpy_transformer.backend import to_numpy  # noqa: E402
from numpy_transformer.layers.linear import Linear  # noqa: E402
from numpy_transformer.layers.normalization import LayerNorm  # noqa: E402
from numpy_transformer.layers.softmax import (log_softmax, log_softmax_backward, softmax,  # noqa: E402
                                              softmax_backward)

pytestmark = pytest.mark.torch
TOL = dict(rtol=1e-10, atol=1e-12)


def torch_leaf(a):
    return torch.tensor(to_numpy(a), dtype=torch.float64, requires_grad=True)


def test_linear_matches_torch(float64, rng):
    layer = Linear(4, 5, rng=rng)
    layer.params["bias"] += rng.normal(size=5)
    x, dout = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 5))
    y = layer.forward(x)
    dx = layer.backward(dout)
    tx, tW, tb = torch_leaf(x), torch_leaf(layer.params["weight"]), torch_leaf(layer.params["bias"])
    ty = torch.nn.functional.linear(tx, tW.T, tb)         # torch stores W as (out, in)
    ty.backward(torch.from_numpy(to_numpy(dout)))
    np.testing.assert_allclose(y, ty.detach().numpy(), **TOL)
    np.testing.assert_allclose(dx, tx.grad.numpy(), **TOL)
    np.testing.assert_allclose(layer.grads["weight"], tW.grad.numpy(), **TOL)
    np.testing.assert_allclose(layer.grads["bias"], tb.grad.numpy(), **TOL)


@pytest.mark.parametrize("eps", [1e-5, 1e-2])
def test_layer_norm_matches_torch(float64, rng, eps):
    ln = LayerNorm(4, eps=eps)
    ln.params["gamma"] += rng.normal(size=4)
    ln.params["beta"] += rng.normal(size=4)
    x, dout = rng.normal(size=(2, 3, 4)) * 3 + 1, rng.normal(size=(2, 3, 4))
    y = ln.forward(x)
    dx = ln.backward(dout)
    tx, tg, tb = torch_leaf(x), torch_leaf(ln.params["gamma"]), torch_leaf(ln.params["beta"])
    ty = torch.nn.functional.layer_norm(tx, (4,), tg, tb, eps)
    ty.backward(torch.from_numpy(to_numpy(dout)))
    np.testing.assert_allclose(y, ty.detach().numpy(), **TOL)
    np.testing.assert_allclose(dx, tx.grad.numpy(), **TOL)
    np.testing.assert_allclose(ln.grads["gamma"], tg.grad.numpy(), **TOL)
    np.testing.assert_allclose(ln.grads["beta"], tb.grad.numpy(), **TOL)


@pytest.mark.parametrize("axis", [-1, 1])
@pytest.mark.parametrize("fn, fn_backward, torch_fn", [
    (softmax, softmax_backward, torch.softmax),
    (log_softmax, log_softmax_backward, torch.log_softmax)])
def test_softmax_family_matches_torch(rng, axis, fn, fn_backward, torch_fn):
    x, dout = rng.normal(size=(2, 3, 5)) * 4, rng.normal(size=(2, 3, 5))
    y = fn(x, axis=axis)
    dx = fn_backward(dout, y, axis=axis)
    tx = torch_leaf(x)
    ty = torch_fn(tx, dim=axis)
    ty.backward(torch.from_numpy(to_numpy(dout)))
    np.testing.assert_allclose(y, ty.detach().numpy(), **TOL)
    np.testing.assert_allclose(dx, tx.grad.numpy(), **TOL)
