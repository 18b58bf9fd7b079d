"""Helpers shared by the encoder, decoder and GPT blocks."""

from ..layers.attention import MultiHeadAttention
from ..layers.latent_attention import MultiHeadLatentAttention


def make_attention(kind, d_model, num_heads, dropout, latent_dim, rng):
    """A MultiHeadAttention ("mha") or MultiHeadLatentAttention ("mla") layer."""
    if kind == "mha":
        return MultiHeadAttention(d_model, num_heads, dropout, rng=rng)
    if kind == "mla":
        return MultiHeadLatentAttention(d_model, num_heads, latent_dim, dropout, rng=rng)
    raise ValueError(f"attention: expected 'mha' or 'mla', got {kind!r}")


def self_attention_backward(attn):
    """The `sublayer_backward` of self-attention: q, k and v were all the same h,
    so the gradient of h is the sum of the three (dv is zero for MLA)."""
    def backward(dy):
        dq, dk, dv = attn.backward(dy)
        return dq + dk + dv
    return backward


def cached_self_attention(attn, layer_cache, mask=None):
    """The sublayer function of self-attention in incremental decoding: append the
    new positions h (B, T_new, D) to layer_cache["self"], then attend over all of them."""
    def sublayer(h):
        layer_cache["self"] = attn.extend_cache(layer_cache.get("self"), h, h)
        return attn.forward_cached(h, layer_cache["self"], mask)                 # (B, T_new, D)
    return sublayer
