"""The assignment parts and how one part is checked and scored.

A part is a set of solution regions (see markers.py) with the same name, and
a list of checks worth points. Every check receives `pkg`, the package under
test (the student's copy when grading, this package in the tests), and either
returns the largest relative error it saw or raises `CheckFailed`.

The checks themselves live in checks_layers.py, checks_training.py and
checks_models.py; they
compare each backward with float64 finite differences (`gradcheck`, rtol 1e-7;
a correct answer reaches about 1e-9) and add targeted checks for the classic
mistakes (gradients overwritten instead of accumulated, repeated token ids,
fully masked rows, Adam's bias correction, ...).
"""

import math
from dataclasses import dataclass, field

from ..gradcheck_cases import Package
from .registry import CHECKS, PARTS, TITLES, CheckFailed, check, validate_parts  # noqa: F401

def max_points(part):
    _load_checks()
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

    def to_dict(self):
        clean = lambda e: None if e is None or not math.isfinite(e) else e
        return {"part": self.part, "points": self.points, "max_points": self.max_points,
                "max_rel_error": clean(self.max_rel_error), "message": self.message,
                "checks": [{**vars(c), "max_rel_error": clean(c.max_rel_error)}
                           for c in self.checks]}

    @classmethod
    def from_dict(cls, d):
        checks = [CheckResult(**c) for c in d.get("checks", [])]
        return cls(d["part"], d["points"], d["max_points"], d.get("max_rel_error"),
                   d.get("message", ""), checks)


def _load_checks():
    """Import the checks, which register themselves (checks_*.py)."""
    from . import checks_layers, checks_models, checks_training  # noqa: F401


def run_part(part, pkg=None):
    """Run every check of `part` against `pkg` (a Package); return a PartResult.

    A NotImplementedError anywhere means the part is still a stub: 0 points.
    Any other exception fails only the check that raised it.
    """
    _load_checks()
    pkg = pkg or Package()
    results = []
    for c in CHECKS[part]:
        try:
            with pkg.default_dtype("float64"):
                err = c.run(pkg)
            results.append(CheckResult(c.name, c.points, c.points, True, err, "ok"))
        except NotImplementedError as stub:
            text = str(stub) or "NotImplementedError"
            return PartResult(part, 0, max_points(part), None, f"not implemented: {text}",
                              [CheckResult(c.name, 0, c.points, False, None, text)])
        except CheckFailed as fail:
            results.append(CheckResult(c.name, 0, c.points, False, fail.max_rel_error,
                                       f"{fail} [a correct answer: {c.expect}]"))
        except Exception as crash:                                  # noqa: BLE001
            results.append(CheckResult(c.name, 0, c.points, False, None,
                                       f"crashed: {type(crash).__name__}: {crash}"))
    return summarize(part, results)


def summarize(part, results):
    errors = [r.max_rel_error for r in results if r.max_rel_error is not None]
    failed = [r for r in results if not r.passed]
    if failed:
        message = f"{failed[0].name}: {failed[0].message}"
    else:
        message = f"all {len(results)} checks passed"
    worst = max(errors, key=lambda e: math.inf if math.isnan(e) else e) if errors else None
    return PartResult(part, sum(r.points for r in results), sum(r.max_points for r in results),
                      worst, message, results)
