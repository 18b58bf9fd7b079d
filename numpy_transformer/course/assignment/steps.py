"""The steps the scenarios share (scenarios_layers.py, scenarios_models.py; table in harness.py).

Importing a module of the package under test, setting parameters from a source, one
forward and backward with the gradients it returns or adds, swapping functions of the
package under test for stand-ins and back.

Harness code: imports nothing but NumPy and the other harness files, because
the worker loads it by path (worker.py).
"""

import importlib

import numpy as np


class TaskError(Exception):
    """A task that could not run as asked (a missing or mis-shaped array)."""


def load(pkg, dotted):
    """The module `dotted` of the package named `pkg`: load("numpy_transformer", "layers.linear").
    A plain import: nothing of the package but the modules under test is needed."""
    return importlib.import_module(f"{pkg}.{dotted}")


def rng(seed):
    """A generator for a module's own draws (its dropout masks, its initial weights)."""
    return np.random.default_rng(seed)


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
    """Replace the function `name` of load(pkg, modules[0]) by identity: every attribute of
    every listed module that IS that function, whatever it is called there (a student may
    import it by name, under another name, or call it through its module)."""
    original = getattr(load(pkg, modules[0]), name)
    for dotted in modules:
        mod = load(pkg, dotted)
        for attribute in [a for a, v in vars(mod).items() if v is original]:
            swap(mod, attribute, value, undo)


def restore(undo):
    for owner, name, value in reversed(undo):
        setattr(owner, name, value)
