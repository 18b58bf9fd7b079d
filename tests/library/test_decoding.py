"""Greedy search, beam search and sampling, with and without the KV cache (test_kv_cache.py)."""

from types import SimpleNamespace

import numpy as np
import pytest

from numpy_transformer.backend import to_numpy, xp
from numpy_transformer.decoding import (KVCache, beam_search, gnmt_length_penalty, greedy_decode,
                                        sample, strip_special)
from numpy_transformer.layers.softmax import log_softmax
from numpy_transformer.models import GPT, GPTConfig, TransformerConfig, build_transformer
from numpy_transformer.gradcheck import perturb as _perturb

from doors import raises_naming

PAD, BOS, EOS = 0, 1, 2
VARIANTS = [(a, n) for a in ("mha", "mla") for n in (False, True)]
VARIANT_IDS = [f"{a}-{'pre' if n else 'post'}-norm" for a, n in VARIANTS]


def transformer(attention="mha", norm_first=False, perturb=True, **overrides):
    """A tiny model; perturb=True gives random biases and norms (they hide no bug), False
    keeps the init, whose greedy outputs (seed 5) are more varied than a perturbed one's."""
    config = TransformerConfig(**{**dict(
        src_vocab_size=13, tgt_vocab_size=11, d_model=16, num_heads=2, d_ff=24,
        num_encoder_layers=2, num_decoder_layers=2, dropout=0.1, max_len=24,
        norm_first=norm_first, attention=attention, latent_dim=6, seed=3), **overrides})
    model = build_transformer(config)
    return _perturb(model, np.random.default_rng(1)) if perturb else model


def gpt(attention="mha", norm_first=True, **overrides):
    config = GPTConfig(**{**dict(vocab_size=17, d_model=16, num_heads=2, d_ff=24, num_layers=2,
                                 dropout=0.1, max_len=20, norm_first=norm_first,
                                 attention=attention, latent_dim=6, seed=4), **overrides})
    return _perturb(GPT(config), np.random.default_rng(2))


def source(B=3, S=7, V=13, seed=0):
    src = np.random.default_rng(seed).integers(3, V, (B, S))
    src[1, 4:] = PAD                                       # a padded row
    return xp.asarray(src)                                 # on the device, as batches are


# Cached decoding gives the same numbers and the same tokens as uncached decoding.

@pytest.mark.parametrize("attention,norm_first", VARIANTS, ids=VARIANT_IDS)
def test_cached_greedy_equals_uncached(attention, norm_first):
    model, src = transformer(attention, norm_first, perturb=False, seed=5), source()
    cached = greedy_decode(model, src, max_len=12)
    np.testing.assert_array_equal(cached, greedy_decode(model, src, max_len=12, use_cache=False))
    assert cached.shape == (3, 12) and len(np.unique(cached)) >= 4   # not a trivial output
    assert model.training                                  # the mode is restored


@pytest.mark.parametrize("attention,norm_first", VARIANTS, ids=VARIANT_IDS)
def test_cached_sampling_equals_uncached(attention, norm_first):
    model, prompt = gpt(attention, norm_first), xp.asarray([[5, 6, 7], [8, 3, 3]])
    kwargs = dict(temperature=0.8, top_k=6)
    a = sample(model, prompt, 10, rng=np.random.default_rng(7), **kwargs)
    b = sample(model, prompt, 10, rng=np.random.default_rng(7), use_cache=False, **kwargs)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (2, 13) and np.array_equal(a[:, :3], prompt) and np.all(a != PAD)
    c = sample(model, prompt, 10, rng=np.random.default_rng(8), **kwargs)
    assert not np.array_equal(a, c)


# Beam search.

@pytest.mark.parametrize("attention", ["mha", "mla"])
def test_beam_size_one_is_greedy(attention):
    model, src = transformer(attention, perturb=False, seed=5), source(B=4)
    greedy = strip_special(greedy_decode(model, src, max_len=10))
    assert beam_search(model, src, beam_size=1, max_len=10) == greedy
    assert beam_search(model, src, beam_size=1, max_len=10, use_cache=False) == greedy


