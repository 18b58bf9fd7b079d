"""Residual connection around a sublayer, with layer norm after (paper) or before."""

from ..module import Module
from ..validation import check_bool
from . import fused
from .dropout import Dropout

fused_norm = fused.form("norm")         # None in a student copy that stubs part layernorm
from .normalization import LayerNorm


class SublayerConnection(Module):
    """The residual connection around a sublayer f (attention or feed-forward):

        post-norm (norm_first=False, the paper):  y = LayerNorm(x + Dropout(f(x)))
        pre-norm  (norm_first=True):              y = x + Dropout(f(LayerNorm(x)))

    Pre-norm leaves the residual path untouched, which makes deep stacks train
    without warm-up; it then needs a final LayerNorm after the last block.

    The sublayer is not a child: it belongs to the block, which calls it between
    the two halves of the connection:

        h = enter(x)            the sublayer's input: LayerNorm(x) (pre-norm) or x
        f = sublayer(h)         (the block's call)
        y = exit(x, f)          x + Dropout(f), then LayerNorm (post-norm)

    Each half has its backward: exit_backward(dy) gives the gradients of x along the
    identity path and of f; enter_backward(dh) gives that of x along the sublayer's
    path, from the gradient of h. Joining them around the sublayer's backward is the
    block's backward, an assignment part (encoder_stack, decoder_stack) that lesson 4
    derives: this docstring leaves it out.

    Shapes: x, h, f, y all (B, T, D).
    Saved: none here; norm and dropout keep their own.
    """

    def __init__(self, d_model, dropout=0.0, norm_first=False, *, rng=None):
        super().__init__()
        check_bool(norm_first, "norm_first")
        self.d_model, self.norm_first = d_model, norm_first
        self.norm = LayerNorm(d_model)
        self.dropout = Dropout(dropout, rng=rng, name="dropout")      # checks the rate

    def enter(self, x):
        """h, the sublayer's input: LayerNorm(x) (pre-norm) or x itself (post-norm)."""
        return self.norm.forward(x) if self.norm_first else x             # (B, T, D)

    def exit(self, x, f):
        """y from x and the sublayer's output f: x + Dropout(f), normalised when post-norm."""
        if not self.norm_first and fused.on(fused_norm):                  # add and norm: one kernel
            return fused_norm.forward(self.norm, x, self.dropout.forward(f))
        z = x + self.dropout.forward(f)                                   # (B, T, D)
        return z if self.norm_first else self.norm.forward(z)             # (B, T, D)

    def exit_backward(self, dy):
        """(dx, df): the gradient of x through the identity path, and of f."""
        dz = dy if self.norm_first else self.norm.backward(dy)            # (B, T, D)
        return dz, self.dropout.backward(dz)                              # (B, T, D) each

    def enter_backward(self, dh):
        """The gradient of x through the sublayer's path, from that of h."""
        return self.norm.backward(dh) if self.norm_first else dh          # (B, T, D)
