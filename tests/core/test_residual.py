"""SublayerConnection: post-norm and pre-norm, forward formula and gradients through both paths."""

import numpy as np
import pytest

from numpy_transformer.backend import xp
from numpy_transformer.gradcheck import assert_gradients_close
from numpy_transformer.layers.feedforward import FeedForward
from numpy_transformer.layers.linear import Linear
from numpy_transformer.layers.residual import SublayerConnection
from numpy_transformer.module import Module

from doors import raises_naming


class Wrapped(Module):
    """A residual block as an encoder layer builds one: SublayerConnection around a child,
    entered, the child, exited; backward the same calls in reverse."""

    def __init__(self, inner, d_model, dropout=0.0, norm_first=False, rng=None):
        super().__init__()
        self.inner = inner
        self.sub = SublayerConnection(d_model, dropout, norm_first, rng=rng)

    def forward(self, x):
        h = self.sub.enter(x)
        return self.sub.exit(x, self.inner.forward(h))

    def backward(self, dout):
        dx, df = self.sub.exit_backward(dout)
        dh = self.inner.backward(df)
        return dx + self.sub.enter_backward(dh)


class TwoInputs(Module):
    """f(a, b) = a W + b, standing in for attention's (query, key/value) inputs."""

    def __init__(self, D, rng):
        super().__init__()
        self.params = {"weight": xp.asarray(rng.normal(size=(D, D)))}
        self.grads = {"weight": xp.zeros((D, D))}

    def forward(self, a, b):
        self.saved = a
        return a @ self.params["weight"] + b

    def backward(self, dy):
        a = self.saved
        self.grads["weight"] += a.reshape(-1, a.shape[-1]).T @ dy.reshape(-1, dy.shape[-1])
        return dy @ self.params["weight"].T, dy


class WrappedTwoInputs(Wrapped):
    def forward(self, x):
        h = self.sub.enter(x)
        return self.sub.exit(x, self.inner.forward(h, h))

    def backward(self, dout):
        dx, df = self.sub.exit_backward(dout)
        da, db = self.inner.backward(df)
        return dx + self.sub.enter_backward(da + db)          # h was both inputs


def randomize(block, rng):
    for _, param, _ in block.named_parameters():
        param += 0.5 * rng.normal(size=param.shape)


def layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + eps) * gamma + beta


@pytest.mark.parametrize("norm_first", [False, True])
def test_forward_matches_formula(float64, rng, norm_first):
    block = Wrapped(Linear(4, 4, rng=rng), 4, norm_first=norm_first)
    randomize(block, rng)
    x = rng.normal(size=(2, 3, 4))
    p = {name: param for name, param, _ in block.named_parameters()}
    f = lambda h: h @ p["inner.weight"] + p["inner.bias"]           # noqa: E731
    ln = lambda h: layer_norm(h, p["sub.norm.gamma"], p["sub.norm.beta"])  # noqa: E731
    expected = x + f(ln(x)) if norm_first else ln(x + f(x))
    np.testing.assert_allclose(block.forward(x), expected, rtol=1e-12)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("p", [0.0, 0.3])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_gradients_around_feedforward(float64, rng, norm_first, p, activation):
    ff = FeedForward(4, 6, dropout=p, activation=activation, rng=rng)
    block = Wrapped(ff, 4, dropout=p, norm_first=norm_first, rng=rng)
    randomize(block, rng)
    assert_gradients_close(block, rng.normal(size=(2, 3, 4)), rtol=1e-7)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("shape", [(1, 1, 4), (1, 3, 4)])
def test_gradients_batch_one_length_one(float64, rng, norm_first, shape):
    block = Wrapped(Linear(4, 4, rng=rng), 4, norm_first=norm_first)
    randomize(block, rng)
    assert_gradients_close(block, rng.normal(size=shape), rtol=1e-7)


@pytest.mark.parametrize("norm_first", [False, True])
def test_gradients_sublayer_with_two_inputs(float64, rng, norm_first):
    block = WrappedTwoInputs(TwoInputs(4, rng), 4, dropout=0.2, norm_first=norm_first, rng=rng)
    randomize(block, rng)
    assert_gradients_close(block, rng.normal(size=(2, 3, 4)), rtol=1e-7)


def test_residual_path_carries_gradient(float64, rng):
    """Pre-norm with a sublayer that outputs zeros: y = x, so dx must equal dout."""
    lin = Linear(4, 4, rng=rng)
    lin.params["weight"][...] = 0.0
    block = Wrapped(lin, 4, norm_first=True)
    x, dout = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4))
    np.testing.assert_allclose(block.forward(x), x, atol=0)
    np.testing.assert_allclose(block.backward(dout), dout, atol=1e-15)


def test_parameter_names(rng):
    block = Wrapped(Linear(4, 4, rng=rng), 4)
    names = [name for name, _, _ in block.named_parameters()]
    assert names == ["inner.weight", "inner.bias", "sub.norm.gamma", "sub.norm.beta"]


def test_bad_construction_raises():
    with raises_naming(ValueError, "dropout", "[0, 1)", "1.5"):
        SublayerConnection(4, dropout=1.5)
