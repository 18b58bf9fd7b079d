"""Residual connection around a sublayer, with layer norm after (paper) or before."""

from ..module import Module
from .dropout import Dropout
from .normalization import LayerNorm


class SublayerConnection(Module):
    """The residual connection around a sublayer f (attention or feed-forward):

        post-norm (norm_first=False, the paper):  y = LayerNorm(x + Dropout(f(x)))
        pre-norm  (norm_first=True):              y = x + Dropout(f(LayerNorm(x)))

    Pre-norm leaves the residual path untouched, which makes deep stacks train
    without warm-up; it then needs a final LayerNorm after the last block.

    The sublayer is not a child: it belongs to the block, which calls it between
    the two halves of the connection, and their backwards in reverse:

        h = enter(x)            the sublayer's input: LayerNorm(x) (pre-norm) or x
        f = sublayer(h)         (the block's call)
        y = exit(x, f)          x + Dropout(f), then LayerNorm (post-norm)

        dx, df = exit_backward(dy)     dx: the gradient of x through the identity path
        dh = sublayer backward of df   (the block's call)
        dx = dx + enter_backward(dh)   x fed two paths, the identity and the sublayer: add

    Shapes: x, h, f, y all (B, T, D).
    Backward, with z = x + Dropout(f):
        post-norm: dz = norm.backward(dy);  dx = dz + dh        df = dropout.backward(dz)
        pre-norm:  dz = dy;                 dx = dz + norm.backward(dh)
    Saved: none here; norm and dropout keep their own.
    """

    def __init__(self, d_model, dropout=0.0, norm_first=False, *, rng=None):
        super().__init__()
        self.d_model, self.norm_first = d_model, bool(norm_first)
        self.norm = LayerNorm(d_model)
        self.dropout = Dropout(dropout, rng=rng, name="dropout")      # checks the rate

    def enter(self, x):
        """h, the sublayer's input: LayerNorm(x) (pre-norm) or x itself (post-norm)."""
        return self.norm.forward(x) if self.norm_first else x             # (B, T, D)

    def exit(self, x, f):
        """y from x and the sublayer's output f: x + Dropout(f), normalised when post-norm."""
        z = x + self.dropout.forward(f)                                   # (B, T, D)
        return z if self.norm_first else self.norm.forward(z)             # (B, T, D)

    def exit_backward(self, dy):
        """(dx, df): the gradient of x through the identity path, and of f."""
        dz = dy if self.norm_first else self.norm.backward(dy)            # (B, T, D)
        return dz, self.dropout.backward(dz)                              # (B, T, D) each

    def enter_backward(self, dh):
        """The gradient of x through the sublayer's path, from that of h."""
        return self.norm.backward(dh) if self.norm_first else dh          # (B, T, D)
