"""The encoder-decoder Transformer: assembly, forward and backward (configuration: config.py)."""

import numpy as np

from ..backend import xp
from ..kv_cache import incremental_causal_mask
from ..validation import check_float_array, check_ids, check_length, check_mask, message
from ..errors import InputError, InputTypeError
from ..layers.embedding import Embedding
from ..layers.linear import Linear, TiedLinear
from ..layers.positional import PositionalEncoding
from ..masks import make_decoder_mask, make_padding_mask
from ..module import Module
from .config import TransformerConfig
from .decoder import Decoder
from .encoder import Encoder


def xavier_uniform_(module, rng):
    """Re-draw every matrix of `module` from U(-a, a), a = sqrt(6 / (fan_in + fan_out))
    (Glorot & Bengio, 2010), in place; vectors (biases, LayerNorm) keep their values."""
    for _, param, _ in module.named_parameters():
        if param.ndim == 2:
            a = (6.0 / (param.shape[0] + param.shape[1])) ** 0.5
            param[...] = xp.asarray(rng.uniform(-a, a, param.shape), dtype=param.dtype)


def output_projection(embed, tie, rng):
    """The projection to the vocabulary's logits: the embedding's own matrix transposed when
    `tie` (TiedLinear, paper section 3.4), else a Linear of its own."""
    V, D = embed.params["weight"].shape
    return TiedLinear(embed) if tie else Linear(D, V, rng=rng)


def check_output_gradient(model, dout):
    """dout must have the shape of the last forward's output (InputError naming the model:
    "backward called before forward" when there was none)."""
    shape = model.saved_for_backward()
    if tuple(getattr(dout, "shape", ())) != shape:
        raise InputError(message(f"{type(model).__name__}.backward: dlogits",
                                 f"shape {shape} (that of the logits)",
                                 f"shape {tuple(getattr(dout, 'shape', ()))}"))


def share_weight(module, owner):
    """Make `module` use `owner`'s weight and gradient arrays (the same objects), so each
    adds its gradient into one place: the shared matrix gets the sum of their gradients."""
    module.params["weight"] = owner.params["weight"]
    module.grads["weight"] = owner.grads["weight"]


