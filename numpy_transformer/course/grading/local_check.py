"""`assignment check [PART ...]` in a student copy: the grader's verdicts, run locally.

    write_expected(path, checks)   at `assignment make`: every check's tasks run on the
                                   reference on public inputs, their inputs and outputs
                                   saved as numbers in expected.npz
    assigned_parts()               the parts the copy assigns (its assignment.json)
    check_parts(parts=None)        in the copy: {part: (verdict, message)}
    check_command(parts, out=print)   one line per part; 0 when every asked part passes

The copy holds expected.npz (expected outputs on fixed public inputs, as numbers:
no code, no formula; the grader draws its own inputs at grading time from a secret
the copy does not hold, harness.task_seed, so a lookup in this file finds none of
them; a table that depends on its sizes alone, the sinusoidal one, is checked here
at other sizes than the grader's, PUBLIC_SIZES) and the grader's table of scenarios
(harness.py, steps.py, scenarios_*.py), run with the switch set to the package's OWN
sub-layers (the copy holds no stand-ins): each part's module of the copy is fed the
saved inputs and its outputs are compared with the saved ones by the grader's own
judgement (judgement.py: pass at the check's tolerance, 1e-12, each array measured
against its own size or 1e-2 of the task's largest value, whichever is larger;
"numerically close" up to 1e-6, else wrong, with diagnose.py's reading of how the
arrays differ). A composite part whose own check fails while a part it uses fails
too says "check PART first".

The check reports the parts the copy assigns (`assignment make --parts ...`, recorded
in the copy's assignment.json), as the grader's table does: a part not assigned holds
the reference's code, and is neither reported nor named in "check PART first".
"""

import json
from pathlib import Path

import numpy as np

from ...errors import InputError
from .harness import Draw, Read, run_task, task_seed
from .judgement import compare, label, numeric_message  # noqa: F401  (the grader's judgement)
from ..parts import PARTS, validate_parts

PACKAGE = __name__.split(".")[0]        # the package under check: the copy's own
HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "expected.npz"
MANIFEST = HERE.parents[2] / "assignment.json"     # the copy's: written by `assignment make`

# A composite part runs these parts' code too: when one of them fails, check it first.
USES = {
    "attention": ("softmax", "dropout"),
    "multihead_attention": ("linear", "softmax", "attention", "dropout"),
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


def run_check(check, arrays):
    """"" when every task of `check` agrees, else the first task's problems (the first three,
    as the grader says them)."""
    for task in check["tasks"]:
        inputs = prefixed(arrays, f"in:{task['id']}:")
        expected = prefixed(arrays, f"out:{task['id']}:")
        try:
            got = run_task(PACKAGE, task, Read(inputs))
        except NotImplementedError as err:
            return f"not implemented: {err}"
        except Exception as err:            # the student's code: any error fails the check
            return f"error: {type(err).__name__}: {err}"
        _, problems = compare(expected, got, tuple(check["keys"]), check["tolerance"], inputs,
                              task["args"])
        if problems:        # as the grader's message: the first three, a count of the rest
            more = f" and {len(problems) - 3} more" if len(problems) > 3 else ""
            return "; ".join(problems[:3]) + more
    return ""


def assigned_parts(manifest=MANIFEST):
    """The parts the copy assigns, in the order of PARTS: the "parts" of its assignment.json
    (every part where there is none: the reference package); InputError when it is damaged."""
    manifest = Path(manifest)
    if not manifest.is_file():
        return validate_parts(None)
    try:
        parts = json.loads(manifest.read_text(encoding="utf-8")).get("parts")
    except (ValueError, AttributeError) as error:       # not JSON, or not an object
        parts = error
    if not isinstance(parts, list) or not parts or not all(p in PARTS for p in parts):
        raise InputError(f"{manifest} is damaged: its \"parts\" should list the parts of the "
                         "assignment; make the copy again")
    return validate_parts(parts)


def check_parts(parts=None, path=EXPECTED, assigned=None):
    """{part: ("pass" | "fail" | "check first", message)} for `parts` (default: every part
    of the assignment), among the `assigned` ones (default: assigned_parts(); InputError
    for a part asked that the copy does not assign)."""
    assigned = assigned_parts() if assigned is None else validate_parts(assigned)
    asked = assigned if parts is None else validate_parts(parts)
    others = [p for p in asked if p not in assigned]
    if others:
        raise InputError(f"{', '.join(others)}: not a part of this assignment (its parts: "
                         f"{', '.join(assigned)}); the others hold the reference's code")
    plan, arrays = load(path)
    own = {}

    def own_verdict(part):
        if part not in own:
            problems = [(c["name"], run_check(c, arrays)) for c in plan.get(part, [])]
            own[part] = [f"{name}: {p}" for name, p in problems if p]
        return own[part]

    verdicts = {}
    for part in asked:
        failed = own_verdict(part)
        first = [p for p in USES.get(part, ()) if p in plan and p in assigned and own_verdict(p)]
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

