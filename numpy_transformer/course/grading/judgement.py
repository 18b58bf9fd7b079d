"""The one judgement of a task's arrays, for the grader (scoring.py) and `assignment check`
(local_check.py): both call `compare`, so a body the grader gives full marks passes the
check, and the reverse.

    compare(expected, got, keys, tolerance, inputs=None, args=None)
        -> (largest error, [what is wrong with each array, in words])

An array is compared with the one expected of it, the error measured against the
magnitudes that went into it:

    err = max |got - expected| / max(max |expected|, ROUNDING * T),   ROUNDING = 1e-2
    T   = the largest |value| of the task: its float input arrays and its compared
          expected outputs

Why the floor. Any two correct ways of writing a backward round differently, by a
few float64 epsilons of the values that went into each sum. Most arrays are as large
as those values, and the relative error is ~1e-16. But an array that is zero in exact
arithmetic comes out as rounding noise: the gradient of the key projection's bias in
multi-head attention (0 whatever the inputs, lesson 3 asks why), 1e-15 to 1e-19,
its digits different for every order of the products.
Measured by itself that noise is off by 100%. Measured against T it is small: the
correct alternatives of tests/course/test_one_judgement.py leave at most 2.4e-15 of
noise where T is 21 (1.1e-16 T); with the floor at 1e-2 T that is err 1.2e-14, 80
times inside the tolerance of 1e-12 (at 1e-3 T it would be 1.2e-13, too close).
Every mistake stays caught: one changes an array by 1e-3 of itself or more, so only an
array below 1e-12 * 1e-2 / 1e-3 = 1e-11 of T could hide one, and no check's array is
that small unless it is zero (tests/course/test_one_judgement.py runs the catalogue).
The grader and the check apply the same rule to every part, composite or not.

The verdicts:

    pass                every compared array of the expected shape and dtype, finite and
                        err <= the check's tolerance (1e-12: float64 rounding, with room)
    numerically close   err <= NUMERIC (1e-6): float32 round-off ("computed in float32?")
                        or a finite difference, not exact
    wrong               err above NUMERIC, with diagnose.py's reading of how the arrays
                        differ (its inputs: the task's inputs and any "term.*" arrays of
                        the expected outputs, which are never compared)

Harness code: imports nothing but NumPy and diagnose.py (a student copy holds it).
"""

import math

import numpy as np

from .diagnose import diagnose, not_finite

NUMERIC = 1e-6      # a wrong array this close is numerics, not derivation
ROUNDING = 1e-2     # an array's floor of scale, as a fraction of the task's largest value
FLOAT32_EPS = float(np.finfo(np.float32).eps)      # 1.2e-7: float32's round-off


def label(name):
    """How a failure message calls an output array of a scenario."""
    if name.startswith("dx."):
        return f"the gradient of input {int(name[3:]) + 1}"
    if name.startswith("grad."):
        return f"the gradient of {name[5:]}"
    return {"out": "the forward output", "inplace": "gradients added in place (+=)",
            "dropout.draws": "masks drawn by dropout"}.get(name, name)


def compared(expected, keys):
    """The names of `expected` a check compares: not the diagnosis' "term.*" arrays, and
    only those starting with one of `keys` when the check names some."""
    return [n for n in expected if not n.startswith("term.") and (not keys or n.startswith(keys))]


def task_scale(expected, names, inputs):
    """T: the largest |value| among the task's float `inputs` and its compared expected
    arrays `names` (0.0 when there is none)."""
    arrays = [expected[n] for n in names] + list((inputs or {}).values())
    return max((float(np.abs(a).max(initial=0.0)) for a in arrays
                if np.asarray(a).dtype.kind == "f"), default=0.0)


