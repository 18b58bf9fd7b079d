"""Faster forms of Adam's update, for training: the same numbers (to rounding), no new math.

    fast.adam_update(optimizer, p, g, state, scratch, weight_decay)
        same as optimizer._update(p, g, state, scratch, weight_decay), Adam's plain update
        of one parameter                          (Adam(..., fast="per-array"))
    fast.adam_flat_step(optimizer)
        the same update of every parameter at once, on the flat buffers (optim/flat.py)
                                                  (Adam(..., fast=True), the Trainer's)

Adam's update written plainly makes about ten temporaries the size of the
parameter, and for a large model allocating and filling them costs as much as
the arithmetic. These forms write every intermediate into two preallocated
scratch buffers instead, and fold the two bias corrections into two scalars
(one pass over the parameter fewer). The flat form runs the same lines over a
whole buffer of parameters: on a device twelve kernels a step, whatever the number
of arrays; on the CPU block after cache-sized block (flat.py), so that p, g, m and v
are read and written about once a step. tests/core/test_optim.py and
tests/core/test_flat_optimizer.py check them against the plain form.

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

    Shapes: p, g, the state's m and v, and the scratch buffers alike.
    """
    s1, s2 = scratch
    wd = weight_decay
    if wd and optimizer.decoupled:
        optimizer.decay(p, wd)                        # AdamW: p <- p (1 - lr wd), first
    if wd and not optimizer.decoupled:
        xp.multiply(p, wd, out=s1)                    # Adam: g + wd p, in s1
        s1 += g
        g = s1
    moments_and_step(optimizer, p, g, state["exp_avg"], state["exp_avg_sq"], s2)


def adam_flat_step(optimizer):
    """Adam's or AdamW's step of every parameter, on the optimizer's flat buffers
    (`optimizer.flat`, optim/flat.py's FlatState): what adam_update does to each parameter.

    For each buffer (one per dtype), piece by piece (flat.py: CPU blocks or the whole
    buffer), with the weight decay wd of each group's slice [lo, hi) of the piece:
        AdamW: p[lo:hi] <- p[lo:hi] (1 - lr wd)             one operation a slice
        Adam:  g' = g, and g'[lo:hi] = g[lo:hi] + wd p[lo:hi]  in scratch s1
    then m, v and p over the whole piece (moments_and_step). Shapes: all (n,), n = stop - start.
    """
    flat, groups = optimizer.flat, optimizer.param_groups
    decays = [group.get("weight_decay", optimizer.weight_decay) for group in groups]
    for buffer, state, pieces, (s1, s2) in zip(flat.layout.buffers, flat.state, flat.pieces,
                                               flat.scratch):
        for start, stop, slices in pieces:
            n = stop - start
            p, g = buffer.param[start:stop], buffer.grad[start:stop]              # (n,)
            m, v = state["exp_avg"][start:stop], state["exp_avg_sq"][start:stop]  # (n,)
            decayed = [(lo, hi, decays[group]) for lo, hi, group in slices if decays[group]]
            if decayed and optimizer.decoupled:
                for lo, hi, wd in decayed:
                    optimizer.decay(p[lo:hi], wd)     # AdamW: p <- p (1 - lr wd), first
            elif decayed:
                s1[:n] = g                            # Adam: g + wd p on the decayed slices
                for lo, hi, wd in decayed:
                    xp.multiply(p[lo:hi], wd, out=s2[lo:hi])
                    s1[lo:hi] += s2[lo:hi]
                g = s1[:n]
            moments_and_step(optimizer, p, g, m, v, s2[:n])


def moments_and_step(optimizer, p, g, m, v, s):
    """m, v and p updated in place from g (its decay done), one scratch array s shaped like
    them. With c = sqrt(1 - b2^t),
        lr m_hat / (sqrt(v_hat) + eps) = (lr c / (1 - b1^t)) m / (sqrt(v) + eps c)
    which needs no m_hat or v_hat array: twelve operations.
    """
    (b1, b2), t = optimizer.betas, optimizer.step_count
    m *= b1                                           # m = b1 m + (1 - b1) g
    xp.multiply(g, 1 - b1, out=s)
    m += s
    v *= b2                                           # v = b2 v + (1 - b2) g g
    xp.multiply(g, g, out=s)
    s *= 1 - b2
    v += s
    c = math.sqrt(1 - b2**t)
    step = optimizer.lr * c / (1 - b1**t)
    xp.sqrt(v, out=s)                                 # sqrt(v) + eps c
    s += optimizer.eps * c
    xp.divide(m, s, out=s)                            # p -= step m / (sqrt(v) + eps c)
    s *= step
    p -= s
