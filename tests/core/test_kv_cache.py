"""The KV cache: cached attention equals full attention, and its size matches the formula.

MHA caches K and V (2 D numbers per position and layer), MLA only its latent c (L numbers).
"""

import numpy as np
import pytest

from numpy_transformer.backend import default_dtype, xp
from numpy_transformer.decoding import beam_search, greedy_decode, sample
from numpy_transformer.kv_cache import AttentionCache, KVCache, kv_cache_bytes
from numpy_transformer.layers.attention import MultiHeadAttention
from numpy_transformer.layers.latent_attention import MultiHeadLatentAttention
from numpy_transformer.masks import make_causal_mask, make_padding_mask
from numpy_transformer.models import GPT, GPTConfig, TransformerConfig, build_transformer
from numpy_transformer.gradcheck import perturb

PAD = 0
VARIANTS = [(a, n) for a in ("mha", "mla") for n in (False, True)]
VARIANT_IDS = [f"{a}-{'pre' if n else 'post'}-norm" for a, n in VARIANTS]


def transformer(attention="mha", norm_first=False):
    config = TransformerConfig(src_vocab_size=13, tgt_vocab_size=11, d_model=16, num_heads=2,
                               d_ff=24, num_encoder_layers=2, num_decoder_layers=2, dropout=0.1,
                               max_len=24, norm_first=norm_first, attention=attention,
                               latent_dim=6, seed=3)
    return perturb(build_transformer(config), np.random.default_rng(1))   # random biases too


def gpt(attention="mha", norm_first=True):
    config = GPTConfig(vocab_size=17, d_model=16, num_heads=2, d_ff=24, num_layers=2,
                       dropout=0.1, max_len=20, norm_first=norm_first, attention=attention,
                       latent_dim=6, seed=4)
    return perturb(GPT(config), np.random.default_rng(2))


def source(B=3, S=7, V=13, seed=0):
    src = np.random.default_rng(seed).integers(3, V, (B, S))
    src[1, 4:] = PAD                                       # a padded row
    return xp.asarray(src)                                 # on the device, as batches are


# Cached attention computes the same numbers as attention over the whole sequence.

@pytest.mark.parametrize("attention", ["mha", "mla"])
def test_attention_cache_entries_and_cached_forward(float64, attention):
    """Token by token through the layer's own forward with a cache = one causal forward;
    cross-attention over a cache built once = forward over memory. MLA caches only c (B, T, L)."""
    rng = np.random.default_rng(1)
    if attention == "mha":
        layer = perturb(MultiHeadAttention(8, 2, rng=rng), rng)
    else:
        layer = perturb(MultiHeadLatentAttention(8, 2, 3, bias=True, rng=rng), rng)
    x, mem = xp.asarray(rng.normal(size=(2, 5, 8))), xp.asarray(rng.normal(size=(2, 4, 8)))
    full = layer.forward(x, x, x, make_causal_mask(5))
    cache, rows = AttentionCache(grows=True), []
    for t in range(5):
        h = x[:, t:t + 1]
        rows.append(layer.forward(h, h, h, cache=cache))   # the new token sees every cached one
    np.testing.assert_allclose(np.concatenate(rows, axis=1), full, rtol=0, atol=1e-12)
    shapes = {name: a.shape for name, a in cache.entries.items()}
    assert shapes == ({"c": (2, 5, 3)} if attention == "mla" else {"k": (2, 5, 8), "v": (2, 5, 8)})
    pad = xp.asarray([True, True, False, True])[None, None, None, :]
    cross = AttentionCache(grows=False)
    for part in (x[:, :2], x[:, 2:]):                      # made from memory once, then reused
        np.testing.assert_allclose(layer.forward(part, mem, mem, pad, cache=cross),
                                   layer.forward(part, mem, mem, pad), rtol=0, atol=1e-12)
    assert {name: a.shape[1] for name, a in cross.entries.items()} == dict.fromkeys(shapes, 4)


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("float64", 1e-12)])
@pytest.mark.parametrize("attention,norm_first", VARIANTS, ids=VARIANT_IDS)
def test_cached_transformer_logits_equal_uncached(attention, norm_first, dtype, tol):
    with default_dtype(dtype):
        model = transformer(attention, norm_first).eval()
    src, tgt = source(), xp.asarray(np.random.default_rng(5).integers(1, 11, (3, 8)))
    src_mask = make_padding_mask(src, PAD)
    memory = model.encode(src, src_mask)
    full = model.project(model.decode(memory, src_mask, tgt, make_causal_mask(8)))   # (B, T, V)
    cache = KVCache()
    chunks = [tgt[:, :3]] + [tgt[:, t:t + 1] for t in range(3, 8)]   # a prefill, then steps
    steps = np.concatenate([model.project(model.decode(memory, src_mask, c, cache=cache))
                            for c in chunks], axis=1)
    assert steps.dtype == np.dtype(dtype) and cache.length == 8
    np.testing.assert_allclose(steps, full, rtol=0, atol=tol * np.abs(full).max())


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("float64", 1e-12)])
@pytest.mark.parametrize("attention,norm_first", VARIANTS, ids=VARIANT_IDS)
def test_cached_gpt_logits_equal_uncached(attention, norm_first, dtype, tol):
    with default_dtype(dtype):
        model = gpt(attention, norm_first).eval()
    ids = xp.asarray(np.random.default_rng(6).integers(1, 17, (2, 9)))
    full = model.forward(ids)
    cache = KVCache()
    steps = np.concatenate([model.forward(ids[:, :4], cache=cache)]
                           + [model.forward(ids[:, t:t + 1], cache=cache)
                              for t in range(4, 9)], axis=1)
    np.testing.assert_allclose(steps, full, rtol=0, atol=tol * np.abs(full).max())


