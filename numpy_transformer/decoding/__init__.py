"""Turning a trained model into output sequences: greedy search, beam search, sampling.

Every method repeats one step: run the decoder on the tokens so far, take the
logits of the last position, pick (or draw) the next token, append it. With
`use_cache=True` (the default) a step feeds only the newest token and reads the
older positions' keys and values from a KVCache (see kv_cache.py): each step
costs O(t) instead of O(t^2), and the tokens are the same as without the cache.

    greedy_decode(model, src)          encoder-decoder Transformer: most likely token
    beam_search(model, src, 4)         encoder-decoder Transformer: K best prefixes
    sample(model, prompt, 50)          GPT: random draws with temperature, top-k and top-p
    generate_text(model, tok, "ROMEO:", 300)    GPT: text in, longer text out
    generate_texts(model, tok, "ROMEO:", 300, 4)    GPT: 4 samples as one batch
    stream_text(model, tok, "ROMEO:", 300)      GPT: generate_text's text as it is drawn
    stream_texts(model, tok, "ROMEO:", 300, 4)  GPT: 4 samples, the first as it is drawn

PAD and BOS are never predicted by greedy and beam search (their logits are set
to -inf); sampling never draws PAD, nor the ids given in `exclude`.
"""

from ..kv_cache import KVCache, kv_cache_bytes
from .common import eval_mode, start_cache
from .sampling import (check_generation_size, generate_text, generate_texts, sample,
                       stream_text, stream_texts)
from .search import beam_search, gnmt_length_penalty, greedy_decode, strip_special

__all__ = ["greedy_decode", "beam_search", "gnmt_length_penalty", "strip_special", "sample",
           "generate_text", "generate_texts", "stream_text", "stream_texts",
           "check_generation_size", "KVCache", "kv_cache_bytes", "eval_mode", "start_cache"]
