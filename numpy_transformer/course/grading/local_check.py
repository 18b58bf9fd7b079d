"""`assignment check [PART ...]` in a student copy: the grader's verdicts, run locally.

    write_expected(path, checks)   at `assignment make`: every check's tasks run on the
                                   reference on public inputs, their inputs and outputs
                                   saved as numbers in expected.npz
    check_parts(parts=None)        in the copy: {part: (verdict, message)}
    check_command(parts, out=print)   one line per part; 0 when every asked part passes

The copy holds expected.npz (expected outputs on fixed public inputs, as numbers:
no code, no formula; the grader draws its own inputs at grading time from a secret
the copy does not hold, harness.task_seed, so a lookup in this file finds none of
them; a table that depends on its sizes alone, the sinusoidal one, is checked here
at other sizes than the grader's, PUBLIC_SIZES) and the grader's table of scenarios (harness.py, steps.py,
scenarios_*.py), run with the switch set to the package's OWN sub-layers (the
copy holds no stand-ins): each part's module of the copy is fed the saved
inputs and its outputs are compared with the saved ones as the grader does:
pass at the check's tolerance (1e-12 relative), "numerically close" up to 1e-6,
else wrong (with diagnose.py's reading of how the arrays differ). A composite
part whose own check fails while a part it uses fails too says "check PART first".
"""

import json
from pathlib import Path

import numpy as np

from ...errors import InputError
from .diagnose import diagnose
from .harness import Draw, Read, run_task, task_seed
from ..parts import validate_parts

PACKAGE = __name__.split(".")[0]        # the package under check: the copy's own
HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "expected.npz"
NUMERIC = 1e-6      # closer than this but not exact: numerics, not derivation
FLOAT32_EPS = float(np.finfo(np.float32).eps)      # 1.2e-7: float32's round-off

# A composite part runs these parts' code too: when one of them fails, check it first.
USES = {
    "attention": ("softmax", "dropout"), "multihead_attention": ("linear", "softmax", "attention"),
    "mla": ("linear",), "feedforward": ("linear", "gelu", "dropout"),
    "positional_encoding": ("dropout",), "adam": ("adamw",),
    "encoder_stack": ("linear", "layernorm", "softmax", "dropout", "attention",
                      "multihead_attention", "feedforward"),
}
USES["decoder_stack"] = USES["encoder_stack"]

# Outputs that depend on a task's sizes alone (no drawn input): the public check runs them
# at other sizes (kind -> {argument: added}): d_model + 2 keeps its parity and changes every
# frequency of the sinusoidal table but the first; a vocabulary one larger changes the loss
# gradient of uniform logits.
PUBLIC_SIZES = {"positional_encoding": {"d_model": 2}, "cross_entropy": {"vocab": 1}}


def public_task(spec):
    """The task `spec` as the public check runs it: its sizes changed where PUBLIC_SIZES says."""
    changes = PUBLIC_SIZES.get(spec["kind"], {})
    args = {k: v + changes[k] if k in changes else v for k, v in spec["args"].items()}
    return {**spec, "args": args}


def write_expected(path, checks):
    """Run every check of `checks` (the grader's Check objects) on the reference, with its
    own sub-layers, and save the tasks, their inputs and outputs to `path` (an .npz)."""
    plan, arrays = {}, {}
    for c in checks:
        tasks = []
        for j, spec in enumerate(c.tasks):
            tid = f"{c.part}.{c.name}.{j}"
            spec = public_task(spec)
            source = Draw(task_seed(spec["seed"]))         # the public stream, not the grader's
            outputs = run_task(PACKAGE, spec, source)
            arrays.update({f"in:{tid}:{n}": a for n, a in source.arrays.items()})
            arrays.update({f"out:{tid}:{n}": a for n, a in outputs.items()})
            tasks.append({"id": tid, "kind": spec["kind"], "args": spec["args"]})
        plan.setdefault(c.part, []).append({"name": c.name, "keys": list(c.keys),
                                            "tolerance": c.tolerance, "tasks": tasks})
    np.savez_compressed(path, plan=np.array(json.dumps(plan)), **arrays)


