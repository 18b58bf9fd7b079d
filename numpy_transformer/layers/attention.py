"""Scaled dot-product attention and multi-head attention (Vaswani et al., 2017, section 3.2).

Attention lets every query position read a weighted average of the value vectors,
with weights from how well the query matches each key:

    Attention(Q, K, V) = softmax(Q K^T / sqrt(Dh)) V

Multi-head attention runs H such attentions side by side on Dh = D / H slices of
learned projections of the inputs, then mixes the heads with one more projection:

    MultiHead(q, k, v) = concat(head_1, ..., head_H) W_o
    head_h = Attention(q W_q[:, h], k W_k[:, h], v W_v[:, h])

Heads are not a Python loop: `split_heads` reshapes (B, T, D) into (B, H, T, Dh)
and every head of every batch row goes through one batched matmul.
"""

import math

import numpy as np

from ..validation import check_float_array, check_mask, check_integer, message
from ..module import Module
from . import fused
from .dropout import Dropout
from .linear import Linear
from .softmax import softmax, softmax_backward
from ..errors import InputError, InputTypeError

fused_softmax = fused.form("softmax")       # None in a student copy that stubs part softmax
fused_attention = fused.form("attention")   # the heads laid out by the projections' kernels


def split_heads(x, H):
    """(B, T, D) -> (B, H, T, Dh): head h gets features h*Dh .. (h+1)*Dh - 1 (a view, no copy)."""
    B, T, D = x.shape
    return x.reshape(B, T, H, D // H).transpose(0, 2, 1, 3)     # (B, H, T, Dh)


def merge_heads(x):
    """(B, H, T, Dh) -> (B, T, D): the inverse of `split_heads` (the heads side by side again)."""
    B, H, T, Dh = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, T, H * Dh)         # (B, T, D)


def scaled_dot_product_attention(q, k, v, mask=None, dropout=None):
    """O = dropout(softmax(q k^T / sqrt(Dh), mask)) v for every batch row and head at once.

    Forward:
        S  = q k^T / sqrt(Dh)          scores; the scale keeps their variance near 1
        A  = softmax(S) over keys      mask False -> weight exactly 0; a row with no
                                       key allowed is all zeros, never NaN
        A' = dropout(A)                identity when `dropout` is None or not training
        O  = A' v
    Backward (reverse order, dO given; see `scaled_dot_product_attention_backward`):
        dV = A'^T dO                   dA' = dO V^T
        dA = dropout backward of dA'   (the same kept mask, the same 1 / (1 - p))
        dS = softmax backward of dA    A * (dA - rowsum(dA * A)); 0 wherever A is 0
        dQ = dS K / sqrt(Dh)           dK = dS^T Q / sqrt(Dh)
    Shapes: q (B, H, Tq, Dh), k and v (B, H, Tk, Dh), mask boolean broadcastable to
        (B, H, Tq, Tk) with True = may attend; O (B, H, Tq, Dh), A (B, H, Tq, Tk).
    Returns (O, A), A before dropout (rows sum to 1, or 0 when fully masked).
    Saved: none kept here; the caller keeps q, k, v and A for the backward, and the
        `Dropout` module keeps its own mask (A' is recomputed from A and that mask).
    """
    scores = q @ k.swapaxes(-1, -2)                                 # (B, H, Tq, Tk)
    if fused.on(fused_softmax):                                     # scale, mask, softmax: one kernel
        attn = fused_softmax.forward(scores, mask, math.sqrt(q.shape[-1]))
    else:
        scores /= math.sqrt(q.shape[-1])
        attn = softmax(scores, axis=-1, mask=mask)                  # (B, H, Tq, Tk)
    dropped = attn if dropout is None else dropout.forward(attn)    # (B, H, Tq, Tk)
    return dropped @ v, attn                                        # (B, H, Tq, Dh)