@pytest.mark.parametrize("attention", ["mha", "mla"])
def test_cached_beam_search_equals_uncached(attention):
    model, src = transformer(attention, norm_first=True, perturb=False, seed=5), source(B=3)
    kwargs = dict(beam_size=3, max_len=10, length_penalty=1.0)
    assert beam_search(model, src, **kwargs) == beam_search(model, src, use_cache=False, **kwargs)


def score(model, src, tokens, max_len, alpha):
    """log P(tokens (+ EOS if it ended)) / lp(|Y|) under the decoder, PAD and BOS excluded."""
    y = list(tokens) + ([EOS] if len(tokens) < max_len else [])
    tgt = xp.asarray([[BOS] + y[:-1]])
    logits = model.eval().forward(src[None], tgt)[0]                  # (T, V)
    logits[:, [PAD, BOS]] = -np.inf
    logp = log_softmax(logits)[xp.arange(len(y)), xp.asarray(y)]
    return logp.sum() / gnmt_length_penalty(len(y), alpha)


def test_beam_scores_at_least_greedy_on_a_real_model():
    model, src = transformer("mha", dropout=0.0, seed=11), source(B=4)
    greedy = strip_special(greedy_decode(model, src, max_len=8))
    beams = beam_search(model, src, beam_size=4, max_len=8, length_penalty=0.6)
    for b in range(4):
        assert score(model, src[b], beams[b], 8, 0.6) >= score(model, src[b], greedy[b], 8, 0.6)


class TableModel:
    """A stand-in encoder-decoder whose next-token probabilities are written by hand.

    encode puts src[:, 0] in memory; decode hands every position the whole prefix
    (and that number), and project looks the prefix up in `table`, or, without a
    table, ends a row with EOS after src[row, 0] tokens and otherwise gives PAD and
    BOS the largest logits (which decoding must never pick). It computes in NumPy on
    host copies and hands back arrays on the active device, as a real model does.
    """

    def __init__(self, table=None, V=6, max_len=10):
        self.table, self.V, self.training = table, V, False
        self.config = SimpleNamespace(pad_id=PAD, max_len=max_len)

    def eval(self):
        return self.train(False)

    def train(self, mode=True):
        self.training = mode
        return self

    def encode(self, src, src_mask):
        src = to_numpy(src)
        return xp.asarray(np.repeat(src[:, :1, None].astype(float), src.shape[1], axis=1))

    def decode(self, memory, src_mask, tgt, tgt_mask):
        B, T = tgt.shape
        row = np.concatenate([to_numpy(memory)[:, 0, :], to_numpy(tgt).astype(float)], axis=1)
        return xp.asarray(np.repeat(row[:, None, :], T, axis=1))                      # (B, T, 1+T)

    def probs(self, n, prefix):
        if self.table is not None:
            return self.table.get(prefix, {EOS: 1.0})
        if len(prefix) >= n:
            return {EOS: 0.9, PAD: 1.0, BOS: 0.95}
        return {PAD: 1.0, BOS: 0.95, 4 + len(prefix) % 2: 0.5, EOS: 0.01}

    def project(self, h):
        logits = np.full((h.shape[0], self.V), -30.0)
        for b, row in enumerate(to_numpy(h)[:, -1].astype(int)):
            for token, p in self.probs(row[0], tuple(row[2:])).items():
                logits[b, token] = np.log(p)
        return xp.asarray(logits[:, None, :])                                         # (B, 1, V)


