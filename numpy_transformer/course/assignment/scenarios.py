"""Grading scenarios: what one task builds, runs and returns, the same code on both sides.

A task is plain data, `{"kind": ..., "args": {...}}`. Its scenario (registered
with `@scenario(kind)` in scenarios_layers.py and scenarios_models.py) builds
the modules of the package under test, installs stand-ins (standins.py) for
the sub-layers of other parts, runs forward and the backward under test and
returns named arrays ("out", "dx", "grad.<parameter>", ...).

Every array a scenario uses comes from a `source`:

    Draw(seed)      the teacher's side: draws it from a seeded generator and records it
    Read(arrays)    the worker's side: the teacher's recorded array (shape checked)

so the teacher runs a task on its reference package with Draw, sends the
recorded arrays to the worker, which runs the same task on the student's
package with Read, and the teacher compares the two sets of outputs itself.

Harness code: imports nothing but NumPy and the other harness files, because
the worker loads it by path (worker.py).
"""

import contextlib
import importlib

import numpy as np

SCENARIOS = {}


class TaskError(Exception):
    """A task the worker could not run as asked (a missing or mis-shaped array)."""


class Package:
    """Attribute access to a package's modules by dotted path: `pkg.module("layers.linear")`."""

    def __init__(self, name):
        self.name = name

    def module(self, dotted):
        return importlib.import_module(f"{self.name}.{dotted}")

    def cls(self, dotted, name):
        return getattr(self.module(dotted), name)

    def float64(self):
        """Context manager: parameters built inside are float64."""
        return self.module("backend").default_dtype("float64")

    @contextlib.contextmanager
    def numpy(self):
        """Context manager: the package computes with NumPy inside, whatever backend was
        chosen (NUMPY_TRANSFORMER_BACKEND=cupy or simulator): tasks pass NumPy arrays."""
        backend = self.module("backend")
        before = backend.get_backend()
        if before != "numpy":
            backend.set_backend("numpy")
        try:
            yield
        finally:
            if before != "numpy":
                backend.set_backend(before)


class Draw:
    """Teacher side: every array drawn from one seeded generator and recorded by name."""

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
            raise TaskError(f"the grader sent no array {name!r}: did forward or the module's "
                            "parameters change?")
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


def scenario(kind):
    """Decorator: register `function(pkg, source, **args) -> {name: array}` as task `kind`."""
    def register(function):
        SCENARIOS[kind] = function
        return function
    return register


def run_task(pkg, task, source):
    """Run one task on `pkg` (a Package); returns {name: float64 or bool NumPy array}."""
    from . import scenarios_layers, scenarios_models  # noqa: F401  (they register)
    kind = task["kind"]
    if kind not in SCENARIOS:
        raise TaskError(f"unknown task kind {kind!r}")
    with pkg.numpy(), pkg.float64():
        outputs = SCENARIOS[kind](pkg, source, **task.get("args", {}))
    return {name: as_array(name, value) for name, value in outputs.items()}


def as_array(name, value):
    """A plain NumPy array of `value`; TypeError for None or non-numbers (e.g. a missing return)."""
    if value is None:
        raise TypeError(f"{name} is None (a backward that returns nothing?)")
    array = np.asarray(getattr(value, "get", lambda: value)())       # CuPy arrays: to host
    if array.dtype.kind not in "fib":
        raise TypeError(f"{name} has dtype {array.dtype}, not a number")
    return array.astype(np.float64) if array.dtype.kind != "b" else array


# Helpers the scenarios share.

def set_parameters(module, source, scale=0.5):
    """Every parameter of `module` from the source, by its dotted name."""
    for name, param, _ in module.named_parameters():
        param[...] = source.normal(f"param.{name}", param.shape, scale)


def prefill_grads(module, source):
    """Random values already in every gradient (what earlier backward calls added)."""
    for name, _, grad in module.named_parameters():
        grad[...] = source.normal(f"grad0.{name}", grad.shape)


def grads(module):
    """{"grad.<name>": copy} of every parameter gradient."""
    return {f"grad.{name}": grad.copy() for name, _, grad in module.named_parameters()}


def grad_arrays(module):
    """{(id of the owning module, key): the gradient array itself}, to see replaced arrays."""
    return {(id(m), k): g for _, m in module.named_modules() for k, g in m.grads.items()}


def input_grads(returned, count):
    """{"dx.0": ..., "dx.1": ...} from what a backward returned (one array or a tuple)."""
    if not isinstance(returned, tuple):
        returned = (returned,)
    if len(returned) != count:
        raise TypeError(f"backward returned {len(returned)} gradient(s), expected {count}")
    return {f"dx.{i}": g for i, g in enumerate(returned)}


def forward_backward(module, source, inputs, kwargs=None, count=None, prefill=False):
    """forward(*inputs, **kwargs), backward(dout) with a drawn dout; returns the outputs:
    "out", the input gradients "dx.i" and the parameter gradients "grad.<name>"."""
    module.zero_grad()
    if prefill:
        prefill_grads(module, source)
    before = grad_arrays(module)
    out = module.forward(*inputs, **(kwargs or {}))
    dout = source.normal("dout", np.shape(out))
    returned = module.backward(dout)
    after = grad_arrays(module)
    found = {"out": out, **grads(module),
             "inplace": np.array(after.keys() == before.keys()
                                 and all(after[k] is g for k, g in before.items()))}
    if count is not None:
        found.update(input_grads(returned, count))
    return found


def swap(owner, name, value, undo):
    """setattr(owner, name, value), remembering the old value in `undo` (restore())."""
    undo.append((owner, name, getattr(owner, name)))
    setattr(owner, name, value)


def swap_everywhere(pkg, modules, name, value, undo):
    """Replace the function `name` of pkg.module(modules[0]) in every listed module that
    holds that same function (a student may import it by name or call it through its module)."""
    original = getattr(pkg.module(modules[0]), name)
    for dotted in modules:
        mod = pkg.module(dotted)
        if getattr(mod, name, None) is original:
            swap(mod, name, value, undo)


def restore(undo):
    for owner, name, value in reversed(undo):
        setattr(owner, name, value)
