"""Batching: padding, <bos>/<eos> shifting, masks, ntokens, bucketing, LM windows."""

import numpy as np
import pytest

from numpy_transformer.backend import to_numpy
from numpy_transformer.data import (BOS_ID, EOS_ID, PAD_ID, Batch, CharTokenizer, batches,
                                    encode_pairs, lm_batch, lm_batches, make_batch)

from doors import raises_naming


def test_make_batch_pads_shifts_and_counts():
    src = [[5, 6, 7], [8]]
    tgt = [[9, 10], [11, 12, 13, 14]]
    b = make_batch(src, tgt)
    assert isinstance(b, Batch) and len(b) == 2
    np.testing.assert_array_equal(to_numpy(b.src), [[5, 6, 7], [8, 0, 0]])
    np.testing.assert_array_equal(to_numpy(b.tgt_in), [[1, 9, 10, 0, 0], [1, 11, 12, 13, 14]])
    np.testing.assert_array_equal(to_numpy(b.tgt_out), [[9, 10, 2, 0, 0], [11, 12, 13, 14, 2]])
    assert to_numpy(b.src).dtype == np.int64 and to_numpy(b.tgt_in).dtype == np.int64
    assert b.ntokens == 3 + 5
    assert isinstance(b.ntokens, int)


def test_masks_shapes_and_values():
    b = make_batch([[5, 6, 7], [8]], [[9], [11, 12, 13]])
    src_mask, tgt_mask = to_numpy(b.src_mask), to_numpy(b.tgt_mask)
    B, S, T = 2, 3, 4
    assert src_mask.shape == (B, 1, 1, S) and src_mask.dtype == np.bool_
    np.testing.assert_array_equal(src_mask[:, 0, 0], [[True, True, True], [True, False, False]])
    assert tgt_mask.shape == (B, 1, T, T) and tgt_mask.dtype == np.bool_
    causal = np.tril(np.ones((T, T), dtype=bool))
    np.testing.assert_array_equal(tgt_mask[1, 0], causal)           # no padding in row 1
    key_is_real = np.array([True, True, False, False])               # <bos> 9 <pad> <pad>
    np.testing.assert_array_equal(tgt_mask[0, 0], causal & key_is_real[None, :])


def test_custom_special_ids_and_empty_target():
    b = make_batch([[4]], [[]], pad_id=7, bos_id=8, eos_id=9)
    np.testing.assert_array_equal(to_numpy(b.tgt_in), [[8]])
    np.testing.assert_array_equal(to_numpy(b.tgt_out), [[9]])
    assert b.ntokens == 1


def test_make_batch_bad_input():
    with raises_naming(ValueError, "tgt_seqs", "2", "1"):
        make_batch([[4], [5]], [[6]])
    with raises_naming(ValueError, "src_seqs"):
        make_batch([], [])
    with raises_naming(ValueError, "src_seqs[1]"):
        make_batch([[4], []], [[6], [7]])
    with raises_naming(TypeError, "tgt_seqs[0]", "float64"):
        make_batch([[4]], [[1.5]])
    with raises_naming(ValueError, "src_seqs[0]", "-2"):
        make_batch([[4, -2]], [[6]])
    with raises_naming(ValueError, "src_seqs[0]"):
        make_batch([[[4]]], [[6]])


def _pairs(n, rng):
    return [(list(rng.integers(4, 20, size=rng.integers(1, 30))),
             list(rng.integers(4, 20, size=rng.integers(0, 30)))) for _ in range(n)]


@pytest.mark.parametrize("sort_by_length", [True, False])
def test_batches_cover_every_pair_once(sort_by_length):
    rng = np.random.default_rng(0)
    pairs = _pairs(103, rng)
    seen = []
    for b in batches(pairs, 10, rng=rng, sort_by_length=sort_by_length, bucket_size=40):
        assert len(b) <= 10
        for row in to_numpy(b.src):
            seen.append(tuple(int(t) for t in row if t != PAD_ID))
    assert sorted(seen) == sorted(tuple(int(t) for t in s) for s, _ in pairs)


def test_batches_deterministic_by_seed_and_drop_last():
    pairs = _pairs(50, np.random.default_rng(1))
    first = [to_numpy(b.src) for b in batches(pairs, 8, rng=np.random.default_rng(3))]
    again = [to_numpy(b.src) for b in batches(pairs, 8, rng=np.random.default_rng(3))]
    assert all(np.array_equal(a, b) for a, b in zip(first, again)) and len(first) == 7
    sizes = [len(b) for b in batches(pairs, 8, rng=np.random.default_rng(3), drop_last=True)]
    assert sizes == [8] * 6
    in_order = list(batches(pairs, 50, shuffle=False, sort_by_length=False))
    np.testing.assert_array_equal(to_numpy(in_order[0].src)[0, :len(pairs[0][0])], pairs[0][0])


def test_bucketing_reduces_padding():
    pairs = _pairs(400, np.random.default_rng(2))

    def padding(sort):
        bs = list(batches(pairs, 16, rng=np.random.default_rng(0), sort_by_length=sort))
        return sum(int((to_numpy(b.src) == PAD_ID).sum()) for b in bs)

    assert padding(True) < 0.3 * padding(False)


def test_batches_bad_input():
    with raises_naming(ValueError, "batch_size", "0"):
        next(batches([([4], [5])], 0))
    with raises_naming(ValueError, "pairs"):
        next(batches([], 4))
    with raises_naming(TypeError, "rng", "int"):
        next(batches([([4], [5])], 4, rng=0))


def test_encode_pairs_then_batch():
    tok = CharTokenizer.from_texts(["abc"])
    pairs = encode_pairs([("ab", "ba"), ("c", "cc")], tok)
    b = make_batch(*zip(*pairs))
    assert tok.decode(b.tgt_out[0]) == "ba" and tok.decode(b.tgt_in[1]) == "cc"
    assert int(to_numpy(b.tgt_in)[0, 0]) == BOS_ID and int(to_numpy(b.tgt_out)[1, 2]) == EOS_ID


def test_lm_windows_are_shifted_slices():
    ids = np.arange(100, dtype=np.int64) + 4
    x, y = lm_batch(ids, 5, 7, rng=np.random.default_rng(0))
    x, y = to_numpy(x), to_numpy(y)
    assert x.shape == y.shape == (5, 7) and x.dtype == np.int64
    np.testing.assert_array_equal(y, x + 1)                   # next token in the text
    np.testing.assert_array_equal(np.diff(x, axis=1), 1)      # contiguous windows
    assert x.min() >= 4 and y.max() <= 103


def test_lm_batches_deterministic_and_reach_the_last_token():
    ids = list(range(4, 14))                  # 10 ids, block_size 9: only start 0 fits
    out = list(lm_batches(ids, 3, 9, rng=np.random.default_rng(0), num_batches=2))
    assert len(out) == 2
    np.testing.assert_array_equal(to_numpy(out[0][1])[0], list(range(5, 14)))
    a = [to_numpy(x) for x, _ in lm_batches(ids * 5, 4, 3, rng=np.random.default_rng(9),
                                            num_batches=3)]
    b = [to_numpy(x) for x, _ in lm_batches(ids * 5, 4, 3, rng=np.random.default_rng(9),
                                            num_batches=3)]
    assert all(np.array_equal(p, q) for p, q in zip(a, b))
    with raises_naming(ValueError, "ids", "block_size", "11"):
        lm_batch(ids, 2, 10, rng=np.random.default_rng(0))
    with raises_naming(TypeError, "rng", "NoneType"):
        lm_batch(ids, 2, 3, rng=None)
