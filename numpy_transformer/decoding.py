"""Turning a trained model into output sequences: greedy search, beam search, sampling.

Every method repeats one step: run the decoder on the tokens so far, take the
logits of the last position, pick (or draw) the next token, append it. With
`use_cache=True` (the default) a step feeds only the newest token and reads the
older positions' keys and values from a KVCache (see kv_cache.py): each step
costs O(t) instead of O(t^2), and the tokens are the same as without the cache.

    greedy_decode(model, src)          encoder-decoder Transformer: most likely token
    beam_search(model, src, 4)         encoder-decoder Transformer: K best prefixes
    sample(model, prompt, 50)          GPT: random draws with temperature and top-k
    generate_text(model, tok, "ROMEO:", 300)    GPT: text in, longer text out

PAD and BOS are never predicted by greedy and beam search (their logits are set
to -inf); sampling never draws PAD, nor the ids given in `exclude`.
"""

from contextlib import contextmanager

import numpy as np

from .backend import to_numpy, xp
from .checks import check_ids, check_positive_int, message
from .kv_cache import KVCache, kv_cache_bytes  # noqa: F401  (re-exported)
from .layers.softmax import log_softmax, softmax
from .masks import make_causal_mask, make_padding_mask
from .errors import InputError, InputTypeError
from .sizes import check_fits


@contextmanager
def _eval_mode(model):
    """Dropout off while decoding; the model's train/eval mode restored after."""
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


def _start_cache(use_cache, cache):
    """The KVCache to fill: the caller's (to inspect it afterwards), a new one, or None."""
    if cache is None:
        return KVCache() if use_cache else None
    if not use_cache:
        raise InputError(message("cache", "None when use_cache=False", "a KVCache"))
    if cache.length or cache.layers:
        raise InputError(message("cache", "an empty KVCache", repr(cache)))
    return cache


def _decode_steps(model, src, max_len):
    """How many tokens to generate at most: max_len, default S + 10 capped by the model."""
    if not hasattr(model, "encode"):
        raise InputTypeError(message("model", "an encoder-decoder Transformer", type(model).__name__))
    vocab = getattr(model.config, "src_vocab_size", None)
    if vocab is not None:
        check_ids(src, "src", vocab, ndim=2)
    elif getattr(src, "ndim", None) != 2:
        raise InputError(message("src", "2 dimensions (B, S)", f"shape {tuple(src.shape)}"))
    limit = model.config.max_len
    if max_len is None:
        return min(src.shape[1] + 10, limit)
    check_positive_int(max_len, "max_len")
    if max_len > limit:
        raise InputError(message("max_len", f"at most the model's max_len={limit}", max_len))
    return max_len


def _next_logits(model, memory, src_mask, out, cache):
    """Logits (B, V) of the token after out (B, t), for an encoder-decoder model.

    Without a cache the decoder re-reads the whole prefix; with one it is fed
    only the tokens the cache has not seen yet (one per step).
    """
    if cache is None:
        h = model.decode(memory, src_mask, out, make_causal_mask(out.shape[1]))  # (B, t, D)
    else:
        h = model.decode_incremental(memory, src_mask, out[:, cache.length:], cache)
    return model.project(h[:, -1:])[:, 0]                                       # (B, V)


def greedy_decode(model, src, max_len=None, *, bos_id=1, eos_id=2, use_cache=True, cache=None):
    """The most likely next token at every step, until EOS or `max_len` tokens.

    src (B, S) ids -> (B, T_out) ids without BOS, T_out <= max_len; after a row's
    EOS the rest of the row is padding (config.pad_id). Stops once every row has
    its EOS. PAD and BOS are never predicted. max_len defaults to S + 10, capped
    at config.max_len. cache: an empty KVCache to fill (to measure it afterwards).
    """
    src = xp.asarray(src)                     # the ids on the model's device
    steps = _decode_steps(model, src, max_len)
    pad_id, B = model.config.pad_id, src.shape[0]
    with _eval_mode(model):
        src_mask = make_padding_mask(src, pad_id)                                # (B, 1, 1, S)
        memory = model.encode(src, src_mask)                                     # (B, S, D)
        cache = _start_cache(use_cache, cache)
        out = xp.full((B, 1), bos_id, dtype=xp.int64)                            # (B, 1)
        done = xp.zeros(B, dtype=xp.bool_)                                       # (B,)
        for _ in range(steps):
            logits = _next_logits(model, memory, src_mask, out, cache)           # (B, V)
            logits[:, [pad_id, bos_id]] = -xp.inf
            next_id = xp.where(done, pad_id, logits.argmax(axis=-1))             # (B,)
            out = xp.concatenate([out, next_id[:, None]], axis=1)                # (B, t + 1)
            done |= next_id == eos_id
            if bool(done.all()):
                break
    return out[:, 1:]