def test_beam_search_beats_greedy_on_a_constructed_case():
    # Greedy takes the likelier first token a=4 and ends with P(a a EOS) = 0.072;
    # the beam keeps b=5, whose continuation is EOS with 0.9: P(b EOS) = 0.36.
    table = {(): {4: 0.5, 5: 0.4, EOS: 0.1},
             (4,): {4: 0.36, 5: 0.34, EOS: 0.3},
             (4, 4): {EOS: 0.4, 4: 0.3, 5: 0.3},
             (5,): {EOS: 0.9, 4: 0.05, 5: 0.05}}
    model, src = TableModel(table), xp.asarray([[3, 3]])
    assert strip_special(greedy_decode(model, src, use_cache=False)) == [[4, 4]]
    assert beam_search(model, src, 1, use_cache=False, length_penalty=0.0) == [[4, 4]]
    assert beam_search(model, src, 2, use_cache=False, length_penalty=0.0) == [[5]]


def test_eos_ends_rows_pads_after_and_never_predicts_pad_or_bos():
    model, src = TableModel(), xp.asarray([[3, 9], [1, 9], [5, 9]])  # rows end after 3, 1, 5
    out = greedy_decode(model, src, max_len=8, use_cache=False)
    assert out.shape == (3, 6)                            # stops when the longest row is done
    np.testing.assert_array_equal(out, [[4, 5, 4, EOS, PAD, PAD], [4, EOS, PAD, PAD, PAD, PAD],
                                        [4, 5, 4, 5, 4, EOS]])
    assert strip_special(out) == [[4, 5, 4], [4], [4, 5, 4, 5, 4]]
    assert beam_search(model, src, 3, max_len=8, use_cache=False) == strip_special(out)


def test_length_limits():
    model = TableModel(max_len=10)
    src = xp.asarray([[9, 9], [2, 9]])
    assert greedy_decode(model, src, max_len=4, use_cache=False).shape == (2, 4)
    assert greedy_decode(model, src, use_cache=False).shape == (2, 10)   # S + 10, capped
    assert [len(r) for r in beam_search(model, src, 2, max_len=4, use_cache=False)] == [4, 2]
    real = transformer()
    assert greedy_decode(real, source(S=20)).shape[1] <= 24               # capped at max_len
    with raises_naming(ValueError, "max_len", "max_len=24", "25"):
        greedy_decode(real, source(), max_len=25)
    lm = gpt()                                                           # max_len=20
    assert sample(lm, xp.full((1, 15), 5), 6, rng=np.random.default_rng(0)).shape == (1, 21)
    with raises_naming(ValueError, "max_new_tokens", "7"):
        sample(lm, xp.full((1, 15), 5), 7)
    with raises_naming(ValueError, "ids", "max_len=20", "T=21"):
        lm(xp.full((1, 21), 5), cache=KVCache())
    cache = KVCache()
    lm.forward(xp.full((1, 15), 5), cache=cache)
    with raises_naming(ValueError, "ids", "max_len=20", "15"):
        lm(xp.full((1, 6), 5), cache=cache)


# Sampling.

def test_top_k_one_is_greedy_and_top_k_restricts():
    model, prompt = gpt().eval(), xp.asarray([[5, 6], [7, 8]])
    out = sample(model, prompt, 6, top_k=1, rng=np.random.default_rng(0))
    ids = prompt
    for _ in range(6):                                        # uncached argmax by hand
        logits = model.forward(ids)[:, -1]
        logits[:, PAD] = -np.inf
        ids = np.concatenate([ids, logits.argmax(-1)[:, None]], axis=1)
    np.testing.assert_array_equal(out, ids)
    many = np.repeat(prompt[:1], 300, axis=0)
    drawn = sample(model, many, 1, top_k=3, rng=np.random.default_rng(1))[:, -1]
    logits = model.forward(prompt[:1])[0, -1]
    logits[PAD] = -np.inf
    assert set(drawn.tolist()) == set(np.argsort(logits)[-3:].tolist())


def test_sampling_stops_rows_at_eos():
    model = gpt()
    out = sample(model, xp.full((40, 1), 5), 12, rng=np.random.default_rng(3), eos_id=EOS)
    for row in out.tolist():
        if EOS in row:
            assert set(row[row.index(EOS) + 1:]) <= {PAD}
    assert any(EOS in row for row in out.tolist())


