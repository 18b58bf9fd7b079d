"""Sampling from a decoder-only language model (GPT): random draws, temperature, top-k.

    sample(model, prompt, 50)                      ids in, ids out (the prompt included)
    generate_text(model, tok, "ROMEO:", 300)       text in, longer text out
    generate_texts(model, tok, "ROMEO:", 300, 4)   4 continuations, sampled as one batch

Sampling never draws PAD, nor the ids given in `exclude`; `generate_text` never
draws the special tokens, nor <eos> unless asked to stop there.
"""

import numpy as np

from ..backend import to_numpy, xp
from ..validation import check_ids, check_integer, message
from ..errors import InputError, InputTypeError
from ..layers.softmax import softmax
from .common import eval_mode, start_cache


def _check_sample_args(model, prompt, max_new_tokens, temperature, top_k):
    if not hasattr(model, "forward") or hasattr(model, "encode"):
        raise InputTypeError(message("model", "a decoder-only language model (GPT)",
                                type(model).__name__))
    config = model.config
    check_ids(prompt, "prompt", config.vocab_size, ndim=2)
    check_integer(max_new_tokens, "max_new_tokens")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) \
            or not temperature > 0:
        raise InputError(message("temperature", "a number > 0 (use top_k=1 for greedy)",
                                 repr(temperature)))
    if top_k is not None:
        check_integer(top_k, "top_k")
        if top_k > config.vocab_size:
            raise InputError(message("top_k", f"at most vocab_size={config.vocab_size}", top_k))
    T0 = prompt.shape[1]
    if T0 > config.max_len:
        raise InputError(message("prompt", f"at most max_len={config.max_len} tokens",
                                 f"{T0} tokens (shape {tuple(prompt.shape)})"))
    if T0 + max_new_tokens - 1 > config.max_len:
        raise InputError(message("max_new_tokens", f"at most max_len - prompt length + 1 = "
                                 f"{config.max_len - T0 + 1}", max_new_tokens))


def _draw(logits, excluded, temperature, top_k, rng):
    """One token per row from softmax(logits / temperature) over the top_k logits.

    logits (B, V) -> ids (B,); the ids in `excluded` are never drawn. The row max
    is subtracted and the result kept above -700 T before dividing by the temperature
    (never multiplying by 1 / T, which overflows below T ~ 5.6e-309): the logits end in
    [-700, 0] (exp(-700) ~ 1e-304) with the best token at 0, so any positive temperature,
    however tiny, tends to greedy instead of giving 0 * inf = NaN.
    The uniform numbers come from the CPU generator `rng` (one per row and step),
    so a seed gives the same text on NumPy and CuPy: the token is the first index
    whose cumulative probability reaches u in (0, 1].
    """
    T = float(temperature)
    logits = logits.astype(xp.float64)                                 # a copy, (B, V)
    logits[:, list(excluded)] = -xp.inf                                           # (B, V)
    shifted = logits - logits.max(axis=-1, keepdims=True)                         # <= 0
    logits = xp.maximum(shifted, -700.0 * T) / T           # in [-700, 0]: exp(-700) ~ 0
    logits[:, list(excluded)] = -xp.inf
    if top_k is not None:
        kth = xp.sort(logits, axis=-1)[:, -top_k][:, None]                       # (B, 1)
        logits = xp.where(logits < kth, -xp.inf, logits)     # ties with the k-th all stay
    cdf = xp.cumsum(softmax(logits, axis=-1), axis=-1)                           # (B, V)
    u = xp.asarray(1.0 - rng.random((logits.shape[0], 1)), dtype=cdf.dtype)     # (B, 1)
    next_id = (cdf < u * cdf[:, -1:]).sum(axis=-1)                               # (B,)
    return xp.minimum(next_id, logits.shape[1] - 1)


