"""Grading a student copy: run the checks in a separate process, print a table, write JSON.

    grade(directory)                   -> GradeReport (in Python)
    grade_assignment(directory, json_out=None)  the command line's `assignment grade DIR`

The checks run in a child process whose `numpy_transformer` is the student's
(cwd and PYTHONPATH are DIR), started by runner.py, which reports each part as
it finishes. Each part has a time limit; if the child dies (a crash, a
`os._exit`, a time-out the alarm could not interrupt) the part that was
running scores 0 and the remaining parts run again in a fresh process.
"""

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .make import read_manifest
from .parts import PartResult, max_points, validate_parts

RUNNER = Path(__file__).with_name("runner.py")


@dataclass
class GradeReport:
    directory: str
    parts: list        # PartResult per graded part, in the order of PARTS

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
                "max_points": self.max_points, "parts": [r.to_dict() for r in self.parts]}

    def table(self):
        rows = [f"{'part':<20} {'points':>6} {'max':>4} {'max rel err':>11}  message"]
        for r in self.parts:
            err = "-" if r.max_rel_error is None else f"{r.max_rel_error:.1e}"
            rows.append(f"{r.part:<20} {r.points:>6} {r.max_points:>4} {err:>11}  {r.message}")
        rows.append(f"{'total':<20} {self.points:>6} {self.max_points:>4}")
        return "\n".join(rows)


def _run_child(root, parts, timeout, python):
    """Run runner.py once on `parts`; return (events, exit status or None, stderr tail)."""
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, "1")                # tiny arrays: threads only cost time
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results.jsonl"
        results.touch()
        try:
            done = subprocess.run([python, str(RUNNER), str(results), str(timeout), *parts],
                                  cwd=root, env=env, capture_output=True, text=True,
                                  timeout=timeout * len(parts) + 60)
            status, stderr = done.returncode, done.stderr
        except subprocess.TimeoutExpired as expired:
            status, stderr = None, expired.stderr or ""
            stderr = stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr
        events = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    return events, status, stderr.strip().splitlines()[-1:] or [""]


def grade(directory, parts=None, timeout=60.0, python=None):
    """Grade the student copy in `directory`; returns a GradeReport (prints nothing)."""
    root = Path(directory).resolve()
    manifest = read_manifest(root)
    parts = validate_parts(manifest["parts"] if parts is None else parts)
    results, remaining = {}, list(parts)
    while remaining:
        events, status, last_error = _run_child(root, remaining, timeout, python or sys.executable)
        started = None
        for event in events:
            if event["event"] == "fatal":
                for part in remaining:
                    results.setdefault(part, PartResult(part, 0, max_points(part), None,
                                                        event["message"]))
            elif event["event"] == "start":
                started = event["part"]
            else:
                results[event["part"]] = PartResult.from_dict(event)
                started = None
        if started is not None:                # the process died while checking `started`
            why = (f"timed out after {timeout:g} s" if status is None else
                   f"crashed: the grading process exited with status {status}: {last_error[0]}")
            results[started] = PartResult(started, 0, max_points(started), None, why)
        left = [p for p in remaining if p not in results]
        if len(left) == len(remaining):        # no progress at all: do not loop for ever
            for part in left:
                results[part] = PartResult(part, 0, max_points(part), None,
                                           f"the grading process failed (status {status}): "
                                           f"{last_error[0]}")
            left = []
        remaining = left
    return GradeReport(str(root), [results[p] for p in parts])


def grade_assignment(directory, json_out=None, parts=None, timeout=60.0, out=print):
    """`assignment grade DIR [--json FILE]`: print the table, write the JSON grade-book entry.

    Returns 0 when every graded part has full points, 1 otherwise.
    """
    own_copy = read_manifest(Path(__file__).resolve().parents[2], required=False)
    if own_copy and own_copy.get("stubbed"):
        out("note: this grader runs from a student copy, so parts that build on other parts "
            "use your own code for those")
    report = grade(directory, parts=parts, timeout=timeout)
    out(report.table())
    if json_out is not None:
        Path(json_out).write_text(json.dumps(report.to_dict(), indent=2) + "\n",
                                  encoding="utf-8")
        out(f"wrote {json_out}")
    return 0 if report.points == report.max_points else 1

