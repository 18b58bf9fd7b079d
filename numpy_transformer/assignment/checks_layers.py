"""Checks of the layer parts: linear, embedding, layernorm, softmax and feedforward,
and the helpers every check uses. Each states the error a correct answer reaches.
The gradient-check cases themselves are shared with the tests: gradcheck_cases.py.

Finite differences run in float64 (the checker's fourth-order central
differences with eps = 1e-4): a correct backward agrees to about 1e-9 (often
1e-10) and a check passes at 1e-7 relative; a wrong one is off by 1e-2 or
more. The other checks compare with exact expectations (accumulation, closed
forms) and reach about 1e-15.
"""

import numpy as np

from ..gradcheck import gradcheck, perturb
from ..gradcheck_cases import cases_of, rand
from .registry import CheckFailed, check

FD = "max rel err ~1e-9 against finite differences (pass <= 1e-7)"
EXACT = "equal up to rounding, rel err ~1e-15 (pass <= 1e-10)"


def failed(report, what):
    """CheckFailed naming the tensors of a failed gradcheck report."""
    bad = report.failing
    names = ", ".join(f"{r.name} ({r.max_rel_error:.1e})" for r in bad[:3])
    more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
    verb = "does" if len(bad) == 1 else "do"
    return CheckFailed(f"{what}: the gradient{'s' * (len(bad) > 1)} of {names}{more} {verb} "
                       "not match finite differences (or not finite)", report.max_rel_error)


def gradients_agree(module, *inputs, what, rtol=1e-7, **kwargs):
    """gradcheck; CheckFailed naming the tensors that disagree. Returns the max rel error."""
    report = gradcheck(module, *inputs, rtol=rtol, **kwargs)
    if not report.passed:
        raise failed(report, what)
    return report.max_rel_error


def cases_agree(pkg, group):
    """Run the shared gradient-check cases of `group` (gradcheck_cases.py) on `pkg`;
    CheckFailed naming the first that disagrees. Returns the largest relative error."""
    worst = 0.0
    for case in cases_of(group):
        report = case.run(pkg)
        if not report.passed:
            raise failed(report, case.name)
        worst = max(worst, report.max_rel_error)
    return worst


def case_check(part, points, expect, group, name):
    """Register a check called `name`, worth `points` of `part`: the gradient-check cases
    of `group` agree (cases_agree)."""
    def run(pkg):
        return cases_agree(pkg, group)
    run.__name__ = name
    check(part, points, expect)(run)


def accumulation_check(part, points, group, name):
    """Register a check called `name`: the module of `group`'s first gradient-check case,
    run forward and backward twice without zero_grad, must double every gradient in place."""
    def run(pkg):
        module, inputs, kwargs = cases_of(group)[0].build(pkg, np.random.default_rng(99))
        out = module.forward(*inputs, **kwargs)
        dout = rand(pkg, np.random.default_rng(98), *out.shape)
        return accumulates(pkg, module, lambda: module.forward(*inputs, **kwargs), dout,
                           type(module).__name__)
    run.__name__ = name
    check(part, points, EXACT)(run)


def relative_error(pkg, got, expected):
    xp = pkg.xp
    scale = max(float(xp.abs(expected).max(initial=0.0)), 1e-300)
    err = float(xp.abs(got - expected).max(initial=0.0)) / scale
    return err if bool(xp.all(xp.isfinite(got))) else float("nan")


def assert_close(pkg, got, expected, what, tol=1e-10):
    err = relative_error(pkg, got, expected)
    if not err <= tol:
        raise CheckFailed(f"{what} (rel err {err:.1e})", err)
    return err


def accumulates(pkg, module, run_forward, dout, what):
    """forward+backward twice without zero_grad: every gradient must double, in place."""
    module.zero_grad()
    arrays = {name: grad for name, _, grad in module.named_parameters()}
    run_forward()
    module.backward(dout)
    once = {name: grad.copy() for name, grad in arrays.items()}
    run_forward()
    module.backward(dout)
    worst = 0.0
    for name, _, grad in module.named_parameters():
        if grad is not arrays[name]:
            raise CheckFailed(f"{what}: backward replaced the array grads[{name!r}]; add into it "
                              "in place with += (tied weights and zero_grad rely on it)")
        worst = max(worst, assert_close(pkg, grad, 2 * once[name],
                                        f"{what}: after two backward calls grads[{name!r}] must "
                                        "be twice one call's: ADD with +=, never overwrite"))
    return worst


