"""Finite-difference gradient checking for any Module.

The check turns the module into a scalar function with a random upstream
gradient `dout`:

    L(x, params) = sum(forward(x) * dout)

so that dL/dx is exactly what `backward(dout)` must return, and dL/dW what it
must add into `grads`. Each coordinate is then nudged both ways by `eps`:

    dL/dx_i  ~  (L(x + eps e_i) - L(x - eps e_i)) / (2 eps)       error O(eps^2)

We use the fourth-order version of the same idea,

    dL/dx_i  ~  (8 [L(x + eps) - L(x - eps)] - [L(x + 2 eps) - L(x - 2 eps)]) / (12 eps)

whose error is O(eps^4). In float64 with eps = 1e-4 the truncation error is
~1e-16 and the rounding error ~1e-16 * |L| / eps ~ 1e-12, so a correct backward
agrees to about 1e-9 relative; a wrong one is off by 1e-2 or more. Near a
kink (ReLU at 0) the two central differences with steps eps and 2 eps
disagree; the checker then retries that coordinate with a 100x smaller step.
We compare per coordinate with

    rel_i = |analytic_i - numeric_i| / max(|analytic_i|, |numeric_i|, floor)

where `floor` keeps coordinates whose true gradient is (near) zero from
dividing rounding noise by nothing. Every forward of the check starts the
module's random generators from the same state (`replay`), so each dropout
draws the same mask every time: the checked function does not change.
The cases every layer and model is checked on: gradcheck_cases.py, beside this file.
"""

import inspect
from dataclasses import dataclass

import numpy as np

from .backend import to_numpy, xp
from .errors import InputError, InputTypeError


@dataclass
class GradcheckRow:
    name: str  # "input x" (forward's argument name) or a dotted parameter name
    shape: tuple
    checked: int  # number of coordinates compared
    max_rel_error: float
    max_abs_error: float
    passed: bool


class GradcheckReport:
    """The per-tensor result of `gradcheck`; `str(report)` is a readable table."""

    def __init__(self, title, rows, rtol):
        self.title, self.rows, self.rtol = title, rows, rtol

    @property
    def passed(self):
        return all(row.passed for row in self.rows)

    @property
    def failing(self):
        """The rows that failed, for a quick look at what is wrong."""
        return [row for row in self.rows if not row.passed]

    @property
    def max_rel_error(self):
        return max((row.max_rel_error for row in self.rows), default=0.0)

    def __str__(self):
        lines = [f"{self.title}  (pass if max relative error <= {self.rtol:.0e})",
                 f"  {'tensor':<44} {'shape':<16} {'coords':>7} {'max rel err':>12}  result"]
        for r in self.rows:
            lines.append(f"  {r.name:<44} {str(r.shape):<16} {r.checked:>7} "
                         f"{r.max_rel_error:>12.2e}  {'ok' if r.passed else 'FAIL'}")
        return "\n".join(lines)

    __repr__ = __str__


def _is_float_array(x):
    return hasattr(x, "dtype") and hasattr(x, "shape") and x.dtype.kind == "f"


def _as_tuple(grads):
    if grads is None:                       # no floating-point inputs (e.g. token ids)
        return ()
    return grads if isinstance(grads, tuple) else (grads,)


