"""What a training run keeps besides weights: history, random-generator states, progress bar.

- `TrainResult`: what `Trainer.fit` returns.
- `History`: per-step loss, learning rate and tokens/s, plus every evaluation,
  saved as JSON (history.json) and read back on resume.
- `generator_states` / `load_generator_states`: the states of the generators
  the model's dropout layers draw from, as JSON. Restoring them (with the data
  stream's position and the optimizer) makes a resumed run continue exactly as
  an uninterrupted one.
- `progress_bar`: a tqdm bar (tqdm.auto: a text bar in a terminal, a widget in
  Jupyter; off when output is not a terminal), or None without tqdm.
- `sessions_of` / `saved_sessions`: the sessions of a run (a command each, resumed from
  the one before): [{command, from, to, seconds}], kept in every checkpoint;
- `Stopwatch`: the seconds spent in fit(); `diverged`: the error of a run whose loss,
  gradient norm or weights stopped being finite; `InterruptedUpdate`: a Ctrl-C that
  came inside the optimizer's update.
"""

import json
import math
import time
from dataclasses import dataclass

import numpy as np

from ..system.files import atomic_write, read_json
from ..errors import InputError, TrainingDiverged
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


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value)


def _records(rows, needed):
    """True if `rows` is a list of dicts, each with an integer step >= 0, a number in each
    of `needed`, and numbers, null or text in the others."""
    return isinstance(rows, list) and all(
        isinstance(r, dict) and isinstance(r.get("step"), int) and _number(r["step"])
        and r["step"] >= 0 and all(_number(r.get(k)) for k in needed)
        and all(v is None or _number(v) or isinstance(v, str) for v in r.values())
        for r in rows)


@dataclass
class TrainResult:
    step: int                 # steps done
    interrupted: bool         # stopped early (a checkpoint was written)
    metrics: dict             # the last evaluation (None if never evaluated)
    best: float               # the best value of the best metric seen (None if none)
    history: History          # the training curves
    checkpoint: str           # path of the last checkpoint written (None if no `out`)
    stop_reason: str = None   # why it stopped early: "SIGINT", "SIGTERM", "closed output", ...
    sessions: list = None     # the run's sessions, this one last (sessions_of)


def sessions_of(trainer):
    """The run's sessions, this one last: [{"command": as typed (None: not from the command
    line), "from": step, "to": step, "seconds": trainer.clock's (the time in fit(), and
    from the command line the wall time since the command started)}]."""
    now = {"command": trainer.command, "from": trainer.session_start, "to": trainer.step,
           "seconds": round(trainer.clock.seconds, 3)}
    return trainer.sessions_before + [now]


def saved_sessions(meta):
    """The sessions a checkpoint's metadata records; for a checkpoint written before they
    were recorded, one session of unknown command that took its `training_seconds`."""
    sessions = meta.get("sessions")
    if isinstance(sessions, list) and all(
            isinstance(s, dict) and all(_number(s.get(k)) for k in ("from", "to", "seconds"))
            and (s.get("command") is None or isinstance(s["command"], str)) for s in sessions):
        return [dict(s) for s in sessions]
    step = int(meta.get("step", 0))
    return [{"command": None, "from": 0, "to": step,
             "seconds": float(meta.get("training_seconds", 0.0))}] if step else []


def _finite(tree):
    """JSON has no NaN/inf: write them as null."""
    if isinstance(tree, dict):
        return {k: _finite(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_finite(v) for v in tree]
    if isinstance(tree, float) and not math.isfinite(tree):
        return None
    return tree


def model_generators(model):
    """The distinct numpy Generators held by the model's layers (dropout), in a fixed order."""
    found, seen = [], set()
    for _, module in model.named_modules():
        for value in vars(module).values():
            if isinstance(value, np.random.Generator) and id(value) not in seen:
                seen.add(id(value))
                found.append(value)
    return found


def generator_states(model):
    """JSON-able states of `model_generators(model)`."""
    return [g.bit_generator.state for g in model_generators(model)]


def load_generator_states(model, states):
    """Restore states saved by `generator_states` into a model built the same way."""
    generators = model_generators(model)
    if len(generators) != len(states):
        raise InputError(f"checkpoint holds {len(states)} dropout generator states, "
                         f"the model has {len(generators)}")
    for g, state in zip(generators, states):
        g.bit_generator.state = state


def progress_bar(total, initial, enabled):
    """A tqdm.auto bar from `initial` to `total` steps, or None (tqdm missing or disabled).

    enabled: True (always), False (never) or None (only on a terminal or in Jupyter).
    """
    if enabled is False:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    bar = tqdm(total=total, initial=initial, unit="step", dynamic_ncols=True,
               disable=None if enabled is None else False)
    if bar.disable:
        bar.close()
        return None
    return bar


def improves(value, best, higher_is_better):
    """True if the metric `value` (a number or None) beats `best` (None: nothing yet)."""
    return value is not None and math.isfinite(value) and (
        best is None or (value > best if higher_is_better else value < best))


class InterruptedUpdate(KeyboardInterrupt):
    """Ctrl-C inside the optimizer's update: the weights are half-updated, so nothing is
    saved (the last checkpoint stays the good one)."""


def diverged(step, what, kept):
    """TrainingDiverged: the run stopped at `step` because of `what`; `kept` says which
    checkpoint is the last good one."""
    return TrainingDiverged(f"training stopped at step {step}: {what}; {kept}. Try a smaller "
                            "`lr`, a longer `warmup` or gradient clipping (`clip_norm`).")


class Stopwatch:
    """Seconds summed over the intervals between start() and stop(), the running one included."""

    def __init__(self):
        self.total, self.started = 0.0, None

    def start(self):
        self.started = time.perf_counter()

    def stop(self):
        self.total, self.started = self.seconds, None

    @property
    def seconds(self):
        running = 0.0 if self.started is None else time.perf_counter() - self.started
        return self.total + running
