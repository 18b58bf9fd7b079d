"""Corpus BLEU: hand-computed cases, clipping, brevity penalty, and sacrebleu when present."""

import math

import numpy as np
import pytest

from numpy_transformer.data import bleu_statistics, corpus_bleu

from doors import raises_naming


def toks(text):
    return text.split()


def test_perfect_translation_scores_100():
    hyp = [toks("a man rides a horse"), toks("two dogs play in the snow")]
    assert corpus_bleu(hyp, hyp) == pytest.approx(100.0)


def test_hand_computed_precisions():
    # the cat sat on the mat today  vs  the cat sat on the mat
    # p1 = 6/7, p2 = 5/6, p3 = 4/5, p4 = 3/4; c = 7 > r = 6 so BP = 1.
    hyp, ref = toks("the cat sat on the mat today"), toks("the cat sat on the mat")
    matches, totals, c, r = bleu_statistics([hyp], [ref])
    assert (matches, totals, c, r) == ([6, 5, 4, 3], [7, 6, 5, 4], 7, 6)
    assert corpus_bleu([hyp], [ref]) == pytest.approx(100 * (3 / 7) ** 0.25)


def test_brevity_penalty():
    # All n-grams match but the hypothesis is short: BP = exp(1 - 6/4).
    score = corpus_bleu([toks("the cat sat on")], [toks("the cat sat on the mat")])
    assert score == pytest.approx(100 * math.exp(1 - 6 / 4))


def test_clipping_papineni_example():
    # Papineni et al. (2002): "the" x7 against a reference holding "the" twice: p1 = 2/7.
    matches, totals, _, _ = bleu_statistics([["the"] * 7], [toks("the cat is on the mat")])
    assert matches[0] == 2 and totals[0] == 7
    assert corpus_bleu([["the"] * 7], [toks("the cat is on the mat")]) == 0.0   # no bigram match


def test_multiple_references_clip_to_the_best_and_pick_closest_length():
    refs = [[toks("the cat"), toks("the the dog")]]
    matches, totals, c, r = bleu_statistics([toks("the the the")], refs)
    assert matches[0] == 2 and totals[0] == 3 and r == 3
    # hyp length 5; refs of lengths 4 and 6 are equally close: the shorter one counts.
    _, _, c, r = bleu_statistics([toks("a b c d e")], [[toks("a b c d"), toks("a b c d e f")]])
    assert (c, r) == (5, 4)


def test_corpus_level_not_an_average_of_sentences():
    # The short sentence alone has no 4-gram (its BLEU is 0), yet the corpus scores 100.
    hyp = [toks("a b c d"), toks("x y")]
    assert corpus_bleu(hyp[1:], hyp[1:]) == 0.0
    assert corpus_bleu(hyp, hyp) == pytest.approx(100.0)


def test_token_ids_work_like_words():
    assert corpus_bleu([[5, 6, 7, 8, 9]], [[5, 6, 7, 8, 9]]) == pytest.approx(100.0)
    assert corpus_bleu([[]], [[1, 2]]) == 0.0


def test_bad_input():
    with raises_naming(ValueError, "references", "2", "1"):
        corpus_bleu([["a"], ["b"]], [["a"]])
    with raises_naming(ValueError, "hypotheses"):
        corpus_bleu([], [])
    with raises_naming(TypeError, "hypotheses[0]", "str"):
        corpus_bleu(["a b c"], [["a", "b", "c"]])
    with raises_naming(TypeError, "references[0]", "str"):
        corpus_bleu([["a"]], ["a"])


def _random_corpus(rng, n, vocab=6):
    words = [f"w{i}" for i in range(vocab)]

    def sentence():
        return [words[i] for i in rng.integers(0, vocab, size=rng.integers(3, 15))]

    return [sentence() for _ in range(n)], [sentence() for _ in range(n)], \
        [sentence() for _ in range(n)]


