"""The decoder: N identical blocks of masked self-attention, cross-attention and feed-forward."""

from ..layers.feedforward import FeedForward
from ..layers.normalization import LayerNorm
from ..layers.residual import SublayerConnection
from ..module import Module
from .blocks import cached_self_attention, make_attention, self_attention_backward


class DecoderBlock(Module):
    """One decoder layer (paper, section 3.1):

        x = Sublayer_0(x, SelfAttention(h, h, h, tgt_mask))        causal: no peeking ahead
        x = Sublayer_1(x, CrossAttention(h, memory, memory, src_mask))
        x = Sublayer_2(x, FeedForward(h))

    Backward, in reverse: the feed-forward sublayer; the cross-attention
    sublayer, whose key and value gradients (dk + dv) are the gradient of the
    encoder output `memory`; the self-attention sublayer (dq + dk + dv).
    Shapes: x (B, T, D), memory (B, S, D), tgt_mask -> (B, H, T, T), src_mask -> (B, H, T, S).
    """

    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, norm_first=False,
                 attention="mha", latent_dim=None, *, rng=None):
        super().__init__()
        self.self_attn = make_attention(attention, d_model, num_heads, dropout, latent_dim, rng)
        self.cross_attn = make_attention(attention, d_model, num_heads, dropout, latent_dim, rng)
        self.feed_forward = FeedForward(d_model, d_ff, dropout, rng=rng)
        self.sublayers = [SublayerConnection(d_model, dropout, norm_first, rng=rng)
                          for _ in range(3)]
        self.dmemory = None

    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        self_attn, cross_attn = self.self_attn, self.cross_attn
        x = self.sublayers[0].forward(x, lambda h: self_attn.forward(h, h, h, tgt_mask))
        x = self.sublayers[1].forward(x, lambda h: cross_attn.forward(h, memory, memory, src_mask))
        return self.sublayers[2].forward(x, self.feed_forward.forward)           # (B, T, D)

    def backward(self, dout):
        """Returns (dx (B, T, D), dmemory (B, S, D))."""
        # BEGIN SOLUTION decoder_stack
        # HINT: the sublayers in reverse; memory was cross-attention's k and v: dmemory = dk + dv
        d = self.sublayers[2].backward(dout, self.feed_forward.backward)

        def cross_attention_backward(dy):
            dq, dk, dv = self.cross_attn.backward(dy)
            self.dmemory = dk + dv                                               # (B, S, D)
            return dq

        d = self.sublayers[1].backward(d, cross_attention_backward)
        d = self.sublayers[0].backward(d, self_attention_backward(self.self_attn))
        dmemory, self.dmemory = self.dmemory, None
        return d, dmemory
        # END SOLUTION

    def forward_incremental(self, x, memory, src_mask, layer_cache, tgt_mask=None):
        """Inference on new target positions only, with this block's KV cache.

        x (B, T_new, D); memory (B, S, D). layer_cache["self"] grows by T_new
        positions; layer_cache["cross"] is computed from memory on the first call
        and reused after (the encoder output does not change while decoding).
        tgt_mask (1, 1, T_new, T_cached) or None (one new token sees everything cached).
        """
        cross = self.cross_attn
        if "cross" not in layer_cache:
            layer_cache["cross"] = cross.extend_cache(None, memory, memory)
        attend = cached_self_attention(self.self_attn, layer_cache, tgt_mask)
        x = self.sublayers[0].forward(x, attend)                                 # (B, T_new, D)
        x = self.sublayers[1].forward(
            x, lambda h: cross.forward_cached(h, layer_cache["cross"], src_mask))
        return self.sublayers[2].forward(x, self.feed_forward.forward)           # (B, T_new, D)


class Decoder(Module):
    """A stack of N DecoderBlocks (a final LayerNorm when pre-norm).

    Every block reads the same encoder output, so the gradient of `memory` is
    the SUM of the blocks' memory gradients.
    Shapes: x (B, T, D), memory (B, S, D) -> (B, T, D).
    """

    def __init__(self, num_layers, d_model, num_heads, d_ff, dropout=0.0, norm_first=False,
                 attention="mha", latent_dim=None, *, rng=None):
        super().__init__()
        self.layers = [DecoderBlock(d_model, num_heads, d_ff, dropout, norm_first,
                                    attention, latent_dim, rng=rng) for _ in range(num_layers)]
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, memory, src_mask=None, tgt_mask=None):
        for layer in self.layers:
            x = layer.forward(x, memory, src_mask, tgt_mask)                     # (B, T, D)
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

    def forward_incremental(self, x, memory, src_mask, cache, tgt_mask=None):
        """Inference on new positions only: x (B, T_new, D) -> (B, T_new, D).
        cache: a KVCache; block i uses cache.layer(i)."""
        for i, layer in enumerate(self.layers):
            x = layer.forward_incremental(x, memory, src_mask, cache.layer(i), tgt_mask)
        return self.norm.forward(x) if self.norm is not None else x
