"""Batches: lists of token-id sequences -> padded arrays and attention masks.

For translation (teacher forcing), one target sentence y1 y2 y3 becomes

    tgt_in  = <bos> y1 y2 y3        what the decoder reads
    tgt_out = y1    y2 y3 <eos>     what it must predict, position by position

and every row is padded with <pad> up to the longest sequence in the batch.
The masks are built once per batch (masks.py), so no layer rebuilds them:

    src_mask (B, 1, 1, S)  True where the source key is a real token
    tgt_mask (B, 1, T, T)  causal AND not padding, for decoder self-attention

For a character-level language model, `lm_batches` cuts random windows out
of one long id sequence: x = ids[i : i+T], y = ids[i+1 : i+T+1].

Arrays are built with NumPy on the CPU, then moved with `xp.asarray`, so they
land on the GPU under the CuPy backend.
"""

from dataclasses import dataclass

import numpy as np

from ..backend import to_numpy, xp
from ..validation import check_bool, check_integer, message
from ..masks import make_decoder_mask, make_padding_mask
from .tokenizers import BOS_ID, EOS_ID, PAD_ID
from ..errors import InputError, InputTypeError


@dataclass
class Batch:
    """One padded batch of source/target pairs, ready for the model and the loss."""

    src: object        # (B, S) int64 source ids, padded with pad_id
    tgt_in: object     # (B, T) int64 decoder input: <bos> + target
    tgt_out: object    # (B, T) int64 decoder target: target + <eos>
    src_mask: object   # (B, 1, 1, S) bool, True = real source token
    tgt_mask: object   # (B, 1, T, T) bool, causal and not padding
    ntokens: int       # number of non-pad tokens in tgt_out (to normalise the loss)

    def __len__(self):
        return self.src.shape[0]


def _as_id_list(seq, name, allow_empty):
    """seq as a 1-D int64 NumPy array of non-negative ids, with a clear error if not."""
    arr = np.asarray(to_numpy(seq) if hasattr(seq, "shape") else seq)
    if arr.ndim != 1:
        raise InputError(message(name, "a 1-D sequence of token ids", f"shape {arr.shape}"))
    if arr.size == 0:
        if not allow_empty:
            raise InputError(message(name, "at least one token id", "an empty sequence"))
        return arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise InputTypeError(message(name, "integer token ids", f"dtype {arr.dtype}"))
    if arr.min() < 0:
        raise InputError(message(name, "token ids >= 0", f"id {int(arr.min())}"))
    return arr.astype(np.int64, copy=False)


def _pad(rows, pad_id):
    """Stack 1-D int64 arrays into (B, longest) filled with pad_id."""
    out = np.full((len(rows), max(len(r) for r in rows)), pad_id, dtype=np.int64)
    for i, row in enumerate(rows):
        out[i, :len(row)] = row
    return out


def make_batch(src_seqs, tgt_seqs, pad_id=PAD_ID, bos_id=BOS_ID, eos_id=EOS_ID):
    """Pad a list of source and a list of target id sequences into a `Batch`.

    The targets are given WITHOUT <bos>/<eos>; they are added here. A source
    must hold at least one id; a target may be empty (then it is only <eos>).
    """
    if len(src_seqs) != len(tgt_seqs):
        raise InputError(message("tgt_seqs", f"{len(src_seqs)} sequences (one per source)",
                                 len(tgt_seqs)))
    if len(src_seqs) == 0:
        raise InputError(message("src_seqs", "at least one sequence", "an empty list"))
    src = [_as_id_list(s, f"src_seqs[{i}]", allow_empty=False) for i, s in enumerate(src_seqs)]
    tgt = [_as_id_list(t, f"tgt_seqs[{i}]", allow_empty=True) for i, t in enumerate(tgt_seqs)]
    bos, eos = np.array([bos_id]), np.array([eos_id])
    src_ids = _pad(src, pad_id)                                        # (B, S)
    tgt_in = _pad([np.concatenate([bos, t]) for t in tgt], pad_id)     # (B, T)
    tgt_out = _pad([np.concatenate([t, eos]) for t in tgt], pad_id)    # (B, T)
    ntokens = int((tgt_out != pad_id).sum())
    src_ids, tgt_in, tgt_out = xp.asarray(src_ids), xp.asarray(tgt_in), xp.asarray(tgt_out)
    return Batch(src=src_ids, tgt_in=tgt_in, tgt_out=tgt_out,
                 src_mask=make_padding_mask(src_ids, pad_id),          # (B, 1, 1, S)
                 tgt_mask=make_decoder_mask(tgt_in, pad_id),           # (B, 1, T, T)
                 ntokens=ntokens)


