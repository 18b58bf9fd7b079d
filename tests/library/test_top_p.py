"""Top-p (nucleus) sampling beside top-k: the smallest set of the likeliest tokens whose
probabilities reach p; p = 1 is plain sampling; with top-k, top-k first, then top-p on what
is left (Hugging Face's order); 0 < p <= 1, checked."""

import numpy as np
import pytest

from numpy_transformer.backend import to_numpy, xp
from numpy_transformer.decoding import generate_texts, sample, stream_texts
from numpy_transformer.decoding.sampling import _draw, _nucleus
from numpy_transformer.errors import InputError
from numpy_transformer.models import GPT, GPTConfig

from doors import raises_naming

PROBS = [0.5, 0.3, 0.15, 0.05]


def kept(top_p, probs=PROBS):
    logits = xp.asarray(np.log([probs, probs[::-1]]))                  # (2, V): two rows
    return [np.flatnonzero(np.isfinite(to_numpy(row))).tolist() for row in _nucleus(logits, top_p)]


@pytest.mark.parametrize("top_p, tokens", [
    (0.4, [0]), (0.5, [0]), (0.79, [0, 1]), (0.85, [0, 1, 2]), (0.96, [0, 1, 2, 3]),
    (1.0, [0, 1, 2, 3])])
def test_top_p_keeps_the_smallest_set_of_the_likeliest_that_reaches_p(top_p, tokens):
    first, reversed_row = kept(top_p)
    assert first == tokens
    assert reversed_row == sorted(3 - t for t in tokens)          # by probability, not by id


def test_ties_with_the_last_token_kept_all_stay():
    assert kept(0.3, [0.25, 0.25, 0.25, 0.25])[0] == [0, 1, 2, 3]


def draws(top_k, top_p, rows=400, probs=(0.4, 0.3, 0.2, 0.1)):
    logits = xp.asarray(np.tile(np.log(probs), (rows, 1)))
    return set(to_numpy(_draw(logits, [], 1.0, top_k, top_p, np.random.default_rng(0))).tolist())


def test_top_k_comes_first_then_top_p():
    assert draws(None, 0.5) == {0, 1}          # 0.4 alone is short of 0.5
    assert draws(2, None) == {0, 1}
    # top-k 2 leaves 0.4 / 0.7 = 0.57 and 0.43: top-p 0.5 keeps the first alone (the other
    # order, top-p first, would keep both)
    assert draws(2, 0.5) == {0}


def gpt():
    return GPT(GPTConfig(vocab_size=9, d_model=8, num_heads=2, d_ff=12, num_layers=1,
                         max_len=16, dropout=0.0, seed=1))


def test_top_p_one_is_plain_sampling():
    model = gpt()
    prompt = xp.asarray([[3, 4], [5, 6]])
    plain = sample(model, prompt, 10, rng=np.random.default_rng(7))
    assert np.array_equal(to_numpy(sample(model, prompt, 10, top_p=1.0,
                                          rng=np.random.default_rng(7))), to_numpy(plain))
    assert np.array_equal(to_numpy(sample(model, prompt, 10, top_p=1,
                                          rng=np.random.default_rng(7))), to_numpy(plain))


@pytest.mark.parametrize("top_p", [0, 0.0, -0.5, 1.5, float("nan"), True, "0.9"])
def test_top_p_outside_0_1_is_refused_naming_it(top_p):
    with raises_naming(InputError, "top_p", "0 < p <= 1"):
        sample(gpt(), xp.asarray([[3]]), 2, top_p=top_p)


def test_the_first_of_several_samples_streams_and_all_are_generate_texts():
    from numpy_transformer.data.tokenizers import CharTokenizer
    tok = CharTokenizer().fit(["abcab"])
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, d_model=8, num_heads=2, d_ff=12,
                          num_layers=1, max_len=16, dropout=0.0, seed=1))
    pieces = stream_texts(model, tok, "ab", 40, 3, top_p=0.9, seed=2)
    first = [next(pieces) for _ in range(5)]          # drawn one by one, before the others
    assert [i for i, _ in first] == [0] * 5
    rest = list(pieces)
    texts = [""] * 3
    for i, piece in first + rest:
        texts[i] += piece
    assert texts == generate_texts(model, tok, "ab", 40, 3, top_p=0.9, seed=2)
    assert [i for i, _ in rest[-2:]] == [1, 2] and all(len(t) == 42 for t in texts)
