"""The KV cache: what a decoder keeps between steps so that each step feeds one new token.

Without a cache, generating token t re-runs the decoder on all t previous
tokens: O(t) work per step, O(T^2) in all, and the keys/values of the old
positions are recomputed every time although they never change (causal
attention: an old position never sees a newer one). With a cache, each
attention layer keeps what it computed for the old positions, and a step only
computes the newest position's row:

    self-attention    grows by one position per step:   (B, t, .) -> (B, t + 1, .)
    cross-attention   the encoder output never changes: computed once from memory

What a layer keeps depends on its attention (see the layers' `cache_entries`):

    MHA   "k", "v":  K = h W_k, V = h W_v         2 D numbers per position and layer
    MLA   "c":       c = h W_kv_compress           L numbers per position and layer,
                     K = c W_k_decompress, V = c W_v_decompress recomputed when needed

With D = 512 and L = 128 the MLA cache is 8x smaller: that is MLA's whole point.
`kv_cache_bytes` gives these sizes from a configuration; `KVCache.nbytes()`
measures a live cache.

Everything incremental decoding does lives here, bottom-up: one attention layer
(`cache_entries`, `cached_keys_values`, `extend_cache`, `attention_step`), one block
(`encoder_block_step`, `decoder_block_step`), whole models (`gpt_step`,
`transformer_step`, which `GPT.forward_step` and
`Transformer.decode_step` call). It is inference only: no dropout, and
nothing is kept for a backward.
"""

from .backend import xp
from .validation import check_float_array, check_positive_int, message
from .errors import InputError
from .layers.attention import merge_heads, scaled_dot_product_attention, split_heads
from .layers.latent_attention import MultiHeadLatentAttention


class KVCache:
    """Per-layer attention caches of one incremental decoding run (inference only).

    layers[i]  a dict for block i: {"self": {name: array}, "cross": {name: array}};
               "cross" only in encoder-decoder models. Arrays are (B, T_cached, .)
               (MHA: "k", "v" (B, t, D); MLA: "c" (B, t, L)).
    length     positions already fed to the decoder: the next token's position, i.e.
               the row of the positional table it gets.
    Grown by the models' `decode_step` / `forward_step`; start empty.
    """

    def __init__(self):
        self.layers = []
        self.length = 0

    def layer(self, i):
        """The cache dict of block i (created empty on first use)."""
        while len(self.layers) <= i:
            self.layers.append({})
        return self.layers[i]

    def reorder(self, index):
        """Keep batch rows `index` (B_new,) of every self-attention cache (beam search).

        Cross-attention caches are left alone: beam search repeats each source
        row once per beam, so the beams of one source share identical rows.
        """
        for layer in self.layers:
            if "self" in layer:
                layer["self"] = {name: a[index] for name, a in layer["self"].items()}

    def nbytes(self):
        """Bytes held right now: {"self": ..., "cross": ..., "total": ...}."""
        sizes = {"self": 0, "cross": 0}
        for layer in self.layers:
            for kind, entries in layer.items():
                sizes[kind] += sum(int(a.nbytes) for a in entries.values())
        sizes["total"] = sizes["self"] + sizes["cross"]
        return sizes

    def __repr__(self):
        return (f"KVCache(layers={len(self.layers)}, length={self.length}, "
                f"bytes={self.nbytes()['total']})")


# One attention layer.

def cache_entries(attn, k):
    """What `attn` keeps per key position of k (B, T, D): {name: (B, T, .)}.

    MHA: the projected keys and values, {"k": k W_k, "v": k W_v}, 2 D numbers.
    MLA: only the latent {"c": k W_kv_compress}, L numbers; K and V are
    decompressed from it again at every step (compute traded for memory;
    production code "absorbs" W_k_decompress into the query instead).
    """
    if isinstance(attn, MultiHeadLatentAttention):
        return {"c": attn.w_kv_compress.forward(k)}                           # (B, T, L)
    return {"k": attn.w_k.forward(k), "v": attn.w_v.forward(k)}                # (B, T, D) each