def load(path=EXPECTED):
    if not Path(path).is_file():
        raise InputError(f"{path} is missing: `assignment check` runs in a student copy made "
                         "by `assignment make` (the teacher grades with `assignment grade`)")
    with np.load(path) as data:
        return json.loads(str(data["plan"])), {k: data[k] for k in data.files if k != "plan"}


def prefixed(arrays, prefix):
    return {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}


def label(name):
    """How a failure message calls an output array of a scenario."""
    if name.startswith("dx."):
        return f"the gradient of input {int(name[3:]) + 1}"
    if name.startswith("grad."):
        return f"the gradient of {name[5:]}"
    return {"out": "the forward output", "inplace": "gradients added in place (+=)",
            "dropout.draws": "masks drawn by dropout"}.get(name, name)


def compare(name, want, have, tolerance, inputs, args):
    """"" when `have` agrees with `want`, else what is wrong (the grader's kind of message)."""
    name, key = label(name), name
    if have is None:
        return f"{name}: missing"
    if want.dtype == bool or have.dtype == bool:
        return "" if have.shape == want.shape and np.array_equal(have, want) else f"{name}: no"
    if have.shape != want.shape:
        return f"{name}: shape {have.shape}, expected {want.shape}"
    if not np.all(np.isfinite(have)):
        return f"{name}: not finite"
    scale = max(float(np.abs(want).max(initial=0.0)), 1e-300)
    err = float(np.abs(have - want).max(initial=0.0)) / scale
    if err <= tolerance:
        return ""
    if err <= NUMERIC:
        return numeric_message(name, want, have, err)
    seen = diagnose(name, key, want, have, inputs, args)
    return f"{name} (rel err {err:.1e})" + (f": {seen}" if seen else "")


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


def run_check(check, arrays):
    """"" when every task of `check` agrees, else the first problem."""
    for task in check["tasks"]:
        inputs = prefixed(arrays, f"in:{task['id']}:")
        expected = prefixed(arrays, f"out:{task['id']}:")
        try:
            got = run_task(PACKAGE, task, Read(inputs))
        except NotImplementedError as err:
            return f"not implemented: {err}"
        except Exception as err:            # the student's code: any error fails the check
            return f"error: {type(err).__name__}: {err}"
        keys = tuple(check["keys"])
        for name in [n for n in expected if not keys or n.startswith(keys)]:
            problem = compare(name, expected[name], got.get(name), check["tolerance"],
                              inputs, task["args"])
            if problem:
                return problem
    return ""


def check_parts(parts=None, path=EXPECTED):
    """{part: ("pass" | "fail" | "check first", message)} for `parts` (default: all)."""
    plan, arrays = load(path)
    own = {}

    def own_verdict(part):
        if part not in own:
            problems = [(c["name"], run_check(c, arrays)) for c in plan.get(part, [])]
            own[part] = [f"{name}: {p}" for name, p in problems if p]
        return own[part]

    verdicts = {}
    for part in validate_parts(parts):
        failed = own_verdict(part)
        first = [p for p in USES.get(part, ()) if p in plan and own_verdict(p)]
        mine = [p for p in failed if f"[assignment part {part}]" in p]
        if not failed:
            verdicts[part] = ("pass", "")
        elif mine and all(": not implemented: " in p for p in failed):
            verdicts[part] = ("fail", mine[0].split(": ", 1)[1])     # the stub's message once
        elif first:
            verdicts[part] = ("check first", f"check {', '.join(first)} first (this part runs "
                                             "their code too, and they fail)")
        else:
            verdicts[part] = ("fail", "; ".join(failed))
    return verdicts


def check_command(parts=None, out=print):
    """`assignment check [PART ...]`: one line per part; 0 when every asked part passes."""
    verdicts = check_parts(parts)
    for part, (verdict, message) in verdicts.items():
        out(f"{part:<20} {verdict}" + (f": {message}" if message else ""))
    passed = sum(v == "pass" for v, _ in verdicts.values())
    out(f"{passed} of {len(verdicts)} parts pass (expected outputs: {EXPECTED.name}; "
        "the grader's points need `assignment grade`)")
    return 0 if passed == len(verdicts) else 1

