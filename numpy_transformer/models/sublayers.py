"""Helpers shared by the encoder, decoder and GPT blocks."""

from ..checks import check_choice, check_positive_int, check_probability
from ..layers.attention import MultiHeadAttention
from ..layers.latent_attention import MultiHeadLatentAttention
from ..errors import InputError


def make_attention(kind, d_model, num_heads, dropout, latent_dim, rng):
    """A MultiHeadAttention ("mha") or MultiHeadLatentAttention ("mla") layer."""
    if kind == "mha":
        return MultiHeadAttention(d_model, num_heads, dropout, rng=rng)
    if kind == "mla":
        return MultiHeadLatentAttention(d_model, num_heads, latent_dim, dropout, rng=rng)
    raise InputError(f"attention: expected 'mha' or 'mla', got {kind!r}")


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


def validate_config(config, positive_ints):
    """The checks every model configuration shares (called from `__post_init__`)."""
    for name in positive_ints:
        check_positive_int(getattr(config, name), name)
    if config.d_model % config.num_heads:
        raise InputError(f"d_model={config.d_model} is not divisible by "
                         f"num_heads={config.num_heads}")
    check_probability(config.dropout, "dropout")
    check_choice(config.attention, "attention", ("mha", "mla"))
    if config.latent_dim is not None:
        check_positive_int(config.latent_dim, "latent_dim")
