"""Checks of the attention parts and of the encoder and decoder stacks.

Attention is checked with eps = 1e-3 rather than 1e-4: it stacks enough
float64 rounding that 1e-4 leaves ~3e-11 of noise on coordinates whose true
gradient is 0 (w_k.bias: softmax ignores a constant added to a row); at 1e-3 a
correct backward still agrees to about 1e-9 (pass at 1e-7). Latent attention
has more curvature (a rank-3 bottleneck), so it uses eps = 3e-4, where a correct
answer reaches ~3e-9 and the truncation error stays ~1e-9. Whole stacks are
checked on a random subset of coordinates with eps = 3e-4 and reach ~1e-8.
Every axis has its own size (B=2, H=3, Tq=4, Tk=5, Dh=6 for the attention
kernel) so that a swapped axis or a division by the batch size fails.
"""

import numpy as np

from .checks_layers import EXACT, FD, accumulates, gradients_agree, perturb, rand
from .parts import check

STACK = "max rel err ~1e-8 on sampled coordinates (pass <= 1e-7)"
ATTENTION = dict(eps=1e-3)
LATENT = dict(eps=3e-4)


def attention_module(pkg, dropout=None):
    """scaled_dot_product_attention and its backward as a Module of (q, k, v)."""
    attention = pkg.module("layers.attention")

    class ScaledDotProductAttention(pkg.Module):
        def __init__(self):
            super().__init__()
            self.dropout, self.cache = dropout, None

        def forward(self, q, k, v, mask=None):
            out, attn = attention.scaled_dot_product_attention(q, k, v, mask, self.dropout)
            self.cache = (q, k, v, attn)
            return out

        def backward(self, dout):
            q, k, v, attn = self.cache
            return attention.scaled_dot_product_attention_backward(dout, q, k, v, attn,
                                                                   self.dropout)

    return ScaledDotProductAttention()


def qkv(pkg, rng, B=2, H=3, Tq=4, Tk=5, Dh=6):
    return (rand(pkg, rng, B, H, Tq, Dh), rand(pkg, rng, B, H, Tk, Dh),
            rand(pkg, rng, B, H, Tk, Dh))


@check("attention", 5, FD)
def attention_gradients(pkg):
    rng = np.random.default_rng(30)
    q, k, v = qkv(pkg, rng)
    e1 = gradients_agree(attention_module(pkg), q, k, v, what="attention, q (2, 3, 4, 6), "
                         "k and v (2, 3, 5, 6)", **ATTENTION)
    pad = pkg.xp.ones((2, 1, 1, 5), dtype=bool)
    pad[1, ..., 3:] = False
    e2 = gradients_agree(attention_module(pkg), q, k, v, what="attention with a padding mask",
                         forward_kwargs={"mask": pad}, **ATTENTION)
    return max(e1, e2)


@check("attention", 3, FD + "; all finite")
def attention_fully_masked_row(pkg):
    rng = np.random.default_rng(31)
    q, k, v = qkv(pkg, rng)
    mask = pkg.xp.ones((2, 1, 4, 5), dtype=bool)
    mask[1, 0, 2, :] = False                                   # query 2 of row 1 sees nothing
    mask[0, 0, :, 3:] = False
    return gradients_agree(attention_module(pkg), q, k, v, forward_kwargs={"mask": mask},
                           what="attention with a fully masked query row", **ATTENTION)


@check("attention", 2, FD)
def attention_dropout(pkg):
    rng = np.random.default_rng(32)
    dropout = pkg.Dropout(0.3, rng=rng)
    return gradients_agree(attention_module(pkg, dropout), *qkv(pkg, rng),
                           what="attention with dropout 0.3 on the weights (mask frozen)",
                           **ATTENTION)


def cross_inputs(pkg, rng, D):
    q, k, v = rand(pkg, rng, 2, 3, D), rand(pkg, rng, 2, 4, D), rand(pkg, rng, 2, 4, D)
    pad = pkg.xp.ones((2, 1, 1, 4), dtype=bool)
    pad[1, ..., 2:] = False
    return q, k, v, pad


@check("multihead_attention", 4, FD)
def mha_cross_attention(pkg):
    rng = np.random.default_rng(33)
    mha = perturb(pkg, pkg.MultiHeadAttention(10, 2, rng=rng), rng)
    q, k, v, pad = cross_inputs(pkg, rng, 10)
    return gradients_agree(mha, q, k, v, forward_kwargs={"mask": pad}, **ATTENTION,
                           what="MultiHeadAttention(10, 2), q (2, 3, 10), different k and v "
                           "(2, 4, 10), padding mask")


