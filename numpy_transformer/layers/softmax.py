"""Softmax and log-softmax over one axis, with their backward passes.

softmax(x)_i = exp(x_i - m) / sum_j exp(x_j - m),   m = max_j x_j

Subtracting the row maximum changes nothing mathematically and keeps exp from
overflowing, so logits of 1e4 are fine. With a boolean `mask` (True = keep),
masked entries get probability exactly 0; a row with nothing kept is all zeros
(never NaN).

Backward (p = softmax(x), dp the upstream gradient):
    dx_i = sum_j dp_j dp_j/dx_i = p_i (dp_i - sum_j dp_j p_j)
the Jacobian-vector product of diag(p) - p p^T, never the (n, n) Jacobian itself.

log_softmax(x) = x - m - log sum_j exp(x_j - m)
Backward: dx = dz - softmax(x) * sum_j dz_j.
"""

import math

from ..backend import xp
from ..module import Module


def additive_mask(mask, dtype):
    """The boolean `mask` as numbers to add to scores: 0 where True (keep), -inf where
    False. Adding it masks in place, with no new array of the scores' size."""
    return xp.where(mask, 0.0, -xp.inf).astype(dtype)


def sum_last(a):
    """Sums over the last axis, (..., n) -> (..., 1), as one matrix-vector product:
    NumPy's a.sum(axis=-1) is several times slower on short rows."""
    n = a.shape[-1]
    return (a.reshape(-1, n) @ xp.ones(n, dtype=a.dtype)).reshape(*a.shape[:-1], 1)


def softmax(x, axis=-1, mask=None, inplace=False):
    """Stable softmax of x along `axis`; masked-out entries (mask False) get 0.

    mask must broadcast to x's shape. inplace=True writes the result into x (which
    the caller no longer needs) instead of a new array. Readable form:
        x = where(mask, x, -inf);  e = exp(x - max(x));  return e / sum(e)
    Subtracting the row max only keeps exp from overflowing (or a whole row from
    underflowing). When every |x| is below log(largest float) / 4 (22 in float32),
    exp(x) is safe as it is and the same softmax to rounding, so we skip the row max,
    which NumPy computes slowly over short rows (attention scores are usually small).
    """
    e = x if inplace else x.copy()
    limit = math.log(xp.finfo(e.dtype).max) / 4
    shift = not (-limit <= e.min() and e.max() <= limit)  # NaN compares False: shift
    if mask is not None:
        e += additive_mask(mask, e.dtype)                 # -inf where masked: exp gives 0
    if shift:
        m = e.max(axis=axis, keepdims=True)
        if mask is not None:
            m[~xp.isfinite(m)] = 0.0                      # fully masked row: no max
        e -= m
    xp.exp(e, out=e)
    s = sum_last(e) if axis in (-1, e.ndim - 1) else e.sum(axis=axis, keepdims=True)
    if mask is not None:
        s[s == 0] = 1.0                                   # 0 / 1 = 0, not 0 / 0 = NaN
    e /= s
    return e


def softmax_backward(dp, p, axis=-1):
    """dx = p * (dp - sum(dp * p)) for p = softmax(x)."""
    # BEGIN SOLUTION softmax
    # HINT: the Jacobian-vector product of diag(p) - p p^T along axis, without the Jacobian
    return p * (dp - (dp * p).sum(axis=axis, keepdims=True))
    # END SOLUTION


def log_softmax(x, axis=-1):
    """Stable log(softmax(x)) along `axis`."""
    z = x - x.max(axis=axis, keepdims=True)
    z -= xp.log(xp.exp(z).sum(axis=axis, keepdims=True))
    return z


def log_softmax_backward(dz, z, axis=-1):
    """dx = dz - softmax(x) * sum(dz) for z = log_softmax(x)."""
    return dz - xp.exp(z) * dz.sum(axis=axis, keepdims=True)


class Softmax(Module):
    """Softmax as a module (used by lessons and the gradient checker).

    Cache: the output p, all the backward needs.
    """

    def __init__(self, axis=-1):
        super().__init__()
        self.axis = axis
        self.cache = None

    def forward(self, x, mask=None):
        self.cache = softmax(x, self.axis, mask)
        return self.cache

    def backward(self, dp):
        return softmax_backward(dp, self.cache, self.axis)


class LogSoftmax(Module):
    """Log-softmax as a module. Cache: the output z."""

    def __init__(self, axis=-1):
        super().__init__()
        self.axis = axis
        self.cache = None

    def forward(self, x):
        self.cache = log_softmax(x, self.axis)
        return self.cache

    def backward(self, dz):
        return log_softmax_backward(dz, self.cache, self.axis)
