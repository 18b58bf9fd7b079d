"""Embedding: lookup values, scaling, scattered gradient with repeated ids, bad ids."""

import math

import numpy as np
import pytest

from numpy_transformer.backend import to_numpy, xp
from numpy_transformer.gradcheck import assert_gradients_close
from numpy_transformer.layers.embedding import Embedding

from doors import raises_naming


def test_forward_is_scaled_row_lookup(float64, rng):
    emb = Embedding(7, 4, rng=rng)
    ids = np.array([[1, 6, 0], [3, 3, 2]])
    W = emb.params["weight"]
    y = emb.forward(ids)
    assert y.shape == (2, 3, 4)
    np.testing.assert_allclose(y, W[ids] * math.sqrt(4), rtol=1e-15)
    np.testing.assert_allclose(y[1, 0], W[3] * 2.0, rtol=1e-15)


def test_forward_without_scale_and_output_is_a_copy(float64, rng):
    emb = Embedding(7, 4, scale=False, rng=rng)
    ids = np.array([[1, 2]])
    y = emb.forward(ids)
    np.testing.assert_array_equal(y, emb.params["weight"][ids])
    before = emb.params["weight"].copy()
    y += 1.0                                  # must not write into the table
    np.testing.assert_array_equal(emb.params["weight"], before)


def test_init_scale_and_default_dtype(rng):
    emb = Embedding(2000, 16, rng=rng)
    W = emb.params["weight"]
    assert W.dtype == np.float32 and W.shape == (2000, 16)
    assert abs(W.std() - 16**-0.5) < 0.01     # so W * sqrt(D) has unit variance
    assert abs(emb.forward(np.arange(2000)[None]).std() - 1.0) < 0.03


@pytest.mark.parametrize("scale", [True, False])
def test_gradients_with_repeated_ids(float64, rng, scale):
    emb = Embedding(6, 4, scale=scale, rng=rng)
    ids = np.array([[1, 5, 1], [0, 1, 5]])     # id 1 three times, id 5 twice, 2-4 never
    dout = rng.normal(size=(2, 3, 4))
    assert_gradients_close(emb, ids, dout=dout, rtol=1e-7)


@pytest.mark.parametrize("shape", [(1, 1), (1, 5), (4,)])
def test_gradients_batch_one_length_one_and_flat_ids(float64, rng, shape):
    emb = Embedding(5, 3, rng=rng)
    ids = rng.integers(0, 5, size=shape)
    assert_gradients_close(emb, ids, rtol=1e-7)


def test_repeated_ids_accumulate_like_add_at(float64, rng):
    emb = Embedding(10, 4, rng=rng)
    ids = rng.integers(0, 10, size=(3, 20)).astype(np.int32)   # many repeats
    dout = rng.normal(size=(3, 20, 4))
    emb.forward(ids)
    assert emb.backward(dout) is None          # no gradient for integer ids
    ids, dout = to_numpy(ids), to_numpy(dout)  # the reference, on the host
    expected = np.zeros((10, 4))
    np.add.at(expected, ids.reshape(-1), dout.reshape(-1, 4) * 2.0)   # reference scatter
    np.testing.assert_allclose(emb.grads["weight"], expected, rtol=1e-12, atol=1e-12)
    unused = xp.asarray(np.setdiff1d(np.arange(10), ids))
    assert np.all(emb.grads["weight"][unused] == 0)


def test_two_backward_calls_double_grads(float64, rng):
    emb = Embedding(5, 3, rng=rng)
    ids, dout = np.array([[4, 4, 1]]), rng.normal(size=(1, 3, 3))
    emb.forward(ids)
    emb.backward(dout)
    once = emb.grads["weight"].copy()
    emb.backward(dout)
    np.testing.assert_allclose(emb.grads["weight"], 2 * once, rtol=1e-15)


def test_unsigned_ids(float64, rng):
    emb = Embedding(5, 3, rng=rng)
    ids = np.array([[0, 4, 4]], dtype=np.uint8)
    np.testing.assert_allclose(emb.forward(ids), emb.params["weight"][ids.astype(int)] * 3**0.5)


@pytest.mark.parametrize("bad, err", [(np.array([[0, 5]]), 5), (np.array([[-1, 2]]), -1)])
def test_out_of_range_ids_raise(rng, bad, err):
    emb = Embedding(5, 3, rng=rng)
    with raises_naming(ValueError, "ids", "[0, 5)", err):
        emb(bad)


def test_float_ids_and_lists_raise(rng):
    emb = Embedding(5, 3, rng=rng)
    with raises_naming(TypeError, "ids", "float64"):
        emb(np.array([[0.0, 1.0]]))
    with raises_naming(TypeError, "ids", "list"):
        emb([[0, 1]])
    with raises_naming(ValueError, "ids"):
        emb(np.zeros((2, 0), dtype=np.int64))


def test_bad_sizes_raise():
    with pytest.raises(ValueError, match="vocab_size"):
        Embedding(0, 4)
    with pytest.raises(TypeError, match="d_model"):
        Embedding(5, 4.0)
