"""The attention sublayers of the blocks: which attention to build, and self-attention's backward."""

from ..validation import check_choice
from ..layers.attention import MultiHeadAttention
from ..layers.latent_attention import MultiHeadLatentAttention
from .config import ATTENTION_KINDS


def make_attention(kind, d_model, num_heads, dropout, latent_dim, rng):
    """A MultiHeadAttention ("mha") or MultiHeadLatentAttention ("mla") layer."""
    check_choice(kind, "attention", ATTENTION_KINDS)
    if kind == "mha":
        return MultiHeadAttention(d_model, num_heads, dropout, rng=rng)
    return MultiHeadLatentAttention(d_model, num_heads, latent_dim, dropout, rng=rng)


def self_attention_backward(attn):
    """The `sublayer_backward` of self-attention: q, k and v were all the same h,
    so the gradient of h is the sum of the three (dv is zero for MLA)."""
    def backward(dy):
        dq, dk, dv = attn.backward(dy)
        return dq + dk + dv
    return backward
