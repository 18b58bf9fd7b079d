"""Search: the most likely output of an encoder-decoder Transformer, greedy or by beam.

    greedy_decode(model, src)          the most likely token at every step
    beam_search(model, src, 4)         the K best prefixes at every step

PAD and BOS are never predicted (their logits are set to -inf). See the
package's docstring for the shared step and the KV cache.

Beam search follows the paper (section 6.1): beam size 4, length penalty
alpha = 0.6, at most input length + 50 output tokens (capped by the model's
max_len, the positional table), and it stops early once every hypothesis of
every source has its EOS. Greedy search stops once every row has its EOS; its
limit stays input length + 10, since it also decodes the held-out set at every
evaluation during training, where a young model that never says EOS would
otherwise decode 40 more positions per row.
"""

import math
import numbers

from ..backend import to_numpy, xp
from ..validation import check_ids, check_integer, id_array, message
from ..errors import InputError, InputTypeError
from ..layers.softmax import log_softmax
from ..masks import make_causal_mask, make_padding_mask
from ..system.sizes import check_fits
from .common import eval_mode, finite, start_cache


GREEDY_EXTRA, BEAM_EXTRA = 10, 50         # default limits: input length + these many tokens


def _step_limit(model, src, max_len, extra=GREEDY_EXTRA):
    """How many tokens to generate at most: max_len, default S + extra capped by the model."""
    if not hasattr(model, "encode"):
        raise InputTypeError(message("model", "an encoder-decoder Transformer", type(model).__name__))
    vocab = getattr(model.config, "src_vocab_size", None)
    if vocab is not None:
        check_ids(src, "src", vocab, ndim=2)
    elif getattr(src, "ndim", None) != 2:
        raise InputError(message("src", "2 dimensions (B, S)", f"shape {tuple(src.shape)}"))
    limit = model.config.max_len
    if max_len is None:
        return min(src.shape[1] + extra, limit)
    check_integer(max_len, "max_len")
    if max_len > limit:
        raise InputError(message("max_len", f"at most the model's max_len={limit}", max_len))
    return max_len


def _src_and_steps(model, src, max_len, extra=GREEDY_EXTRA):
    """(src on the model's device, steps). A host array's ids are checked before they move:
    check_ids reads the values of host arrays only (a device array's would need a sync)."""
    if not hasattr(src, "dtype"):
        src = id_array(src, "src")                           # lists of ids
    steps = _step_limit(model, src, max_len, extra)
    return xp.asarray(src), steps


def _check_search_args(model, length_penalty=0.0, **ids):
    """alpha (length_penalty) a finite number >= 0; bos_id, eos_id ids of the target
    vocabulary (an EOS the model cannot produce would never end a row)."""
    if isinstance(length_penalty, bool) or not isinstance(length_penalty, (int, float)) \
            or not 0 <= length_penalty < math.inf:
        raise InputError(message("length_penalty", "a finite number >= 0 (alpha)",
                                 repr(length_penalty)))
    V = getattr(model.config, "tgt_vocab_size", None)     # None: a stand-in model (tests)
    for name, value in ids.items() if V is not None else ():
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
                or not 0 <= value < V:
            raise InputError(message(name, f"a token id in [0, {V}) (the target vocabulary)",
                                     repr(value)))


def _next_logits(model, memory, src_mask, out, cache):
    """Logits (B, V) of the token after out (B, t), for an encoder-decoder model.

    Without a cache the decoder re-reads the whole prefix; with one it is fed
    only the tokens the cache has not seen yet (one per step).
    """
    if cache is None:
        h = model.decode(memory, src_mask, out, make_causal_mask(out.shape[1]))  # (B, t, D)
    else:
        h = model.decode(memory, src_mask, out[:, cache.length:], cache=cache)      # (B, 1, D)
    return model.project(h[:, -1:])[:, 0]                                       # (B, V)