def gnmt_length_penalty(length, alpha):
    """lp(Y) = ((5 + |Y|) / 6)^alpha (Wu et al., 2016): beams compare log P(Y) / lp(Y).
    alpha = 0 compares raw log-probabilities (which favour short outputs)."""
    return ((5.0 + length) / 6.0) ** alpha


def _beam_step(logp, scores, lengths, finished, pad_id, alpha):
    """Choose the K best of the K * V one-token extensions of every source's beams.

    logp (B, K, V) next-token log-probabilities; scores (B, K) log P of each
    hypothesis; lengths (B, K) tokens generated (EOS included); finished (B, K).
    A finished hypothesis can only be extended by PAD, at no cost, so it stays as
    it is and competes with its final score. Candidates are ranked by
        log P(Y) / lp(|Y|)          (the GNMT objective)
    Returns (beam (B, K) parent index, token (B, K), scores, lengths), chosen.
    """
    B, K, V = logp.shape
    keep = xp.full(V, -xp.inf, dtype=logp.dtype)
    keep[pad_id] = 0.0                                                           # (V,)
    logp = xp.where(finished[..., None], keep, logp)                             # (B, K, V)
    raw = scores[..., None] + logp                                               # (B, K, V)
    new_lengths = lengths + ~finished                                            # (B, K)
    ranked = raw / gnmt_length_penalty(new_lengths, alpha)[..., None]            # (B, K, V)
    order = xp.argsort(-ranked.reshape(B, K * V), axis=1, kind="stable")[:, :K]  # (B, K)
    beam, token = order // V, order % V                                          # (B, K)
    scores = xp.take_along_axis(raw.reshape(B, K * V), order, axis=1)            # (B, K)
    return beam, token, scores, xp.take_along_axis(new_lengths, beam, axis=1)


def _check_beam_memory(model, rows, S, steps):
    """Refuse a beam too wide for memory: logits and caches of rows = B * K hypotheses."""
    c = model.config
    layers, D = getattr(c, "num_decoder_layers", 1), getattr(c, "d_model", 1)
    per_row = getattr(c, "tgt_vocab_size", 1) + 2 * layers * D * (steps + S) + D * S
    check_fits(rows * per_row * 4, "--beam (beam_size)",
               "choose a smaller beam")


def beam_search(model, src, beam_size=4, max_len=None, *, length_penalty=0.6, bos_id=1,
                eos_id=2, use_cache=True, cache=None):
    """The K = beam_size most likely prefixes kept at every step; the best one returned.

    All B * K hypotheses run through the decoder as one batch: memory and source
    mask are repeated K times, rows b*K .. b*K + K - 1 belong to source b. Each step
    keeps the K best extensions per source (see `_beam_step`) and reorders the
    hypotheses (and their self-attention caches) to follow their parents. Stops when
    every hypothesis has its EOS, or after max_len tokens (as greedy_decode).
    Returns a list of B lists of ints: the best hypothesis by log P(Y) / lp(|Y|),
    without BOS/EOS. beam_size=1 is greedy search.
    """
    check_positive_int(beam_size, "beam_size")
    if isinstance(length_penalty, bool) or not isinstance(length_penalty, (int, float)) \
            or length_penalty < 0:
        raise InputError(message("length_penalty", "a number >= 0", repr(length_penalty)))
    src = xp.asarray(src)
    steps = _decode_steps(model, src, max_len)
    pad_id, B, K = model.config.pad_id, src.shape[0], beam_size
    _check_beam_memory(model, B * K, src.shape[1], steps)
    with _eval_mode(model):
        src_mask = make_padding_mask(src, pad_id)                                # (B, 1, 1, S)
        memory = xp.repeat(model.encode(src, src_mask), K, axis=0)               # (B*K, S, D)
        src_mask = xp.repeat(src_mask, K, axis=0)                                # (B*K, 1, 1, S)
        cache = _start_cache(use_cache, cache)
        out = xp.full((B * K, 1), bos_id, dtype=xp.int64)                        # (B*K, 1)
        scores = xp.zeros((B, K), dtype=memory.dtype)                            # (B, K)
        scores[:, 1:] = -xp.inf                 # all beams start equal: expand only the first
        lengths = xp.zeros((B, K), dtype=xp.int64)
        finished = xp.zeros((B, K), dtype=xp.bool_)
        for _ in range(steps):
            logits = _next_logits(model, memory, src_mask, out, cache)           # (B*K, V)
            logits[:, [pad_id, bos_id]] = -xp.inf
            logp = log_softmax(logits).reshape(B, K, -1)                         # (B, K, V)
            beam, token, scores, lengths = _beam_step(logp, scores, lengths, finished,
                                                      pad_id, length_penalty)
            rows = (xp.arange(B)[:, None] * K + beam).reshape(-1)                # (B*K,)
            out = xp.concatenate([out[rows], token.reshape(-1, 1)], axis=1)      # (B*K, t + 1)
            finished = xp.take_along_axis(finished, beam, axis=1) | (token == eos_id)
            finished |= ~xp.isfinite(scores)    # impossible hypotheses (tiny vocabularies)
            if cache is not None:
                cache.reorder(rows)
            if bool(finished.all()):
                break
    best = (scores / gnmt_length_penalty(lengths, length_penalty)).argmax(axis=1)   # (B,)
    return strip_special(out[xp.arange(B) * K + best, 1:], eos_id, pad_id)


