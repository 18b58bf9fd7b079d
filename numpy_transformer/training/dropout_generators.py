"""The random generators of a model's dropout layers, and their states as JSON.

A dropout layer draws its masks from a numpy Generator it holds. A checkpoint keeps
their states (`generator_states`, its `dropout_states`), so a resumed run draws the
masks an uninterrupted one would; the loop undoes a step's draws when Ctrl-C cancels it,
and data-parallel ranks jump theirs apart (distributed.py).

    states = generator_states(model)           # [bit_generator.state, ...]: JSON values
    load_generator_states(model, states)       # a model built the same way
"""

import numpy as np

from ..errors import InputError


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