def encode_pairs(pairs, src_tokenizer, tgt_tokenizer=None):
    """[(src_text, tgt_text)] -> [(src_ids, tgt_ids)], no <bos>/<eos> added.

    tgt_tokenizer defaults to src_tokenizer (one shared vocabulary).
    """
    tgt_tokenizer = tgt_tokenizer or src_tokenizer
    return [(src_tokenizer.encode(s), tgt_tokenizer.encode(t)) for s, t in pairs]


def batches(pairs, batch_size, *, rng=None, shuffle=True, sort_by_length=True,
            bucket_size=None, drop_last=False, pad_id=PAD_ID, bos_id=BOS_ID, eos_id=EOS_ID):
    """Yield `Batch`es covering `pairs` (a list of (src_ids, tgt_ids)) once: one epoch.

    shuffle:        visit the pairs in an order drawn from `rng` (a new, unseeded
                    generator if None), and shuffle the order of the batches.
    sort_by_length: bucketing. Take `bucket_size` pairs at a time (default
                    100 * batch_size), sort them by length and cut them into
                    batches, so that sentences of similar length share a batch
                    and little compute is spent on padding.
    drop_last:      skip a final batch smaller than batch_size.
    """
    check_integer(batch_size, "batch_size")
    for name, flag in (("shuffle", shuffle), ("sort_by_length", sort_by_length),
                       ("drop_last", drop_last)):
        check_bool(flag, name)
    n = len(pairs)
    if n == 0:
        raise InputError(message("pairs", "at least one (src_ids, tgt_ids) pair", "an empty list"))
    bucket_size = bucket_size or 100 * batch_size
    check_integer(bucket_size, "bucket_size")
    if shuffle:
        rng = rng if rng is not None else np.random.default_rng()
        if not isinstance(rng, np.random.Generator):
            raise InputTypeError(message("rng", "a numpy.random.Generator", type(rng).__name__))
        order = rng.permutation(n)
    else:
        order = np.arange(n)
    if sort_by_length:
        chunks = []
        for start in range(0, n, bucket_size):
            bucket = sorted(order[start:start + bucket_size],
                            key=lambda i: (len(pairs[i][0]), len(pairs[i][1])))
            chunks += [bucket[k:k + batch_size] for k in range(0, len(bucket), batch_size)]
    else:
        chunks = [order[k:k + batch_size] for k in range(0, n, batch_size)]
    if drop_last:
        chunks = [c for c in chunks if len(c) == batch_size]
    if shuffle and sort_by_length:
        chunks = [chunks[i] for i in rng.permutation(len(chunks))]
    for chunk in chunks:
        yield make_batch([pairs[i][0] for i in chunk], [pairs[i][1] for i in chunk],
                         pad_id=pad_id, bos_id=bos_id, eos_id=eos_id)


def lm_batch(ids, batch_size, block_size, *, rng):
    """One batch of random windows (x, y) for next-token prediction.

    ids: 1-D sequence of token ids (a whole text). Returns x, y of shape
    (B, T) = (batch_size, block_size), int64: y[b, t] is the token that
    follows x[b, t] in the text (y is x's window shifted one step right).
    The windows start anywhere in [0, len(ids) - T - 1], drawn from `rng`.
    """
    ids = _lm_ids(ids, block_size)
    return _lm_windows(ids, batch_size, block_size, rng)


def lm_batches(ids, batch_size, block_size, *, rng, num_batches=None):
    """Yield `num_batches` random (x, y) windows batches (forever if None)."""
    ids = _lm_ids(ids, block_size)       # convert once, not once per batch
    check_integer(batch_size, "batch_size")
    if num_batches is not None:
        check_integer(num_batches, "num_batches")
    count = 0
    while num_batches is None or count < num_batches:
        yield _lm_windows(ids, batch_size, block_size, rng)
        count += 1


def _lm_ids(ids, block_size):
    check_integer(block_size, "block_size")
    ids = _as_id_list(ids, "ids", allow_empty=True)
    if len(ids) < block_size + 1:
        raise InputError(message("ids", f"at least block_size + 1 = {block_size + 1} token ids",
                                 len(ids)))
    return ids


def _lm_windows(ids, batch_size, block_size, rng):
    check_integer(batch_size, "batch_size")
    if not isinstance(rng, np.random.Generator):
        raise InputTypeError(message("rng", "a numpy.random.Generator", type(rng).__name__))
    starts = rng.integers(0, len(ids) - block_size, size=batch_size)   # (B,)
    positions = starts[:, None] + np.arange(block_size)                 # (B, T)
    x, y = ids[positions], ids[positions + 1]                           # (B, T), (B, T)
    return xp.asarray(x), xp.asarray(y)
