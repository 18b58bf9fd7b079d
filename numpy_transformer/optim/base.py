"""Optimizer: what every optimizer shares (parameters, state, saving).

An optimizer is built on a Module and walks `model.named_parameters()`, which
yields `(dotted name, param, grad)` with every shared (tied) array listed once,
so a tied array is updated exactly once per step. Per-parameter state (Adam's
moments, SGD's momentum buffer) is preallocated at construction, keyed by the
dotted name, and every update writes into the existing arrays in place: a
parameter array is never replaced, so tied arrays stay shared and layers that
hold a reference keep seeing the live weights.

Each update also needs a couple of temporaries the size of a parameter. Rather
than allocating them on every step, we keep `num_scratch` flat buffers per dtype
sized for the largest parameter, and hand out reshaped views of their front.

What one step touches (each parameter, its gradient, its state and its scratch
views) is listed once, at construction: arrays are updated in place and never
replaced, so the list stays valid, and `step()` and `zero_grad()` need not walk
the module tree again (for a small model that walk costs as much as the update).

An optimizer with `on_flat_buffers` set (Adam's `fast=True`) first re-homes the model's
parameters and gradients into one buffer per dtype, the layers' arrays becoming views into
it, group after group (optim/flat.py); its state is flat alike, `state` holding the views,
and `step()` runs the subclass's `_flat_step()` over the buffers, `zero_grad()` fills each
gradient buffer once and `grads` lists the buffers: a handful of operations a step,
whatever the number of parameter arrays.

Parameter groups (as torch.optim's param_groups): `param_groups=[{"params": [names
or arrays], "weight_decay": wd}, ...]` gives each group its own weight decay
(optim/groups.py: `decay_groups` makes them, matrices decay and vectors do not,
`resolve_groups` checks them); every parameter is in exactly one group. Without
them, one group uses the optimizer's weight_decay. `step()` hands each update its
group's weight decay.
"""

from ..backend import to_numpy, xp
from ..validation import message
from ..errors import InputError, InputTypeError
from . import flat as flat_layout
from .groups import resolve_groups


def _plain(value):
    """A Python scalar from a Python or NumPy scalar (or 0-d array) as read from a file."""
    return value.item() if hasattr(value, "item") else value