def compare(expected, got, keys, tolerance, inputs=None, args=None):
    """(largest error, [problems]) of one task's outputs `got` against `expected` ({name:
    array}), at the check's `tolerance`, for the arrays the check's `keys` name (all when
    empty); `inputs`, `args`: the task's input arrays and arguments, to diagnose a wrong one.
    The largest error is inf for a missing array or one of another shape or dtype, nan for
    one not finite."""
    names = compared(expected, keys)
    floor = ROUNDING * task_scale(expected, names, inputs) or 1e-300
    inputs = {**(inputs or {}), **{n: a for n, a in expected.items() if n.startswith("term.")},
              **{"value." + n: a for n, a in expected.items() if not n.startswith(
                  ("term.", "dx.", "grad.", "update.", "change.")) and np.ndim(a) >= 1},
              **{"other." + n: a for n, a in expected.items() if n in names
                 and n.startswith(("dx.", "grad.")) and np.ndim(a) >= 1}}
    worst, problems = 0.0, []
    for name in names:
        want, have = expected[name], got.get(name)
        if have is None:
            problems.append((math.inf, f"{label(name)}: missing"))
        elif have.dtype.kind not in "fiub" or (want.dtype == bool) != (have.dtype == bool):
            problems.append((math.inf, f"{label(name)}: dtype {have.dtype}, expected "
                                       f"{want.dtype}"))
        elif have.shape != want.shape:
            seen = diagnose(label(name), name, want, have, inputs, args)
            problems.append((math.inf, f"{label(name)}: shape {have.shape}, expected "
                                       f"{want.shape}" + (f": {seen}" if seen else "")))
        elif want.dtype == bool:
            if not np.array_equal(have, want):
                problems.append((math.inf, f"{label(name)}: no"))
        elif not np.all(np.isfinite(have)):
            why = not_finite(label(name), name, want, have, inputs)
            problems.append((math.nan, f"{label(name)}: not finite" + (f": {why}" if why
                                                                         else "")))
        else:
            scale = max(float(np.abs(want).max(initial=0.0)), floor)
            err = float(np.abs(have - want).max(initial=0.0)) / scale
            worst = max(worst, err)
            if not err <= tolerance:
                problems.append((err, wrong_array(name, want, have, err, inputs, args)))
    problems = later_steps(names, problems)
    return largest([worst, *(e for e, _ in problems)]), [text for _, text in problems]


LATER = ("the first step agrees and a later one does not: what is carried from step to step "
         "(the optimizer's state, the step count, the current learning rate) is not kept, "
         "or not read afresh, or is rebound where it should be written in place?")


def later_steps(names, problems):
    """`problems`, where the arrays of a sequence of steps ("update.<step>.<name>",
    "change.<step>") agree at step 0 and not later and nothing else was said of them: each
    such message ends with what that suggests (LATER)."""
    step = lambda n: n.split(".")[1] if n.startswith(("update.", "change.")) else None  # noqa
    wrong_steps = {step(text.split(" ")[0]) for _, text in problems}
    if not any(step(n) is not None for n in names) or "0" in wrong_steps or not any(
            s not in (None, "0") for s in wrong_steps) or not any(step(n) == "0" for n in names):
        return problems
    return [(e, text if ": " in text.split(")", 1)[-1] or step(text.split(" ")[0]) is None
             else f"{text}: {LATER}") for e, text in problems]


def largest(errors):
    """The largest of `errors`, nan (an array not finite) counted above every number."""
    return max(errors, key=lambda e: math.inf if math.isnan(e) else e)


def wrong_array(name, want, have, err, inputs, args):
    """The message of an array outside the tolerance: numerically close, or diagnosed."""
    if err <= NUMERIC:              # float32 round-off, or a finite difference
        return numeric_message(label(name), want, have, err)
    seen = diagnose(label(name), name, want, have, inputs, args)
    if name == "dropout.draws":
        return seen or f"{label(name)}: {int(have.max())}, expected {int(want.max())}"
    return f"{label(name)} (rel err {err:.1e})" + (f": {seen}" if seen else "")


def float32_like(want, have):
    """`have` (float64) looks computed in float32: every value is a float32, or every value
    is within a few float32 roundings of `want` (a finite difference is off by an amount
    that does not shrink with the value)."""
    if np.array_equal(have.astype(np.float32).astype(have.dtype), have):
        return True
    return bool(np.all(np.abs(have - want) <= 16 * FLOAT32_EPS * np.abs(want)))


def numeric_message(name, want, have, err):
    """The message of an array `have` within NUMERIC of `want` but outside the tolerance."""
    if float32_like(want, have) and err >= FLOAT32_EPS / 16:
        return (f"{name} is numerically close (rel err {err:.0e}) at float32 round-off: "
                "computed in float32? compute in the inputs' dtype")
    return (f"{name} is numerically close (rel err {err:.1e}), not exact: is this a "
            "finite-difference gradient?")