case_check("linear", 4, FD, "linear", "linear_gradients")
accumulation_check("linear", 3, "linear", "linear_accumulates")


@check("linear", 3, "finite differences ~1e-9 (pass <= 1e-7); accumulation exact, ~1e-15")
def tied_linear_accumulates(pkg):
    rng = np.random.default_rng(3)
    embedding = pkg.Embedding(7, 4, rng=rng)
    tied = perturb(pkg.TiedLinear(embedding), rng)
    x, dy = rand(pkg, rng, 2, 3, 4), rand(pkg, rng, 2, 3, 7)
    err = cases_agree(pkg, "tied_linear")
    tied.zero_grad()
    tied.forward(x)
    tied.backward(dy)
    alone = embedding.grads["weight"].copy()
    shared = embedding.grads["weight"]
    before = rand(pkg, rng, 7, 4)              # what the embedding's own backward added
    shared[...] = before
    tied.forward(x)
    tied.backward(dy)
    if tied.grads["weight"] is not shared or embedding.grads["weight"] is not shared:
        raise CheckFailed("TiedLinear replaced the gradient array it shares with the embedding: "
                          "add into it in place with +=")
    return max(err, assert_close(pkg, shared, before + alone,
                                 "TiedLinear must ADD its gradient to what the tied embedding "
                                 "already put in the shared array"))
case_check("embedding", 4, FD, "embedding", "embedding_gradients")


@check("embedding", 3, EXACT)
def embedding_repeated_ids(pkg):
    rng = np.random.default_rng(5)
    emb = pkg.Embedding(5, 3, scale=False, rng=rng)
    ids = pkg.xp.full((2, 3), 2)                               # one token, six times
    dy = rand(pkg, rng, 2, 3, 3)
    emb.zero_grad()
    emb.forward(ids)
    emb.backward(dy)
    expected = pkg.xp.zeros((5, 3))
    expected[2] = dy.reshape(-1, 3).sum(axis=0)
    return assert_close(pkg, emb.grads["weight"], expected,
                        "a token id that occurs 6 times must get the sum of its 6 rows of dy")
accumulation_check("embedding", 3, "embedding", "embedding_accumulates")
case_check("layernorm", 6, FD, "layernorm", "layernorm_gradients")
accumulation_check("layernorm", 4, "layernorm", "layernorm_accumulates")
case_check("softmax", 6, FD, "softmax", "softmax_gradients")


@check("softmax", 4, "finite, 0 on masked entries; finite differences ~1e-9 (pass <= 1e-7)")
def softmax_fully_masked_row(pkg):
    rng = np.random.default_rng(10)
    mask = pkg.xp.ones((2, 3, 5), dtype=bool)
    mask[0, 1, :] = False                                      # a row with nothing allowed
    mask[1, :, 3:] = False
    x, dp = rand(pkg, rng, 2, 3, 5, scale=3.0), rand(pkg, rng, 2, 3, 5)
    softmax = pkg.Softmax()
    err = cases_agree(pkg, "softmax_masked")
    softmax.forward(x, mask=mask)
    dx = softmax.backward(dp)
    if not bool(pkg.xp.all(pkg.xp.isfinite(dx))) or bool(pkg.xp.any(dx[~mask] != 0)):
        raise CheckFailed("the gradient of a fully masked row must be all zeros, never NaN",
                          float("nan"))
    return err


case_check("feedforward", 4, FD, "feedforward_relu", "feedforward_relu_dropout")
case_check("feedforward", 3, FD, "feedforward_gelu", "feedforward_gelu")
accumulation_check("feedforward", 3, "feedforward_gelu", "feedforward_accumulates")
