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
"""

from .backend import xp
from .checks import check_positive_int, message
from .errors import InputError


class KVCache:
    """Per-layer attention caches of one incremental decoding run (inference only).

    layers[i]  a dict for block i: {"self": {name: array}, "cross": {name: array}};
               "cross" only in encoder-decoder models. Arrays are (B, T_cached, .)
               (MHA: "k", "v" (B, t, D); MLA: "c" (B, t, L)).
    length     positions already fed to the decoder: the next token's position, i.e.
               the row of the positional table it gets.
    Grown by the models' `decode_incremental` / `forward_incremental`; start empty.
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
