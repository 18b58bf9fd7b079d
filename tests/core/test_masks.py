"""Attention masks: padding, causal, decoder; shapes, values and bad input."""

import numpy as np
import pytest

from numpy_transformer.backend import to_numpy, xp
from numpy_transformer.layers.softmax import softmax
from numpy_transformer.masks import make_causal_mask, make_decoder_mask, make_padding_mask

from doors import raises_naming


def test_padding_mask():
    ids = xp.asarray([[5, 6, 0, 0], [7, 0, 8, 9]])
    mask = make_padding_mask(ids, pad_id=0)
    assert mask.shape == (2, 1, 1, 4) and mask.dtype == bool
    np.testing.assert_array_equal(mask[:, 0, 0], [[1, 1, 0, 0], [1, 0, 1, 1]])


def test_causal_mask():
    mask = make_causal_mask(3)
    assert mask.shape == (1, 1, 3, 3) and mask.dtype == bool
    np.testing.assert_array_equal(mask[0, 0], [[1, 0, 0], [1, 1, 0], [1, 1, 1]])
    assert make_causal_mask(1).shape == (1, 1, 1, 1)


def test_decoder_mask_is_causal_and_not_padding():
    ids = xp.asarray([[4, 5, 0], [6, 0, 0]])
    mask = make_decoder_mask(ids, pad_id=0)
    assert mask.shape == (2, 1, 3, 3)
    np.testing.assert_array_equal(mask[0, 0], [[1, 0, 0], [1, 1, 0], [1, 1, 0]])
    np.testing.assert_array_equal(mask[1, 0], [[1, 0, 0], [1, 0, 0], [1, 0, 0]])


def test_masks_broadcast_in_softmax(rng):
    scores = rng.normal(size=(2, 3, 4, 4))              # (B, H, T, T)
    p = softmax(scores, mask=make_causal_mask(4))
    assert np.all(np.triu(np.ones((4, 4)), k=1)[None, None] * to_numpy(p) == 0)
    np.testing.assert_allclose(p.sum(axis=-1), 1.0)
    ids = xp.asarray([[1, 2, 0, 0], [1, 2, 3, 4]])
    p = softmax(scores, mask=make_padding_mask(ids, 0))
    np.testing.assert_array_equal(p[0, :, :, 2:], 0.0)


def test_bad_inputs_raise():
    with raises_naming(TypeError, "ids", "float64"):
        make_padding_mask(np.array([[1.0, 0.0]]), 0)
    with raises_naming(ValueError, "ids", "(B, S)", "(3,)"):
        make_padding_mask(np.array([1, 2, 0]), 0)
    with raises_naming(ValueError, "T", "0"):
        make_causal_mask(0)
    with pytest.raises(TypeError, match="T: expected an integer"):
        make_causal_mask(2.0)
