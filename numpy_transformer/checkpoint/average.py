"""Checkpoint averaging: one model whose weights are the mean of several checkpoints' weights.

    model, metadata = average_checkpoints(["runs/x/step-800.npz", "runs/x/step-900.npz"])
    save_average(paths, "runs/x/avg.npz")        # what the `average` command does

With a learning rate that stays high, the last updates of a run do not settle:
the weights wander around a minimum, each step's noise pushing them one way or
another. The mean of the last K checkpoints,

    theta_avg = (1 / K) sum_k theta_k

averages that noise out and lies nearer the minimum than any one of them (the
paper averages the last 5 checkpoints of its base models, 20 of its big ones).
It only makes sense for checkpoints of one run: the same run id (a Trainer
draws one when a run starts and writes it into every checkpoint, resumed
sessions included; checkpoints older than run ids have none, and are compared
by the rest), the same model class and configuration, the same tokenizers (the mean of two independently trained
models is no model at all; different shapes cannot even be added). A file that
differs is named in the error.

The result holds the weights only (no optimizer state, so it is not resumed) and
the metadata of the latest checkpoint (the largest step) without its data and
dropout positions, plus "averaged_from" (the files) and "averaged_steps", which mark
it as an average: an average is refused as an input (its checkpoints would count
twice, once through it). It carries its tokenizers, so `evaluate`, `translate` and
`generate` load it from anywhere.
"""

import os

import numpy as np

from ..errors import InputError
from ..validation import message
from .format import read_checkpoint_arrays, save_checkpoint
from .load import load_checkpoint
from .runs import TOKENIZERS

DROPPED = ("data_state", "dropout_states", "best")     # true of one checkpoint, not of the mean


def _tokenizers(path, header):
    """{name: tokenizer dict} of a checkpoint: saved in it, or <name>_tokenizer.json beside it."""
    from ..data import Tokenizer
    meta = header.get("metadata") or {}
    found = dict(meta.get("tokenizers") or {})
    kind = meta.get("kind") or ("lm" if header.get("model_class") == "GPT" else "seq2seq")
    for name in TOKENIZERS.get(kind, ()):
        beside = os.path.join(os.path.dirname(os.path.abspath(path)), f"{name}_tokenizer.json")
        if name not in found and os.path.isfile(beside):
            found[name] = Tokenizer.load(beside).to_dict()
    return found


def _check_same(path, first, header, first_header, weights, sums, tokenizers, first_tokenizers):
    """InputError naming `path` unless it is a checkpoint of the same run as `first`."""
    def differs(what, got):
        return InputError(f"{path}: expected a checkpoint of the same run as {first} "
                          f"({what}), got {got}")
    if header.get("model_class") != first_header.get("model_class"):
        raise differs("a " + str(first_header.get("model_class")), header.get("model_class"))
    config, first_config = header.get("config") or {}, first_header.get("config") or {}
    changed = sorted(k for k in set(config) | set(first_config)
                     if config.get(k) != first_config.get(k))
    if changed:
        raise differs("the same model settings", ", ".join(
            f"{k}={config.get(k)!r} (not {first_config.get(k)!r})" for k in changed))
    if set(weights) != set(sums) or any(weights[k].shape != sums[k].shape for k in sums):
        raise differs("the same weights", "other weight names or shapes")
    if tokenizers != first_tokenizers:
        raise differs("the same tokenizers", "other tokenizers (" + ", ".join(
            sorted(k for k in set(tokenizers) | set(first_tokenizers)
                   if tokenizers.get(k) != first_tokenizers.get(k))) + ")")
    run, first_run = header["metadata"].get("run_id"), first_header["metadata"].get("run_id")
    if run and first_run and run != first_run:          # checkpoints older than run ids: no id
        raise differs(f"run id {first_run}", f"run id {run}, another run")


def _refuse_average(path, header):
    """InputError naming `path` if it is itself an average ("averaged_from" in its metadata):
    its checkpoints would count once through it and again on their own (double weighting)."""
    averaged = (header.get("metadata") or {}).get("averaged_from")
    if averaged:
        steps = (header.get("metadata") or {}).get("averaged_steps") or []
        shown = ", ".join(map(str, steps)) if steps else ", ".join(map(str, averaged))
        raise InputError(message("checkpoints", "checkpoints written by a training run, not "
                                 "an average", f"{path}, an average of {len(averaged)} "
                                 f"checkpoints ({'steps ' if steps else ''}{shown}); average "
                                 f"the checkpoints it was made of instead"))


def average_checkpoints(paths):
    """(model with the mean weights, metadata for its checkpoint) of checkpoint files.

    The mean is taken in float64 and stored in the checkpoints' dtype."""
    paths = [str(p) for p in paths]
    if not paths:
        raise InputError(message("checkpoints", "at least one checkpoint", "none"))
    seen = {}
    for path in paths:
        real = os.path.realpath(path)
        if real in seen:
            raise InputError(message("checkpoints", "each file once", f"{path} twice "
                                     f"(also as {seen[real]})"))
        seen[real] = path
    first = first_header = sums = first_tokenizers = None
    steps, dtypes = [], set()
    for path in paths:
        header, arrays = read_checkpoint_arrays(path)
        _refuse_average(path, header)
        weights = {k: v for k, v in arrays.items() if k.startswith("model/")}
        tokenizers = _tokenizers(path, header)
        steps.append((header.get("metadata") or {}).get("step"))
        dtypes |= {v.dtype for v in weights.values()}
        if first is None:
            first, first_header, first_tokenizers = path, header, tokenizers
            sums = {k: v.astype(np.float64) for k, v in weights.items()}
            continue
        _check_same(path, first, header, first_header, weights, sums, tokenizers,
                    first_tokenizers)
        for name, value in weights.items():
            sums[name] += value
    if len(dtypes) > 1:
        raise InputError(message("checkpoints", "weights of one dtype",
                                 ", ".join(sorted(str(d) for d in dtypes))))
    known = [i for i, step in enumerate(steps) if isinstance(step, int)]
    latest = max(known, key=lambda i: steps[i]) if known else len(paths) - 1
    ckpt = load_checkpoint(paths[latest])                # rebuilt: configuration checked
    dtype = dtypes.pop()
    ckpt.model.load_state_dict({k[len("model/"):]: (v / len(paths)).astype(dtype)
                                for k, v in sums.items()})
    metadata = {k: v for k, v in ckpt.metadata.items() if k not in DROPPED}
    metadata.update(tokenizers=first_tokenizers, averaged_from=paths, averaged_steps=steps)
    return ckpt.model, metadata


def save_average(paths, out, *, overwrite=False):
    """Average `paths` into the checkpoint `out` (written atomically); returns the metadata.
    An existing `out` is refused unless overwrite."""
    out = str(out)
    if os.path.exists(out) and not overwrite:
        raise InputError(message("out", "a new file (or `overwrite` to replace it)",
                                 f"{out}, which already exists"))
    if os.path.isdir(out):
        raise InputError(message("out", "a file name (AVG.npz)", f"the folder {out}"))
    model, metadata = average_checkpoints(paths)
    save_checkpoint(out, model, None, **metadata)
    return metadata