def sample(model, prompt, max_new_tokens, *, temperature=1.0, top_k=None, rng=None,
           use_cache=True, eos_id=None, cache=None, exclude=()):
    """Continue prompt (B, T0) ids by max_new_tokens random draws from a GPT.

    Each step draws from softmax(logits / temperature), restricted to the top_k
    largest logits when top_k is given (top_k=1 is greedy; temperature must be
    > 0). PAD is never drawn, nor the ids in `exclude`. Draws come from the NumPy
    Generator `rng` (fresh, unseeded when None). With eos_id, a row that drew EOS
    is padded after it.
    Needs T0 + max_new_tokens - 1 <= max_len (the last token is never fed back).
    Returns (B, T0 + max_new_tokens) ids, the prompt included.
    """
    _check_sample_args(model, prompt, max_new_tokens, temperature, top_k)
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise InputTypeError(message("rng", "a numpy.random.Generator (np.random.default_rng("
                                     "seed)) or None", repr(rng)))
    rng = rng if rng is not None else np.random.default_rng()
    pad_id, B = model.config.pad_id, prompt.shape[0]
    excluded = sorted({pad_id, *(int(i) for i in exclude)})
    if len(excluded) >= model.config.vocab_size:
        raise InputError(message("exclude", "some ids left to draw", f"all {len(excluded)}"))
    out = xp.asarray(prompt, dtype=xp.int64)                                     # (B, T0)
    done = xp.zeros(B, dtype=xp.bool_)                                           # (B,)
    with eval_mode(model):
        cache = start_cache(use_cache, cache)
        for _ in range(max_new_tokens):
            if cache is None:
                logits = model.forward(out)[:, -1]                               # (B, V)
            else:
                logits = model.forward(out[:, cache.length:], cache=cache)[:, -1]
            next_id = _draw(logits, excluded, temperature, top_k, rng)           # (B,)
            if eos_id is not None:
                next_id = xp.where(done, pad_id, next_id)
                done |= next_id == eos_id
            out = xp.concatenate([out, next_id[:, None]], axis=1)                # (B, t + 1)
    return out


def generate_text(model, tokenizer, prompt, max_new_tokens, *, temperature=1.0, top_k=None,
                  seed=0, stop_at_eos=False):
    """The prompt followed by max_new_tokens sampled tokens, as text.

    Special tokens are never drawn (padding, <bos>, <unk>), nor <eos> unless
    stop_at_eos: then the text ends at the first <eos>. The model sees at most
    max_len tokens, so a long generation slides the window: it keeps the last
    max_len // 2 tokens as the context of the next chunk.
    """
    return generate_texts(model, tokenizer, prompt, max_new_tokens, 1, temperature=temperature,
                          top_k=top_k, seed=seed, stop_at_eos=stop_at_eos)[0]


def generate_texts(model, tokenizer, prompt, max_new_tokens, num_samples, *, temperature=1.0,
                   top_k=None, seed=0, stop_at_eos=False):
    """num_samples independent continuations of one prompt, sampled together as the rows
    of one batch (B = num_samples); a list of texts, as generate_text's. The draws of all
    rows come from one generator seeded with `seed` (one number per row and step), so
    num_samples=1 gives generate_text's text."""
    from ..data.tokenizers import BOS_ID, EOS_ID, UNK_ID
    ids = tokenizer.encode(prompt)
    if not ids:
        raise InputError(message("prompt", "at least one character", repr(prompt)))
    check_integer(max_new_tokens, "max_new_tokens")
    check_integer(num_samples, "num_samples")
    rng, max_len = np.random.default_rng(seed), model.config.max_len
    rows, ends = [list(ids) for _ in range(num_samples)], [None] * num_samples
    exclude = (BOS_ID, UNK_ID) if stop_at_eos else (BOS_ID, UNK_ID, EOS_ID)
    remaining = max_new_tokens
    while remaining > 0 and None in ends:
        keep = max_len // 2 or 1                  # rows share their length: one window
        context = [row[-keep:] if len(row) > keep else row for row in rows]
        n = min(remaining, max_len - len(context[0]) + 1)
        seq = sample(model, xp.asarray(context, dtype=xp.int64), n, temperature=temperature,
                     top_k=top_k, rng=rng, exclude=exclude)                # (B, T0 + n)
        for b, tokens in enumerate(to_numpy(seq[:, len(context[0]):]).tolist()):
            if stop_at_eos and ends[b] is None and EOS_ID in tokens:
                ends[b] = len(rows[b]) + tokens.index(EOS_ID)      # the text ends there
            rows[b] += tokens
        remaining -= n
    return [tokenizer.decode(row[:end]) for row, end in zip(rows, ends)]
