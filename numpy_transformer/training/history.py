"""The training curves of a run: every step's loss, learning rate and speed, and every
evaluation, kept by the run state (state.py) and saved beside its checkpoints.

    history = History()
    history.log_step(step, loss, lr, tokens_per_s, grad_norm)   # grad_norm: when clipped
    history.log_eval(step, {"exact_match": 0.98, "loss": 0.12})
    history.save("runs/reverse/history.json")                   # NaN and inf as null
    History.load("runs/reverse/history.json").truncate(500)     # resuming at step 500

plotting.py draws it; tensorboard.py sends it to TensorBoard as it grows.
"""

import json
import math

from ..system.files import atomic_write, read_json
from ..errors import InputError
from ..validation import message


class History:
    """Training curves: `train` [{step, loss, lr, tokens_per_s, grad_norm}] (grad_norm when
    the gradients are clipped), `eval` [{step, metric...}]."""

    def __init__(self, train=None, eval=None):
        self.train = list(train or [])
        self.eval = list(eval or [])

    def log_step(self, step, loss, lr, tokens_per_s, grad_norm=None):
        row = {"step": step, "loss": loss, "lr": lr, "tokens_per_s": tokens_per_s}
        self.train.append(row if grad_norm is None else {**row, "grad_norm": grad_norm})

    def log_eval(self, step, metrics):
        self.eval.append({"step": step, **metrics})

    def truncate(self, step):
        """Forget everything after `step` (resuming from a checkpoint of that step)."""
        self.train = [r for r in self.train if r["step"] <= step]
        self.eval = [r for r in self.eval if r["step"] <= step]
        return self

    def to_dict(self):
        return {"train": self.train, "eval": self.eval}

    def save(self, path):
        """Write history JSON atomically (a temporary file renamed over the old one)."""
        with atomic_write(path, "w", suffix=".json") as f:
            json.dump(_finite(self.to_dict()), f)
        return path

    @classmethod
    def load(cls, path):
        """Read a history.json; InputError naming the file if it is not one."""
        data = read_json(path, str(path))
        if not isinstance(data, dict) or not _records(data.get("train"), TRAIN_FIELDS) \
                or not _records(data.get("eval"), ()):
            raise InputError(message(str(path), "a training history file (train and eval: "
                                     "lists of records of numbers, each with its step)",
                                     "another JSON value"))
        return cls(data["train"], data["eval"])


TRAIN_FIELDS = ("loss", "lr")          # what the figures draw of every training step


def is_number(value):
    """True for a finite int or float (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value)


def _records(rows, needed):
    """True if `rows` is a list of dicts, each with an integer step >= 0, a number in each
    of `needed`, and numbers, null or text in the others."""
    return isinstance(rows, list) and all(
        isinstance(r, dict) and isinstance(r.get("step"), int) and is_number(r["step"])
        and r["step"] >= 0 and all(is_number(r.get(k)) for k in needed)
        and all(v is None or is_number(v) or isinstance(v, str) for v in r.values())
        for r in rows)


def _finite(tree):
    """JSON has no NaN/inf: write them as null."""
    if isinstance(tree, dict):
        return {k: _finite(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_finite(v) for v in tree]
    if isinstance(tree, float) and not math.isfinite(tree):
        return None
    return tree
