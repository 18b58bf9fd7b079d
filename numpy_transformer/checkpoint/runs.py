"""A training run as saved on disk: the model, its tokenizers and what the run recorded.

    model, tokenizers, meta = load_run("runs/reverse/best.npz")
    meta["kind"]        # "seq2seq" (written by `train`) or "lm" (written by `train-lm`)
    meta["train_config"], meta["data_config"]   # the run's TrainConfig and DataConfig fields
"""

import os

from ..validation import message
from ..errors import InputError
from .load import load_checkpoint

KINDS = {"seq2seq": "an encoder-decoder checkpoint written by `train`",
         "lm": "a language-model checkpoint written by `train-lm`"}
TOKENIZERS = {"seq2seq": ("src", "tgt"), "lm": ("text",)}
VOCABULARIES = {"src": "src_vocab_size", "tgt": "tgt_vocab_size", "text": "vocab_size"}


def run_kind(ckpt):
    """"seq2seq" or "lm": what kind of run wrote this Checkpoint."""
    kind = ckpt.metadata.get("kind")
    if kind in KINDS:
        return kind
    return "lm" if type(ckpt.model).__name__ == "GPT" else "seq2seq"


def load_run(path, kind=None, *, option="checkpoint", ckpt=None):
    """(model, {name: tokenizer}, metadata) of a checkpoint of `kind` ("seq2seq", "lm" or
    None for either); metadata["kind"] says which it is. Tokenizers come from the
    checkpoint, or from <name>_tokenizer.json beside it. `option`: the parameter (or the
    caller's option) that named `path`, for errors."""
    from ..data import Tokenizer
    ckpt = ckpt if ckpt is not None else load_checkpoint(path)
    found = run_kind(ckpt)
    meta = {**ckpt.metadata, "kind": found}
    if kind is not None and found != kind:
        raise InputError(message(option, KINDS[kind], f"{path}, {KINDS[found]}"))
    saved = meta.get("tokenizers") or {}
    if not isinstance(saved, dict):
        raise InputError(message(f"{path} (tokenizers)", "a dict", type(saved).__name__))
    tokenizers = {name: Tokenizer.from_dict(d, source=f"{path} ({name} tokenizer)")
                  for name, d in saved.items()}
    for name in TOKENIZERS[found]:
        beside = os.path.join(os.path.dirname(os.path.abspath(path)), f"{name}_tokenizer.json")
        if name not in tokenizers and os.path.isfile(beside):
            tokenizers[name] = Tokenizer.load(beside)
        if name not in tokenizers:
            raise InputError(message(option, f"a checkpoint with its {name} tokenizer "
                                     f"(or {beside})", path))
    check_vocabularies(ckpt.model.config, tokenizers, path)
    return ckpt.model, tokenizers, meta


def check_vocabularies(config, tokenizers, path):
    """InputError naming `path` unless each tokenizer has as many tokens as the model's
    vocabulary it encodes into (a tokenizer of another run would decode to nonsense)."""
    for name, tokenizer in tokenizers.items():
        field = VOCABULARIES.get(name)
        size = getattr(config, field, None) if field else None
        if size is not None and tokenizer.vocab_size != size:
            raise InputError(message(f"{path} ({name} tokenizer)", f"{size} tokens (the "
                                     f"model's {field})", f"{tokenizer.vocab_size} tokens"))
