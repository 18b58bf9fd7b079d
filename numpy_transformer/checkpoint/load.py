"""Rebuilding a model from a checkpoint, after checking its configuration.

The configuration in a checkpoint's header is checked before anything is built:
it must be a dict of the model class's fields with valid values (the config
dataclasses validate every field), the big matrices it implies must be no more
than the weights the file really holds, and the model must fit in memory. Then
the model is built and the weights copied in, names and shapes checked.
"""

import contextlib
from dataclasses import dataclass

import numpy as np

from ..backend import default_dtype
from ..errors import InputError
from ..system.sizes import check_fits, matrix_parameters, model_bytes
from .format import join_state, read_checkpoint_arrays


@dataclass
class Checkpoint:
    model: object            # the rebuilt model with its saved weights
    optimizer_state: dict    # pass to optimizer.load_state_dict (None if not saved)
    metadata: dict           # the keyword arguments given to save_checkpoint
    config: dict             # the model's configuration
    path: str = None         # the file it was read from


def _model_classes():
    from ..models.gpt import GPT, GPTConfig
    from ..models.transformer import Transformer, TransformerConfig
    return {"Transformer": (Transformer, TransformerConfig), "GPT": (GPT, GPTConfig)}


def _config(header, path, config_cls, weights):
    """The validated config object of the header; InputError naming the checkpoint."""
    fields = header.get("config")
    if not isinstance(fields, dict):
        raise InputError(f"checkpoint {path}: config: expected a dict of settings, got "
                         f"{type(fields).__name__}")
    try:
        config = config_cls(**fields)
    except TypeError as err:                 # an unknown or missing field
        raise InputError(f"checkpoint {path}: config: {err}") from None
    except InputError as err:
        raise InputError(f"checkpoint {path}: config: {err}") from None
    needed = matrix_parameters(config)
    if needed > weights:
        raise InputError(f"checkpoint {path}: config: expected settings that match the "
                         f"{weights:,} weights the file holds, got settings that need at "
                         f"least {needed:,}")
    return config


def load_checkpoint(path):
    """Rebuild the model saved in `path`; return a Checkpoint. Every InputError names `path`."""
    header, arrays = read_checkpoint_arrays(path)
    with naming(path):
        return _rebuild(header, arrays, path)


@contextlib.contextmanager
def naming(path):
    """An InputError raised inside names the checkpoint `path` (once)."""
    try:
        yield
    except InputError as err:
        if str(path) in str(err):
            raise
        raise type(err)(f"checkpoint {path}: {err}") from None


def _rebuild(header, arrays, path):
    """The Checkpoint of a header and arrays read (and checked) from `path`."""
    classes = _model_classes()
    name = header.get("model_class")
    if name not in classes:
        raise InputError(f"checkpoint {path}: model_class: expected one of "
                         f"{tuple(classes)}, got {name!r}")
    model_cls, config_cls = classes[name]
    state = {k[len("model/"):]: v for k, v in arrays.items() if k.startswith("model/")}
    config = _config(header, path, config_cls, sum(int(v.size) for v in state.values()))
    dtype = next(iter(state.values())).dtype if state else np.dtype(np.float32)
    if dtype.kind != "f":
        raise InputError(f"checkpoint {path}: expected floating-point weights, got {dtype}")
    check_fits(model_bytes(config, dtype.itemsize), f"checkpoint {path}",
               "it cannot be loaded on this machine")
    with default_dtype(dtype):
        model = model_cls(config)
    model.load_state_dict(state)
    optimizer_state = None
    if header.get("optimizer") is not None:
        optimizer_state = join_state(header["optimizer"], arrays)
    metadata = header.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise InputError(f"checkpoint {path}: metadata: expected a dict, got "
                         f"{type(metadata).__name__}")
    return Checkpoint(model, optimizer_state, metadata, header["config"], str(path))
