"""FeedForward: formula, gradients for ReLU and GELU with and without dropout."""

import numpy as np
import pytest

from numpy_transformer.gradcheck import assert_gradients_close
from numpy_transformer.layers.feedforward import FeedForward

from doors import raises_naming


def randomize_biases(ff, rng):
    for layer in (ff.linear_1, ff.linear_2):
        layer.params["bias"] += rng.normal(size=layer.params["bias"].shape)


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


@pytest.mark.parametrize("activation, act", [("relu", lambda h: np.maximum(h, 0)), ("gelu", gelu)])
def test_forward_matches_formula(float64, rng, activation, act):
    ff = FeedForward(4, 6, activation=activation, rng=rng)
    randomize_biases(ff, rng)
    x = rng.normal(size=(2, 3, 4))
    p = {name: param for name, param, _ in ff.named_parameters()}
    h = act(x @ p["linear_1.weight"] + p["linear_1.bias"])
    expected = h @ p["linear_2.weight"] + p["linear_2.bias"]
    np.testing.assert_allclose(ff.forward(x), expected, rtol=1e-12)


def test_parameter_names_and_count(rng):
    ff = FeedForward(4, 6, rng=rng)
    names = [name for name, _, _ in ff.named_parameters()]
    assert names == ["linear_1.weight", "linear_1.bias", "linear_2.weight", "linear_2.bias"]
    assert ff.num_parameters() == 4 * 6 + 6 + 6 * 4 + 4


@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("p", [0.0, 0.3])
@pytest.mark.parametrize("shape", [(2, 3, 4), (1, 1, 4)])
def test_gradients(float64, rng, activation, p, shape):
    ff = FeedForward(4, 6, dropout=p, activation=activation, rng=rng)
    randomize_biases(ff, rng)
    assert_gradients_close(ff, rng.normal(size=shape), rtol=1e-7)


def test_eval_turns_dropout_off(float64, rng):
    ff = FeedForward(4, 32, dropout=0.5, rng=rng)
    x = rng.normal(size=(2, 3, 4))
    ff.eval()
    np.testing.assert_array_equal(ff.forward(x), ff.forward(x))
    assert not ff.dropout.training
    ff.train()
    assert not np.allclose(ff.forward(x), ff.forward(x))   # fresh masks each call


def test_bad_inputs_raise(rng):
    with raises_naming(ValueError, "activation", "('relu', 'gelu')", "'tanh'"):
        FeedForward(4, 6, activation="tanh")
    with raises_naming(ValueError, "dropout", "[0, 1)", "-0.1"):
        FeedForward(4, 6, dropout=-0.1)
    with pytest.raises(ValueError, match="d_ff"):
        FeedForward(4, 0)
    ff = FeedForward(4, 6, rng=rng)
    with raises_naming(ValueError, "x", "4", "d_model"):
        ff(rng.normal(size=(2, 3, 6)).astype(np.float32))
    with raises_naming(TypeError, "x", "int64"):
        ff(np.ones((2, 3, 4), dtype=np.int64))
