"""Endless, resumable streams of training batches for the Trainer.

A stream hands out one training step's data at a time:

    inputs, targets, ntokens = stream.next_batch()
    logits = model.forward(*inputs)                   # then loss(logits, targets)

and its position is a small JSON-able dict (`state_dict()`), saved in every
checkpoint, so a resumed run sees exactly the batches an uninterrupted run
would have seen.

- `PairStream`: seq2seq pairs, epoch after epoch. Epoch e is shuffled (and
  bucketed by length) with a generator seeded from (seed, e), so its position
  is just (epoch, batch index). It either cycles over a fixed corpus, or asks
  a generated task for a fresh pool of examples every epoch: endless data,
  which a small model cannot memorise. Batches hold `batch_size` pairs, or,
  with `batch_tokens=N`, as many pairs of similar length as fit N tokens
  (`token_chunks`): rows x longest source <= N and rows x longest target <= N.
- `TextStream`: random windows of one long text, for a language model; its
  position is its generator's state.
"""

from itertools import islice

import numpy as np

from ..validation import check_integer, message
from ..data.batching import batches, encode_pairs, lm_batch, make_batch
from ..errors import InputError


class PairStream:
    """Batches of (src_ids, tgt_ids) pairs: inputs (src, tgt_in, src_mask, tgt_mask), tgt_out.

    pairs:        a fixed list of encoded pairs (a corpus), or None with `make_pool`
    make_pool:    make_pool(rng) -> a list of encoded pairs: a fresh pool per epoch
    batch_tokens: None: batch_size pairs per batch; N: batches of pairs of similar
                  length within N tokens per side (`token_chunks`)
    """

    def __init__(self, batch_size, seed=0, *, pairs=None, make_pool=None, batch_tokens=None):
        check_integer(batch_size, "batch_size")
        if batch_tokens is not None:
            check_integer(batch_tokens, "batch_tokens")
        if (pairs is None) == (make_pool is None):
            raise InputError(message("pairs/make_pool", "exactly one of them", "both or neither"))
        if pairs is not None and not pairs:
            raise InputError(message("pairs", "at least one training pair", "none"))
        self.batch_size, self.seed, self.batch_tokens = batch_size, seed, batch_tokens
        self.make_pool = make_pool if make_pool is not None else (lambda rng: pairs)
        self.epoch, self.index = 0, 0
        self._iterator = None

    @classmethod
    def from_task(cls, task, tokenizer, batch_size, seed=0, pool_batches=100, batch_tokens=None):
        """A stream of fresh examples of a generated task: pool_batches * batch_size pairs
        per epoch."""
        longest = max(task.max_src_len, task.max_tgt_len + 1)
        if batch_tokens is not None and batch_tokens < longest:
            raise InputError(message("batch_tokens", f"at least {longest} (the {task.name} "
                                     f"task's longest sequence)", batch_tokens))
        return cls(batch_size, seed, batch_tokens=batch_tokens, make_pool=lambda rng: encode_pairs(
            task.sample(rng, pool_batches * batch_size, split="train"), tokenizer))

    def _epoch_pool(self, epoch):
        """(pool, generator) of an epoch: everything about it follows from (seed, epoch)."""
        rng = np.random.default_rng([self.seed, 0, epoch])
        return self.make_pool(rng), rng

    def _start_epoch(self, skip=0):
        pool, rng = self._epoch_pool(self.epoch)
        if self.batch_tokens is None:
            self._iterator = batches(pool, self.batch_size, rng=rng)
            for _ in range(skip):                   # resuming inside an epoch
                next(self._iterator, None)
            return
        chunks = islice(token_chunks(pool, self.batch_tokens, rng), skip, None)
        self._iterator = (make_batch([pool[i][0] for i in chunk], [pool[i][1] for i in chunk])
                          for chunk in chunks)

    def next_batch(self):
        """((src, tgt_in, src_mask, tgt_mask), tgt_out, ntokens) of the next batch."""
        if self._iterator is None:
            self._start_epoch(skip=self.index)
        batch = next(self._iterator, None)
        if batch is None:
            self.epoch, self.index = self.epoch + 1, 0
            self._start_epoch()
            batch = next(self._iterator)
        self.index += 1
        return (batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask), batch.tgt_out, \
            batch.ntokens

    def summary(self):
        """'batches of up to N tokens: R rows on average, P% padding' (epoch 0's batches),
        or 'batches of B pairs' without a token budget."""
        if self.batch_tokens is None:
            return f"batches of {self.batch_size} pairs"
        pool, rng = self._epoch_pool(0)
        rows, padding = padding_of(pool, token_chunks(pool, self.batch_tokens, rng))
        return (f"batches of up to {self.batch_tokens} tokens: {rows:.1f} rows on average, "
                f"{100 * padding:.1f}% padding")

    def state_dict(self):
        return {"epoch": self.epoch, "index": self.index}

    def load_state_dict(self, state):
        epoch, index = state["epoch"], state["index"]
        for name, value in (("epoch", epoch), ("index", index)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InputError(message(name, "a count >= 0", repr(value)[:80]))
        self.epoch, self.index = epoch, index
        self._iterator = None


def pair_widths(pairs):
    """(S, T) int64 arrays: each pair's source length and target length + 1 (the padded
    widths of its rows in src and in tgt_in / tgt_out)."""
    S = np.fromiter((len(s) for s, _ in pairs), dtype=np.int64, count=len(pairs))
    T = np.fromiter((len(t) + 1 for _, t in pairs), dtype=np.int64, count=len(pairs))
    return S, T


def token_chunks(pairs, batch_tokens, rng):
    """Index arrays cutting `pairs` into batches of similar length within batch_tokens.

    A pair's width is w = max(S, T) (pair_widths). The pairs are taken in an order drawn
    from rng (so that pairs of one shape mix differently each epoch), sorted by w, then
    by S (a stable sort: neighbours share both lengths, which pads a third as much as w
    alone on Multi30k), and cut greedily: a batch grows while rows * (its widest w) <= N,
    so both of its padded arrays, (rows, S_max) and (rows, T_max), hold at most N ids.
    The batches come back in an order drawn from rng too.
    """
    S, T = pair_widths(pairs)
    width = np.maximum(S, T)                                                   # (n,)
    if int(width.max()) > batch_tokens:
        raise InputError(message("batch_tokens", f"at least {int(width.max())} (the longest "
                                 f"pair: source, or target with <eos>)", batch_tokens))
    order = rng.permutation(len(pairs))
    key = width * (int(S.max()) + 1) + S                          # (n,) w first, then S
    order = order[np.argsort(key[order], kind="stable")]                       # (n,)
    chunks, start = [], 0
    for i, w in enumerate(width[order].tolist()):     # ascending: w is the batch's widest
        if (i - start + 1) * w > batch_tokens:
            chunks.append(order[start:i])
            start = i
    chunks.append(order[start:])
    return [chunks[k] for k in rng.permutation(len(chunks))]


def padding_of(pairs, chunks):
    """(mean rows per batch, fraction of the padded src and tgt arrays that is padding)."""
    S, T = pair_widths(pairs)
    real = sum(int(S[c].sum() + T[c].sum()) for c in chunks)
    padded = sum(len(c) * int(S[c].max() + T[c].max()) for c in chunks)
    return sum(len(c) for c in chunks) / len(chunks), 1.0 - real / padded


class TextStream:
    """Random windows x = ids[i:i+T], y = ids[i+1:i+T+1] of one long text (for a GPT)."""

    def __init__(self, ids, batch_size, block_size, seed=0):
        check_integer(batch_size, "batch_size")
        check_integer(block_size, "block_size")
        self.ids = np.asarray(ids, dtype=np.int64)
        if len(self.ids) < block_size + 1:
            raise InputError(message("text", f"at least block_size + 1 = {block_size + 1} "
                                     "training tokens", len(self.ids)))
        self.batch_size, self.block_size = batch_size, block_size
        self.rng = np.random.default_rng([seed, 0])

    def next_batch(self):
        """((x,), y, ntokens) with x, y (B, T)."""
        x, y = lm_batch(self.ids, self.batch_size, self.block_size, rng=self.rng)
        return (x,), y, int(y.size)

    def state_dict(self):
        return {"rng": self.rng.bit_generator.state}

    def load_state_dict(self, state):
        self.rng.bit_generator.state = state["rng"]