def test_matches_sacrebleu():
    sacrebleu = pytest.importorskip("sacrebleu")
    rng = np.random.default_rng(0)
    for _ in range(5):
        hyps, refs, refs2 = _random_corpus(rng, 40)
        joined = [" ".join(h) for h in hyps]
        expected = sacrebleu.corpus_bleu(joined, [[" ".join(r) for r in refs]],
                                         tokenize="none", smooth_method="none").score
        assert corpus_bleu(hyps, refs) == pytest.approx(expected, abs=1e-9)
        expected = sacrebleu.corpus_bleu(joined, [[" ".join(r) for r in refs],
                                                  [" ".join(r) for r in refs2]],
                                         tokenize="none", smooth_method="none").score
        assert corpus_bleu(hyps, [[a, b] for a, b in zip(refs, refs2)]) == \
            pytest.approx(expected, abs=1e-9)
    short = sacrebleu.corpus_bleu(["a b"], [["a b c d e"]], tokenize="none", smooth_method="none")
    assert corpus_bleu([toks("a b")], [toks("a b c d e")]) == short.score == 0.0


def _text_corpus():
    """Reference lines with punctuation, numbers and entities, and damaged copies of them."""
    import random
    from pathlib import Path
    import numpy_transformer
    root = Path(numpy_transformer.__file__).parent
    lines = [line.strip() for path in sorted(root.rglob("*.py"))
             for line in path.read_text().splitlines() if len(line.split()) > 3][:800]
    rng = random.Random(0)
    extra = ["a", "the", "dog.", "(big)", "3.5", "1,000", "e-mail", "&amp;", "don't", '"hi"']
    hyps = [" ".join([w for w in line.split() if rng.random() > 0.2]
                     + ([rng.choice(extra)] if rng.random() < 0.3 else [])) for line in lines]
    return hyps, lines


@pytest.mark.parametrize("lowercase", [False, True])
def test_text_bleu_equals_sacrebleu_on_text(lowercase):
    sacrebleu = pytest.importorskip("sacrebleu")
    from numpy_transformer.data.bleu import text_bleu
    hyps, refs = _text_corpus()
    ours = text_bleu(hyps, refs, lowercase=lowercase, use_sacrebleu=False)
    theirs = sacrebleu.corpus_bleu(hyps, [refs], lowercase=lowercase).score
    assert 10 < ours < 90 and ours == pytest.approx(theirs, abs=1e-9)
    for h, r in ((["a x b y c"], ["a b c d e"]), (["x y"], ["a b"]), (["a b c"], ["a b c"])):
        assert text_bleu(h, r, use_sacrebleu=False) == pytest.approx(
            sacrebleu.corpus_bleu(h, [r]).score, abs=1e-9)


@pytest.mark.parametrize("tokenize", ["13a", "none"])
def test_text_bleu_tokenize_option_equals_sacrebleu(tokenize):
    sacrebleu = pytest.importorskip("sacrebleu")
    from numpy_transformer.data.bleu import text_bleu
    hyps, refs = _text_corpus()
    ours = text_bleu(hyps, refs, tokenize=tokenize, use_sacrebleu=False)
    assert ours == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs], tokenize=tokenize).score,
                                 abs=1e-9)
    assert text_bleu(hyps, refs, tokenize=tokenize) == pytest.approx(ours, abs=1e-9)


def test_tokenize_none_splits_at_whitespace_only():
    from numpy_transformer.data.bleu import text_bleu
    refs = ["a man &apos;s dog runs ."]
    assert text_bleu(["a man &apos;s dog runs ."], refs, tokenize="none",
                     use_sacrebleu=False) == pytest.approx(100.0)
    # 13a splits "&apos;s" and "." off: the same output against "runs." differs only there
    assert text_bleu(["a man &apos;s dog runs."], refs, tokenize="none", use_sacrebleu=False) \
        < text_bleu(["a man &apos;s dog runs."], refs, tokenize="13a", use_sacrebleu=False)
    with pytest.raises(Exception, match="tokenize"):
        text_bleu(["a"], ["a"], tokenize="intl")