def scaled_dot_product_attention_backward(dout, q, k, v, attn, dropout=None):
    """(dq, dk, dv) for `scaled_dot_product_attention`; the math is in its docstring.

    dout (B, H, Tq, Dh); q, k, v the forward inputs; attn the A it returned;
    dropout the same `Dropout` module, still holding the mask of that forward.
    """
    # BEGIN SOLUTION attention
    # HINT: undo O = A' v, A' = dropout(A), A = softmax(S), S = q k^T / sqrt(Dh) in that order
    scale = 1.0 / math.sqrt(q.shape[-1])
    # O = A' v, with A' = dropout(A) recomputed from A and the dropout's kept mask
    dropped = attn if dropout is None else dropout.reapply(attn)   # (B, H, Tq, Tk)
    dv = dropped.swapaxes(-1, -2) @ dout            # (B, H, Tk, Dh)
    dattn = dout @ v.swapaxes(-1, -2)               # (B, H, Tq, Tk)
    # A' = dropout(A)
    if dropout is not None:
        dattn = dropout.backward(dattn)             # (B, H, Tq, Tk)
    # A = softmax(S)
    dscores = softmax_backward(dattn, attn)         # (B, H, Tq, Tk)
    # S = q k^T * scale
    dscores *= scale                                # now the gradient of q k^T
    dq = dscores @ k                                # (B, H, Tq, Dh)
    dk = dscores.swapaxes(-1, -2) @ q               # (B, H, Tk, Dh)
    return dq, dk, dv
    # END SOLUTION


class MultiHeadAttentionBase(Module):
    """What multi-head attention (MHA) and latent attention (MLA) share: the heads.

    Forward, given the projections Q (B, Tq, D), K and V (B, Tk, D) from the subclass's
        `project(q, k, v, cache)`:
        O = merge_heads(attention(split_heads(Q), split_heads(K), split_heads(V), mask))
        y = O W_o + b_o
    Backward: w_o's backward, split into heads, attention backward, merge heads,
        then the subclass's `project_backward(dQ, dK, dV)`. Always returns (dq, dk, dv),
        even when q is k is v (self-attention): the caller adds them up.
    Shapes: q (B, Tq, D), k and v (B, Tk, D), mask broadcastable to (B, H, Tq, Tk), y (B, Tq, D).
    Saved: Q, K, V split into heads (B, H, T, Dh); `attn_weights` A (B, H, Tq, Tk),
        kept for backward and for plotting attention maps.
    A subclass builds `w_q`, `w_o`, `dropout` and its key/value projections, and writes out
        project(q, k, v, cache) -> (Q, K, V) and project_backward(dQ, dK, dV) -> (dq, dk, dv).
    KV cache (incremental decoding, inference only): `forward(..., cache=AttentionCache())`;
        `project` appends to it what K and V are made of (MHA: K, V; MLA: c), and the
        heads attend over every key position seen so far (kv_cache.py): the same numbers
        as a forward over the whole sequence.
    """

    def __init__(self, d_model, num_heads):
        super().__init__()
        check_integer(d_model, "d_model")
        check_integer(num_heads, "num_heads")
        if d_model % num_heads != 0:
            raise InputError(message("d_model", f"a multiple of num_heads={num_heads}",
                                     f"d_model={d_model}, which is not divisible by {num_heads}"))
        self.d_model, self.num_heads, self.head_dim = d_model, num_heads, d_model // num_heads
        self.attn_weights = None
        self.saved = None

    def forward(self, q, k, v, mask=None, cache=None):
        """y (B, Tq, D). cache: None (training), or this layer's AttentionCache (decoding)."""
        H = self.num_heads
        Q, K, V = self.project(q, k, v, cache)      # (B, Tq, D), (B, Tk, D), (B, Tk, D)
        qh, kh, vh = split_heads(Q, H), split_heads(K, H), split_heads(V, H)   # (B, H, T, Dh)
        out, self.attn_weights = scaled_dot_product_attention(
            qh, kh, vh, mask, self.dropout)         # (B, H, Tq, Dh), (B, H, Tq, Tk)
        self.saved = (qh, kh, vh)
        return self.w_o.forward(merge_heads(out))   # (B, Tq, D)

    def backward(self, dout):
        # BEGIN SOLUTION multihead_attention
        # HINT: w_o backward, split heads, attention backward, merge heads, then project_backward
        qh, kh, vh = self.saved_for_backward()
        # y = merge_heads(O) W_o + b_o
        dheads = split_heads(self.w_o.backward(dout), self.num_heads)        # (B, H, Tq, Dh)
        # O = attention(Qh, Kh, Vh)
        dqh, dkh, dvh = scaled_dot_product_attention_backward(
            dheads, qh, kh, vh, self.attn_weights, self.dropout)             # (B, H, T, Dh)
        # Qh, Kh, Vh = split_heads(project(q, k, v))
        return self.project_backward(merge_heads(dqh), merge_heads(dkh), merge_heads(dvh))
        # END SOLUTION

    def check_inputs(self, q, k, v, mask=None, cache=None):
        """InputError/InputTypeError for mis-shaped or mismatched inputs, an array passed
        twice checked once; the mask only without a cache (whose keys are not all in k)."""
        D = self.d_model
        check_float_array(q, "q", ndim=3, last_dim=D, last_dim_name="d_model")
        for x, name in [(k, "k")] + ([(v, "v")] if v is not k else []):
            if x is q:
                continue
            check_float_array(x, name, ndim=3, last_dim=D, last_dim_name="d_model")
            if x.shape[0] != q.shape[0]:
                raise InputError(message(name, f"batch size {q.shape[0]} (that of q)",
                                         f"shape {tuple(x.shape)}"))
            if x.dtype != q.dtype:
                raise InputTypeError(message(name, f"dtype {q.dtype} (that of q)",
                                             f"dtype {x.dtype}"))
        if v.shape[1] != k.shape[1]:
            raise InputError(message("v", f"length {k.shape[1]} (that of k: one value per key)",
                                     f"shape {tuple(v.shape)}"))
        if cache is None:
            check_mask(mask, "mask", (q.shape[0], self.num_heads, q.shape[1], k.shape[1]))