def _input_names(module, inputs):
    """'input q', 'input k', ... from forward's signature, for the floating inputs."""
    try:
        params = [p.name for p in inspect.signature(module.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = [params[i] if i < len(params) else str(i) for i in range(len(inputs))]
    return [f"input {n}" for n, x in zip(names, inputs) if _is_float_array(x)]


def generator_states(module):
    """[(bit generator, its state now)] for every NumPy random generator a module of the
    tree holds (a Dropout's `rng`, or anything that draws from a NumPy BitGenerator), each
    once: `replay` puts them back in that state."""
    found = {}
    for _, m in module.named_modules():
        for value in vars(m).values():
            bits = getattr(value, "bit_generator", None)
            if isinstance(bits, np.random.BitGenerator):
                found[id(bits)] = (bits, bits.state)
    return list(found.values())


def replay(states):
    """Put every generator of `generator_states` back: the next forward draws as the first."""
    for bits, state in states:
        bits.state = state


def _coordinates(shape, max_coords, rng):
    size = int(np.prod(shape)) if shape else 1
    flat = np.arange(size)
    if max_coords is not None and size > max_coords:
        flat = np.sort(rng.choice(size, size=max_coords, replace=False))
    return [np.unravel_index(i, shape) for i in flat]


def gradcheck(module, *inputs, dout=None, forward_kwargs=None, eps=1e-4, rtol=1e-7,
              floor=1e-3, max_coords=None, seed=0, check_params=True, title=None):
    """Compare `module.backward` with central finite differences; return a report.

    inputs         positional arrays for `forward`; floating ones are checked
    dout           upstream gradient (random normal when None)
    forward_kwargs keyword arguments for `forward` (masks, flags); not checked
    max_coords     check at most this many random coordinates per tensor
    """
    forward_kwargs = forward_kwargs or {}
    params = list(module.named_parameters()) if check_params else []
    _check_float64(params, inputs)
    rng = np.random.default_rng(seed)
    loss = ScalarLoss(module, inputs, forward_kwargs, dout, rng, eps, floor)
    rows = []
    for name, x, analytic in _analytic_gradients(loss, params):
        coords = _coordinates(tuple(x.shape), max_coords, rng)
        numeric = np.array([loss.numeric_gradient(x, idx) for idx in coords])
        a = np.array([analytic[idx] for idx in coords])
        abs_err = np.abs(a - numeric)
        rel_err = abs_err / np.maximum(np.maximum(np.abs(a), np.abs(numeric)), floor)
        max_rel = float(rel_err.max(initial=0.0))
        rows.append(GradcheckRow(name, tuple(x.shape), len(coords), max_rel,
                                 float(abs_err.max(initial=0.0)),
                                 bool(max_rel <= rtol and np.all(np.isfinite(a)))))
    return GradcheckReport(title or type(module).__name__, rows, rtol)


def _check_float64(params, inputs):
    for name, p, _ in params:
        if p.dtype != np.float64:
            raise InputTypeError(f"gradcheck needs float64 parameters; {name} is {p.dtype} "
                                 "(build the module under default_dtype('float64'))")
    for i, x in enumerate(inputs):
        if _is_float_array(x) and x.dtype != np.float64:
            raise InputTypeError(f"gradcheck needs float64 inputs; input {i} is {x.dtype} "
                                 "(pass float64 arrays)")


class ScalarLoss:
    """L = sum(module.forward(*inputs) * dout), and its derivative along one coordinate.
    Every forward replays the module's generators from their state at the start, so the
    same dropout masks are drawn each time."""

    def __init__(self, module, inputs, forward_kwargs, dout, rng, eps, floor):
        self.module, self.inputs, self.kwargs = module, inputs, forward_kwargs
        self.eps, self.floor = eps, floor
        self.generators = generator_states(module)
        out = self.forward()
        if dout is None:
            dout = xp.asarray(rng.normal(size=out.shape))
        if tuple(dout.shape) != tuple(out.shape):
            raise InputError(f"dout: expected shape {tuple(out.shape)}, got {tuple(dout.shape)}")
        self.dout = dout

    def forward(self):
        replay(self.generators)
        return self.module.forward(*self.inputs, **self.kwargs)

    def change(self, x, idx, old, h):
        """(L(x + h e_i) - L(x - h e_i)) / 2h. Subtracting the outputs before
        summing cancels every output the coordinate does not touch exactly."""
        x[idx] = old + h
        plus = self.forward()
        x[idx] = old - h
        minus = self.forward()
        return float(xp.sum((plus - minus) * self.dout)) / (2 * h)

    def numeric_gradient(self, x, idx):
        """dL/dx[idx], fourth order: (4 d(h) - d(2h)) / 3 with d the central difference."""
        old = x[idx].copy()
        h = self.eps
        for _ in range(3):
            d1, d2 = self.change(x, idx, old, h), self.change(x, idx, old, 2 * h)
            # For a smooth function d1 and d2 agree to O(h^2); a large gap
            # means a kink (ReLU at 0) lies within 2h: retry with a smaller h.
            if abs(d1 - d2) <= 1e-4 * max(abs(d1), abs(d2), self.floor):
                break
            h /= 100
        x[idx] = old
        return (4 * d1 - d2) / 3


def _analytic_gradients(loss, params):
    """[(name, array, its analytic gradient as float64 NumPy)] from one backward.

    An array passed twice (self-attention's q = k = v) is listed once, with the
    sum of its gradients and a joined name ("input k=v").
    """
    module, inputs = loss.module, loss.inputs
    module.zero_grad()
    loss.forward()
    input_grads = _as_tuple(module.backward(loss.dout))
    float_inputs = [x for x in inputs if _is_float_array(x)]
    if len(input_grads) != len(float_inputs):
        raise InputError(f"backward returned {len(input_grads)} gradients for "
                         f"{len(float_inputs)} floating-point inputs")
    targets = {}
    for name, x, g in zip(_input_names(module, inputs), float_inputs, input_grads):
        if id(x) in targets:
            targets[id(x)][0] += "=" + name[len("input "):]      # e.g. "input k=v"
            targets[id(x)][2] = targets[id(x)][2] + to_numpy(g)
        else:
            targets[id(x)] = [name, x, np.array(to_numpy(g), dtype=np.float64)]
    targets = list(targets.values())
    targets += [[name, p, np.array(to_numpy(g), dtype=np.float64)] for name, p, g in params]
    for name, x, analytic in targets:
        if analytic.shape != tuple(x.shape):
            raise InputError(f"gradient of {name}: expected shape {tuple(x.shape)}, "
                             f"got {analytic.shape}")
    return targets


def perturb(module, rng, scale=0.3):
    """Add noise to every vector parameter (biases, LayerNorm gain and shift), in place,
    so that the zero biases and unit gains of a fresh module hide no bug; returns module."""
    for _, param, _ in module.named_parameters():
        if param.ndim == 1:
            param += xp.asarray(scale * rng.normal(size=param.shape), dtype=param.dtype)
    return module


def assert_gradients_close(module, *inputs, rtol=1e-7, **kwargs):
    """`gradcheck` that raises AssertionError with the report when any tensor fails."""
    report = gradcheck(module, *inputs, rtol=rtol, **kwargs)
    if not report.passed:
        raise AssertionError("gradient check failed\n" + str(report))
    return report