class Optimizer:
    """Base class. Subclasses set `buffer_names` and `num_scratch` and define
    `_configure(**hyperparameters)` (validate and store), `hyperparameters()` and
    `_update(param, grad, state, scratch, weight_decay)` (one in-place update of one
    parameter, with its group's weight decay), and have a `weight_decay` attribute
    (the decay of a group that sets none).

    One that sets `on_flat_buffers` (before this __init__) defines `_flat_step()` instead
    of `_update` (Adam: optim/fast.py's `adam_flat_step`).

    Attributes: `model`, `lr` (plain attribute: schedules assign it), `step_count`
    (number of `step()` calls so far; the first update is step 1), `state`
    ({param name: {buffer name: array}}), `grads` (the gradient arrays it reads, each once,
    listed at construction: clip_grad_norm(optimizer.grads, ...) walks no tree; on flat
    buffers: the gradient buffers), `param_groups` ([{"params": [names], maybe
    "weight_decay": wd}], the groups as given, parameters by name), `flat` (a FlatState: the
    buffers and how a step walks them; None unless on flat buffers).
    """

    buffer_names = ()   # per-parameter state arrays, e.g. ("exp_avg", "exp_avg_sq")
    num_scratch = 0     # temporaries one update needs
    on_flat_buffers = False     # True: the model's arrays re-homed, one flat step (flat.py)

    def __init__(self, model, param_groups=None, **hyperparameters):
        if not hasattr(model, "named_parameters"):
            raise InputTypeError(message("model", "a Module", type(model).__name__))
        self._configure(**hyperparameters)
        self.model = model
        self.step_count = 0
        named = list(model.named_parameters())              # [(name, param, grad)]
        if not named:
            raise InputError(message("model", "a Module with parameters", "no parameters"))
        self.param_groups = resolve_groups(param_groups, named)
        self.flat = None
        if self.on_flat_buffers:
            self.flat = self._flatten()                     # and self.state, views of it
            named = list(model.named_parameters())          # the views, now
            self.grads = [buffer.grad for buffer in self.flat.layout.buffers]
        else:
            self.grads = [grad for _, _, grad in named]   # each once, for clip_grad_norm
            self.state = {name: {b: xp.zeros_like(param) for b in self.buffer_names}
                          for name, param, _ in named}
        largest = {}
        for _, param, _ in named:
            largest[param.dtype] = max(largest.get(param.dtype, 0), param.size)
        rows = 0 if self.flat else self.num_scratch     # flat: the FlatState's scratch
        self._scratch = {dt: xp.empty((rows, n), dtype=dt) for dt, n in largest.items()}
        # (param, grad, state, scratch views) of every parameter, for step() and zero_grad(),
        # and the same by group: [(group, its slots)]
        slot = {name: (param, grad, self.state[name], self._scratch_views(param))
                for name, param, grad in named}
        self._slots = list(slot.values())
        self._grouped = [(group, [slot[name] for name in group["params"]])
                         for group in self.param_groups]

    def _flatten(self):
        """Re-home the model's arrays (flat.py, group after group); sets `state`, the views
        of the flat state buffers by name; returns the FlatState."""
        order = [name for group in self.param_groups for name in group["params"]]
        group_of = {name: i for i, group in enumerate(self.param_groups)
                    for name in group["params"]}
        layout, block = flat_layout.flatten(self.model, order), flat_layout.default_block()
        flat = flat_layout.FlatState(layout, group_of, self.buffer_names, self.num_scratch,
                                     block)
        self.state = {}
        for buffer, state in zip(layout.buffers, flat.state):
            views = {b: buffer.split(state[b]) for b in self.buffer_names}
            for name in buffer.where:
                self.state[name] = {b: views[b][name] for b in self.buffer_names}
        return flat

    def _scratch_views(self, param):
        """`num_scratch` temporaries shaped like `param` (views, no allocation)."""
        rows = self._scratch[param.dtype]               # (num_scratch, n); flat: no rows
        return [rows[i, :param.size].reshape(param.shape) for i in range(len(rows))]

    def step(self):
        """Apply one update to every parameter, in place, from the gradients in the model.

        The parameters are those the model had when the optimizer was built. Each
        parameter group's "weight_decay" is its parameters' (a group without one uses
        the optimizer's own).
        """
        self.step_count += 1
        if self.flat is not None:
            self.flat.check_current()
            self._flat_step()
            return
        for group, slots in self._grouped:
            weight_decay = group.get("weight_decay", self.weight_decay)
            for param, grad, state, scratch in slots:
                self._update(param, grad, state, scratch, weight_decay)

    def zero_grad(self):
        """Zero the model's gradients (in place): call once per training step. Flat: one
        fill per gradient buffer."""
        if self.flat is not None:
            for grad in self.grads:
                grad.fill(0)
            return
        for _, grad, _, _ in self._slots:
            grad.fill(0)

    # Saving and loading.

    def state_dict(self):
        """{"step_count": int, "hyperparameters": {...}, "state": {name: {buffer: ndarray}}}.

        Only plain NumPy arrays and Python scalars, so it can be written with
        `numpy.savez` (see checkpoint.py) and read back without pickle.
        """
        return {"step_count": self.step_count,
                "hyperparameters": self.hyperparameters(),
                "state": {name: {b: to_numpy(a).copy() for b, a in bufs.items()}
                          for name, bufs in self.state.items()}}

    def load_state_dict(self, state):
        """Restore a `state_dict()`: hyper-parameters, step count and buffers (copied in place).

        Everything is checked before anything changes: the parameter names, the
        buffer names, every shape and the hyper-parameters must suit this optimizer.
        """
        self._check_state(state)
        hyper = {k: _plain(v) for k, v in state["hyperparameters"].items()}
        self._configure(**hyper)                   # validates all, then sets
        self.step_count = int(_plain(state["step_count"]))
        for name, bufs in self.state.items():
            for b, own in bufs.items():
                own[...] = xp.asarray(state["state"][name][b], dtype=own.dtype)

    def _check_state(self, state):
        for key in ("step_count", "hyperparameters", "state"):
            if key not in state:
                raise InputError(message("state", f"an optimizer state_dict with key {key!r}",
                                         f"keys {sorted(state)}"))
        own_hyper, hyper = sorted(self.hyperparameters()), sorted(state["hyperparameters"])
        if own_hyper != hyper:
            raise InputError(message("state['hyperparameters']", f"keys {own_hyper}",
                                     f"keys {hyper}"))
        saved = state["state"]
        missing = sorted(set(self.state) - set(saved))
        unexpected = sorted(set(saved) - set(self.state))
        if missing or unexpected:
            raise InputError(message("state", f"the parameters of {type(self).__name__}'s model",
                                     f"missing {missing[:5]}, unexpected {unexpected[:5]}"))
        for name, bufs in self.state.items():
            if set(saved[name]) != set(bufs):
                raise InputError(message(f"state[{name!r}]", f"buffers {sorted(bufs)}",
                                         f"buffers {sorted(saved[name])}"))
            for b, own in bufs.items():
                got, want = tuple(saved[name][b].shape), tuple(own.shape)
                if got != want:
                    raise InputError(message(f"state[{name!r}][{b!r}]", f"shape {want}",
                                             f"shape {got}"))

    def __repr__(self):
        hyper = ", ".join(f"{k}={v}" for k, v in self.hyperparameters().items())
        return f"{type(self).__name__}({hyper}, step_count={self.step_count})"

