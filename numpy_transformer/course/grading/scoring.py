"""Scoring a part: the reference's results, the comparison with a student's, the points.

For each part, `reference_results(part, secret)` runs every task of its checks on
this package (the reference), drawing the input arrays (harness.Draw) from seeds
mixed with the grading secret (harness.task_seed: SECRET, drawn at random once per
process, unless the teacher gives one, `assignment grade --seed N`): it returns
the tasks (with ids), the inputs to send to the student's worker and the
expected outputs. No input or output of the grader's is in a student copy: the
copy's expected.npz holds the public check's, drawn from other seeds. `score_part`
compares what the worker returned with those, array by array, here in the teacher's
process, with the one judgement `assignment check` uses too (judgement.py):

    err = max |got - expected| / max(max |expected|, 1e-2 * T),  T the task's largest
          |value| (its float inputs and compared outputs): an array zero in exact
          arithmetic is rounding noise, measured against what went into it

A check passes when every compared array of every task has the expected shape,
is finite and agrees within the check's tolerance (1e-12, float64 round-off: the
correct forms of the catalogue and of tests/course/test_one_judgement.py reach 2e-14
at most). Its points are all or nothing. An array within 1e-6 but outside the
tolerance is reported as numerically close (a finite-difference gradient lands at
1e-11 to 1e-8; one computed in float32 at float32 round-off, ~1e-7, and is called
so): no points. A wrong array's message says how it relates to the expected one
(diagnose.py). A task that raised
NotImplementedError fails its check as "not implemented"; a part whose every
check is so is reported "not implemented: <the stub's message>".
"""

import math
import secrets
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ...errors import InputError
from . import checks_layers, checks_models, checks_training
from .diagnose import error_hint, import_failure
from .harness import Draw, Read, run_task, task_seed
from .judgement import NUMERIC, compare, largest  # noqa: F401  (the one judgement)
from ..parts import PARTS, TITLES, validate_parts  # noqa: F401
from .standins import StandIns

REFERENCE = __name__.split(".")[0]          # this package: the reference solution
STATES = ("ok", "not implemented", "error")   # of a task, as the worker reports it
SECRET = secrets.randbits(64)      # this process's grading secret, unless one is given
CHECKS = {part: [c for c in checks_layers.CHECKS + checks_models.CHECKS + checks_training.CHECKS
                 if c.part == part] for part in PARTS}     # part -> its checks, in order


def max_points(part):
    return sum(c.points for c in CHECKS[part])


@dataclass
class CheckResult:
    name: str
    points: int
    max_points: int
    passed: bool
    max_rel_error: float = None
    message: str = ""


@dataclass
class PartResult:
    part: str
    points: int
    max_points: int
    max_rel_error: float = None
    message: str = ""
    checks: list = field(default_factory=list)
    flags: list = field(default_factory=list)   # honesty.py's, as dicts: for the teacher

    def to_dict(self):
        clean = lambda e: None if e is None or not math.isfinite(e) else e
        return {"part": self.part, "points": self.points, "max_points": self.max_points,
                "max_rel_error": clean(self.max_rel_error), "message": self.message,
                "checks": [{**vars(c), "max_rel_error": clean(c.max_rel_error)}
                           for c in self.checks], "flags": list(self.flags)}

    @classmethod
    def from_dict(cls, d):
        checks = [CheckResult(**c) for c in d.get("checks", [])]
        return cls(d["part"], d["points"], d["max_points"], d.get("max_rel_error"),
                   d.get("message", ""), checks, list(d.get("flags", [])))


@dataclass(frozen=True)
class Reference:
    tasks: list        # [{"id", "kind", "args"}], what the worker runs
    inputs: dict       # {"<id>.<name>": array} to send
    expected: dict     # {id: {name: array}}
    alternatives: dict = field(default_factory=dict)  # {id: {name: array}}, also right


def validate_seed(seed):
    """`seed` (the grading secret the teacher gives) or None; InputError unless an int >= 0."""
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise InputError(f"seed: expected a non-negative integer (or None: a per-run secret), "
                         f"got {seed!r}")
    return seed


def reference_results(part, secret=None):
    """Run every task of `part` on the reference package, its arrays drawn with the grading
    `secret` (a non-negative int; None: this process's SECRET)."""
    return _reference_results(part, SECRET if secret is None else secret)


@lru_cache(maxsize=256)
def _reference_results(part, secret):
    """reference_results, cached per (part, secret): it is deterministic."""
    tasks, inputs, expected, others = [], {}, {}, {}
    for i, c in enumerate(CHECKS[part]):
        for j, spec in enumerate(c.tasks):
            tid = f"c{i}t{j}"
            source = Draw(task_seed(spec["seed"], secret))
            expected[tid] = run_task(REFERENCE, spec, source, StandIns)
            if "either" in spec:        # another correct form's arrays, on the same inputs
                other = {**spec, "args": {**spec["args"], **spec["either"]}}
                others[tid] = run_task(REFERENCE, other, Read(source.arrays), StandIns)
            tasks.append({"id": tid, "kind": spec["kind"], "args": spec["args"]})
            inputs.update({f"{tid}.{name}": a for name, a in source.arrays.items()})
    return Reference(tasks, inputs, expected, others)


