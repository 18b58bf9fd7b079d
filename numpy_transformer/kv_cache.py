"""The KV cache: what a decoder keeps between steps so that each step feeds one new token.

Without a cache, generating token t re-runs the decoder on all t previous
tokens: O(t) work per step, O(T^2) in all, and the keys/values of the old
positions are recomputed every time although they never change (causal
attention: an old position never sees a newer one). With a cache, each
attention layer keeps what it computed for the old positions, and a step only
computes the newest position's row:

    self-attention    grows by one position per step:   (B, t, .) -> (B, t + 1, .)
    cross-attention   the encoder output never changes: computed once from memory

What a layer keeps depends on its attention (the layers' `project`):

    MHA   "k", "v":  K = h W_k, V = h W_v         2 D numbers per position and layer
    MLA   "c":       c = h W_kv_compress           L numbers per position and layer,
                     K = c W_k_decompress, V = c W_v_decompress recomputed when needed

With D = 512 and L = 128 the MLA cache is 8x smaller: that is MLA's whole point.
`kv_cache_bytes` gives these sizes from a configuration; `KVCache.nbytes()`
measures a live cache.

Decoding runs the modules' own `forward`: a model's forward takes `cache=KVCache()`,
gives the new tokens the positions after `cache.length` and hands each block its
entry `cache.layer(i)`; each block hands its attention layers their
`AttentionCache`, to which the attention appends its new positions and which returns
every position so far (`K, V = cache.append(k=K, v=V)` in layers/attention.py).
This file only holds the containers and the sizes. Inference only: no dropout,
and nothing is kept for a backward.
"""

from .backend import xp
from .validation import check_integer


class AttentionCache:
    """What one attention layer keeps between decoding steps (inference only).

    entries  {name: (B, T_cached, .)}: MHA "k", "v" (B, t, D); MLA "c" (B, t, L)
    grows    True for self-attention: every call appends the entries of its new key
             positions; False for cross-attention: made from the encoder output on the
             first call, then read as it is (the memory does not change while decoding).
    full     True when nothing is to be added: a cross-attention cache after its first call.
    """

    def __init__(self, grows=True):
        self.grows, self.entries = grows, {}

    @property
    def full(self):
        return bool(self.entries) and not self.grows

    def append(self, **new):
        """The entries of every key position, the new ones (B, T_new, .) after those kept:
        a tuple (B, t + T_new, .) in the order given, e.g. K, V = cache.append(k=K, v=V)."""
        self.entries = new if not self.entries else {
            name: xp.concatenate([self.entries[name], a], axis=1)          # (B, t + T_new, .)
            for name, a in new.items()}
        return tuple(self.entries.values())

    def reorder(self, index):
        """Keep batch rows `index` (B_new,) of every entry."""
        self.entries = {name: a[index] for name, a in self.entries.items()}

    def nbytes(self):
        return sum(int(a.nbytes) for a in self.entries.values())


class KVCache:
    """Per-layer attention caches of one incremental decoding run (inference only).

    layers[i]  the cache of block i: {"self": AttentionCache, "cross": AttentionCache};
               "cross" stays empty in decoder-only models.
    length     positions already fed to the decoder: the next token's position, i.e.
               the row of the positional table it gets.
    Filled by the models' `forward` (GPT) / `decode` (Transformer) given `cache=`; start empty.
    """

    def __init__(self):
        self.layers = []
        self.length = 0

    def layer(self, i):
        """The cache of block i (created empty on first use)."""
        while len(self.layers) <= i:
            self.layers.append({"self": AttentionCache(grows=True),
                                "cross": AttentionCache(grows=False)})
        return self.layers[i]

    def reorder(self, index):
        """Keep batch rows `index` (B_new,) of every self-attention cache (beam search).

        Cross-attention caches are left alone: beam search repeats each source
        row once per beam, so the beams of one source share identical rows.
        """
        for layer in self.layers:
            layer["self"].reorder(index)

    def nbytes(self):
        """Bytes held right now: {"self": ..., "cross": ..., "total": ...}."""
        sizes = {"self": 0, "cross": 0}
        for layer in self.layers:
            for kind, entries in layer.items():
                sizes[kind] += entries.nbytes()
        sizes["total"] = sizes["self"] + sizes["cross"]
        return sizes

    def __repr__(self):
        return (f"KVCache(layers={len(self.layers)}, length={self.length}, "
                f"bytes={self.nbytes()['total']})")


def layer_cache(cache, i):
    """Block i's entry of a KVCache, or None without one (training)."""
    return None if cache is None else cache.layer(i)


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
    check_integer(batch_size, "batch_size")
    check_integer(seq_len, "seq_len")
    encoder_decoder = hasattr(config, "num_decoder_layers")
    N = config.num_decoder_layers if encoder_decoder else config.num_layers
    S = 0
    if encoder_decoder:
        S = seq_len if src_len is None else src_len
        check_integer(S, "src_len")
    D = config.d_model
    L = config.latent_dim if config.latent_dim is not None else max(1, D // 4)
    positions = N * batch_size * (seq_len + S)
    itemsize = xp.dtype(dtype).itemsize
    return {"mha": positions * 2 * D * itemsize, "mla": positions * L * itemsize}
