"""Embedding: a lookup table from token ids to d_model-dimensional vectors."""

import math

import numpy as np

from ..backend import get_default_dtype, xp
from ..validation import check_bool, check_ids, check_integer
from ..module import Module
from . import fast


class Embedding(Module):
    """Token embedding: y[b, t] = W[ids[b, t]] * sqrt(D)  (the factor only when scale=True).

    The paper multiplies the embeddings by sqrt(d_model) (section 3.4), so that
    they are on the same scale as the sinusoidal positional encodings added next.

    Shapes: ids (B, T) integers in [0, V) (any shape works), W (V, D), y (B, T, D)
    Backward: each output row is a copy of one row of W, so row v of dW is the
        sum of the upstream rows dy[b, t] at every position where ids[b, t] = v:
            dW[v] = s * sum over {(b, t): ids[b, t] = v} of dy[b, t],   s = sqrt(D) or 1
        A token that occurs twice gets both contributions.
    Returns: None from backward (the ids are integers: they have no gradient).
    Saved: ids.
    Checks: ids (integers in [0, V)), when called (`embed(ids)`, Module.__call__).
    Init: W ~ Normal(0, 1/D), so that W * sqrt(D) has unit-variance entries (the
        amplitude of the positional encodings) and W itself is a well-scaled output
        projection when the embedding is tied to the pre-softmax linear layer.
    """

    def __init__(self, vocab_size, d_model, *, scale=True, rng=None):
        super().__init__()
        check_integer(vocab_size, "vocab_size")
        check_integer(d_model, "d_model")
        check_bool(scale, "scale")
        rng = rng if rng is not None else np.random.default_rng()
        self.vocab_size, self.d_model, self.scale = vocab_size, d_model, scale
        W = rng.normal(0.0, d_model**-0.5, (vocab_size, d_model))
        self.params = {"weight": xp.asarray(W, dtype=get_default_dtype())}
        self.grads = {"weight": xp.zeros_like(self.params["weight"])}
        self.saved = None

    @property
    def multiplier(self):
        """The factor applied to the looked-up rows: sqrt(D) when scaling, else 1."""
        return math.sqrt(self.d_model) if self.scale else 1.0

    def forward(self, ids):
        self.saved = ids = xp.asarray(ids)                # host ids (a caller's): to the device
        y = self.params["weight"][ids]                    # (B, T, D), a fresh copy
        if self.scale:
            y *= self.multiplier
        return y

    def backward(self, dy):
        """The gradient of the table, added into grads["weight"]; returns None (the ids are
        integers: they have no gradient).

            dW[ids[b, t]] += s * dy[b, t]   for every (b, t), a repeated id adding every time

        which is `xp.add.at(dW, ids, s * dy)`; a plain `dW[ids] += s * dy` would keep
        only one of the rows of a repeated id. `fast.add_at` is the same call, faster
        (and on the GPU, where CuPy has no `add.at`).
        """
        # BEGIN SOLUTION embedding
        # HINT: ADD multiplier * dy[b, t] to row ids[b, t] of grads["weight"], once per occurrence
        ids = self.saved_for_backward()                                # (B, T)
        fast.add_at(self.grads["weight"], ids, dy * self.multiplier)   # rows of (V, D)
        return None
        # END SOLUTION

    def check_inputs(self, ids):
        check_ids(ids, "ids", self.vocab_size)
