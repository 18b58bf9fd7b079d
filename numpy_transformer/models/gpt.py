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

import numpy as np

from ..backend import xp
from ..kv_cache import incremental_causal_mask
from ..validation import check_ids, check_length, check_mask
from ..layers.embedding import Embedding
from ..layers.positional import PositionalEncoding
from ..masks import make_causal_mask
from .config import GPTConfig  # (also re-exported: models.gpt.GPTConfig)
from .encoder import Encoder
from .transformer import (check_config, check_output_gradient, output_projection,
                          xavier_uniform_)


class GPT(Encoder):
    """Decoder-only Transformer language model: ids (B, T) -> next-token logits (B, T, V).

    Forward: x = PE(Embed(ids)); N EncoderBlocks with a causal mask (self-attention
        then feed-forward, each in a residual SublayerConnection); a final LayerNorm
        when pre-norm; logits = x W_out + b (W_out = E^T when tied).
    Backward: the same path in reverse: projection, the stack (final norm, the blocks
        in reverse order), positional dropout, embedding (the tied E gets both
        gradients added).
    The stack is GPT's own: GPT is an Encoder (its `layers` and `norm`, nanoGPT's `h`
        and `ln_f`) with an embedding before it and a projection after it, so its
        forward and backward run the stack's (`super()`).
    Shapes: ids (B, T) with T <= max_len, mask broadcastable to (B, H, T, T), logits (B, T, V).
    Checks: ids (values, lengths) and mask, when called (`model(ids)`: `check_inputs`,
        then `forward`); the parts inside trust them. Decoding with a KV cache runs the
        same `forward`, given `cache=` (see `forward`); `sample` checks its prompt once.
    Saved: the logits' shape, to check `backward`'s input; every child keeps its own.
    Children: embed, pos, layers (list of EncoderBlock), norm (pre-norm only),
        output_projection.
    """

    def __init__(self, config):
        self.config = c = check_config(config, GPTConfig)
        rng = np.random.default_rng(c.seed)
        # embedding first, then the stack, then the head: the order the weights are drawn
        # in and the parameters are listed in
        self.embed = Embedding(c.vocab_size, c.d_model, rng=rng)
        self.pos = PositionalEncoding(c.d_model, c.max_len, c.dropout, rng=rng)
        super().__init__(c.block_config(), c.num_layers, rng=rng)    # layers, norm
        self.output_projection = output_projection(self.embed, c.tie_embeddings, rng)
        xavier_uniform_(self, rng)
        self.saved = None

    def forward(self, ids, mask=None, cache=None):
        """Logits (B, T, V); mask None means causal (1, 1, T, T).

        cache: None, or a KVCache for incremental decoding (inference only). Then ids
        holds the NEW tokens only: they continue the ones already in the cache, get
        positions cache.length .. cache.length + T - 1, attend causally to every earlier
        position through each block's cached keys/values (MHA: K, V; MLA: the latent c),
        and cache.length grows by T. Feed the whole prompt once, then one token per
        step: the logits equal `forward` on the whole sequence.
        """
        past, T = (0 if cache is None else cache.length), ids.shape[1]
        if mask is None:
            mask = make_causal_mask(T) if cache is None else incremental_causal_mask(past, T)
        ids = xp.asarray(ids)                          # a caller's host ids: to the device
        x = self.pos.forward(self.embed.forward(ids), past)                  # (B, T, D)
        x = super().forward(x, mask, cache)                # the stack      # (B, T, D)
        logits = self.output_projection.forward(x)                           # (B, T, V)
        if cache is not None:
            cache.length = past + T
        self.saved = tuple(logits.shape)
        return logits

    def backward(self, dlogits):
        """Fill the gradient of every parameter; token ids get no gradient (returns None)."""
        check_output_gradient(self, dlogits)
        dx = self.output_projection.backward(dlogits)                        # (B, T, D)
        dx = super().backward(dx)                          # the stack      # (B, T, D)
        self.embed.backward(self.pos.backward(dx))
        return None

    def check_inputs(self, ids, mask=None, cache=None):
        check_ids(ids, "ids", self.config.vocab_size, ndim=2)
        past, T = (0 if cache is None else cache.length), ids.shape[1]         # ids (B, T)
        check_length(ids, "ids", self.config.max_len, past)
        check_mask(mask, "mask", (ids.shape[0], self.config.num_heads, T, past + T))
