"""Residual connection around a sublayer, with layer norm after (paper) or before."""

from ..validation import check_float_array, check_unit_interval
from ..module import Module
from .dropout import Dropout
from .normalization import LayerNorm


class SublayerConnection(Module):
    """Wraps a sublayer f (attention or feed-forward) in a residual connection:

        post-norm (norm_first=False, the paper):  y = LayerNorm(x + Dropout(f(x)))
        pre-norm  (norm_first=True):              y = x + Dropout(f(LayerNorm(x)))

    Pre-norm leaves the residual path untouched, which makes deep stacks train
    without warm-up; it then needs a final LayerNorm after the last block.

    The wrapped module is not a child: it belongs to the block that owns both,
    and is passed in as callables:
        forward(x, sublayer)             sublayer: h -> f(h), runs the module's forward
        backward(dy, sublayer_backward)  sublayer_backward: df -> dh, runs its backward
                                         and returns the gradient w.r.t. its input h;
                                         or df -> (dh, *more) when the sublayer also read
                                         other inputs (cross-attention: the memory), whose
                                         gradients `backward` then returns: (dx, *more)

    Shapes: x, f(h), y all (B, T, D).
    Backward: x feeds two paths, the identity and the sublayer, so their gradients add:
        post-norm: dz = norm.backward(dy);  dx = dz + sublayer_backward(dropout.backward(dz))
        pre-norm:  dx = dy + norm.backward(sublayer_backward(dropout.backward(dy)))
    Saved: none here; norm, dropout and the sublayer keep their own.
    Checks: x at `forward` (unless a part of a bigger module); the norm inside trusts it.
    """

    def __init__(self, d_model, dropout=0.0, norm_first=False, *, rng=None):
        super().__init__()
        check_unit_interval(dropout, "dropout")
        self.d_model, self.norm_first = d_model, bool(norm_first)
        self.norm = LayerNorm(d_model)
        self.dropout = Dropout(dropout, rng=rng)
        self.trust_parts()

    def forward(self, x, sublayer):
        if self.checks_inputs:
            check_float_array(x, "x", last_dim=self.d_model, last_dim_name="d_model")
        if self.norm_first:
            h = self.norm.forward(x)                              # (B, T, D)
            return x + self.dropout.forward(sublayer(h))          # (B, T, D)
        z = x + self.dropout.forward(sublayer(x))                 # (B, T, D)
        return self.norm.forward(z)                               # (B, T, D)

    def backward(self, dy, sublayer_backward):
        if self.norm_first:
            # y = x + Dropout(f(LayerNorm(x)))
            dh, more = split(sublayer_backward(self.dropout.backward(dy)))    # (B, T, D)
            dx = dy + self.norm.backward(dh)                                  # (B, T, D)
        else:
            # y = LayerNorm(z), z = x + Dropout(f(x))
            dz = self.norm.backward(dy)                                       # (B, T, D)
            dh, more = split(sublayer_backward(self.dropout.backward(dz)))    # (B, T, D)
            dx = dz + dh                                                      # (B, T, D)
        return (dx, *more) if more else dx


def split(grads):
    """(dh, [more...]) from what a sublayer's backward returned: dh alone, or (dh, *more)."""
    if isinstance(grads, tuple):
        return grads[0], list(grads[1:])
    return grads, []
