"""Sampling from a decoder-only language model (GPT): random draws, temperature, top-k, top-p.

    sample(model, prompt, 50)                      ids in, ids out (the prompt included)
    generate_text(model, tok, "ROMEO:", 300)       text in, longer text out
    generate_texts(model, tok, "ROMEO:", 300, 4)   4 continuations, sampled as one batch
    stream_text(model, tok, "ROMEO:", 300)         the same text as generate_text, piece by
                                                   piece as each character is drawn
    stream_texts(model, tok, "ROMEO:", 300, 4)     generate_texts's, as (sample, piece): the
                                                   first sample as drawn, the others at the end

top_k keeps the K likeliest tokens, top_p (nucleus sampling) the smallest set of the
likeliest whose probabilities sum to at least p; given both, top-k is applied first, then
top-p to what is left (as Hugging Face's samplers do).

Sampling never draws PAD, nor the ids given in `exclude`; `generate_text` never
draws the special tokens, nor <eos> unless asked to stop there. A generation too big
for memory (num_samples rows, each with its KV cache and, unless streamed, its text)
is refused before it starts, with the estimate (`check_generation_size`).
"""

import numpy as np

from ..backend import to_numpy, xp
from ..system.sizes import available_memory, format_bytes
from ..validation import check_bool, check_ids, check_integer, message
from ..errors import InputError, InputTypeError
from ..layers.softmax import softmax
from .common import eval_mode, finite, start_cache


def _check_sample_args(model, prompt, max_new_tokens, temperature, top_k, top_p=None):
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
    if top_p is not None and (isinstance(top_p, bool) or not isinstance(top_p, (int, float))
                              or not 0 < top_p <= 1):
        raise InputError(message("top_p", "a number p with 0 < p <= 1 (1: no cut)",
                                 repr(top_p)))
    T0 = prompt.shape[1]
    if T0 > config.max_len:
        raise InputError(message("prompt", f"at most max_len={config.max_len} tokens",
                                 f"{T0} tokens (shape {tuple(prompt.shape)})"))
    if T0 + max_new_tokens - 1 > config.max_len:
        raise InputError(message("max_new_tokens", f"at most max_len - prompt length + 1 = "
                                 f"{config.max_len - T0 + 1}", max_new_tokens))