@pytest.mark.parametrize("call,error,words", [
    (lambda m, g, s: beam_search(m, s, beam_size=0), ValueError, ("beam_size", "0")),
    (lambda m, g, s: beam_search(m, s, length_penalty=-1), ValueError, ("length_penalty", "-1")),
    (lambda m, g, s: sample(g, s[:, :3], 2, temperature=0), ValueError,
     ("temperature", "top_k=1", "0")),
    (lambda m, g, s: sample(g, s[:, :3], 2, temperature=-1.0), ValueError,
     ("temperature", "-1.0")),
    (lambda m, g, s: sample(g, s[:, :3], 2, top_k=0), ValueError, ("top_k", "0")),
    (lambda m, g, s: sample(g, s[:, :3], 2, top_k=18), ValueError, ("top_k", "18")),
    (lambda m, g, s: sample(g, xp.full((1, 21), 5), 1), ValueError,
     ("prompt", "max_len=20", "21")),
    (lambda m, g, s: sample(g, s[:, :3], 0), ValueError, ("max_new_tokens", "0")),
    (lambda m, g, s: sample(m, s, 2), TypeError, ("model", "decoder-only")),
    (lambda m, g, s: greedy_decode(g, s), TypeError, ("model", "encoder-decoder")),
    (lambda m, g, s: greedy_decode(m, s, max_len=0), ValueError, ("max_len", "0")),
    (lambda m, g, s: greedy_decode(m, s, use_cache=False, cache=KVCache()), ValueError,
     ("cache", "use_cache")),
])
def test_bad_arguments_raise(call, error, words):
    with raises_naming(error, *words):
        call(transformer(), gpt(), source())


def test_a_used_cache_is_refused():
    model, cache = transformer(), KVCache()
    greedy_decode(model, source(), max_len=3, cache=cache)
    with raises_naming(ValueError, "cache", "KVCache"):
        greedy_decode(model, source(), cache=cache)


def test_decoding_checks_its_preconditions():
    from numpy_transformer.errors import InputError, InputTypeError
    from numpy_transformer.models import TransformerConfig, build_transformer
    from numpy_transformer.models.gpt import GPT, GPTConfig
    model = build_transformer(TransformerConfig(src_vocab_size=9, tgt_vocab_size=9, d_model=8,
                                                num_heads=2, d_ff=16, num_encoder_layers=1,
                                                num_decoder_layers=1, max_len=16))
    with raises_naming(InputError, "src", "2"):
        greedy_decode(model, xp.asarray([3, 4, 5]))
    for search in (greedy_decode, beam_search):          # host ids are checked before they move
        with raises_naming(InputError, "src", "[0, 9)", "40"):
            search(model, np.array([[3, 40]]))
    gpt = GPT(GPTConfig(vocab_size=9, d_model=8, num_heads=2, d_ff=16, num_layers=1,
                        max_len=16))
    with raises_naming(InputTypeError, "rng", "3"):
        sample(gpt, xp.asarray([[3]]), 2, rng=3)


def test_sampling_never_draws_padding_or_excluded_ids_even_at_tiny_temperatures():
    from numpy_transformer.models.gpt import GPT, GPTConfig
    gpt = GPT(GPTConfig(vocab_size=9, d_model=8, num_heads=2, d_ff=16, num_layers=1,
                        max_len=40))
    rng = np.random.default_rng(0)
    for temperature in (1e-300, 1e-30, 0.5, 5.0, 1e30):
        out = sample(gpt, xp.asarray([[3, 4]]), 30, temperature=temperature, rng=rng,
                     exclude=(1, 2))
        assert not np.isin(out[:, 2:], [0, 1, 2]).any(), temperature
    greedy = sample(gpt, xp.asarray([[3, 4]]), 10, temperature=1e-300, rng=rng)
    assert (greedy == sample(gpt, xp.asarray([[3, 4]]), 10, top_k=1, rng=rng)).all()
