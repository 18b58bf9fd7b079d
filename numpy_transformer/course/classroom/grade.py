"""Grading a student copy: one isolated worker per part, compared with the reference here.

    grade(directory)                   -> GradeReport (in Python)
    grade_assignment(directory, json_out=None)  the command line's `assignment grade DIR`

For each part, this process (the teacher's, with the reference package) runs
the part's tasks on the reference, drawing their input arrays (scoring.py);
runner.py starts a worker process on the student's copy (time and memory
limits, no reference code importable there) that runs the same tasks on the
same arrays with the student's code and returns its arrays; this process
compares them with its own (scoring.py) and scores. The student's code can
change a score only by producing the right arrays: what it prints, writes
elsewhere or imports counts for nothing, and a worker that crashes, exits
early, runs out of memory or out of time costs its part (0 points, with a
message saying which) and nothing else. On Linux each worker runs in user and
PID namespaces of its own (namespaces.py): it can signal no process of the grader
and leaves none behind; where that is impossible, the report's `warning` says
so (printed once, and in Gradescope's output). Composite parts run with stand-ins for
the other parts' layers (standins.py), so a mistake costs points in its own
part only.

Beside the code, the grade carries each part's written derivation (derivations.py): the
student's text of derivations/<part>.md, or "not answered", never scored here. They are
graded by hand, apart from the autograded points (`points`, `max_points`): each is worth
the copy's "derivation_points" to the teacher (GradeReport.derivations, the JSON's
"derivations", a line under the table).
"""

import json
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import InputError
from ...system.files import atomic_write
from ..copies.derivations import read_answers
from ..copies.make import PACKAGE, derivation_points_of, read_manifest
from ..grading.scoring import failed_part, reference_results, score_part, validate_parts, validate_seed
from ..copies.formulas import redact_report
from .honesty import flag_results, review
from ..sandbox.runner import MEMORY_MB, TOTAL_TIMEOUT, Harness


@dataclass
class GradeReport:
    directory: str
    parts: list        # PartResult per graded part, in the order of PARTS
    warning: str = ""  # the protections the workers ran under (namespaces.py's line)
    derivations: list = field(default_factory=list)   # Derivation per part: graded by hand

    @property
    def points(self):
        return sum(r.points for r in self.parts)

    @property
    def max_points(self):
        return sum(r.max_points for r in self.parts)

    def by_part(self):
        return {r.part: r for r in self.parts}

    def to_dict(self):
        return {"directory": self.directory, "points": self.points,
                "max_points": self.max_points, "parts": [r.to_dict() for r in self.parts],
                "sandbox": self.warning,
                "derivations": [d.to_dict() for d in self.derivations],
                "derivation_max_points": sum(d.max_points for d in self.derivations)}

    def table(self):
        rows = [f"{'part':<20} {'points':>6} {'max':>4} {'max rel err':>11}  message"]
        for r in self.parts:
            err = "-" if r.max_rel_error is None else f"{r.max_rel_error:.1e}"
            rows.append(f"{r.part:<20} {r.points:>6} {r.max_points:>4} {err:>11}  {r.message}")
            rows += [f"{'':<20} {'':>6} {'':>4} {'':>11}  flagged: {f['path']}:{f['line']}: "
                     f"{f['why']}: {f['source']}" for f in r.flags]
        rows.append(f"{'total':<20} {self.points:>6} {self.max_points:>4}")
        if self.derivations:
            rows.append(self.derivations_line())
        return "\n".join(rows)

    def derivations_line(self):
        """One line on the written derivations: how many are answered, graded by hand."""
        answered = [d.part for d in self.derivations if d.answered]
        left = [d.part for d in self.derivations if not d.answered]
        worth = sum(d.max_points for d in self.derivations)
        return (f"derivations: {len(answered)} of {len(self.derivations)} answered, graded "
                f"by hand{f' ({worth} points, apart from the total)' if worth else ''}"
                f"{'; not answered: ' + ', '.join(left) if left else ''}")


def grade(directory, parts=None, timeout=60.0, python=None, memory_mb=MEMORY_MB,
          teacher=False, seed=None, refuse_flagged=False, total_timeout=TOTAL_TIMEOUT):
    """Grade the student copy in `directory`; returns a GradeReport (prints nothing).

    timeout    seconds each part's worker may run; memory_mb its memory limit (limits.py)
    total_timeout  seconds the whole submission may run: parts left when it is spent score
               0 with a message saying so
    seed       the grading secret the inputs are drawn with (an int >= 0, to reproduce a
               grade); None: this process's random one (parts.SECRET), never in any copy
    refuse_flagged  a part whose code honesty.py flags (complex step, a file read, ...)
               scores 0; without it, the flags are only reported (table, JSON)
    python     the interpreter of the workers (default: this one)
    teacher    the messages unredacted (no check sentence states a formula; a student's
               report still goes through formulas.redact_report, as a safety net)
    """
    root = Path(directory).resolve()
    manifest = read_manifest(root)
    parts = validate_parts(manifest["parts"] if parts is None else parts)
    seed = validate_seed(seed)
    own = read_manifest(PACKAGE.parent, required=False)
    if own and own.get("stubbed"):
        raise InputError(f"the grader at {PACKAGE} belongs to a student copy (its solutions are "
                         "stubbed); grade with the reference package")
    results = []
    with Harness(python, timeout, total_timeout, memory_mb) as harness:
        for part in parts:
            outputs, status, problem = harness.run(root, reference_results(part, seed),
                                                   timeout, memory_mb)
            results.append(failed_part(part, problem) if problem
                           else score_part(part, outputs, status, seed))
    flag_results(results, review(root, parts), refuse_flagged)     # read, never run
    report = GradeReport(str(root), results, harness.warning,
                         read_answers(root, parts, derivation_points_of(manifest)))
    return report if teacher else redact_report(report)


def grade_assignment(directory, json_out=None, parts=None, timeout=60.0, out=print,
                     teacher=False, **grading):
    """`assignment grade DIR [--json FILE]`: print the table, write the JSON grade-book entry.

    Returns 0 when every graded part has full points, 1 otherwise. `grading`: more keywords
    of grade() (seed, ...).
    """
    report = grade(directory, parts=parts, timeout=timeout, teacher=teacher, **grading)
    if report.warning:
        out(report.warning)
    out(report.table())
    if json_out is not None:
        with atomic_write(json_out, "w", suffix=".json") as file:    # never half a file
            file.write(json.dumps(report.to_dict(), indent=2) + "\n")
        out(f"wrote {json_out}")
    return 0 if report.points == report.max_points else 1