class MultiHeadAttention(MultiHeadAttentionBase):
    """Multi-head attention: y = concat_h softmax(Q_h K_h^T / sqrt(Dh), mask) V_h W_o + b_o.

    Forward: Q = q W_q + b_q, K = k W_k + b_k, V = v W_v + b_v (each D -> D), split into
        H heads of Dh = D / H features, attention per head (batched), heads merged, W_o.
    Backward: attention backward per head (see `scaled_dot_product_attention`), then
        dq = dQ W_q^T, dk = dK W_k^T, dv = dV W_v^T, and the Linear parameter gradients.
    Shapes: q (B, Tq, D), k and v (B, Tk, D), mask boolean broadcastable to
        (B, H, Tq, Tk) with True = may attend, y (B, Tq, D).
    Returns from backward: (dq, dk, dv), always three, one per input, also when the three
        inputs are one array.
    Saved: the heads Qh, Kh, Vh and the weights `attn_weights` (B, H, Tq, Tk); each Linear
        keeps its own input, the attention Dropout its mask.
    Children: w_q, w_k, w_v, w_o (Linear, weights (D, D)) and dropout (on the weights).
    Note: b_k adds q . b_k to a whole row of scores, which softmax ignores, so its
        gradient is always 0 (kept anyway, as in the paper and in PyTorch).
    """

    def __init__(self, d_model, num_heads, dropout=0.0, bias=True, *, rng=None):
        super().__init__(d_model, num_heads)
        rng = rng if rng is not None else np.random.default_rng()
        D = d_model
        self.w_q = Linear(D, D, bias, rng=rng)
        self.w_k = Linear(D, D, bias, rng=rng)
        self.w_v = Linear(D, D, bias, rng=rng)
        self.w_o = Linear(D, D, bias, rng=rng)
        self.dropout = Dropout(dropout, rng=rng, name="dropout")

    def forward(self, q, k, v, mask=None, cache=None):
        """y (B, Tq, D), as MultiHeadAttentionBase.forward; on a GPU in training, the heads laid
        out by the projections' bias kernels (layers/fused/attention.py)."""
        if cache is None and fused.on(fused_attention):
            return fused_attention.forward(self, q, k, v, mask)
        return super().forward(q, k, v, mask, cache)

    # Three separate projections even when q is k is v; fusing them into one
    # (D, 3D) matmul only needs `project` and `project_backward` to change.
    def project(self, q, k, v, cache=None):
        """Q = q W_q + b_q (B, Tq, D), K = k W_k + b_k and V = v W_v + b_v (B, Tk, D).

        cache: None, or this layer's AttentionCache (decoding), which keeps K and V
        themselves (2 D numbers per position): the new ones are appended and K, V of
        every key position so far come back. A cross-attention cache, once made from
        the memory, is read as it is (the memory does not change while decoding).
        """
        Q = self.w_q.forward(q)                                             # (B, Tq, D)
        if cache is not None and cache.full:                                # the memory's
            return Q, cache.entries["k"], cache.entries["v"]                # (B, S, D) each
        K = self.w_k.forward(k)                                             # (B, Tk, D)
        V = self.w_v.forward(v)                                             # (B, Tk, D)
        if cache is not None:
            K, V = cache.append(k=K, v=V)                                   # (B, t + Tk, D)
        return Q, K, V

    def project_backward(self, dQ, dK, dV):
        # BEGIN SOLUTION multihead_attention
        # HINT: each of Q, K, V came from its own Linear: (dq, dk, dv) through their backward
        return self.w_q.backward(dQ), self.w_k.backward(dK), self.w_v.backward(dV)
        # END SOLUTION