class Transformer(Module):
    """Encoder-decoder Transformer (Vaswani et al., 2017).

        memory = Encoder(PE(Embed_src(src)), src_mask)                 (B, S, D)
        h      = Decoder(PE(Embed_tgt(tgt_in)), memory, masks)         (B, T, D)
        logits = h W_out + b                                           (B, T, V_tgt)

    Backward runs the same path in reverse: projection, decoder (which also
    returns d memory, summed over its blocks' cross-attentions), target
    embedding; then encoder and source embedding from d memory.
    Inputs (ids, lengths, masks) are checked once, where they enter: `model(src, tgt_in)`
    runs `check_inputs` then `forward`; `encode` and `decode`, the entry points of
    decoding, check theirs. Inside, the parts call each other's `forward` and trust them.
    Decoding with a KV cache runs the same `decode`, given `cache=` (see `decode`).
    Weight sharing (section 3.4): tie_embeddings gives the output projection the target
    embedding's matrix, W_out = E_tgt^T; share_embeddings (one joint vocabulary) also makes
    E_src = E_tgt = E, so dE = dE_src + dE_tgt + dW_out^T, each child adding its part.
    Saved: the logits' shape, to check `backward`'s input; every child keeps its own.
    Children: src_embed, tgt_embed, src_pos, tgt_pos, encoder, decoder, output_projection.
    """

    def __init__(self, config):
        super().__init__()
        self.config = c = check_config(config, TransformerConfig)
        rng = np.random.default_rng(c.seed)
        block = c.block_config()             # the settings of every block
        self.src_embed = Embedding(c.src_vocab_size, c.d_model, rng=rng)
        self.tgt_embed = Embedding(c.tgt_vocab_size, c.d_model, rng=rng)
        if c.share_embeddings:               # with tie_embeddings: one matrix for all three
            share_weight(self.tgt_embed, self.src_embed)
        self.src_pos = PositionalEncoding(c.d_model, c.max_len, c.dropout, rng=rng)
        self.tgt_pos = PositionalEncoding(c.d_model, c.max_len, c.dropout, rng=rng)
        self.encoder = Encoder(block, c.num_encoder_layers, rng=rng)
        self.decoder = Decoder(block, c.num_decoder_layers, rng=rng)
        self.output_projection = output_projection(self.tgt_embed, c.tie_embeddings, rng)
        xavier_uniform_(self, rng)
        self.saved = None

    def check_src(self, src, src_mask):
        c = self.config
        check_ids(src, "src", c.src_vocab_size, ndim=2)
        check_length(src, "src", c.max_len)
        B, S = src.shape
        check_mask(src_mask, "src_mask", (B, c.num_heads, S, S))

    def check_tgt(self, tgt, B, S, src_mask, tgt_mask, name="tgt", past=0):
        """tgt (B, T) ids after `past` cached positions, and the decoder's masks."""
        c = self.config
        check_ids(tgt, name, c.tgt_vocab_size, ndim=2)
        check_length(tgt, name, c.max_len, past)
        if tgt.shape[0] != B:
            raise InputError(message(name, f"batch size {B} (as memory/src)",
                                     f"shape {tuple(tgt.shape)}"))
        T = tgt.shape[1]
        check_mask(src_mask, "src_mask", (B, c.num_heads, T, S))
        check_mask(tgt_mask, "tgt_mask", (B, c.num_heads, T, past + T))

    def encode(self, src, src_mask=None):
        """src (B, S) ids -> memory (B, S, D); the inputs checked (an entry point)."""
        self.check_src(src, src_mask)
        x = self.src_pos.forward(self.src_embed.forward(src))                 # (B, S, D)
        return self.encoder.forward(x, src_mask)                              # (B, S, D)

    def decode(self, memory, src_mask, tgt, tgt_mask=None, cache=None):
        """memory (B, S, D), tgt (B, T) ids -> decoder output (B, T, D).

        cache: None, or a KVCache for incremental decoding (inference only). Then tgt
        holds the NEW target tokens only: they continue the ones already fed into the
        cache, get positions cache.length .. cache.length + T - 1 of the positional
        table, attend (causally when tgt_mask is None) to every earlier position through
        the cached keys/values, and cache.length grows by T. Feeding a sequence in one
        call or token by token gives the same outputs as `decode` on all of it.
        The inputs are checked (an entry point: decoding calls it at every step).
        """
        check_float_array(memory, "memory", ndim=3, last_dim=self.config.d_model,
                          last_dim_name="d_model")
        past = 0 if cache is None else cache.length
        self.check_tgt(tgt, *memory.shape[:2], src_mask, tgt_mask, past=past)
        T = tgt.shape[1]
        if cache is not None and tgt_mask is None:
            tgt_mask = incremental_causal_mask(past, T)                       # (1, 1, T, past + T)
        y = self.tgt_pos.forward(self.tgt_embed.forward(tgt), past)           # (B, T, D)
        y = self.decoder.forward(y, memory, src_mask, tgt_mask, cache)        # (B, T, D)
        if cache is not None:
            cache.length = past + T
        return y

    def project(self, x):
        """x (B, T, D) -> logits (B, T, V_tgt)."""
        return self.output_projection.forward(x)

    def forward(self, src, tgt_in, src_mask=None, tgt_mask=None):
        """Logits (B, T, V_tgt) for teacher-forced target input `tgt_in`.

        When a mask is None it is built from the ids: src_mask hides source
        padding, tgt_mask is causal and hides target padding.
        """
        src, tgt_in = xp.asarray(src), xp.asarray(tgt_in)      # a caller's host ids: to the device
        if src_mask is None:
            src_mask = make_padding_mask(src, self.config.pad_id)             # (B, 1, 1, S)
        if tgt_mask is None:
            tgt_mask = make_decoder_mask(tgt_in, self.config.pad_id)          # (B, 1, T, T)
        x = self.src_pos.forward(self.src_embed.forward(src))                 # (B, S, D)
        memory = self.encoder.forward(x, src_mask)                            # (B, S, D)
        y = self.tgt_pos.forward(self.tgt_embed.forward(tgt_in))              # (B, T, D)
        y = self.decoder.forward(y, memory, src_mask, tgt_mask)               # (B, T, D)
        logits = self.output_projection.forward(y)                            # (B, T, V)
        self.saved = tuple(logits.shape)
        return logits

    def backward(self, dlogits):
        """Fill the gradient of every parameter; token ids get no gradient (returns None)."""
        check_output_gradient(self, dlogits)
        dh = self.output_projection.backward(dlogits)                         # (B, T, D)
        dy, dmemory = self.decoder.backward(dh)
        self.tgt_embed.backward(self.tgt_pos.backward(dy))
        dx = self.encoder.backward(dmemory)                                   # (B, S, D)
        self.src_embed.backward(self.src_pos.backward(dx))
        return None

    def check_inputs(self, src, tgt_in, src_mask=None, tgt_mask=None):
        self.check_src(src, src_mask)
        self.check_tgt(tgt_in, *src.shape, src_mask, tgt_mask, "tgt_in")


def build_transformer(config=None, **overrides):
    """A Transformer from a TransformerConfig, or from its fields as keyword arguments."""
    if config is not None:
        check_config(config, TransformerConfig)
    if config is None or overrides:
        fields = {**(config.to_dict() if config is not None else {}), **overrides}
        try:
            config = TransformerConfig(**fields)
        except TypeError as err:                # a field missing, or one it does not have
            raise InputTypeError(message("build_transformer", "the fields of a "
                                         "TransformerConfig", str(err))) from None
    return Transformer(config)


def check_config(config, kind):
    """`config` itself if it is a `kind` (the dataclass), else InputTypeError naming it."""
    if not isinstance(config, kind):
        raise InputTypeError(message("config", f"a {kind.__name__}", type(config).__name__))
    return config
