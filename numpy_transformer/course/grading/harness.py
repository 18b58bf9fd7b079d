"""The grading harness: the one table of scenarios, and what runs one task, on either side.

A task is plain data, `{"kind": ..., "args": {...}}`. Its scenario, the function
that SCENARIOS names for its kind (in scenarios_layers.py or
scenarios_models.py), builds the modules of the package under test, runs forward
and the backward under test and returns named arrays ("out", "dx", "grad.<parameter>", ...).

One switch, `standins` of run_task: the grader gives the StandIns class
(standins.py), and a composite part's children of other parts become stand-ins,
so that a mistake is caught in its own part; the local check of a student copy
(local_check.py; the copy holds this table but no stand-ins) gives None, and each
part runs with the package's own children.

The package under test is named by `pkg` ("numpy_transformer") and its modules
are plain imports (steps.load): the reference's in the teacher's process, the
student's in the worker. Nothing else of the package is needed, so a student
who breaks a helper of theirs loses only the parts that use it.

Every array a scenario uses comes from a `source`:

    Draw(seed)      the teacher's side: draws it from a seeded generator and records it
    Read(arrays)    the worker's side: the teacher's recorded array (shape checked)

so the teacher runs a task on its reference package with Draw, sends the
recorded arrays to the worker, which runs the same task on the student's
package with Read, and the teacher compares the two sets of outputs itself.
(`assignment make` records the same way for the local check, into expected.npz.)

The seed of a task's arrays is `task_seed(seed, secret)`: the task's number in
the registry mixed with a secret. The grader's secret is drawn at grading time
(a per-run random one, or the teacher's `--seed N`) and never leaves the
teacher's side; the public check's inputs (secret None, expected.npz, shipped
in every copy) come from another stream, whatever the grader's secret, so no
copy holds an input, or an output, of the grader's.

Harness code: imports nothing but NumPy and the other harness files, because
the worker loads it by path (worker.py).
"""

import contextlib

import numpy as np

from . import scenarios_layers as layers
from . import scenarios_models as models
from .steps import TaskError, load

SCENARIOS = {       # task kind -> function(pkg, source, standins, **args) -> {name: array}
    "linear": layers.linear,
    "tied_linear": layers.tied_linear,
    "embedding": layers.embedding,
    "layernorm": layers.layernorm,
    "softmax": layers.softmax,
    "gelu": layers.gelu,
    "dropout": layers.dropout,
    "positional_encoding": layers.positional_encoding,
    "feedforward": layers.feedforward,
    "cross_entropy": layers.cross_entropy,
    "adam": layers.adam,
    "adamw_decay": layers.adamw_decay,
    "attention": models.attention,
    "multihead_attention": models.multihead_attention,
    "mla_project": models.mla_project,
    "encoder": models.encoder,
    "decoder": models.decoder,
}


PUBLIC_SALT = 0x5EED_C0DE_2026     # the public check's inputs: no secret, a fixed salt


def task_seed(seed, secret=None):
    """The seed of a task's arrays: the task's registry `seed` mixed with the grader's
    `secret` (a non-negative int), or with the public salt when `secret` is None (the
    local check's inputs). The two kinds come from separate streams (the spawn key's
    first number), so no grading secret draws the public inputs."""
    if secret is None:
        return np.random.SeedSequence(PUBLIC_SALT, spawn_key=(0, seed))
    return np.random.SeedSequence(secret, spawn_key=(1, seed))


class Draw:
    """Teacher side: every array drawn from one seeded generator and recorded by name
    (`seed`: an int or a task_seed)."""

    def __init__(self, seed):
        self.rng, self.arrays = np.random.default_rng(seed), {}

    def keep(self, name, value):
        if name in self.arrays:
            raise TaskError(f"array {name!r} drawn twice")
        self.arrays[name] = np.array(value)
        return np.array(value)

    def normal(self, name, shape, scale=1.0):
        return self.keep(name, scale * self.rng.normal(size=tuple(shape)))

    def integers(self, name, shape, low, high):
        return self.keep(name, self.rng.integers(low, high, size=tuple(shape)))

    def given(self, name, value):
        return self.keep(name, value)


class Read:
    """Worker side: the arrays the teacher recorded, each checked against the shape asked for."""

    def __init__(self, arrays):
        self.arrays = arrays

    def get(self, name, shape=None):
        if name not in self.arrays:
            raise TaskError(f"no array {name!r} was recorded for this task: did forward or "
                            "the module's parameters change?")
        value = np.array(self.arrays[name])
        if shape is not None and tuple(value.shape) != tuple(shape):
            raise TaskError(f"{name}: your code asked for shape {tuple(shape)}, the reference "
                            f"for {tuple(value.shape)}")
        return value

    def normal(self, name, shape, scale=1.0):
        return self.get(name, shape)

    def integers(self, name, shape, low, high):
        return self.get(name, shape)

    def given(self, name, value):
        return self.get(name)


@contextlib.contextmanager
def numpy_float64(pkg):
    """Context manager: the package computes with NumPy inside, whatever backend was chosen
    (NUMPY_TRANSFORMER_BACKEND=cupy or simulator: tasks pass NumPy arrays), and the
    parameters built inside are float64."""
    backend = load(pkg, "backend")
    before = backend.get_backend()
    if before != "numpy":
        backend.set_backend("numpy")
    try:
        with backend.default_dtype("float64"):
            yield
    finally:
        if before != "numpy":
            backend.set_backend(before)


def run_task(pkg, task, source, standins=None):
    """Run one task on the package named `pkg`; returns {name: float64 or bool NumPy array}.
    standins: the StandIns class (standins.py) to grade each part alone, or None to run it
    with the package's own children."""
    kind = task["kind"]
    if kind not in SCENARIOS:
        raise TaskError(f"unknown task kind {kind!r}")
    with numpy_float64(pkg):
        kit = None if standins is None else standins(pkg, source)
        outputs = SCENARIOS[kind](pkg, source, kit, **task.get("args", {}))
    return {name: as_array(name, value) for name, value in outputs.items()}


def as_array(name, value):
    """A plain NumPy array of `value`; TypeError for None or non-numbers (e.g. a missing return)."""
    if value is None:
        raise TypeError(f"{name} is None (a backward that returns nothing?)")
    array = np.asarray(getattr(value, "get", lambda: value)())       # CuPy arrays: to host
    if array.dtype.kind not in "fib":
        raise TypeError(f"{name} has dtype {array.dtype}, not a number")
    return array.astype(np.float64) if array.dtype.kind != "b" else array
