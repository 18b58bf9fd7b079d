"""Multi-head attention's forward with each projection's bias added as its heads are laid out
(one kernel for Q, one for K, one for V), so that the batched products read contiguous heads
and copy nothing. The math: layers/attention.py.

    forward(mha, q, k, v, mask)   same as mha.forward(q, k, v, mask) in training (no cache):
                                  y, and what the plain forward keeps (each Linear its input,
                                  mha.saved the heads, mha.attn_weights A)
    heads(linear, x, H, keys)     x W + b split into H heads, contiguous: (B, H, T, Dh), or
                                  (B, H, Dh, T) for the keys (K^T, as Q K^T reads it)

CuPy copies every operand of a batched product that is not C-contiguous: split_heads' views
(B, T, H, Dh) -> (B, H, T, Dh) and K's transpose cost three copies a forward and one more
in the backward (dK = dS^T Q). Here the bias add that each projection needs anyway writes the
heads' layout instead.
"""

import math

from ...backend import xp
from . import elementwise, form, on_cupy, one_launch

HEADS = ("nt_bias_split_heads", "raw T y, raw T bias, int32 has_bias, int64 L, int64 H, int64 Dh, "
         "int32 keys", "T out", """
    long long a = i, t, d;                              // out[i] is head h's (t, d) of row b
    if (keys) { t = a % L; a /= L; d = a % Dh; a /= Dh; }
    else { d = a % Dh; a /= Dh; t = a % L; a /= L; }
    long long h = a % H, b = a / H, col = h * Dh + d;
    out = y[(b * L + t) * H * Dh + col] + (has_bias ? bias[col] : (T)0);
""")


def heads(linear, x, H, keys=False):
    """x W + b, its heads contiguous: (B, H, T, Dh), or (B, H, Dh, T) when `keys`. x (B, T, D_in)."""
    from ..attention import split_heads
    B, T, _ = x.shape
    linear.saved = x                                                # what its backward reads
    y = x.reshape(-1, linear.in_features) @ linear.params["weight"]    # (B T, D)
    bias = linear.params.get("bias")
    Dh = linear.out_features // H
    if not on_cupy():
        with one_launch("bias_split_heads"):
            if bias is not None:
                y += bias
            h = split_heads(y.reshape(B, T, H * Dh), H)             # (B, H, T, Dh) a view
            return xp.ascontiguousarray(h.swapaxes(-1, -2) if keys else h)
    out = xp.empty((B, H, Dh, T) if keys else (B, H, T, Dh), dtype=y.dtype)
    elementwise(*HEADS)(y, y if bias is None else bias, int(bias is not None), T, H, Dh, int(keys), out)
    return out


def forward(mha, q, k, v, mask=None):
    """y (B, Tq, D) = MultiHead(q, k, v), as mha.forward in training."""
    from ..attention import merge_heads
    H, softmax_form = mha.num_heads, form("softmax")
    qh = heads(mha.w_q, q, H)                                       # (B, H, Tq, Dh)
    kt = heads(mha.w_k, k, H, keys=True)                            # (B, H, Dh, Tk)
    vh = heads(mha.w_v, v, H)                                       # (B, H, Tk, Dh)
    scores = qh @ kt                                                # (B, H, Tq, Tk)
    scale = math.sqrt(mha.head_dim)
    if softmax_form is not None:
        attn = softmax_form.forward(scores, mask, scale)            # (B, H, Tq, Tk)
    else:                                                           # a copy stubbing part softmax
        from ..softmax import softmax
        scores /= scale
        attn = softmax(scores, -1, mask)
    dropped = mha.dropout.forward(attn)                             # (B, H, Tq, Tk)
    mha.attn_weights = attn
    mha.saved = (qh, kt.swapaxes(-1, -2), vh)                       # (B, H, T, Dh) each
    return mha.w_o.forward(merge_heads(dropped @ vh))               # (B, Tq, D)
