"""Softmax and log-softmax over one axis, with their backward passes.

softmax(x)_i = exp(x_i - m) / sum_j exp(x_j - m),   m = max_j x_j

Subtracting the row maximum changes nothing mathematically and keeps exp from
overflowing, so logits of 1e4 are fine. With a boolean `mask` (True = keep),
masked entries get probability exactly 0; a row with nothing kept is all zeros
(never NaN).

Backward (p = softmax(x), dp the upstream gradient). The Jacobian of one row is
    J_ij = partial p_i / partial x_j = p_i (delta_ij - p_j),   J = diag(p) - p p^T,
a symmetric (n, n) matrix, and dx = J^T dp = J dp. The backward computes that
product along `axis` without ever building J (its one-line form is what the
`softmax` part of the assignment asks for).

log_softmax(x) = x - m - log sum_j exp(x_j - m)
Backward: dx = dz - softmax(x) * sum_j dz_j.
"""

from ..backend import xp
from ..module import Module
from . import fast, fused

fused_softmax = fused.form("softmax")   # None in a student copy that stubs part softmax


def softmax(x, axis=-1, mask=None):
    """Stable softmax of x along `axis`; masked-out entries (mask False) get exactly 0.

        x = x + (0 where mask, else -inf)   masked entries: exp(-inf) = 0
        e = exp(x - max(x))                 the row max keeps exp from overflowing
        p = e / sum(e)                      a row with nothing kept: 0 / 1 = 0, never NaN
    mask must broadcast to x's shape. Returns a new array; x is left alone.
    """
    if axis in (-1, x.ndim - 1) and fused.on(fused_softmax):     # one kernel on a GPU
        return fused_softmax.forward(x, mask)
    if mask is None:
        e = x.copy()                                      # x's shape: our array to work in
    else:
        e = x + xp.where(mask, x.dtype.type(0), x.dtype.type(-xp.inf))   # -inf where masked
    m = fast.max(e, axis=axis, keepdims=True)             # the row max
    if mask is not None:
        m[~xp.isfinite(m)] = 0.0                          # a fully masked row has no max
    e -= m
    xp.exp(e, out=e)                                      # e = exp(x - max(x)), in place
    s = fast.sum(e, axis=axis, keepdims=True)             # the row sums
    if mask is not None:
        s[s == 0] = 1.0                                   # 0 / 1 = 0, not 0 / 0 = NaN
    e /= s
    return e


def softmax_backward(dp, p, axis=-1):
    """dx = J dp for p = softmax(x) along `axis`, J = diag(p) - p p^T per row (see above).

    Shapes: dp and p alike; returns dx of that shape. No Jacobian is built.
    """
    if axis in (-1, p.ndim - 1) and fused.on(fused_softmax):      # one kernel on a GPU
        return fused_softmax.backward(dp, p)
    # BEGIN SOLUTION softmax
    # HINT: the Jacobian-vector product of diag(p) - p p^T along axis, without the Jacobian
    return p * (dp - fast.sum(dp * p, axis=axis, keepdims=True))
    # END SOLUTION


def log_softmax(x, axis=-1):
    """Stable log(softmax(x)) along `axis`."""
    z = x - x.max(axis=axis, keepdims=True)
    z -= xp.log(xp.exp(z).sum(axis=axis, keepdims=True))
    return z


def log_softmax_backward(dz, z, axis=-1):
    """dx, dz's shape, for z = log_softmax(x) along `axis`: from dz and z alone.

    Backward: dx = dz - softmax(x) * sum(dz), with softmax(x) = exp(z).
    """
    return dz - xp.exp(z) * dz.sum(axis=axis, keepdims=True)


class Softmax(Module):
    """Softmax as a module (used by lessons and the gradient checker).

    Saved: the output p, all the backward needs.
    """

    def __init__(self, axis=-1):
        super().__init__()
        self.axis = axis
        self.saved = None

    def forward(self, x, mask=None):
        self.saved = softmax(x, self.axis, mask)
        return self.saved

    def backward(self, dp):
        return softmax_backward(dp, self.saved_for_backward(), self.axis)


class LogSoftmax(Module):
    """Log-softmax as a module. Cache: the output z."""

    def __init__(self, axis=-1):
        super().__init__()
        self.axis = axis
        self.saved = None

    def forward(self, x):
        self.saved = log_softmax(x, self.axis)
        return self.saved

    def backward(self, dz):
        return log_softmax_backward(dz, self.saved_for_backward(), self.axis)
