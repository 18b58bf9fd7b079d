"""The attention sublayers of the blocks: which attention to build."""

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

