"""Corpus BLEU (Papineni et al., 2002) on lists of tokens, as a score in [0, 100].

    BLEU = BP * exp( (1/4) * sum_{n=1..4} log p_n ) * 100

p_n is the modified n-gram precision over the WHOLE corpus: each hypothesis
n-gram counts as matched at most as many times as it occurs in a reference
(the most in any one reference, when there are several), and

    p_n = sum of matched n-grams / sum of hypothesis n-grams.

BP, the brevity penalty, punishes a corpus of too-short hypotheses:

    c = total hypothesis length, r = total reference length (for each sentence
        the reference closest in length to the hypothesis, the shorter on a tie)
    BP = 1 if c > r else exp(1 - r / c)

Without smoothing, a corpus with no matched 4-gram scores 0. This matches
sacrebleu's `corpus_bleu(hyps, [refs], tokenize="none", smooth_method="none")`
on whitespace-joined tokens.

`text_bleu(hypotheses, references)` is the number to quote for text: corpus
BLEU of detokenised output strings against the reference lines as written,
tokenised by the standard mteval-v13a rules and with the usual "exp" smoothing
of n-gram orders that have no match (sacreBLEU's defaults, computed by
sacreBLEU itself when it is installed). `tokenize="none"` splits at whitespace
only: the way scores on already tokenised references (such as Multi30k's
lowercased tokenised files) are usually published.
"""

import math
import re
from collections import Counter

from ..validation import check_aligned, check_integer, message
from ..errors import InputError, InputTypeError


def ngram_counts(tokens, n):
    """Counter of the n-grams (as tuples) of a token list."""
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def _as_reference_list(reference, index):
    """One reference (a token list) or several (a list of token lists) -> list of lists."""
    if isinstance(reference, str):
        raise InputTypeError(message(f"references[{index}]", "a list of tokens (split the string "
                                "first)", "a str"))
    reference = list(reference)
    if reference and all(isinstance(r, (list, tuple)) for r in reference):
        return [list(r) for r in reference]
    return [reference]


def bleu_statistics(hypotheses, references, max_order=4):
    """The counts BLEU is made of: matches[n-1], totals[n-1], hyp_len c, ref_len r."""
    for name, value in (("hypotheses", hypotheses), ("references", references)):
        if isinstance(value, str):
            raise InputTypeError(message(name, "a list of token lists", "a str"))
    hypotheses, references = check_aligned(hypotheses, references, "hypotheses", "hypothesis")
    check_integer(max_order, "max_order")
    matches, totals = [0] * max_order, [0] * max_order
    hyp_len = ref_len = 0
    for index, (hyp, refs) in enumerate(zip(hypotheses, references)):
        if isinstance(hyp, str):
            raise InputTypeError(message(f"hypotheses[{index}]", "a list of tokens (split the string "
                                    "first)", "a str"))
        hyp, refs = list(hyp), _as_reference_list(refs, index)
        hyp_len += len(hyp)
        # The closest reference length; on a tie the shorter one (as sacrebleu and NLTK).
        ref_len += min((abs(len(r) - len(hyp)), len(r)) for r in refs)[1]
        for n in range(1, max_order + 1):
            hyp_counts = ngram_counts(hyp, n)
            max_ref_counts = Counter()
            for ref in refs:
                max_ref_counts |= ngram_counts(ref, n)        # element-wise max
            matches[n - 1] += sum((hyp_counts & max_ref_counts).values())   # clipped
            totals[n - 1] += sum(hyp_counts.values())
    return matches, totals, hyp_len, ref_len


def corpus_bleu(hypotheses, references, max_order=4):
    """Corpus BLEU-4 in [0, 100] of token lists against their references.

    hypotheses: list of token lists, e.g. [["the", "cat", "sat"], ...].
    references: one per hypothesis: a token list, or a list of token lists
                when a sentence has several references.
    Tokens may be any hashable values (strings, token ids).
    """
    matches, totals, hyp_len, ref_len = bleu_statistics(hypotheses, references, max_order)
    if hyp_len == 0 or min(matches) == 0:
        return 0.0
    log_precision = sum(math.log(m / t) for m, t in zip(matches, totals)) / max_order
    brevity_penalty = 1.0 if hyp_len > ref_len else math.exp(1.0 - ref_len / hyp_len)
    return 100.0 * brevity_penalty * math.exp(log_precision)


_13A_RULES = (
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),  # split symbols/punctuation
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),          # period, comma not after a digit
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),          # period, comma not before a digit
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),                # dash after a digit
)


def tokenize_13a(line):
    """The mteval-v13a tokenisation that BLEU scores are quoted with: HTML entities
    unescaped, punctuation split off, except periods and commas inside numbers."""
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        for entity, char in (("&quot;", '"'), ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">")):
            line = line.replace(entity, char)
    line = f" {line} "
    for pattern, replacement in _13A_RULES:
        line = pattern.sub(replacement, line)
    return line.split()


def _smoothed_bleu(matches, totals, hyp_len, ref_len):
    """BLEU with "exp" smoothing: the k-th order without a match counts 1 / (2^k total)."""
    if hyp_len == 0 or matches[0] == 0:            # not one word right: no smoothing helps
        return 0.0
    log_precision, halvings = 0.0, 1.0
    for m, total in zip(matches, totals):
        if total == 0:
            return 0.0
        if m == 0:
            halvings *= 2.0
            log_precision += math.log(1.0 / (halvings * total))
        else:
            log_precision += math.log(m / total)
    brevity_penalty = 1.0 if hyp_len > ref_len else math.exp(1.0 - ref_len / hyp_len)
    return 100.0 * brevity_penalty * math.exp(log_precision / len(matches))


TOKENIZERS = {"13a": tokenize_13a, "none": str.split}


def text_bleu(hypotheses, references, *, lowercase=False, tokenize="13a", use_sacrebleu=True):
    """Corpus BLEU of output strings against one reference string each, as sacreBLEU
    reports it (exp smoothing; `tokenize` "13a", its default, or "none": whitespace)."""
    if len(hypotheses) != len(references):
        raise InputError(message("references", f"{len(hypotheses)} lines (one per output)",
                                 len(references)))
    if tokenize not in TOKENIZERS:
        raise InputError(message("tokenize", " or ".join(map(repr, TOKENIZERS)), repr(tokenize)))
    if lowercase:
        hypotheses = [h.lower() for h in hypotheses]
        references = [r.lower() for r in references]
    if use_sacrebleu:
        try:
            import sacrebleu
        except ImportError:
            pass
        else:
            import logging
            log = logging.getLogger("sacrebleu")       # its "forgot to detokenize?" hints
            level = log.level
            log.setLevel(logging.ERROR)
            try:
                return float(sacrebleu.corpus_bleu(list(hypotheses), [list(references)],
                                                   tokenize=tokenize).score)
            finally:
                log.setLevel(level)
    split = TOKENIZERS[tokenize]
    stats = bleu_statistics([split(h) for h in hypotheses], [split(r) for r in references])
    return _smoothed_bleu(*stats)