def cached_keys_values(attn, entries):
    """The keys and values K, V (B, Tk, D) of every cached position."""
    if isinstance(attn, MultiHeadLatentAttention):
        c = entries["c"]                                                       # (B, Tk, L)
        return attn.w_k_decompress.forward(c), attn.w_v_decompress.forward(c)
    return entries["k"], entries["v"]


def extend_cache(attn, entries, k):
    """The cache `entries` (a dict, or None to start one) with the positions of k
    (B, T_new, D) appended along the time axis: (B, t, .) -> (B, t + T_new, .)."""
    new = cache_entries(attn, k)
    if entries is None:
        return new
    return {name: xp.concatenate([entries[name], new[name]], axis=1)           # (B, t + T_new, .)
            for name in new}


def attention_step(attn, q, entries, mask=None):
    """Attention of new queries q (B, Tq, D) over every cached position:

        K, V = cached_keys_values(attn, entries)        (B, Tk, D) each
        y    = MultiHead(q W_q, K, V, mask) W_o          no dropout
    mask broadcastable to (B, H, Tq, Tk); None lets every query see every cached key.
    The same numbers as `attn.forward` on the whole sequence, row for row.
    """
    check_float_array(q, "q", ndim=3, last_dim=attn.d_model, last_dim_name="d_model")
    H = attn.num_heads
    K, V = cached_keys_values(attn, entries)                                  # (B, Tk, D)
    qh = split_heads(attn.w_q.forward(q), H)                                  # (B, H, Tq, Dh)
    out, _ = scaled_dot_product_attention(qh, split_heads(K, H), split_heads(V, H), mask)
    return attn.w_o.forward(merge_heads(out))                                 # (B, Tq, D)


def cached_self_attention(attn, layer_cache, mask=None):
    """The sublayer function of self-attention in incremental decoding: append the
    new positions h (B, T_new, D) to layer_cache["self"], then attend over all of them."""
    def sublayer(h):
        layer_cache["self"] = extend_cache(attn, layer_cache.get("self"), h)
        return attention_step(attn, h, layer_cache["self"], mask)              # (B, T_new, D)
    return sublayer


# One block.

def encoder_block_step(block, x, layer_cache, mask=None):
    """An EncoderBlock on new positions x (B, T_new, D) only (decoder-only models: causal).

    layer_cache: the block's dict of a KVCache, whose "self" entries grow by
    T_new positions; mask (1, 1, T_new, T_cached) or None.
    """
    x = block.sublayers[0].forward(x, cached_self_attention(block.self_attn, layer_cache, mask))
    return block.sublayers[1].forward(x, block.feed_forward.forward)          # (B, T_new, D)


def decoder_block_step(block, x, memory, src_mask, layer_cache, tgt_mask=None):
    """A DecoderBlock on new target positions x (B, T_new, D) only.

    layer_cache["self"] grows by T_new positions; layer_cache["cross"] is made
    from memory (B, S, D) on the first call and reused after (the encoder output
    does not change while decoding). tgt_mask (1, 1, T_new, T_cached) or None.
    """
    cross = block.cross_attn
    if "cross" not in layer_cache:
        layer_cache["cross"] = extend_cache(cross, None, memory)
    x = block.sublayers[0].forward(x, cached_self_attention(block.self_attn, layer_cache,
                                                            tgt_mask))
    x = block.sublayers[1].forward(
        x, lambda h: attention_step(cross, h, layer_cache["cross"], src_mask))
    return block.sublayers[2].forward(x, block.feed_forward.forward)          # (B, T_new, D)


# Whole models.

