"""Checks of the training parts: cross_entropy (the fused loss backward) and adam.

The loss is checked against float64 finite differences (a correct gradient
agrees to about 1e-9, pass at 1e-7) and against the closed form on uniform
logits; Adam against the textbook update with bias correction, written out
step by step below (a correct update agrees to about 1e-15).
"""

import numpy as np

from .checks_layers import EXACT, FD, assert_close, gradients_agree, rand, relative_error
from .registry import CheckFailed, check


def loss_module(pkg, loss, targets):
    """The loss as a Module of the logits alone, for the finite-difference checker."""

    class LossOfLogits(pkg.Module):
        def forward(self, logits):
            return pkg.xp.asarray(loss.forward(logits, targets))           # () scalar

        def backward(self, dout):
            return loss.backward(float(dout))

    return LossOfLogits()


def targets_with_padding(pkg):
    return pkg.xp.asarray([[3, 0, 1], [4, 2, 0]])           # id 0 is ignored: N = 4 of 6


@check("cross_entropy", 4, FD)
def cross_entropy_gradients(pkg):
    rng = np.random.default_rng(20)
    logits = rand(pkg, rng, 2, 3, 5, scale=2.0)
    targets = targets_with_padding(pkg)
    e1 = gradients_agree(loss_module(pkg, pkg.CrossEntropyLoss(), targets), logits,
                         what="cross-entropy of logits (2, 3, 5), dloss != 1")
    e2 = gradients_agree(loss_module(pkg, pkg.CrossEntropyLoss(ignore_index=0), targets),
                         logits, what="cross-entropy with ignore_index=0 (4 of 6 tokens count)")
    return max(e1, e2)


@check("cross_entropy", 3, "closed form on uniform logits ~1e-16; finite differences ~1e-9")
def cross_entropy_label_smoothing(pkg):
    rng = np.random.default_rng(21)
    eps, V, N = 0.2, 5, 4
    targets = targets_with_padding(pkg)
    loss = pkg.CrossEntropyLoss(ignore_index=0, label_smoothing=eps)
    err = gradients_agree(loss_module(pkg, loss, targets), rand(pkg, rng, 2, 3, V, scale=2.0),
                          what="cross-entropy with label_smoothing=0.2 and ignore_index=0")
    # Uniform logits: p = 1/V everywhere and q = (1 - eps) onehot(t) + eps / V (the eps
    # mass spread over all V classes), so dlogits = (1/V - q) / N on counted rows.
    loss.forward(pkg.xp.zeros((2, 3, V)), targets)
    got = loss.backward()
    expected = pkg.xp.full((2, 3, V), (1 / V - eps / V) / N)
    for b, t in ((0, 0), (0, 2), (1, 0), (1, 1)):
        expected[b, t, int(targets[b, t])] -= (1 - eps) / N
    expected[0, 1] = expected[1, 2] = 0.0                   # ignored positions
    return max(err, assert_close(pkg, got, expected, "label smoothing: on uniform logits the "
                                 "gradient must be (1/V - q) / N with q = (1 - eps) onehot + "
                                 "eps / V over all V classes"))


@check("cross_entropy", 3, EXACT)
def cross_entropy_scaling_and_all_ignored(pkg):
    rng = np.random.default_rng(22)
    loss = pkg.CrossEntropyLoss(ignore_index=0)
    logits, targets = rand(pkg, rng, 2, 3, 5), targets_with_padding(pkg)
    loss.forward(logits, targets)
    one = loss.backward(1.0)
    loss.forward(logits, targets)
    err = assert_close(pkg, loss.backward(2.5), 2.5 * one,
                       "backward(dloss) must scale the gradient by dloss")
    loss.forward(logits, pkg.xp.zeros((2, 3), dtype=int))   # every token ignored
    nothing = loss.backward()
    if not bool(pkg.xp.all(nothing == 0)):
        raise CheckFailed("when every target is ignored the gradient must be exactly 0 "
                          "(finite, no division by N = 0)", float("nan"))
    return err


def textbook_adam(p, grads, lr, betas, eps, wd, decoupled):
    """The parameter after len(grads) Adam (or AdamW) steps from p, written plainly."""
    (b1, b2), m, v = betas, 0.0, 0.0
    for t, g in enumerate(grads, start=1):
        if decoupled:
            p = p * (1 - lr * wd)
        else:
            g = g + wd * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat, v_hat = m / (1 - b1**t), v / (1 - b2**t)     # bias correction
        p = p - lr * m_hat / (v_hat**0.5 + eps)
    return p


def run_optimizer(pkg, make, grads, p0):
    model = pkg.Module()
    model.params = {"w": p0.copy()}
    model.grads = {"w": pkg.xp.zeros_like(p0)}
    weight = model.params["w"]
    optimizer = make(model)
    for g in grads:
        model.grads["w"][...] = g
        optimizer.step()
    if model.params["w"] is not weight:
        raise CheckFailed("the optimizer replaced the parameter array: update it in place")
    return weight


def compare_adam(pkg, name, wd, steps=3):
    rng = np.random.default_rng(23)
    p0 = rand(pkg, rng, 3, 4)
    grads = [rand(pkg, rng, 3, 4) * pkg.xp.asarray(10.0 ** rng.integers(-3, 3, (3, 4)))
             for _ in range(steps)]
    hyper = dict(lr=0.05, betas=(0.8, 0.95), eps=1e-6, weight_decay=wd)
    got = run_optimizer(pkg, lambda m: getattr(pkg, name)(m, **hyper), grads, p0)
    expected = textbook_adam(p0, grads, hyper["lr"], hyper["betas"], hyper["eps"], wd,
                             decoupled=name == "AdamW")
    return assert_close(pkg, got - p0, expected - p0,
                        f"{name}(lr=0.05, betas=(0.8, 0.95), eps=1e-6, weight_decay={wd}) after "
                        f"{steps} steps differs from the textbook update")


@check("adam", 4, EXACT)
def adam_closed_form(pkg):
    return compare_adam(pkg, "Adam", wd=0.0)


@check("adam", 3, EXACT)
def adam_weight_decay(pkg):
    return max(compare_adam(pkg, "Adam", wd=0.1), compare_adam(pkg, "AdamW", wd=0.1))


@check("adam", 3, "every coordinate moves by lr within ~1e-6 (pass <= 1e-4)")
def adam_first_step_is_lr_sign(pkg):
    rng = np.random.default_rng(24)
    p0 = rand(pkg, rng, 4, 5)
    g = rand(pkg, rng, 4, 5) * pkg.xp.asarray(10.0 ** rng.integers(-2, 4, (4, 5)))
    lr = 1e-2
    p = run_optimizer(pkg, lambda m: pkg.Adam(m, lr=lr, eps=1e-12), [g], p0)
    err = relative_error(pkg, p - p0, -lr * pkg.xp.sign(g))
    if not err <= 1e-4:
        raise CheckFailed("the first Adam step must move every coordinate by lr * sign(g) "
                          "(bias correction makes m / sqrt(v) = g / |g| at t = 1)", err)
    return err

