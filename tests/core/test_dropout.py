"""Dropout: inverted scaling, train/eval, mask reuse in backward, replayed masks, bad p."""

import numpy as np
import pytest

from numpy_transformer.backend import xp
from numpy_transformer.gradcheck import assert_gradients_close
from numpy_transformer.layers.dropout import Dropout

from doors import raises_naming


def test_train_drops_and_rescales(rng):
    drop = Dropout(0.25, rng=rng)
    x = xp.ones((4, 50, 50))
    y = drop.forward(x)
    assert abs(np.mean(y == 0) - 0.25) < 0.02
    np.testing.assert_allclose(y[y != 0], 1 / 0.75)   # kept values scaled by 1 / (1 - p)
    assert abs(y.mean() - 1.0) < 0.03                 # E[y] = x


def test_backward_uses_the_same_mask(rng):
    drop = Dropout(0.5, rng=rng)
    x = rng.normal(size=(2, 3, 4))
    y = drop.forward(x)
    dout = rng.normal(size=x.shape)
    np.testing.assert_allclose(drop.backward(dout), dout * (y / x))


def test_eval_and_p_zero_are_identity(rng):
    x = rng.normal(size=(2, 3, 4))
    drop = Dropout(0.5, rng=rng).eval()
    assert drop.forward(x) is x and drop.backward(x) is x
    assert Dropout(0.0).forward(x) is x


def test_seeded_masks_repeat():
    x = xp.ones((3, 7))
    a = Dropout(0.5, rng=np.random.default_rng(3)).forward(x)
    b = Dropout(0.5, rng=np.random.default_rng(3)).forward(x)
    np.testing.assert_array_equal(a, b)


def test_fresh_mask_each_forward_and_a_replayed_generator_repeats_it(rng):
    drop = Dropout(0.5, rng=rng)
    x = xp.ones((8, 8))
    state = rng.bit_generator.state
    first = drop.forward(x)
    assert not np.array_equal(drop.forward(x), first)
    rng.bit_generator.state = state          # what the gradient checker does before a forward
    np.testing.assert_array_equal(drop.forward(x), first)


def test_float32_stays_float32(rng):
    y = Dropout(0.1, rng=rng).forward(xp.ones((3, 4), dtype=np.float32))
    assert y.dtype == np.float32


@pytest.mark.parametrize("shape", [(2, 3, 4), (1, 1, 1)])
def test_gradients(float64, rng, shape):
    assert_gradients_close(Dropout(0.4, rng=rng), rng.normal(size=shape), rtol=1e-7)


@pytest.mark.parametrize("p", [1.0, -0.1, 2])
def test_p_out_of_range_raises(p):
    with raises_naming(ValueError, "p", "[0, 1)", repr(p)):
        Dropout(p)


@pytest.mark.parametrize("p", ["0.1", True, None])
def test_p_wrong_type_raises(p):
    with raises_naming(TypeError, "p", "[0, 1)", repr(p)):
        Dropout(p)
