"""softmax / log_softmax: values, stability, masks (incl. fully masked rows), gradients."""

import numpy as np
import pytest

from numpy_transformer.backend import xp
from numpy_transformer.gradcheck import assert_gradients_close, gradcheck
from numpy_transformer.layers.softmax import (LogSoftmax, Softmax, log_softmax, log_softmax_backward,
                                              softmax, softmax_backward)


def naive_softmax(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_softmax_values(rng, axis):
    x = rng.normal(size=(2, 3, 4))
    p = softmax(x, axis=axis)
    np.testing.assert_allclose(p, naive_softmax(x, axis), rtol=1e-13)
    np.testing.assert_allclose(p.sum(axis=axis), 1.0, rtol=1e-14)
    assert np.all(p > 0)


def test_log_softmax_values(rng):
    x = rng.normal(size=(2, 3, 4)) * 3
    np.testing.assert_allclose(log_softmax(x), np.log(naive_softmax(x)), rtol=1e-12, atol=1e-14)


def test_large_logits_stay_finite(rng):
    x = rng.normal(size=(2, 3, 4)) * 1e4
    x[0, 0] = [1e4, -1e4, 1e4, 0.0]
    p, z = softmax(x), log_softmax(x)
    assert np.all(np.isfinite(p)) and np.all(np.isfinite(z))
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, rtol=1e-14)
    np.testing.assert_allclose(p[0, 0], [0.5, 0, 0.5, 0], atol=1e-300)
    dout = rng.normal(size=x.shape)
    assert np.all(np.isfinite(softmax_backward(dout, p)))
    assert np.all(np.isfinite(log_softmax_backward(dout, z)))


def test_masked_softmax_values_and_fully_masked_rows(rng):
    x = rng.normal(size=(2, 1, 3, 4))
    mask = xp.ones((2, 1, 3, 4), dtype=bool)
    mask[0, 0, 0, 1:] = False                    # only key 0 allowed
    mask[1, 0, 2, :] = False                     # nothing allowed: all-zero row
    p = softmax(x, mask=mask)
    assert not np.any(np.isnan(p))
    np.testing.assert_array_equal(p[~mask], 0.0)
    np.testing.assert_allclose(p[0, 0, 0], [1, 0, 0, 0])
    np.testing.assert_array_equal(p[1, 0, 2], 0.0)
    np.testing.assert_allclose(p[0, 0, 1:], naive_softmax(x[0, 0, 1:]), rtol=1e-13)


@pytest.mark.parametrize("shape, axis", [((2, 3, 4), -1), ((2, 3, 4), 1), ((1, 1), -1), ((1, 5), -1)])
def test_softmax_gradients(float64, rng, shape, axis):
    assert_gradients_close(Softmax(axis), rng.normal(size=shape), rtol=1e-7)


def test_masked_softmax_gradients_with_fully_masked_row(float64, rng):
    x = rng.normal(size=(2, 2, 3, 4))
    mask = rng.random((2, 1, 3, 4)) < 0.6
    mask[0, 0, 1] = False                        # a fully masked query row
    sm = Softmax()
    report = assert_gradients_close(sm, x, forward_kwargs={"mask": mask}, rtol=1e-7)
    assert report.passed
    dx = sm.backward(rng.normal(size=x.shape))
    assert np.all(np.isfinite(dx))
    np.testing.assert_array_equal(dx[0, :, 1], 0.0)     # no gradient into a row with no keys
    np.testing.assert_array_equal(dx[np.broadcast_to(~mask, x.shape)], 0.0)


@pytest.mark.parametrize("shape", [(2, 3, 4), (1, 1, 3)])
def test_log_softmax_gradients(float64, rng, shape):
    assert_gradients_close(LogSoftmax(), rng.normal(size=shape), rtol=1e-7)


def test_gradients_at_large_logits(float64, rng):
    x = rng.normal(size=(2, 4)) * 2 + 1e4                # shifted: same function, big numbers
    for layer in (Softmax(), LogSoftmax()):
        report = gradcheck(layer, x, eps=1e-3, rtol=1e-5)
        assert report.passed, str(report)
