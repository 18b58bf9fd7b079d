"""Every True/False parameter of the Python API refuses anything but a bool, as `stream`
does: `generate(..., stop_at_eos="False")` would otherwise be taken as true (a non-empty
string is true to `if`). The list below is checked against the signatures, so that a new
flag of a public function or class is either checked here or named as not yet checked."""

import dataclasses
import importlib
import inspect

import numpy as np
import pytest

import numpy_transformer
from numpy_transformer.data import BPETokenizer, CharTokenizer, DataConfig, WordTokenizer, batches
from numpy_transformer.decoding import (beam_search, check_generation_size, generate_text,
                                        generate_texts, greedy_decode, sample, stream_text,
                                        stream_texts)
from numpy_transformer.errors import InputError, InputTypeError
from numpy_transformer.models import (GPT, BlockConfig, GPTConfig, TransformerConfig,
                                      build_transformer)
from numpy_transformer.optim import SGD, Adam, decay_groups
from numpy_transformer.layers import (Embedding, Linear, MultiHeadAttention,
                                      MultiHeadLatentAttention, ReLU, SublayerConnection,
                                      TiedLinear)
from numpy_transformer.trained import TrainedRun
from numpy_transformer.training import Checkpointer, RunFolder, TrainConfig
from doors import names

MODULES = ("data", "decoding", "models", "optim", "training", "layers", "checkpoint",
           "trained")
NOT_YET = {       # flags that are no input: a method the Trainer calls on itself, a result
    "Trainer.flush.logged", "TrainResult.interrupted"}


@pytest.fixture
def parts(tmp_path):
    tok = CharTokenizer(list("abc"))
    gpt = GPT(GPTConfig(vocab_size=tok.vocab_size, d_model=8, num_heads=2, d_ff=8,
                        num_layers=1, max_len=16, dropout=0.0))
    seq = build_transformer(TransformerConfig(10, 10, d_model=8, num_heads=2, d_ff=8,
                                              num_encoder_layers=1, num_decoder_layers=1,
                                              max_len=16, dropout=0.0))
    return tok, gpt, seq, tmp_path / "run"


def small_config(cls, **flag):
    sizes = dict(d_model=8, num_heads=2, d_ff=8, max_len=16)
    if cls is GPTConfig:
        return GPTConfig(vocab_size=7, num_layers=1, **sizes, **flag)
    return TransformerConfig(10, 10, num_encoder_layers=1, num_decoder_layers=1, **sizes, **flag)