# Cache sizes: the formula against the arrays a live cache holds.

@pytest.mark.parametrize("attention", ["mha", "mla"])
def test_kv_cache_bytes_match_live_caches(attention):
    model, src = transformer(attention), source(B=3, S=7)
    cache = KVCache()
    out = greedy_decode(model, src, max_len=9, cache=cache)
    expected = kv_cache_bytes(model.config, 3, cache.length, "float32", src_len=7)
    assert cache.length == out.shape[1] and cache.nbytes()["total"] == expected[attention]
    cache = KVCache()
    beam_search(model, src, beam_size=2, max_len=9, length_penalty=0.0, cache=cache)
    expected = kv_cache_bytes(model.config, 3 * 2, cache.length, src_len=7)
    assert cache.nbytes()["total"] == expected[attention]
    lm, cache = gpt(attention), KVCache()
    sample(lm, xp.asarray([[5, 6, 7]]), 8, rng=np.random.default_rng(0), cache=cache)
    assert cache.length == 10 and cache.nbytes()["cross"] == 0
    assert cache.nbytes()["total"] == kv_cache_bytes(lm.config, 1, 10)[attention]


def test_kv_cache_bytes_at_the_paper_base_configuration():
    """D = 512, 6 decoder layers, 8 heads, L = 512 // 4 = 128; batch 32, 128 target and
    128 source positions in float32: MHA keeps 2 D = 1024 numbers per position and
    layer, MLA 128, so MLA's cache is 8x smaller."""
    config = TransformerConfig(37000, 37000)
    sizes = kv_cache_bytes(config, batch_size=32, seq_len=128, dtype="float32", src_len=128)
    positions = 6 * 32 * (128 + 128)
    assert sizes == {"mha": positions * 1024 * 4, "mla": positions * 128 * 4}
    assert sizes["mha"] == 201_326_592 and sizes["mla"] == 25_165_824
    print(f"KV cache, base config, B=32, T=S=128, float32: MHA {sizes['mha'] / 2**20:.0f} MiB, "
          f"MLA {sizes['mla'] / 2**20:.0f} MiB")
    gpt_sizes = kv_cache_bytes(GPTConfig(100, d_model=512, num_layers=6), 1, 1024)
    assert gpt_sizes["mha"] == 8 * gpt_sizes["mla"] == 6 * 1024 * 1024 * 4
