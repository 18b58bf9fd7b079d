"""The attention sublayers of the blocks: which attention to build from a BlockConfig."""

from ..layers.attention import MultiHeadAttention
from ..layers.latent_attention import MultiHeadLatentAttention


def make_attention(config, rng):
    """A MultiHeadAttention ("mha") or MultiHeadLatentAttention ("mla") layer, its dropout on
    the weights `config.attention_p` (config: a BlockConfig, already checked)."""
    c = config
    if c.attention == "mha":
        return MultiHeadAttention(c.d_model, c.num_heads, c.attention_p, rng=rng)
    return MultiHeadLatentAttention(c.d_model, c.num_heads, c.latent_dim, c.attention_p, rng=rng)