CALLS = {   # "where.parameter": a call passing `value` as that parameter
    "Tokenizer.lowercase": lambda p, v: CharTokenizer(list("abc"), lowercase=v),
    "WordTokenizer.lowercase": lambda p, v: WordTokenizer(["a"], lowercase=v),
    "BPETokenizer.lowercase": lambda p, v: BPETokenizer(list("ab"), lowercase=v),
    "Tokenizer.encode.add_bos": lambda p, v: p[0].encode("ab", add_bos=v),
    "Tokenizer.encode.add_eos": lambda p, v: p[0].encode("ab", add_eos=v),
    "Tokenizer.decode.skip_special": lambda p, v: p[0].decode([4, 5], skip_special=v),
    "batches.shuffle": lambda p, v: list(batches([([4], [5])], 1, shuffle=v)),
    "batches.sort_by_length": lambda p, v: list(batches([([4], [5])], 1, sort_by_length=v)),
    "batches.drop_last": lambda p, v: list(batches([([4], [5])], 1, drop_last=v)),
    "DataConfig.joint_vocab": lambda p, v: DataConfig(task="copy", joint_vocab=v),
    "DataConfig.lowercase": lambda p, v: DataConfig(task="copy", lowercase=v),
    "greedy_decode.use_cache": lambda p, v: greedy_decode(p[2], np.array([[4, 5]]), 4,
                                                          use_cache=v),
    "beam_search.use_cache": lambda p, v: beam_search(p[2], np.array([[4, 5]]), 2, 4,
                                                      use_cache=v),
    "sample.use_cache": lambda p, v: sample(p[1], np.array([[4]]), 2, use_cache=v),
    "generate_text.stop_at_eos": lambda p, v: generate_text(p[1], p[0], "a", 2,
                                                            stop_at_eos=v),
    "generate_texts.stop_at_eos": lambda p, v: generate_texts(p[1], p[0], "a", 2, 2,
                                                              stop_at_eos=v),
    "stream_text.stop_at_eos": lambda p, v: list(stream_text(p[1], p[0], "a", 2,
                                                             stop_at_eos=v)),
    "stream_texts.stop_at_eos": lambda p, v: list(stream_texts(p[1], p[0], "a", 2, 2,
                                                               stop_at_eos=v)),
    "TrainedRun.generate.stop_at_eos": lambda p, v: TrainedRun(
        p[1], {"text": p[0]}, {"kind": "lm"}).generate("a", 2, stop_at_eos=v),
    "TrainedRun.generate.stream": lambda p, v: list(TrainedRun(
        p[1], {"text": p[0]}, {"kind": "lm"}).generate("a", 2, stream=v)),
    "check_generation_size.held": lambda p, v: check_generation_size(p[1], 1, 2, held=v),
    "TransformerConfig.norm_first": lambda p, v: small_config(TransformerConfig, norm_first=v),
    "TransformerConfig.tie_embeddings": lambda p, v: small_config(TransformerConfig,
                                                                  tie_embeddings=v),
    "TransformerConfig.share_embeddings": lambda p, v: small_config(
        TransformerConfig, share_embeddings=v, tie_embeddings=True),
    "BlockConfig.norm_first": lambda p, v: BlockConfig(8, 2, 8, norm_first=v),
    "GPTConfig.norm_first": lambda p, v: small_config(GPTConfig, norm_first=v),
    "GPTConfig.tie_embeddings": lambda p, v: small_config(GPTConfig, tie_embeddings=v),
    "Adam.fast": lambda p, v: Adam(p[1], fast=v),
    "AdamW.fast": lambda p, v: numpy_transformer.optim.AdamW(p[1], fast=v),
    "SGD.nesterov": lambda p, v: SGD(p[1], momentum=0.9, nesterov=v),
    "decay_groups.decay_embeddings": lambda p, v: decay_groups(p[1], 0.1, decay_embeddings=v),
    "Linear.bias": lambda p, v: Linear(3, 3, v),
    "TiedLinear.bias": lambda p, v: TiedLinear(Embedding(5, 4), v),
    "Embedding.scale": lambda p, v: Embedding(5, 4, scale=v),
    "MultiHeadAttention.bias": lambda p, v: MultiHeadAttention(8, 2, bias=v),
    "MultiHeadLatentAttention.bias": lambda p, v: MultiHeadLatentAttention(8, 2, bias=v),
    "SublayerConnection.norm_first": lambda p, v: SublayerConnection(8, norm_first=v),
    "ReLU.overwrite": lambda p, v: ReLU(overwrite=v),
    "Module.train.mode": lambda p, v: p[1].train(v),
    "Checkpointer.overwrite": lambda p, v: Checkpointer(None, v),
    "RunFolder.claim.overwrite": lambda p, v: RunFolder(p[3] / f"o{v}").claim(overwrite=v),
    "RunFolder.claim.resuming": lambda p, v: RunFolder(p[3] / f"r{v}").claim(resuming=v),
    "TrainConfig.progress": lambda p, v: TrainConfig(progress=v),
    "TrainConfig.higher_is_better": lambda p, v: TrainConfig(higher_is_better=v),
}


@pytest.mark.parametrize("where", sorted(CALLS))
@pytest.mark.parametrize("value", ["False", 0, 1, None])
def test_a_flag_is_true_or_false_never_a_string_or_a_number(parts, where, value):
    optional = where in ("TrainConfig.progress", "TrainConfig.higher_is_better")
    if value is None and optional:
        return                                      # None there means "decide for me"
    with pytest.raises(InputTypeError if not optional else InputError) as info:
        CALLS[where](parts, value)
    names(info.value, where.rsplit(".", 1)[1], repr(value))
    for good in (True, False):                      # the same call with a bool runs
        CALLS[where](parts, good)


def public_flags():
    """{"Class.parameter", "Class.method.parameter", "function.parameter"} of every public
    name of the API's packages whose default is True or False."""
    found = set()
    for module in MODULES:
        package = importlib.import_module(f"numpy_transformer.{module}")
        for name in getattr(package, "__all__", None) or dir(package):
            thing = getattr(package, name)
            if name.startswith("_") or not callable(thing) or \
                    not getattr(thing, "__module__", "").startswith("numpy_transformer"):
                continue
            calls = [(name, thing)]
            if inspect.isclass(thing):
                calls = [(name, thing.__init__)] + [
                    (f"{name}.{method}", function) for method, function in vars(thing).items()
                    if inspect.isfunction(function) and not method.startswith("_")]
            for where, function in calls:
                owner = getattr(function, "__qualname__", where).split(".")[0]
                if inspect.isclass(thing) and where == name and owner != name and \
                        owner in CALLS_OWNERS:
                    where = owner                   # an inherited __init__: checked there
                for parameter in inspect.signature(function).parameters.values():
                    if isinstance(parameter.default, bool):
                        found.add(f"{where}.{parameter.name}")
            if dataclasses.is_dataclass(thing):
                found |= {f"{name}.{f.name}" for f in dataclasses.fields(thing)
                          if isinstance(f.default, bool)}
    return found


CALLS_OWNERS = ("Tokenizer",)


def test_every_flag_of_the_api_is_checked_or_named_as_not_yet(parts):
    found = public_flags()
    checked = {where for where in found if where in CALLS or where in NOT_YET}
    assert found - checked == set(), "flags neither checked here nor in NOT_YET"
