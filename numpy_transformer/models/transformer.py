"""The encoder-decoder Transformer: configuration, assembly, forward and backward."""

from dataclasses import asdict, dataclass

import numpy as np

from ..backend import xp
from ..checks import check_ids, message
from ..kv_cache import append_positions, incremental_causal_mask
from ..layers.embedding import Embedding
from ..layers.linear import Linear, TiedLinear
from ..layers.positional import PositionalEncoding
from ..masks import make_decoder_mask, make_padding_mask
from ..module import Module
from .decoder import Decoder
from .blocks import validate_config
from .encoder import Encoder
from ..errors import InputError


@dataclass
class TransformerConfig:
    src_vocab_size: int              # V_src, source vocabulary size (with special tokens)
    tgt_vocab_size: int              # V_tgt, target vocabulary size
    d_model: int = 512               # D, width of every token vector
    num_heads: int = 8               # H; D must be divisible by H
    d_ff: int = 2048                 # F, hidden width of the feed-forward layers
    num_encoder_layers: int = 6      # N encoder blocks
    num_decoder_layers: int = 6      # N decoder blocks
    dropout: float = 0.1             # on sublayer outputs, embeddings and attention weights
    max_len: int = 5000              # longest sequence the positional table covers
    norm_first: bool = False         # False: post-norm as in the paper; True: pre-norm
    attention: str = "mha"           # "mha" multi-head, "mla" multi-head latent attention
    latent_dim: int = None           # L for MLA (default d_model // 4); unused for MHA
    tie_embeddings: bool = False     # share the target embedding with the output projection
    pad_id: int = 0                  # padding token id (masked out of attention)
    seed: int = 0                    # seed of the generator that draws the initial weights

    def __post_init__(self):
        validate_config(self, ("src_vocab_size", "tgt_vocab_size", "d_model", "num_heads",
                               "d_ff", "num_encoder_layers", "num_decoder_layers", "max_len"))

    def to_dict(self):
        return asdict(self)


def xavier_uniform_(module, rng):
    """Re-draw every matrix of `module` from U(-a, a), a = sqrt(6 / (fan_in + fan_out))
    (Glorot & Bengio, 2010), in place; vectors (biases, LayerNorm) keep their values."""
    for _, param, _ in module.named_parameters():
        if param.ndim == 2:
            a = (6.0 / (param.shape[0] + param.shape[1])) ** 0.5
            param[...] = xp.asarray(rng.uniform(-a, a, param.shape), dtype=param.dtype)