def gpt_step(model, ids, cache):
    """Logits (B, T_new, V) of a GPT for NEW tokens ids (B, T_new) only (ids checked)."""
    past, T_new = cache.length, ids.shape[1]
    x = append_positions(model.pos, model.embed.lookup(ids), past)           # (B, T_new, D)
    mask = incremental_causal_mask(past, T_new)                               # or None
    for i, layer in enumerate(model.layers):
        x = encoder_block_step(layer, x, cache.layer(i), mask)                # (B, T_new, D)
    if model.norm is not None:
        x = model.norm.forward(x)
    cache.length = past + T_new
    return model.output_projection.forward(x)                                 # (B, T_new, V)


def transformer_step(model, memory, src_mask, tgt, cache):
    """Decoder output (B, T_new, D) of a Transformer for NEW target ids tgt (B, T_new)
    only (ids checked), given the encoder output memory (B, S, D)."""
    past, T_new = cache.length, tgt.shape[1]
    y = append_positions(model.tgt_pos, model.tgt_embed.lookup(tgt), past)    # (B, T_new, D)
    mask = incremental_causal_mask(past, T_new)                               # or None
    decoder = model.decoder
    for i, layer in enumerate(decoder.layers):
        y = decoder_block_step(layer, y, memory, src_mask, cache.layer(i), mask)
    cache.length = past + T_new
    return decoder.norm.forward(y) if decoder.norm is not None else y        # (B, T_new, D)


# Positions and masks of the new tokens.

def append_positions(pos, x, offset):
    """x + PE[offset : offset + T_new]: sinusoidal positions for tokens fed incrementally.

    pos: a PositionalEncoding (its table `pe` is (max_len, D)); x (B, T_new, D).
    No dropout: incremental decoding is inference only.
    """
    T_new = x.shape[1]
    if offset + T_new > pos.max_len:
        raise InputError(message("tokens", f"at most max_len={pos.max_len} positions in all",
                                 f"position {offset + T_new - 1} (0-based)"))
    return x + pos.pe[offset:offset + T_new].astype(x.dtype, copy=False)      # (B, T_new, D)


def incremental_causal_mask(past, T_new):
    """(1, 1, T_new, past + T_new) mask: new token i (position past + i) sees keys <= it.

    None when T_new == 1: the one new token may see every cached position.
    """
    if T_new == 1:
        return None
    q_pos = past + xp.arange(T_new)[:, None]                                  # (T_new, 1)
    k_pos = xp.arange(past + T_new)[None, :]                                  # (1, past + T_new)
    return (k_pos <= q_pos)[None, None]                                       # (1, 1, T_new, Tk)


def kv_cache_bytes(config, batch_size, seq_len, dtype="float32", src_len=None):
    """Bytes of the decoder's KV cache for `batch_size` rows after `seq_len` fed tokens.

    Per decoder layer, position and row, MHA keeps K and V (2 D numbers) and MLA
    keeps the latent c (L numbers, L = config.latent_dim or D // 4). In all:

        self-attention   N * B * T * (2 D | L)                 (T = seq_len)
        cross-attention  N * B * S * (2 D | L)                 (S = src_len, encoder-decoder)

    times the itemsize of `dtype`. Works for a TransformerConfig (N =
    num_decoder_layers; src_len defaults to seq_len) and a GPTConfig (N =
    num_layers; no cross-attention). Returns {"mha": bytes, "mla": bytes}
    whatever `config.attention` is, so the two can be compared.
    """
    check_positive_int(batch_size, "batch_size")
    check_positive_int(seq_len, "seq_len")
    encoder_decoder = hasattr(config, "num_decoder_layers")
    N = config.num_decoder_layers if encoder_decoder else config.num_layers
    S = 0
    if encoder_decoder:
        S = seq_len if src_len is None else src_len
        check_positive_int(S, "src_len")
    D = config.d_model
    L = config.latent_dim if config.latent_dim is not None else max(1, D // 4)
    positions = N * batch_size * (seq_len + S)
    itemsize = xp.dtype(dtype).itemsize
    return {"mha": positions * 2 * D * itemsize, "mla": positions * L * itemsize}