def _draw(logits, excluded, temperature, top_k, top_p, rng):
    """One token per row from softmax(logits / temperature) over the top_k logits, then over
    the top_p nucleus of those (`_nucleus`).

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
    if top_p is not None and top_p < 1:
        logits = _nucleus(logits, top_p)
    cdf = xp.cumsum(softmax(logits, axis=-1), axis=-1)                           # (B, V)
    u = xp.asarray(1.0 - rng.random((logits.shape[0], 1)), dtype=cdf.dtype)     # (B, 1)
    next_id = (cdf < u * cdf[:, -1:]).sum(axis=-1)                               # (B,)
    return xp.minimum(next_id, logits.shape[1] - 1)


def _nucleus(logits, top_p):
    """Top-p: the logits (B, V) of the smallest set of the likeliest tokens whose
    probabilities sum to >= top_p, the others -inf. A token is kept when the tokens likelier
    than it hold less than top_p; ties with the last one kept all stay (as top-k's)."""
    probs = softmax(logits, axis=-1)                                             # (B, V)
    desc = xp.sort(probs, axis=-1)[:, ::-1]                                      # (B, V)
    before = xp.cumsum(desc, axis=-1) - desc          # the mass of the likelier ones
    kept = (before < top_p).sum(axis=-1)                                         # (B,) >= 1
    smallest = desc[xp.arange(desc.shape[0]), kept - 1][:, None]                 # (B, 1)
    return xp.where(probs < smallest, -xp.inf, logits)


def sample(model, prompt, max_new_tokens, *, temperature=1.0, top_k=None, top_p=None,
           rng=None, use_cache=True, eos_id=None, cache=None, exclude=()):
    """Continue prompt (B, T0) ids by max_new_tokens random draws from a GPT.

    Each step draws from softmax(logits / temperature), restricted to the top_k
    largest logits when top_k is given (top_k=1 is greedy; temperature must be
    > 0), then to the top_p nucleus when top_p is given (0 < top_p <= 1; 1 keeps
    all). PAD is never drawn, nor the ids in `exclude`. Draws come from the NumPy
    Generator `rng` (fresh, unseeded when None). With eos_id, a row that drew EOS
    is padded after it.
    Needs T0 + max_new_tokens - 1 <= max_len (the last token is never fed back).
    Returns (B, T0 + max_new_tokens) ids, the prompt included.
    """
    _check_sample_args(model, prompt, max_new_tokens, temperature, top_k, top_p)
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise InputTypeError(message("rng", "a numpy.random.Generator (np.random.default_rng("
                                     "seed)) or None", repr(rng)))
    rng = rng if rng is not None else np.random.default_rng()
    excluded = sorted({model.config.pad_id, *(int(i) for i in exclude)})
    if len(excluded) >= model.config.vocab_size:
        raise InputError(message("exclude", "some ids left to draw", f"all {len(excluded)}"))
    out = xp.asarray(prompt, dtype=xp.int64)                                     # (B, T0)
    steps = _steps(model, out, max_new_tokens, (temperature, top_k, top_p), rng, excluded,
                   start_cache(use_cache, cache), eos_id)
    return xp.concatenate([out, *(next_id[:, None] for next_id in steps)], axis=1)


def _steps(model, out, max_new_tokens, drawing, rng, excluded, cache, eos_id=None):
    """sample's loop, one step at a time: yields each step's drawn ids (B,) as they come.
    `drawing`: (temperature, top_k, top_p)."""
    pad_id, done = model.config.pad_id, xp.zeros(out.shape[0], dtype=xp.bool_)  # (B,)
    with eval_mode(model):
        for _ in range(max_new_tokens):
            if cache is None:
                logits = finite(lambda: model.forward(out)[:, -1])               # (B, V)
            else:
                logits = finite(lambda: model.forward(out[:, cache.length:],
                                                      cache=cache)[:, -1])
            next_id = _draw(logits, excluded, *drawing, rng)                     # (B,)
            if eos_id is not None:
                next_id = xp.where(done, pad_id, next_id)
                done |= next_id == eos_id
            out = xp.concatenate([out, next_id[:, None]], axis=1)                # (B, t + 1)
            yield next_id


def generate_text(model, tokenizer, prompt, max_new_tokens, *, temperature=1.0, top_k=None,
                  top_p=None, seed=0, stop_at_eos=False):
    """The prompt followed by max_new_tokens sampled tokens, as text.

    Special tokens are never drawn (padding, <bos>, <unk>), nor <eos> unless
    stop_at_eos: then the text ends at the first <eos>. The model sees at most
    max_len tokens, so a long generation slides the window: it keeps the last
    max_len // 2 tokens as the context of the next chunk.
    """
    return generate_texts(model, tokenizer, prompt, max_new_tokens, 1, temperature=temperature,
                          top_k=top_k, top_p=top_p, seed=seed, stop_at_eos=stop_at_eos)[0]


def stream_text(model, tokenizer, prompt, max_new_tokens, *, temperature=1.0, top_k=None,
                top_p=None, seed=0, stop_at_eos=False):
    """generate_text's text in pieces, as they are drawn: an iterator of str (the prompt,
    then each sampled character); "".join of it is generate_text's text. It keeps only
    the model's window, so max_new_tokens is bounded by time, not by memory. The
    arguments are checked at once, before the first piece is asked for."""
    steps = _text_steps(model, tokenizer, prompt, max_new_tokens, 1, (temperature, top_k, top_p),
                        seed, stop_at_eos, held=False)
    return _pieces(tokenizer, tokenizer.encode(prompt), steps, stop_at_eos)


def _pieces(tokenizer, ids, steps, stop_at_eos):
    from ..data.tokenizers import EOS_ID
    yield tokenizer.decode(ids)
    for (token,) in steps:
        if stop_at_eos and token == EOS_ID:
            return
        yield tokenizer.decode([token])


def generate_texts(model, tokenizer, prompt, max_new_tokens, num_samples, *, temperature=1.0,
                   top_k=None, top_p=None, seed=0, stop_at_eos=False):
    """num_samples independent continuations of one prompt, sampled together as the rows
    of one batch (B = num_samples); a list of texts, as generate_text's. The draws of all
    rows come from one generator seeded with `seed` (one number per row and step), so
    num_samples=1 gives generate_text's text."""
    texts = [""] * num_samples
    for b, piece in stream_texts(model, tokenizer, prompt, max_new_tokens, num_samples,
                                 temperature=temperature, top_k=top_k, top_p=top_p, seed=seed,
                                 stop_at_eos=stop_at_eos):
        texts[b] += piece
    return texts


def stream_texts(model, tokenizer, prompt, max_new_tokens, num_samples, *, temperature=1.0,
                 top_k=None, top_p=None, seed=0, stop_at_eos=False):
    """generate_texts's texts as (sample index, piece) pairs: the first sample's pieces as
    they are drawn (as stream_text's), then each other sample's whole text, once all are
    drawn (they are held in memory meanwhile). Joining a sample's pieces gives its text.
    The arguments are checked at once, before the first piece is asked for."""
    steps = _text_steps(model, tokenizer, prompt, max_new_tokens, num_samples,
                        (temperature, top_k, top_p), seed, stop_at_eos, held=True)
    return _sample_pieces(tokenizer, tokenizer.encode(prompt), steps, num_samples, stop_at_eos)


def _sample_pieces(tokenizer, ids, steps, num_samples, stop_at_eos):
    from ..data.tokenizers import EOS_ID
    yield 0, tokenizer.decode(ids)
    rows = [[]] + [list(ids) for _ in range(1, num_samples)]    # the first is not held
    ends = [None] * num_samples
    for tokens in steps:
        for b, token in enumerate(tokens):
            if stop_at_eos and ends[b] is None and token == EOS_ID:
                ends[b] = len(rows[b])                           # the text ends there
            if b:
                rows[b].append(token)
        if ends[0] is None:
            yield 0, tokenizer.decode([tokens[0]])
        if stop_at_eos and None not in ends:
            break
    for b in range(1, num_samples):
        yield b, tokenizer.decode(rows[b][:ends[b]])


def _text_steps(model, tokenizer, prompt, max_new_tokens, num_samples, drawing, seed,
                stop_at_eos, held):
    """Checks the arguments, then returns an iterator of each step's drawn ids (a list of
    num_samples ints). `drawing`: (temperature, top_k, top_p). The model sees at most max_len
    tokens: each chunk of draws starts from the last max_len // 2 tokens (rows share their
    length: one window)."""
    from ..data.tokenizers import BOS_ID, EOS_ID, UNK_ID
    if not isinstance(prompt, str):
        raise InputTypeError(message("prompt", "a str", type(prompt).__name__))
    ids = tokenizer.encode(prompt)
    if not ids:
        raise InputError(message("prompt", "at least one character", repr(prompt)))
    check_integer(max_new_tokens, "max_new_tokens")
    check_integer(num_samples, "num_samples")
    check_bool(stop_at_eos, "stop_at_eos")
    if seed is not None:
        check_integer(seed, "seed", minimum=0)
    _check_sample_args(model, xp.asarray([ids[-model.config.max_len:]], dtype=xp.int64), 1,
                       *drawing)
    check_generation_size(model, num_samples, max_new_tokens, held=held,
                          prompt_tokens=len(ids))
    exclude = (BOS_ID, UNK_ID) if stop_at_eos else (BOS_ID, UNK_ID, EOS_ID)
    excluded = sorted({model.config.pad_id, *exclude})
    return _windows(model, ids, max_new_tokens, num_samples, drawing,
                    np.random.default_rng(seed), excluded)


def _windows(model, ids, max_new_tokens, num_samples, drawing, rng, excluded):
    max_len, remaining = model.config.max_len, max_new_tokens
    context = [list(ids) for _ in range(num_samples)]
    while remaining > 0:
        keep = max_len // 2 or 1
        context = [row[-keep:] if len(row) > keep else row for row in context]
        n = min(remaining, max_len - len(context[0]) + 1)
        prompt = xp.asarray(context, dtype=xp.int64)                            # (B, T0)
        for next_id in _steps(model, prompt, n, drawing, rng, excluded,
                              start_cache(True, None)):
            tokens = to_numpy(next_id).tolist()
            for row, token in zip(context, tokens):
                row.append(token)
            yield tokens
        remaining -= n


# Bytes per sample besides its KV cache: logits and their float64 copies while drawing
# (4 copies of V), and per held token a list slot of its id and of its decoded symbol.
HELD_TOKEN_BYTES = 16


def check_generation_size(model, num_samples, max_new_tokens, *, held=True, prompt_tokens=0):
    """InputError naming num_samples (or max_new_tokens, when the text held per sample is
    what cannot fit) unless the generation fits in the memory available now: each of the
    num_samples rows' KV cache (2 x num_layers x max_len x d_model floats) and logits, and,
    unless streamed (held=False), its prompt_tokens + max_new_tokens tokens of text. The
    estimate is a lower bound: it never refuses what would fit."""
    check_bool(held, "held")
    c, available = model.config, available_memory()
    per_row = 4 * (2 * c.num_layers * c.max_len * c.d_model + 8 * c.d_model + 2 * c.d_ff) \
        + 4 * 8 * c.vocab_size
    text = HELD_TOKEN_BYTES * (prompt_tokens + max_new_tokens) if held else 0
    total = num_samples * (per_row + text)
    if available is None or total <= available:
        return
    if text > per_row and num_samples * per_row < available:
        most = available // num_samples // HELD_TOKEN_BYTES - prompt_tokens
        raise InputError(message("max_new_tokens", f"at most about {max(most, 0):,} here "
                                 f"({num_samples:,} sample(s) of text held in memory; "
                                 f"available: {format_bytes(available)})",
                                 f"{max_new_tokens:,}, an estimate of {format_bytes(total)}"))
    most = available // (per_row + text)
    raise InputError(message("num_samples", f"at most about {most:,} here (each sample needs "
                             f"{format_bytes(per_row + text)}; available: "
                             f"{format_bytes(available)})",
                             f"{num_samples:,}, an estimate of {format_bytes(total)}"))
