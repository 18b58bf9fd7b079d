"""The encoder: N identical blocks of self-attention and feed-forward."""

from ..layers.feedforward import FeedForward
from ..layers.normalization import LayerNorm
from ..layers.residual import SublayerConnection
from ..kv_cache import layer_cache
from ..module import Module
from .sublayers import make_attention


class EncoderBlock(Module):
    """One encoder layer (paper, section 3.1):

        x = Sublayer_0(x, SelfAttention(h, h, h, src_mask))
        x = Sublayer_1(x, FeedForward(h))

    where Sublayer(x, f) is LayerNorm(x + Dropout(f(x))) (post-norm, the paper)
    or x + Dropout(f(LayerNorm(x))) (pre-norm), run as h = enter(x), then the
    sublayer f of h, then exit(x, f) (layers/residual.py).
    Backward: the same calls in reverse order; x fed the identity path and the
    sublayer, and self-attention's input h fed q, k and v, so its gradient is dq + dk + dv.
    Shapes: x (B, S, D), src_mask broadcastable to (B, H, S, S).
    cache: None (training), or the block's entry of a KVCache (decoder-only models
    decoding): x holds the new positions only, the self-attention's cache their keys.
    Built from a BlockConfig (models/config.py, checked there), e.g. `config.block_config()`.
    """

    def __init__(self, config, *, rng=None):
        super().__init__()
        c = config
        self.self_attn = make_attention(c, rng)
        self.feed_forward = FeedForward(c.d_model, c.d_ff, c.activation_p, rng=rng)
        self.sublayers = [SublayerConnection(c.d_model, c.dropout, c.norm_first, rng=rng)
                          for _ in range(2)]

    def forward(self, x, mask=None, cache=None):
        self_cache = None if cache is None else cache["self"]
        h = self.sublayers[0].enter(x)                                           # (B, S, D)
        a = self.self_attn.forward(h, h, h, mask, self_cache)                    # (B, S, D)
        x = self.sublayers[0].exit(x, a)                                         # (B, S, D)
        h = self.sublayers[1].enter(x)                                           # (B, S, D)
        f = self.feed_forward.forward(h)                                         # (B, S, D)
        return self.sublayers[1].exit(x, f)                                      # (B, S, D)

    def backward(self, dout):
        # BEGIN SOLUTION encoder_stack
        # HINT: forward's calls in reverse order; self-attention read h as q, k and v
        dx, df = self.sublayers[1].exit_backward(dout)                           # (B, S, D)
        dh = self.feed_forward.backward(df)                                      # (B, S, D)
        dx = dx + self.sublayers[1].enter_backward(dh)                           # (B, S, D)
        dx, da = self.sublayers[0].exit_backward(dx)                             # (B, S, D)
        dq, dk, dv = self.self_attn.backward(da)                                 # (B, S, D) each
        dh = dq + dk + dv                                                        # h was q, k, v
        return dx + self.sublayers[0].enter_backward(dh)                         # (B, S, D)
        # END SOLUTION


class Encoder(Module):
    """A stack of N EncoderBlocks; pre-norm stacks end with a LayerNorm
    (post-norm blocks already end normalised).

    Shapes: x (B, S, D) -> memory (B, S, D).
    cache: None, or a KVCache (a decoder-only stack decoding): block i gets `cache.layer(i)`.
    Built from a BlockConfig (every block alike) and the number of blocks.
    """

    def __init__(self, config, num_layers, *, rng=None):
        super().__init__()
        self.layers = [EncoderBlock(config, rng=rng) for _ in range(num_layers)]
        self.norm = LayerNorm(config.d_model) if config.norm_first else None

    def forward(self, x, mask=None, cache=None):
        for i, layer in enumerate(self.layers):
            x = layer.forward(x, mask, layer_cache(cache, i))                    # (B, S, D)
        return self.norm.forward(x) if self.norm is not None else x

    def backward(self, dout):
        # BEGIN SOLUTION encoder_stack
        # HINT: the final LayerNorm first (pre-norm stacks have one), then the blocks in reverse
        if self.norm is not None:
            dout = self.norm.backward(dout)
        for layer in reversed(self.layers):
            dout = layer.backward(dout)                                          # (B, S, D)
        return dout
        # END SOLUTION