@check("multihead_attention", 3, FD)
def mha_self_attention(pkg):
    rng = np.random.default_rng(34)
    mha = perturb(pkg, pkg.MultiHeadAttention(10, 2, dropout=0.2, rng=rng), rng)
    x = rand(pkg, rng, 2, 4, 10)
    return gradients_agree(mha, x, x, x, forward_kwargs={"mask": pkg.make_causal_mask(4)},
                           what="causal self-attention (q = k = v), attention dropout 0.2",
                           **ATTENTION)


@check("multihead_attention", 3, EXACT)
def mha_accumulates(pkg):
    rng = np.random.default_rng(35)
    mha = perturb(pkg, pkg.MultiHeadAttention(10, 2, rng=rng), rng)
    q, k, v, pad = cross_inputs(pkg, rng, 10)
    return accumulates(pkg, mha, lambda: mha.forward(q, k, v, pad), rand(pkg, rng, 2, 3, 10),
                       "MultiHeadAttention")


def make_mla(pkg, rng):
    return perturb(pkg, pkg.MultiHeadLatentAttention(10, 2, latent_dim=3, bias=True, rng=rng),
                   rng)


@check("mla", 5, FD)
def mla_cross_attention(pkg):
    rng = np.random.default_rng(36)
    q, mem, _, pad = cross_inputs(pkg, rng, 10)
    return gradients_agree(make_mla(pkg, rng), q, mem, mem, forward_kwargs={"mask": pad},
                           what="MultiHeadLatentAttention(10, 2, latent_dim=3), q (2, 3, 10), "
                           "memory (2, 4, 10), padding mask", **LATENT)


@check("mla", 3, FD)
def mla_self_attention(pkg):
    rng = np.random.default_rng(37)
    x = rand(pkg, rng, 2, 4, 10)
    return gradients_agree(make_mla(pkg, rng), x, x, x, what="causal latent self-attention",
                           forward_kwargs={"mask": pkg.make_causal_mask(4)}, **LATENT)


@check("mla", 2, EXACT)
def mla_accumulates(pkg):
    rng = np.random.default_rng(38)
    mla = make_mla(pkg, rng)
    q, mem, _, pad = cross_inputs(pkg, rng, 10)
    return accumulates(pkg, mla, lambda: mla.forward(q, mem, mem, pad), rand(pkg, rng, 2, 3, 10),
                       "MultiHeadLatentAttention")


def stack_kwargs(norm_first, attention):
    return dict(num_layers=2, d_model=8, num_heads=2, d_ff=12, dropout=0.0,
                norm_first=norm_first, attention=attention)


def check_stack(pkg, seed, decoder, norm_first, attention):
    rng = np.random.default_rng(seed)
    kind = "pre-norm" if norm_first else "post-norm"
    x, memory = rand(pkg, rng, 2, 3, 8), rand(pkg, rng, 2, 4, 8)
    pad = pkg.xp.ones((2, 1, 1, 4), dtype=bool)
    pad[1, ..., 3:] = False
    if decoder:
        stack = perturb(pkg, pkg.Decoder(**stack_kwargs(norm_first, attention), rng=rng), rng)
        inputs, kwargs = (x, memory), {"src_mask": pad, "tgt_mask": pkg.make_causal_mask(3)}
        what = f"Decoder (2 {kind} {attention} blocks); input 1 is the memory"
    else:
        stack = perturb(pkg, pkg.Encoder(**stack_kwargs(norm_first, attention), rng=rng), rng)
        inputs, kwargs = (memory,), {"mask": pad}
        what = f"Encoder (2 {kind} {attention} blocks)"
    return gradients_agree(stack, *inputs, forward_kwargs=kwargs, what=what, eps=3e-4,
                           max_coords=12, seed=seed)


@check("encoder_stack", 6, STACK)
def encoder_pre_norm(pkg):
    return check_stack(pkg, 40, decoder=False, norm_first=True, attention="mha")


@check("encoder_stack", 4, STACK)
def encoder_post_norm(pkg):
    return check_stack(pkg, 41, decoder=False, norm_first=False, attention="mla")


@check("decoder_stack", 6, STACK)
def decoder_pre_norm(pkg):
    return check_stack(pkg, 42, decoder=True, norm_first=True, attention="mha")


@check("decoder_stack", 4, STACK)
def decoder_post_norm(pkg):
    return check_stack(pkg, 43, decoder=True, norm_first=False, attention="mla")

