"""Multi-head latent attention (MLA), as in DeepSeek-V2 (2024), without the RoPE part.

Multi-head attention projects every key/value token to a key K and a value V of
D numbers each. When decoding one token at a time, those are kept in a KV cache:
2 D numbers per token per layer. MLA first squeezes the token into a small latent

    c = k W_kv_compress                    L numbers, L << D

and derives both keys and values from it,

    K = c W_k_decompress       V = c W_v_decompress       (L -> D each)

so a decoder only has to cache c: L numbers per token per layer instead of 2 D
(with D = 512 and L = 128, an 8x smaller cache; see kv_cache.py). The rest is ordinary multi-head
attention: Q = q W_q, heads, softmax(Q K^T / sqrt(Dh), mask) V, output W_o.
(DeepSeek-V2 also compresses the queries, normalises c and adds a rotary part;
this teaching version keeps only the key/value compression.)
"""

import numpy as np

from ..backend import xp
from ..validation import check_integer, message
from .attention import MultiHeadAttentionBase
from .dropout import Dropout
from .linear import Linear
from ..errors import InputError


class MultiHeadLatentAttention(MultiHeadAttentionBase):
    """Attention whose keys and values come from one shared low-rank latent of k.

    Forward:
        Q = q W_q                       (D -> D)
        c = k W_kv_compress             (D -> L), the only thing a KV cache needs
        K = c W_k_decompress            (L -> D)
        V = c W_v_decompress            (L -> D)
        y = MultiHead attention of Q, K, V with `mask`, then W_o (as MultiHeadAttention)
    Backward (after the shared attention backward gives dQ, dK, dV):
        dc = dK W_k_decompress^T + dV W_v_decompress^T    c feeds both K and V: add
        dk = dc W_kv_compress^T         dq = dQ W_q^T
        dv = 0: v is k, so the whole key/value gradient is in dk.
    Shapes: q (B, Tq, D), k (B, Tk, D), c (B, Tk, L), mask broadcastable to (B, H, Tq, Tk).
    `v` must be the very same array as `k` (pass `mla(x, mem, mem, mask)`), so that
        the interface matches MultiHeadAttention; backward returns (dq, dk, zeros).
    Saved: as MultiHeadAttention (heads, `attn_weights`); each Linear keeps its input,
        so w_k_decompress and w_v_decompress both hold c.
    Children: w_q, w_kv_compress, w_k_decompress, w_v_decompress, w_o, dropout.
    latent_dim: L, default max(1, d_model // 4). bias: for every projection (default False).
    """

    def __init__(self, d_model, num_heads, latent_dim=None, dropout=0.0, bias=False, *,
                 rng=None):
        super().__init__(d_model, num_heads)
        if latent_dim is None:
            latent_dim = max(1, d_model // 4)
        check_integer(latent_dim, "latent_dim")
        rng = rng if rng is not None else np.random.default_rng()
        D, L = d_model, latent_dim
        self.latent_dim = L
        self.w_q = Linear(D, D, bias, rng=rng)
        self.w_kv_compress = Linear(D, L, bias, rng=rng)
        self.w_k_decompress = Linear(L, D, bias, rng=rng)
        self.w_v_decompress = Linear(L, D, bias, rng=rng)
        self.w_o = Linear(D, D, bias, rng=rng)
        self.dropout = Dropout(dropout, rng=rng, name="dropout")

    def project(self, q, k, v, cache=None):
        """Q = q W_q (B, Tq, D); c = k W_kv_compress (B, Tk, L); K = c W_k_decompress and
        V = c W_v_decompress (B, Tk, D).

        cache: None, or this layer's AttentionCache (decoding), which keeps only c
        (L numbers per position): the new c is appended and c of every key position so
        far comes back; a cross-attention cache, once made from the memory, is read as
        it is. K and V are decompressed from c again at every call (compute traded for
        memory; production code "absorbs" W_k_decompress into the query instead).
        """
        Q = self.w_q.forward(q)                                             # (B, Tq, D)
        if cache is not None and cache.full:
            c = cache.entries["c"]                                          # (B, S, L) memory's
        else:
            c = self.w_kv_compress.forward(k)                               # (B, Tk, L)
            if cache is not None:
                (c,) = cache.append(c=c)                                    # (B, t + Tk, L)
        return Q, self.w_k_decompress.forward(c), self.w_v_decompress.forward(c)  # (B, Tk, D)

    def project_backward(self, dQ, dK, dV):
        # BEGIN SOLUTION mla
        # HINT: c fed both K and V, so its gradient is a sum; v is k: dv is zeros, dk holds it all
        dc = self.w_k_decompress.backward(dK)                               # (B, Tk, L)
        dc += self.w_v_decompress.backward(dV)                              # c fed K and V
        dk = self.w_kv_compress.backward(dc)                                # (B, Tk, D)
        return self.w_q.backward(dQ), dk, xp.zeros_like(dk)                 # v is k: no dv
        # END SOLUTION

    def check_inputs(self, q, k, v, mask=None, cache=None):
        super().check_inputs(q, k, v, mask, cache)
        if v is not k:
            raise InputError(message(
                "v", "the very same array object as k (MLA derives keys and values from "
                "one shared latent of k: call mla(q, k, k, mask))", "a different array"))