def task_inputs(ref, tid):
    prefix = tid + "."
    return {k[len(prefix):]: v for k, v in ref.inputs.items() if k.startswith(prefix)}


def score_check(c, index, outputs, status, ref):
    """CheckResult of check `c` (number `index` in its part) from the worker's results,
    against `ref` (the Reference the worker was given)."""
    worst, problems = None, []
    for j in range(len(c.tasks)):
        tid = f"c{index}t{j}"
        state = checked_status(status.get(tid))
        if state["state"] == "not implemented":
            return CheckResult(c.name, 0, c.points, False, None,
                               f"not implemented: {state['message']}")
        if state["state"] != "ok" and import_failure(state["message"]):
            return CheckResult(c.name, 0, c.points, False, None,
                               import_failure(state["message"]))
        if state["state"] != "ok":
            hint = error_hint(state["message"])
            problems.append(f"task {j + 1}: {state['message']}" + (f": {hint}" if hint else ""))
            continue
        prefix = tid + "."
        got = {k[len(prefix):]: v for k, v in outputs.items() if k.startswith(prefix)}
        inputs = task_inputs(ref, tid)
        err, wrong = compare(ref.expected[tid], got, c.keys, c.tolerance, inputs,
                             c.tasks[j]["args"])
        other = ref.alternatives.get(tid)
        if wrong and other is not None:
            err_other, wrong_other = compare(other, got, c.keys, c.tolerance, inputs)
            err, wrong = (err_other, []) if not wrong_other else (err, wrong)
        worst = err if worst is None else largest([worst, err])
        problems += wrong
    if not problems:
        return CheckResult(c.name, c.points, c.points, True, worst, "ok")
    more = f" and {len(problems) - 3} more" if len(problems) > 3 else ""
    return CheckResult(c.name, 0, c.points, False, worst,
                       f"{'; '.join(problems[:3])}{more}. Expected: {c.why} "
                       f"[a correct answer: {c.expect}]")


def checked_status(entry):
    """A worker's status entry of one task, as {"state", "message"} with known states only."""
    if not isinstance(entry, dict) or entry.get("state") not in STATES:
        return {"state": "error", "message": "no result for this task"}
    return {"state": entry["state"], "message": str(entry.get("message", ""))[:300]}


def score_part(part, outputs, status, secret=None):
    """PartResult of `part` from the worker's outputs and per-task status, on the inputs of
    the grading `secret` (None: this process's)."""
    ref = reference_results(part, secret)
    results = [score_check(c, i, outputs, status, ref) for i, c in enumerate(CHECKS[part])]
    stubs = [r for r in results if r.message.startswith("not implemented: ")]
    if stubs and len(stubs) == len(results):
        return PartResult(part, 0, max_points(part), None, stubs[0].message, results)
    broken = [r for r in results if " does not import: " in r.message]
    if broken:      # one clear message: a file of the package does not parse
        return PartResult(part, sum(r.points for r in results), max_points(part), None,
                          broken[0].message, results)
    return summarize(part, results)


def failed_part(part, message):
    """A part that scores 0 because its worker gave no results (crash, time-out, ...)."""
    return PartResult(part, 0, max_points(part), None, message, [])


def summarize(part, results):
    errors = [r.max_rel_error for r in results if r.max_rel_error is not None]
    failed = [r for r in results if not r.passed]
    message = (f"{failed[0].name}: {failed[0].message}" if failed
               else f"all {len(results)} checks passed")
    worst = largest(errors) if errors else None
    return PartResult(part, sum(r.points for r in results), sum(r.max_points for r in results),
                      worst, message, results)


def run_part(part, package=REFERENCE, secret=None):
    """Score `part` of an importable `package` in this process, without a worker (for tests:
    no isolation at all; the grader uses runner.py)."""
    ref, outputs, status = reference_results(part, secret), {}, {}
    for spec in ref.tasks:
        prefix = spec["id"] + "."
        arrays = {k[len(prefix):]: v for k, v in ref.inputs.items() if k.startswith(prefix)}
        try:
            found = run_task(package, spec, Read(arrays), StandIns)
        except NotImplementedError as stub:
            status[spec["id"]] = {"state": "not implemented", "message": str(stub)}
            continue
        except Exception as error:                                  # noqa: BLE001
            status[spec["id"]] = {"state": "error", "message": f"{type(error).__name__}: {error}"}
            continue
        status[spec["id"]] = {"state": "ok"}
        outputs.update({prefix + k: v for k, v in found.items()})
    return score_part(part, outputs, status, secret)
