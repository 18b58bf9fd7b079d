"""Checking a checkpoint's JSON header and its arrays before anything is built from them.

A checkpoint's checksums prove that a file is as it was written, not that it was
written by us: anyone can write a header, and its checksums, by hand. So every
field that loading, resuming or averaging reads is checked here first, once:

    format, version         this format, of this version
    model_class, config     a name and a dict (load.py checks the settings themselves)
    optimizer, checksums    a dict (or None) and a dict of every array
    metadata                a dict; its step, kind, run_id, tokenizers, configurations
                            (train_config, data_config, run_config), the
                            resume state (data_state, dropout_states, best,
                            training_seconds) of the types a Trainer writes
    arrays                  weights and optimizer buffers only, of one floating dtype,
                            every number finite

A header that fails is refused with an InputError naming the file and the field.
"""

import json
import math
import numbers

import numpy as np

from ..errors import InputError
from ..validation import message
from ..version import __version__

FORMAT = "numpy_transformer.checkpoint"
VERSION = 2              # 2: typed configurations (data_config, train_config); 1: 0.1.0's
KIND_NAMES = ("seq2seq", "lm")           # runs.KINDS says what each one is
_FIELDS = {"model_class": str, "config": dict, "metadata": dict, "checksums": dict}
_METADATA = {"kind": str, "run_id": str, "tokenizers": dict, "data_config": dict,
             "run_config": dict, "train_config": dict, "data_state": dict,
             "dropout_states": list, "best": dict, "averaged_from": list, "averaged_steps": list}


def parse_header(raw, path):
    """The header dict of the UTF-8 JSON bytes `raw`; InputError naming `path` if it is not
    JSON (or nests too deep, or holds NaN, Infinity or an integer too long to read)."""
    def refuse(constant):
        raise ValueError(f"{constant} is not a number JSON allows")
    try:
        header = json.loads(raw.decode("utf-8"), parse_constant=refuse)
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise InputError(f"checkpoint {path} has a corrupted header: "
                         f"{type(err).__name__}: {str(err)[:200]}") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise InputError(f"{path} is not a numpy_transformer checkpoint (its header is not "
                         f"one)")
    return header


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool) \
        and math.isfinite(value)


def check_header(header, path):
    """InputError naming `path` and the field unless the header has the types we write."""
    def field(name, expected, got):
        return InputError(message(f"checkpoint {path}: {name}", expected, got))
    version = header.get("version")
    if _is_int(version) and version == 1:
        raise InputError(f"checkpoint {path}: written by numpy_transformer 0.1.0 (checkpoint "
                         f"format 1, which saved the command line's settings); numpy_transformer "
                         f"{__version__} reads format {VERSION} (typed configurations) only: train the run "
                         f"again with this version, or use it with numpy_transformer 0.1.0")
    if not _is_int(version) or version != VERSION:
        raise field("version", f"format version {VERSION}", repr(version)[:80])
    for name, kind in _FIELDS.items():
        if not isinstance(header.get(name), kind):
            raise field(name, f"a {kind.__name__}", type(header.get(name)).__name__)
    if header.get("optimizer") is not None and not isinstance(header["optimizer"], dict):
        raise field("optimizer", "a dict or null", type(header["optimizer"]).__name__)
    _check_metadata(header["metadata"], field)


def _check_metadata(meta, field):
    for name, kind in _METADATA.items():
        if name in meta and not isinstance(meta[name], kind):
            raise field(f"metadata.{name}", f"a {kind.__name__}", type(meta[name]).__name__)
    if "kind" in meta and meta["kind"] not in KIND_NAMES:
        raise field("metadata.kind", f"one of {KIND_NAMES}", repr(meta["kind"])[:80])
    if "step" in meta and not (_is_int(meta["step"]) and meta["step"] >= 0):
        raise field("metadata.step", "a step count >= 0", repr(meta["step"])[:80])
    seconds = meta.get("training_seconds", 0)
    if not (_is_number(seconds) and seconds >= 0):
        raise field("metadata.training_seconds", "a number of seconds >= 0", repr(seconds)[:80])
    best = meta.get("best", {}).get("value")
    if best is not None and not _is_number(best):
        raise field("metadata.best.value", "a finite number or null", repr(best)[:80])
    step = meta.get("best", {}).get("step")          # the step best.npz holds (issue 40)
    if step is not None and not (_is_int(step) and step >= 0):
        raise field("metadata.best.step", "a step count >= 0 or null", repr(step)[:80])
    if not all(isinstance(state, dict) for state in meta.get("dropout_states", [])):
        raise field("metadata.dropout_states", "a list of generator states (dicts)",
                    "another list")


def check_arrays(arrays, path):
    """InputError naming `path` and the array unless every array (weights and optimizer
    buffers, which take their weight's dtype) holds finite numbers of one floating dtype."""
    for name, array in arrays.items():
        if not name.startswith(("model/", "optim/")):
            raise InputError(message(f"checkpoint {path}", "weights (model/...) and "
                                     "optimizer buffers (optim/...) only", f"array {name!r}"))
        if array.dtype.kind != "f":
            raise InputError(message(f"checkpoint {path}: {name}", "floating-point numbers",
                                     f"dtype {array.dtype}"))
    dtypes = sorted({str(array.dtype) for array in arrays.values()})
    if len(dtypes) > 1:
        raise InputError(message(f"checkpoint {path}: arrays", "arrays of one dtype",
                                 ", ".join(dtypes)))
    for name, array in arrays.items():
        if not bool(np.isfinite(array).all()):
            raise InputError(message(f"checkpoint {path}: {name}", "finite numbers",
                                     "NaN or infinity"))