def greedy_decode(model, src, max_len=None, *, bos_id=1, eos_id=2, use_cache=True, cache=None):
    """The most likely next token at every step, until EOS or `max_len` tokens.

    src (B, S) ids -> (B, T_out) ids without BOS, T_out <= max_len; after a row's
    EOS the rest of the row is padding (config.pad_id). Stops once every row has
    its EOS. PAD and BOS are never predicted. max_len defaults to S + 10, capped
    at config.max_len. cache: an empty KVCache to fill (to measure it afterwards).
    eos_id=None: no end token, every row gets max_len tokens (for timing decoding).
    """
    src, steps = _src_and_steps(model, src, max_len)      # the ids on the model's device
    ends = {} if eos_id is None else {"eos_id": eos_id}
    _check_search_args(model, bos_id=bos_id, **ends)
    pad_id, B = model.config.pad_id, src.shape[0]
    with eval_mode(model):
        src_mask = make_padding_mask(src, pad_id)                                # (B, 1, 1, S)
        memory = finite(model.encode, src, src_mask)                             # (B, S, D)
        cache = start_cache(use_cache, cache)
        out = xp.full((B, 1), bos_id, dtype=xp.int64)                            # (B, 1)
        done = xp.zeros(B, dtype=xp.bool_)                                       # (B,)
        for _ in range(steps):
            logits = finite(_next_logits, model, memory, src_mask, out, cache)   # (B, V)
            logits[:, [pad_id, bos_id]] = -xp.inf
            next_id = xp.where(done, pad_id, logits.argmax(axis=-1))             # (B,)
            out = xp.concatenate([out, next_id[:, None]], axis=1)                # (B, t + 1)
            if eos_id is not None:
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
    check_fits(rows * per_row * 4, "beam_size",
               "choose a smaller beam")


def beam_search(model, src, beam_size=4, max_len=None, *, length_penalty=0.6, bos_id=1,
                eos_id=2, use_cache=True, cache=None):
    """The K = beam_size most likely prefixes kept at every step; the best one returned.

    All B * K hypotheses run through the decoder as one batch: memory and source
    mask are repeated K times, rows b*K .. b*K + K - 1 belong to source b. Each step
    keeps the K best extensions per source (see `_beam_step`) and reorders the
    hypotheses (and their self-attention caches) to follow their parents. Stops when
    every hypothesis has its EOS (early stopping), or after max_len tokens: by
    default S + 50 (the paper's), capped at config.max_len. length_penalty is the
    paper's alpha (gnmt_length_penalty); 0 ranks by log P(Y) alone.
    Returns a list of B lists of ints: the best hypothesis by log P(Y) / lp(|Y|),
    without BOS/EOS. beam_size=1 is greedy search.
    """
    check_integer(beam_size, "beam_size")
    src, steps = _src_and_steps(model, src, max_len, BEAM_EXTRA)
    _check_search_args(model, length_penalty, bos_id=bos_id, eos_id=eos_id)
    pad_id, B, K = model.config.pad_id, src.shape[0], beam_size
    _check_beam_memory(model, B * K, src.shape[1], steps)
    with eval_mode(model):
        src_mask = make_padding_mask(src, pad_id)                                # (B, 1, 1, S)
        memory = xp.repeat(finite(model.encode, src, src_mask), K, axis=0)       # (B*K, S, D)
        src_mask = xp.repeat(src_mask, K, axis=0)                                # (B*K, 1, 1, S)
        cache = start_cache(use_cache, cache)
        out = xp.full((B * K, 1), bos_id, dtype=xp.int64)                        # (B*K, 1)
        scores = xp.zeros((B, K), dtype=memory.dtype)                            # (B, K)
        scores[:, 1:] = -xp.inf                 # all beams start equal: expand only the first
        lengths = xp.zeros((B, K), dtype=xp.int64)
        finished = xp.zeros((B, K), dtype=xp.bool_)
        for _ in range(steps):
            logits = finite(_next_logits, model, memory, src_mask, out, cache)   # (B*K, V)
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


def strip_special(ids, eos_id=2, pad_id=0):
    """Rows of ids -> lists of ints, cut at the first EOS, without padding."""
    rows = []
    for row in to_numpy(ids).tolist():
        if eos_id in row:
            row = row[:row.index(eos_id)]
        rows.append([t for t in row if t != pad_id])
    return rows
