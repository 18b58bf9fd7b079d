"""A decoder-only language model (GPT-style) from the same parts as the Transformer.

A decoder-only model has no encoder and no cross-attention: each block is an
encoder block whose self-attention is causal, so position t reads positions
<= t only and the model predicts token t + 1 from the tokens up to t:

    x      = PE(Embed(ids))                                          (B, T, D)
    x      = Block_N(... Block_1(x, causal) ...)                     (B, T, D)
    logits = LayerNorm(x) E^T + b     (the LayerNorm only when pre-norm)   (B, T, V)

Trained with cross-entropy of logits[:, t] against ids[:, t + 1]; generated
from with `numpy_transformer.decoding.sample`.
"""

from dataclasses import asdict, dataclass

import numpy as np

from ..checks import check_ids, message
from ..kv_cache import append_positions, incremental_causal_mask
from ..layers.embedding import Embedding
from ..layers.linear import Linear, TiedLinear
from ..layers.normalization import LayerNorm
from ..layers.positional import PositionalEncoding
from ..masks import make_causal_mask
from ..module import Module
from .blocks import validate_config
from .encoder import EncoderBlock
from .transformer import xavier_uniform_
from ..errors import InputError


@dataclass
class GPTConfig:
    vocab_size: int                  # V, vocabulary size (with special tokens)
    d_model: int = 256               # D, width of every token vector
    num_heads: int = 8               # H; D must be divisible by H
    d_ff: int = 1024                 # F, hidden width of the feed-forward layers
    num_layers: int = 4              # N blocks
    dropout: float = 0.1             # on sublayer outputs, embeddings and attention weights
    max_len: int = 1024              # longest sequence (context) the positional table covers
    norm_first: bool = True          # True: pre-norm (GPT-2 style); False: post-norm
    attention: str = "mha"           # "mha" multi-head, "mla" multi-head latent attention
    latent_dim: int = None           # L for MLA (default d_model // 4); unused for MHA
    tie_embeddings: bool = True      # share the token embedding with the output projection
    pad_id: int = 0                  # padding token id (for the loss; never sampled)
    seed: int = 0                    # seed of the generator that draws the initial weights

    def __post_init__(self):
        validate_config(self, ("vocab_size", "d_model", "num_heads", "d_ff", "num_layers",
                               "max_len"))

    def to_dict(self):
        return asdict(self)


class GPT(Module):
    """Decoder-only Transformer language model: ids (B, T) -> next-token logits (B, T, V).

    Forward: x = PE(Embed(ids)); N EncoderBlocks with a causal mask (self-attention
        then feed-forward, each in a residual SublayerConnection); a final LayerNorm
        when pre-norm; logits = x W_out + b (W_out = E^T when tied).
    Backward: the same path in reverse: projection, final norm, blocks in reverse
        order, positional dropout, embedding (the tied E gets both gradients added).
    Shapes: ids (B, T) with T <= max_len, mask broadcastable to (B, H, T, T), logits (B, T, V).
    Cache: none here; every child keeps its own.
    Children: embed, pos, layers (list of EncoderBlock), norm (pre-norm only), generator.
    """

    def __init__(self, config):
        super().__init__()
        self.config = c = config
        rng = np.random.default_rng(c.seed)
        self.embed = Embedding(c.vocab_size, c.d_model, rng=rng)
        self.pos = PositionalEncoding(c.d_model, c.max_len, c.dropout, rng=rng)
        self.layers = [EncoderBlock(c.d_model, c.num_heads, c.d_ff, c.dropout, c.norm_first,
                                    c.attention, c.latent_dim, rng=rng)
                       for _ in range(c.num_layers)]
        self.norm = LayerNorm(c.d_model) if c.norm_first else None
        if c.tie_embeddings:
            self.generator = TiedLinear(self.embed)
        else:
            self.generator = Linear(c.d_model, c.vocab_size, rng=rng)
        xavier_uniform_(self, rng)

    def forward(self, ids, mask=None):
        """Logits (B, T, V); mask None means causal (1, 1, T, T)."""
        check_ids(ids, "ids", self.config.vocab_size, ndim=2)
        T = ids.shape[1]
        if T > self.config.max_len:
            raise InputError(message("ids", f"sequence length T <= max_len={self.config.max_len}",
                                     f"T={T} (shape {tuple(ids.shape)})"))
        if mask is None:
            mask = make_causal_mask(T)                                        # (1, 1, T, T)
        x = self.pos.forward(self.embed.forward(ids))                        # (B, T, D)
        for layer in self.layers:
            x = layer.forward(x, mask)                                       # (B, T, D)
        if self.norm is not None:
            x = self.norm.forward(x)
        return self.generator.forward(x)                                     # (B, T, V)

    def backward(self, dlogits):
        """Fill the gradient of every parameter; token ids get no gradient (returns None)."""
        dx = self.generator.backward(dlogits)                                # (B, T, D)
        if self.norm is not None:
            dx = self.norm.backward(dx)
        for layer in reversed(self.layers):
            dx = layer.backward(dx)                                          # (B, T, D)
        self.embed.backward(self.pos.backward(dx))
        return None

    def forward_incremental(self, ids, cache):
        """Logits (B, T_new, V) for NEW tokens ids (B, T_new) only, using a KVCache.

        Inference only. The tokens continue the ones already in `cache`: they get
        positions cache.length .. cache.length + T_new - 1, attend causally to every
        earlier position through each block's cached keys/values (MHA: K, V; MLA:
        the latent c), and cache.length grows by T_new. Feed the whole prompt once,
        then one token per step: the logits equal `forward` on the whole sequence.
        """
        check_ids(ids, "ids", self.config.vocab_size, ndim=2)
        past, T_new = cache.length, ids.shape[1]
        x = append_positions(self.pos, self.embed.forward(ids), past)        # (B, T_new, D)
        mask = incremental_causal_mask(past, T_new)                          # or None
        for i, layer in enumerate(self.layers):
            x = layer.forward_incremental(x, cache.layer(i), mask)           # (B, T_new, D)
        if self.norm is not None:
            x = self.norm.forward(x)
        cache.length = past + T_new
        return self.generator.forward(x)                                     # (B, T_new, V)
