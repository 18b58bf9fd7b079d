"""The attention sublayers of the blocks: which attention to build."""

from ..validation import check_choice
from ..layers.attention import MultiHeadAttention
from ..layers.latent_attention import MultiHeadLatentAttention
from .config import ATTENTION_KINDS


def sublayer_dropouts(dropout, attention_dropout, activation_dropout):
    """(p on attention weights, p on the feed-forward hidden layer): each the given one, or
    `dropout` when None (the paper's one rate everywhere; fairseq's defaults are 0 and 0)."""
    return (dropout if attention_dropout is None else attention_dropout,
            dropout if activation_dropout is None else activation_dropout)


def make_attention(kind, d_model, num_heads, dropout, latent_dim, rng):
    """A MultiHeadAttention ("mha") or MultiHeadLatentAttention ("mla") layer."""
    check_choice(kind, "attention", ATTENTION_KINDS)
    if kind == "mha":
        return MultiHeadAttention(d_model, num_heads, dropout, rng=rng)
    return MultiHeadLatentAttention(d_model, num_heads, latent_dim, dropout, rng=rng)

