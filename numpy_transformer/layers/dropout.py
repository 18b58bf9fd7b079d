"""Dropout: inverted dropout with the mask kept for backward."""

import numpy as np

from ..backend import get_backend, xp
from ..validation import check_unit_interval
from ..module import Module
from . import fused

OFF = "off"     # what `saved` holds after a forward that dropped nothing (eval mode, or p = 0)


class Dropout(Module):
    """Inverted dropout: y = x * m / (1 - p), m_i ~ Bernoulli(1 - p); identity in eval mode.

    Dividing by (1 - p) at training time keeps E[y] = x, so nothing changes at test time.
    Backward: dx = dy * m / (1 - p), with the same mask m.
    Saved: the scaled mask m / (1 - p), or OFF when dropout is off (eval mode or p = 0).

    Where masks come from: `rng` is a NumPy Generator on the host (its state is
    what checkpoints save, so a resumed run draws the same masks). With NumPy the
    mask is drawn from it directly. On a device the host draws only a 63-bit seed
    and the mask is drawn on the device from `xp.random.default_rng(seed)`, so no
    mask crosses the bus; the simulator then gives the same masks as NumPy's
    generator with that seed, CuPy different ones (its generator is another one).
    """

    def __init__(self, p=0.0, *, rng=None, name="p"):
        super().__init__()
        check_unit_interval(p, name)          # `name`: how the caller's argument is called
        self.p = p
        self.rng = rng if rng is not None else np.random.default_rng()
        self.saved = None

    def forward(self, x):
        if not self.training or self.p == 0.0:
            self.saved = OFF
            return x
        if fused.on(fused):                                                  # one kernel on a GPU
            return fused.dropout_forward(self, x)
        mask = xp.asarray(self._keep(x.shape), dtype=x.dtype)              # 1.0 kept, 0.0 dropped
        mask /= x.dtype.type(1.0 - self.p)
        self.saved = mask
        return x * mask

    def _keep(self, shape):
        """A boolean mask of `shape`, True with probability 1 - p (see the class docstring)."""
        if get_backend() == "numpy":
            return self.rng.random(shape, dtype="float32") >= self.p
        seed = int(self.rng.integers(2**63))                 # host only: no wait for the device
        return xp.random.default_rng(seed).random(shape, dtype="float32") >= self.p

    def backward(self, dy):
        # BEGIN SOLUTION dropout
        # HINT: the same kept mask and the same 1 / (1 - p) scale as forward; OFF: dy unchanged
        mask = self.saved_for_backward()
        return dy if mask is OFF else dy * mask
        # END SOLUTION

    def reapply(self, x):
        """x through the last forward's mask again: what forward(x) gave, no new mask drawn.

        For a caller that recomputes this dropout's output when it needs it rather
        than keeping it (attention, whose weights A' = dropout(A) are as big as A).
        """
        # BEGIN SOLUTION dropout
        # HINT: x times the mask (and scale) that the last forward kept; OFF: x unchanged
        mask = self.saved_for_backward()
        return x if mask is OFF else x * mask
        # END SOLUTION
