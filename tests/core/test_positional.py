"""PositionalEncoding: the paper's sinusoid table, adding it, dropout, length checks."""

import numpy as np
import pytest

from numpy_transformer.backend import to_numpy
from numpy_transformer.gradcheck import assert_gradients_close
from numpy_transformer.layers.positional import PositionalEncoding, sinusoidal_table

from doors import raises_naming


def paper_table(max_len, D):
    """PE(pos, 2i) = sin(pos / 10000^(2i/D)), PE(pos, 2i+1) = cos(pos / 10000^(2i/D))."""
    pe = np.zeros((max_len, D))
    pos = np.arange(max_len)[:, None]                 # (max_len, 1)
    two_i = np.arange(0, D, 2)[None, :]               # (1, ceil(D/2)), the even columns
    pe[:, 0::2] = np.sin(pos / 10000.0 ** (two_i / D))
    pe[:, 1::2] = np.cos(pos / 10000.0 ** (two_i / D))[:, : D // 2]
    return pe


@pytest.mark.parametrize("D", [4, 5, 16, 1])
def test_table_matches_paper_formula(float64, D):
    pe = sinusoidal_table(50, D)
    assert pe.shape == (50, D) and pe.dtype == np.float64
    np.testing.assert_allclose(pe, paper_table(50, D), rtol=0, atol=1e-12)


def test_table_known_values(float64):
    pe = sinusoidal_table(3, 4)
    np.testing.assert_allclose(pe[0], [0, 1, 0, 1], atol=0)
    np.testing.assert_allclose(pe[2], [np.sin(2), np.cos(2), np.sin(0.02), np.cos(0.02)], atol=1e-15)
    assert np.all(np.abs(sinusoidal_table(5000, 512)) <= 1.0)


def test_forward_adds_table(float64, rng):
    pos = PositionalEncoding(4, max_len=10)
    x = rng.normal(size=(2, 3, 4))
    np.testing.assert_allclose(pos.forward(x), to_numpy(x) + paper_table(10, 4)[:3][None],
                               atol=1e-14)
    assert pos.num_parameters() == 0 and pos.state_dict() == {}   # the table is not a parameter


def test_forward_keeps_input_dtype(rng):
    pos = PositionalEncoding(4, max_len=10)          # table in the default float32
    assert pos.pe.dtype == np.float32
    assert pos.forward(rng.normal(size=(1, 3, 4))).dtype == np.float64
    assert pos.forward(rng.normal(size=(1, 3, 4)).astype(np.float32)).dtype == np.float32


@pytest.mark.parametrize("shape", [(2, 3, 4), (1, 1, 4), (1, 6, 4)])
@pytest.mark.parametrize("p", [0.0, 0.4])
def test_gradients(float64, rng, shape, p):
    pos = PositionalEncoding(4, max_len=6, dropout=p, rng=rng)
    assert_gradients_close(pos, rng.normal(size=shape), rtol=1e-7)


def test_backward_is_identity_without_dropout(float64, rng):
    pos = PositionalEncoding(4, max_len=6)
    pos.forward(rng.normal(size=(2, 3, 4)))
    dout = rng.normal(size=(2, 3, 4))
    np.testing.assert_array_equal(pos.backward(dout), dout)


def test_dropout_train_and_eval(float64, rng):
    pos = PositionalEncoding(8, max_len=100, dropout=0.5, rng=rng)
    x = rng.normal(size=(4, 50, 8))
    y = pos.forward(x)
    assert 0.35 < np.mean(y == 0) < 0.65
    pos.eval()
    np.testing.assert_allclose(pos.forward(x), to_numpy(x) + paper_table(100, 8)[:50],
                               atol=1e-14)


def test_length_over_max_len_raises(rng):
    pos = PositionalEncoding(4, max_len=5)
    pos(rng.normal(size=(1, 5, 4)))          # T == max_len is fine
    with raises_naming(ValueError, "x", "max_len=5", "T=6"):
        pos(rng.normal(size=(1, 6, 4)))


def test_bad_inputs_raise(rng):
    pos = PositionalEncoding(4, max_len=5)
    with raises_naming(ValueError, "x", "4", "d_model"):
        pos(rng.normal(size=(1, 3, 5)))
    with raises_naming(ValueError, "x", "3"):
        pos(rng.normal(size=(3, 4)))
    with raises_naming(TypeError, "x", "int64"):
        pos(np.ones((1, 3, 4), dtype=np.int64))
    with raises_naming(ValueError, "dropout", "[0, 1)", "1.0"):
        PositionalEncoding(4, dropout=1.0)
    with pytest.raises(ValueError, match="max_len"):
        PositionalEncoding(4, max_len=0)