def _check_sample_args(model, prompt, max_new_tokens, temperature, top_k):
    if not hasattr(model, "forward_incremental") or hasattr(model, "encode"):
        raise InputTypeError(message("model", "a decoder-only language model (GPT)",
                                type(model).__name__))
    config = model.config
    check_ids(prompt, "prompt", config.vocab_size, ndim=2)
    check_positive_int(max_new_tokens, "max_new_tokens")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) \
            or not temperature > 0:
        raise InputError(message("temperature", "a number > 0 (use top_k=1 for greedy)",
                                 repr(temperature)))
    if top_k is not None:
        check_positive_int(top_k, "top_k")
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
    is subtracted before dividing by the temperature, and the result is kept above
    -700 (exp(-700) ~ 1e-304), so a tiny temperature leaves the best token alone
    (greedy) instead of overflowing to inf - inf = NaN.
    The uniform numbers come from the CPU generator `rng` (one per row and step),
    so a seed gives the same text on NumPy and CuPy: the token is the first index
    whose cumulative probability reaches u in (0, 1].
    """
    T = float(temperature)
    logits = logits.astype(xp.float64)                     # a copy; 1 / 1e-300 fits float64
    logits[:, list(excluded)] = -xp.inf                                           # (B, V)
    shifted = logits - logits.max(axis=-1, keepdims=True)                         # <= 0
    logits = xp.maximum(shifted, -700.0 * T) * (1.0 / T)   # in [-700, 0]: exp(-700) ~ 0
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
    with _eval_mode(model):
        cache = _start_cache(use_cache, cache)
        for _ in range(max_new_tokens):
            if cache is None:
                logits = model.forward(out)[:, -1]                               # (B, V)
            else:
                logits = model.forward_incremental(out[:, cache.length:], cache)[:, -1]
            next_id = _draw(logits, excluded, temperature, top_k, rng)           # (B,)
            if eos_id is not None:
                next_id = xp.where(done, pad_id, next_id)
                done |= next_id == eos_id
            out = xp.concatenate([out, next_id[:, None]], axis=1)                # (B, t + 1)
    return out


def strip_special(ids, eos_id=2, pad_id=0):
    """Rows of ids -> lists of ints, cut at the first EOS, without padding."""
    rows = []
    for row in to_numpy(ids).tolist():
        if eos_id in row:
            row = row[:row.index(eos_id)]
        rows.append([t for t in row if t != pad_id])
    return rows


def generate_text(model, tokenizer, prompt, max_new_tokens, *, temperature=1.0, top_k=None,
                  seed=0, stop_at_eos=False):
    """The prompt followed by max_new_tokens sampled tokens, as text.

    Special tokens are never drawn (padding, <bos>, <unk>), nor <eos> unless
    stop_at_eos: then the text ends at the first <eos>. The model sees at most
    max_len tokens, so a long generation slides the window: it keeps the last
    max_len // 2 tokens as the context of the next chunk.
    """
    from .data.tokenizers import BOS_ID, EOS_ID, UNK_ID
    ids = tokenizer.encode(prompt)
    if not ids:
        raise InputError(message("--prompt", "at least one character", repr(prompt)))
    check_positive_int(max_new_tokens, "max_new_tokens")
    rng, max_len, out = np.random.default_rng(seed), model.config.max_len, list(ids)
    exclude = (BOS_ID, UNK_ID) if stop_at_eos else (BOS_ID, UNK_ID, EOS_ID)
    remaining = max_new_tokens
    while remaining > 0:
        context = out[-(max_len // 2 or 1):] if len(out) > max_len // 2 else out
        n = min(remaining, max_len - len(context) + 1)
        seq = sample(model, xp.asarray([context], dtype=xp.int64), n, temperature=temperature,
                     top_k=top_k, rng=rng, exclude=exclude)                # (1, T0 + n)
        new = [int(t) for t in to_numpy(seq[0, len(context):])]
        if stop_at_eos and EOS_ID in new:
            out += new[:new.index(EOS_ID)]
            break
        out += new
        remaining -= n
    return tokenizer.decode(out)
