"""A faster form of Adam's update, for training: the same numbers (to rounding), no new math.

    fast.adam_update(optimizer, p, g, state, scratch, weight_decay)
        same as optimizer._update(p, g, state, scratch, weight_decay), Adam's plain update

Adam's update written plainly makes about ten temporaries the size of the
parameter, and for a large model allocating and filling them costs as much as
the arithmetic. This form writes every intermediate into two preallocated
scratch buffers instead, and folds the two bias corrections into two scalars
(one pass over the parameter fewer). An Adam built with `fast=True`, as the
Trainer builds it, runs it in place of `_update`; tests/core/test_optim.py checks
it against the plain form.

This file is the fast form of assignment part adam, and says so (FAST_FORM_OF): a
student copy that stubs the part leaves the file out, since it computes the answer,
and there Adam runs the plain update, the student's (optim/adam.py).
"""

import math

from ..backend import xp

FAST_FORM_OF = "adam"       # the graded part whose answer this file computes


def adam_update(optimizer, p, g, state, scratch, weight_decay):
    """Same as `optimizer._update(p, g, state, scratch, weight_decay)`, Adam's or AdamW's plain
    update of p (optim/adam.py), in place, its temporaries in the two `scratch` buffers.

    Shapes: p, g, the state's m and v, and the scratch buffers alike. With c = sqrt(1 - b2^t),
        lr m_hat / (sqrt(v_hat) + eps) = (lr c / (1 - b1^t)) m / (sqrt(v) + eps c)
    which needs no m_hat or v_hat array.
    """
    m, v = state["exp_avg"], state["exp_avg_sq"]
    s1, s2 = scratch
    (b1, b2), t, wd = optimizer.betas, optimizer.step_count, weight_decay
    if wd and optimizer.decoupled:
        optimizer.decay(p, wd)                        # AdamW: p <- p (1 - lr wd), first
    if wd and not optimizer.decoupled:
        xp.multiply(p, wd, out=s1)                    # Adam: g + wd p, in s1
        s1 += g
        g = s1
    m *= b1                                           # m = b1 m + (1 - b1) g
    xp.multiply(g, 1 - b1, out=s2)
    m += s2
    v *= b2                                           # v = b2 v + (1 - b2) g g
    xp.multiply(g, g, out=s2)
    s2 *= 1 - b2
    v += s2
    c = math.sqrt(1 - b2**t)
    step = optimizer.lr * c / (1 - b1**t)
    xp.sqrt(v, out=s2)                                # sqrt(v) + eps c
    s2 += optimizer.eps * c
    xp.divide(m, s2, out=s2)                          # p -= step m / (sqrt(v) + eps c)
    s2 *= step
    p -= s2
