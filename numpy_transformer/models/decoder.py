"""The decoder: N identical blocks of masked self-attention, cross-attention and feed-forward."""

from ..layers.feedforward import FeedForward
from ..layers.normalization import LayerNorm
from ..layers.residual import SublayerConnection
from ..kv_cache import layer_cache
from ..module import Module
from .sublayers import make_attention


class DecoderBlock(Module):
    """One decoder layer (paper, section 3.1):

        x = Sublayer_0(x, SelfAttention(h, h, h, tgt_mask))        causal: no peeking ahead
        x = Sublayer_1(x, CrossAttention(h, memory, memory, src_mask))
        x = Sublayer_2(x, FeedForward(h))

    Each sublayer runs as h = enter(x), the sublayer of h, exit(x, its output)
    (layers/residual.py). Backward, the same calls in reverse: the feed-forward
    sublayer; the cross-attention sublayer, whose key and value gradients
    (dk + dv) are the gradient of the encoder output `memory`; the self-attention
    sublayer (dq + dk + dv). x fed each sublayer and its identity path: they add.
    Shapes: x (B, T, D), memory (B, S, D), tgt_mask -> (B, H, T, T), src_mask -> (B, H, T, S).
    cache: None (training), or the block's entry of a KVCache (decoding): x holds the new
    positions only; the self-attention cache grows by them, the cross-attention cache
    is made from memory once.
    Built from a BlockConfig (models/config.py, checked there), e.g. `config.block_config()`.
    """

    def __init__(self, config, *, rng=None):
        super().__init__()
        c = config
        self.self_attn = make_attention(c, rng)
        self.cross_attn = make_attention(c, rng)
        self.feed_forward = FeedForward(c.d_model, c.d_ff, c.activation_p, rng=rng)
        self.sublayers = [SublayerConnection(c.d_model, c.dropout, c.norm_first, rng=rng)
                          for _ in range(3)]

    def forward(self, x, memory, src_mask=None, tgt_mask=None, cache=None):
        self_cache, cross_cache = (None, None) if cache is None else (cache["self"],
                                                                      cache["cross"])
        h = self.sublayers[0].enter(x)                                           # (B, T, D)
        a = self.self_attn.forward(h, h, h, tgt_mask, self_cache)                # (B, T, D)
        x = self.sublayers[0].exit(x, a)                                         # (B, T, D)
        h = self.sublayers[1].enter(x)                                           # (B, T, D)
        c = self.cross_attn.forward(h, memory, memory, src_mask, cross_cache)    # (B, T, D)
        x = self.sublayers[1].exit(x, c)                                         # (B, T, D)
        h = self.sublayers[2].enter(x)                                           # (B, T, D)
        f = self.feed_forward.forward(h)                                         # (B, T, D)
        return self.sublayers[2].exit(x, f)                                      # (B, T, D)

    def backward(self, dout):
        """Returns (dx (B, T, D), dmemory (B, S, D))."""
        # BEGIN SOLUTION decoder_stack
        # HINT: forward's calls in reverse; memory was read as the cross-attention's k and v
        dx, df = self.sublayers[2].exit_backward(dout)                           # (B, T, D)
        dh = self.feed_forward.backward(df)                                      # (B, T, D)
        dx = dx + self.sublayers[2].enter_backward(dh)                           # (B, T, D)
        dx, dc = self.sublayers[1].exit_backward(dx)                             # (B, T, D)
        dq, dk, dv = self.cross_attn.backward(dc)                                # dk, dv (B, S, D)
        dmemory = dk + dv                                                        # memory was k, v
        dx = dx + self.sublayers[1].enter_backward(dq)                           # h was q
        dx, da = self.sublayers[0].exit_backward(dx)                             # (B, T, D)
        dq, dk, dv = self.self_attn.backward(da)                                 # (B, T, D) each
        dh = dq + dk + dv                                                        # h was q, k, v
        return dx + self.sublayers[0].enter_backward(dh), dmemory
        # END SOLUTION


class Decoder(Module):
    """A stack of N DecoderBlocks (a final LayerNorm when pre-norm).

    Every block reads the same encoder output, so the gradient of `memory` is
    the SUM of the blocks' memory gradients.
    Shapes: x (B, T, D), memory (B, S, D) -> (B, T, D).
    cache: None, or a KVCache (decoding): block i gets `cache.layer(i)`.
    Built from a BlockConfig (every block alike) and the number of blocks.
    """

    def __init__(self, config, num_layers, *, rng=None):
        super().__init__()
        self.layers = [DecoderBlock(config, rng=rng) for _ in range(num_layers)]
        self.norm = LayerNorm(config.d_model) if config.norm_first else None

    def forward(self, x, memory, src_mask=None, tgt_mask=None, cache=None):
        for i, layer in enumerate(self.layers):
            x = layer.forward(x, memory, src_mask, tgt_mask, layer_cache(cache, i))  # (B, T, D)
        return self.norm.forward(x) if self.norm is not None else x

    def backward(self, dout):
        """Returns (dx (B, T, D), dmemory (B, S, D)) with dmemory summed over the blocks."""
        # BEGIN SOLUTION decoder_stack
        # HINT: final LayerNorm (pre-norm), blocks in reverse; every block read memory: add them up
        if self.norm is not None:
            dout = self.norm.backward(dout)
        dmemory = None
        for layer in reversed(self.layers):
            dout, dmem = layer.backward(dout)
            dmemory = dmem if dmemory is None else dmemory + dmem
        return dout, dmemory
        # END SOLUTION