class Transformer(Module):
    """Encoder-decoder Transformer (Vaswani et al., 2017).

        memory = Encoder(PE(Embed_src(src)), src_mask)                 (B, S, D)
        h      = Decoder(PE(Embed_tgt(tgt_in)), memory, masks)         (B, T, D)
        logits = h W_out + b                                           (B, T, V_tgt)

    Backward runs the same path in reverse: projection, decoder (which also
    returns d memory, summed over its blocks' cross-attentions), target
    embedding; then encoder and source embedding from d memory.
    """

    def __init__(self, config):
        super().__init__()
        self.config = c = config
        rng = np.random.default_rng(c.seed)
        stack = dict(d_model=c.d_model, num_heads=c.num_heads, d_ff=c.d_ff, dropout=c.dropout,
                     norm_first=c.norm_first, attention=c.attention, latent_dim=c.latent_dim)
        self.src_embed = Embedding(c.src_vocab_size, c.d_model, rng=rng)
        self.tgt_embed = Embedding(c.tgt_vocab_size, c.d_model, rng=rng)
        self.src_pos = PositionalEncoding(c.d_model, c.max_len, c.dropout, rng=rng)
        self.tgt_pos = PositionalEncoding(c.d_model, c.max_len, c.dropout, rng=rng)
        self.encoder = Encoder(c.num_encoder_layers, **stack, rng=rng)
        self.decoder = Decoder(c.num_decoder_layers, **stack, rng=rng)
        if c.tie_embeddings:
            self.generator = TiedLinear(self.tgt_embed)
        else:
            self.generator = Linear(c.d_model, c.tgt_vocab_size, rng=rng)
        xavier_uniform_(self, rng)

    def encode(self, src, src_mask=None):
        """src (B, S) ids -> memory (B, S, D)."""
        check_ids(src, "src", self.config.src_vocab_size, ndim=2)
        x = self.src_pos.forward(self.src_embed.forward(src))                 # (B, S, D)
        return self.encoder.forward(x, src_mask)

    def decode(self, memory, src_mask, tgt, tgt_mask=None):
        """memory (B, S, D), tgt (B, T) ids -> decoder output (B, T, D)."""
        check_ids(tgt, "tgt", self.config.tgt_vocab_size, ndim=2)
        if tgt.shape[0] != memory.shape[0]:
            raise InputError(message("tgt", f"batch size {memory.shape[0]} (as memory/src)",
                                     f"shape {tuple(tgt.shape)}"))
        y = self.tgt_pos.forward(self.tgt_embed.forward(tgt))                 # (B, T, D)
        return self.decoder.forward(y, memory, src_mask, tgt_mask)

    def decode_incremental(self, memory, src_mask, tgt, cache):
        """Decoder output (B, T_new, D) for the NEW target tokens tgt (B, T_new) only.

        Inference only. The tokens continue the ones already fed into `cache` (a
        KVCache): they get positions cache.length .. cache.length + T_new - 1 of the
        positional table, attend causally to every earlier position through the
        cached keys/values, and cache.length grows by T_new. Feeding a sequence in
        one call or token by token gives the same outputs as `decode` on all of it.
        """
        check_ids(tgt, "tgt", self.config.tgt_vocab_size, ndim=2)
        if tgt.shape[0] != memory.shape[0]:
            raise InputError(message("tgt", f"batch size {memory.shape[0]} (as memory/src)",
                                     f"shape {tuple(tgt.shape)}"))
        past, T_new = cache.length, tgt.shape[1]
        y = append_positions(self.tgt_pos, self.tgt_embed.forward(tgt), past)  # (B, T_new, D)
        mask = incremental_causal_mask(past, T_new)                           # or None
        h = self.decoder.forward_incremental(y, memory, src_mask, cache, mask)
        cache.length = past + T_new
        return h                                                              # (B, T_new, D)

    def project(self, x):
        """x (B, T, D) -> logits (B, T, V_tgt)."""
        return self.generator.forward(x)

    def forward(self, src, tgt_in, src_mask=None, tgt_mask=None):
        """Logits (B, T, V_tgt) for teacher-forced target input `tgt_in`.

        When a mask is None it is built from the ids: src_mask hides source
        padding, tgt_mask is causal and hides target padding.
        """
        check_ids(src, "src", self.config.src_vocab_size, ndim=2)
        check_ids(tgt_in, "tgt_in", self.config.tgt_vocab_size, ndim=2)
        if src_mask is None:
            src_mask = make_padding_mask(src, self.config.pad_id)             # (B, 1, 1, S)
        if tgt_mask is None:
            tgt_mask = make_decoder_mask(tgt_in, self.config.pad_id)          # (B, 1, T, T)
        memory = self.encode(src, src_mask)                                   # (B, S, D)
        return self.project(self.decode(memory, src_mask, tgt_in, tgt_mask))  # (B, T, V)

    def backward(self, dlogits):
        """Fill the gradient of every parameter; token ids get no gradient (returns None)."""
        dh = self.generator.backward(dlogits)                                 # (B, T, D)
        dy, dmemory = self.decoder.backward(dh)
        self.tgt_embed.backward(self.tgt_pos.backward(dy))
        dx = self.encoder.backward(dmemory)                                   # (B, S, D)
        self.src_embed.backward(self.src_pos.backward(dx))
        return None


def build_transformer(config=None, **overrides):
    """A Transformer from a TransformerConfig, or from its fields as keyword arguments."""
    if config is None:
        config = TransformerConfig(**overrides)
    elif overrides:
        config = TransformerConfig(**{**config.to_dict(), **overrides})
    return Transformer(config)
