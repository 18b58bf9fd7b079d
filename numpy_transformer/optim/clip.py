"""Gradient clipping by global norm, as torch.nn.utils.clip_grad_norm_.

    total = sqrt(sum over all parameters of sum(g^2))     the global L2 norm
    if total > max_norm:  every g <- g * max_norm / (total + 1e-6)

One factor for all gradients keeps the update's direction and only shortens
it; the 1e-6 (PyTorch's) keeps the division safe. The sum of squares is taken
as dot products g . g, which need no big temporary: on the CPU one per CHUNK
elements, added in float64 (a single float32 dot over millions of elements
loses three digits), so a flat optimizer's one gradient buffer (optim/flat.py)
is one pass over memory and as exact as the arrays one by one.

On a GPU nothing comes back to the host: the factor min(1, max_norm / (total +
1e-6)) is computed and applied on the device (1 where the norm is not finite),
and the norm is returned as a 0-d device array.
"""

import math

from ..backend import get_backend, xp
from ..errors import InputTypeError
from ..validation import check_positive, message

_EPS = 1e-6
CHUNK = 65536       # elements of one float32 dot product on the CPU (its error ~ CHUNK eps)


def clip_grad_norm(grads, max_norm):
    """Scale the gradients `grads` in place so their global L2 norm is at most `max_norm`;
    return the norm before clipping, as a Python float (NumPy) or a 0-d device array
    (CuPy: no wait for the device).

    grads: a list of gradient arrays, each listed once, as torch's takes its parameters:
    an optimizer's `grads` (listed when it was built, so a training step walks no module
    tree; a flat optimizer's: its one gradient buffer, so one reduction and one scaling);
    or a Module, whose gradients are walked now (a tied array's counted once).
    If the norm is inf or NaN the gradients are left untouched and the norm is returned,
    so the caller can skip the step (PyTorch would scale them into NaNs).
    """
    check_positive(max_norm, "max_norm")
    if hasattr(grads, "named_parameters"):
        grads = [grad for _, _, grad in grads.named_parameters()]
    elif not isinstance(grads, (list, tuple)):
        raise InputTypeError(message("grads", "a list of gradient arrays or a Module",
                                     type(grads).__name__))
    if not grads:
        return 0.0
    if get_backend() != "numpy":
        return _clip_on_device(grads, max_norm)
    total = math.sqrt(sum(_sum_of_squares(g.reshape(-1)) for g in grads))
    coef = max_norm / (total + _EPS)
    if math.isfinite(total) and coef < 1.0:
        for g in grads:
            g *= coef
    return total


def _sum_of_squares(g):
    """sum(g^2) of a 1-D array as a Python float: a dot product per CHUNK, added in float64."""
    return sum(float(xp.dot(c, c)) for c in (g[i:i + CHUNK] for i in range(0, g.size, CHUNK)))


def _clip_on_device(grads, max_norm):
    """clip_grad_norm without a host round trip, in the gradients' dtype. Each norm is
    sqrt(g . g): CuPy's linalg.norm would square g into a temporary the size of g."""
    if len(grads) == 1:                                  # a flat optimizer's buffer
        total = xp.sqrt(xp.dot(grads[0].ravel(), grads[0].ravel()))       # ()
    else:
        norms = xp.stack([xp.sqrt(xp.dot(g.ravel(), g.ravel())) for g in grads])   # (P,)
        total = xp.linalg.norm(norms)                                     # ()
    coef = xp.minimum(max_norm / (total + _EPS), 1)                       # ()
    coef = xp.where(xp.isfinite(total), coef, 1).astype(grads[0].dtype)   # ()
    for g in grads:
        g *= coef
    return total
