"""Module: the base class of every layer, block and model.

The contract (see docs/design.md):
- `params` and `grads` are dicts of arrays with the same keys and shapes.
- `forward(*inputs)` returns the output and keeps in `self.saved` what
  `backward` needs.
- `backward(dout)` returns the gradient of each floating-point array input of
  the last `forward` (a tuple when there are several) and ADDS the parameter
  gradients into `self.grads`; call `zero_grad()` once per step.
- Child modules are plain attributes, or lists of modules; they are found by
  walking `vars(self)`, so there is nothing to register.
- One door for input checks, as in PyTorch: calling a module, `module(x)`, runs
  its `check_inputs(x)` (a clear InputError naming the argument), then `forward(x)`.
  A module's parts call each other's `forward` directly: what reaches a part was
  made by the parts before it, so it is not checked again.
"""

from .backend import to_numpy, xp
from .errors import InputError
from .validation import check_bool


class Module:
    def __init__(self):
        self.params = {}
        self.grads = {}
        self.training = True

    def forward(self, *inputs):
        raise NotImplementedError(f"{type(self).__name__}.forward")

    def backward(self, dout):
        raise NotImplementedError(f"{type(self).__name__}.backward")

    def check_inputs(self, *inputs, **kwargs):
        """Raise InputError/InputTypeError for bad inputs of `forward`; a module whose
        inputs can be wrong overrides it (below its backward). Nothing to check here."""

    def __call__(self, *inputs, **kwargs):
        """The door for a caller: check the inputs, then run `forward`."""
        self.check_inputs(*inputs, **kwargs)
        return self.forward(*inputs, **kwargs)

    def saved_for_backward(self):
        """`self.saved`, what the last forward kept for backward; a clear InputError
        naming this module when there is none (backward called before forward)."""
        saved = getattr(self, "saved", None)
        if saved is None:
            raise InputError(f"{type(self).__name__}.backward: backward called before forward "
                             "(backward undoes the last forward: call forward first)")
        return saved

    # Walking the tree of modules.

    def named_children(self):
        """(name, module) for each direct child; list items are named `name.i`."""
        for name, value in vars(self).items():
            if isinstance(value, Module):
                yield name, value
            elif isinstance(value, (list, tuple)):
                for i, item in enumerate(value):
                    if isinstance(item, Module):
                        yield f"{name}.{i}", item

    def named_modules(self, prefix=""):
        """(dotted name, module) for this module and all its descendants."""
        yield prefix, self
        for name, child in self.named_children():
            yield from child.named_modules(f"{prefix}.{name}" if prefix else name)

    def named_parameters(self):
        """(dotted name, param, grad) for every parameter; a shared array is listed once."""
        seen = set()
        for prefix, module in self.named_modules():
            for key, param in module.params.items():
                if id(param) in seen:
                    continue
                seen.add(id(param))
                yield (f"{prefix}.{key}" if prefix else key), param, module.grads[key]

    def parameters(self):
        return [param for _, param, _ in self.named_parameters()]

    def num_parameters(self):
        """Number of scalars in the parameters (shared arrays counted once)."""
        return int(sum(param.size for param in self.parameters()))

    def zero_grad(self):
        """Fill every gradient array with zeros, in place (arrays are never replaced)."""
        for _, _, grad in self.named_parameters():
            grad.fill(0)

    def train(self, mode=True):
        check_bool(mode, "mode")
        for _, module in self.named_modules():
            module.training = mode
        return self

    def eval(self):
        return self.train(False)

    # Saving and loading.

    def state_dict(self):
        """{dotted name: NumPy array copy} of every parameter."""
        return {name: to_numpy(param).copy() for name, param, _ in self.named_parameters()}

    def load_state_dict(self, state):
        """Copy arrays from `state` into the parameters, in place; names and shapes must match."""
        own = {name: param for name, param, _ in self.named_parameters()}
        missing = sorted(set(own) - set(state))
        unexpected = sorted(set(state) - set(own))
        if missing or unexpected:
            raise InputError(
                f"state_dict does not match {type(self).__name__}: "
                f"missing {missing[:5]}{'...' if len(missing) > 5 else ''}, "
                f"unexpected {unexpected[:5]}{'...' if len(unexpected) > 5 else ''}")
        for name, param in own.items():
            value = state[name]
            if tuple(value.shape) != tuple(param.shape):
                raise InputError(f"state_dict[{name!r}]: expected shape {tuple(param.shape)}, "
                                 f"got shape {tuple(value.shape)}")
        for name, param in own.items():
            param[...] = xp.asarray(state[name], dtype=param.dtype)

    # Printing: `print(model)` shows the tree, as PyTorch does, with parameter counts.

    def __repr__(self):
        """One line per module, `(name): Type(settings)  # parameters`, children indented;
        a list of identical modules is shown once, as `(layers): N x Type`. An array shared by
        two modules counts in both, and once in the total at the top."""
        lines = tree_lines(self)
        if self.num_parameters():
            lines[0] += " parameters"
        return "\n".join(lines)


STATE = ("training", "saved")   # the contract's own slots: a module's state, not its settings


def tree_lines(module, label="", times=1):
    """The lines of `module`'s tree, its own first (see Module.__repr__); `times` identical
    copies of it stand behind it."""
    settings = ", ".join(f"{key}={value!r}" for key, value in vars(module).items()
                         if key not in STATE and isinstance(value, (bool, int, float, str)))
    count = module.num_parameters()
    lines = [label + type(module).__name__ + (f"({settings})" if settings else "")
             + (f"  # {f'{times} x ' if times > 1 else ''}{count:,}" if count else "")]
    for name, value in vars(module).items():
        if isinstance(value, Module):
            children = [(f"({name}): ", value, 1)]
        elif isinstance(value, (list, tuple)):
            items = [(i, item) for i, item in enumerate(value) if isinstance(item, Module)]
            first = tree_lines(items[0][1]) if items else None
            if len(items) > 1 and all(tree_lines(item) == first for _, item in items):
                children = [(f"({name}): {len(items)} x ", items[0][1], len(items))]
            else:
                children = [(f"({name}.{i}): ", item, 1) for i, item in items]
        else:
            continue
        for child_label, child, copies in children:
            lines += ["  " + line for line in tree_lines(child, child_label, copies)]
    return lines
