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
  which a small model cannot memorise.
- `TextStream`: random windows of one long text, for a language model; its
  position is its generator's state.
"""

import numpy as np

from ..validation import check_positive_int, message
from ..data.batching import batches, encode_pairs, lm_batch
from ..errors import InputError


class PairStream:
    """Batches of (src_ids, tgt_ids) pairs: inputs (src, tgt_in, src_mask, tgt_mask), tgt_out.

    pairs:      a fixed list of encoded pairs (a corpus), or None with `make_pool`
    make_pool:  make_pool(rng) -> a list of encoded pairs: a fresh pool per epoch
    """

    def __init__(self, batch_size, seed=0, *, pairs=None, make_pool=None):
        check_positive_int(batch_size, "batch_size")
        if (pairs is None) == (make_pool is None):
            raise InputError(message("pairs/make_pool", "exactly one of them", "both or neither"))
        if pairs is not None and not pairs:
            raise InputError(message("pairs", "at least one training pair", "none"))
        self.batch_size, self.seed = batch_size, seed
        self.make_pool = make_pool if make_pool is not None else (lambda rng: pairs)
        self.epoch, self.index = 0, 0
        self._iterator = None

    @classmethod
    def from_task(cls, task, tokenizer, batch_size, seed=0, pool_batches=100):
        """A stream of fresh examples of a generated task: pool_batches batches per epoch."""
        return cls(batch_size, seed, make_pool=lambda rng: encode_pairs(
            task.sample(rng, pool_batches * batch_size, split="train"), tokenizer))

    def _start_epoch(self):
        rng = np.random.default_rng([self.seed, 0, self.epoch])
        pool = self.make_pool(rng)
        self._iterator = batches(pool, self.batch_size, rng=rng)

    def next_batch(self):
        """((src, tgt_in, src_mask, tgt_mask), tgt_out, ntokens) of the next batch."""
        if self._iterator is None:
            self._start_epoch()
            for _ in range(self.index):              # resuming inside an epoch
                next(self._iterator)
        batch = next(self._iterator, None)
        if batch is None:
            self.epoch, self.index = self.epoch + 1, 0
            self._start_epoch()
            batch = next(self._iterator)
        self.index += 1
        return (batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask), batch.tgt_out, \
            batch.ntokens

    def state_dict(self):
        return {"epoch": self.epoch, "index": self.index}

    def load_state_dict(self, state):
        self.epoch, self.index = int(state["epoch"]), int(state["index"])
        self._iterator = None


class TextStream:
    """Random windows x = ids[i:i+T], y = ids[i+1:i+T+1] of one long text (for a GPT)."""

    def __init__(self, ids, batch_size, block_size, seed=0):
        check_positive_int(batch_size, "batch_size")
        check_positive_int(block_size, "block_size")
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
