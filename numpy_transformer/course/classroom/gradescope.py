"""Grades in Gradescope's autograder format: results.json, with visibility chosen per check.

    checks_of(parts)                      -> {part: [(check name, points), ...]}
    read_visibility(path_or_dict, reveal_after=None)   -> Visibility (validated)
    gradescope_results(report, vis)       -> the results.json dict of one GradeReport
    not_graded_results(message, parts)    -> score 0 for every check, with the reason

Gradescope's schema (its "Autograder Specifications" page) is one JSON object:
`score` (the total), `tests` (a list of `name`, `score`, `max_score`, `output`,
`visibility`, optional `number` and `status`), and optional `output`,
`visibility`, `stdout_visibility`, `execution_time`. A visibility is one of
`visible` (always shown), `hidden` (never shown to students),
`after_due_date` and `after_published` (shown once the due date has passed /
the grades are published).

Each check of each part is one test named "part/check", so a teacher can
hide single checks. The visibility file is a JSON object mapping "default",
part names and "part/check" names to a visibility; the most specific entry
wins, and the default's default is "visible". `reveal_after` (a date, the
autograder's `--reveal-after DATE`) keeps the checks that would be visible hidden
until that date: graded before it, such a test is `after_due_date` (set the
assignment's due date to DATE; a regrade after it shows them), from it on
`visible`. The top-level output holds no
per-part points (a hidden test's score would leak through it), and
`stdout_visibility` is "hidden" for the same reason. A part whose code
honesty.py flags (complex step, a file read, ...) gets one more test, "part/flagged
for review", worth 0 points and always hidden: the teacher reads each flagged
line there; students never see it (with refuse_flagged the part's own tests say
it was refused). Paths inside the copy
graded are written relative to it.

Each part's written derivation (derivations.py) is one more test, "part/derivation
(graded by hand)": the student's answer as its output (Markdown, `output_format` "md"),
or "not answered". Gradescope's schema has no manual test, so it scores 0 of 0 (the
autograder's score stays the checks' alone), with no status, tagged "derivation", and
`extra_data` {"derivation": true, "answered", "max_points"}: the teacher grades it in a
question of the assignment's manual grading, worth the copy's derivation points. Its
visibility is the part's: students see their own answer where they see the part.
"""

import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ...errors import InputError
from ...system.files import atomic_write, read_regular

VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
DEFAULT = "default"


def checks_of(parts=None):
    """The grader's checks of `parts` (default: all), in order: {part: [(name, points)]}."""
    from ..grading.scoring import CHECKS, validate_parts
    parts = validate_parts(parts)
    return {part: [(c.name, c.points) for c in CHECKS[part]] for part in parts}


@dataclass
class Visibility:
    """Who sees a test: the most specific of "part/check", "part", then the default; a
    visible one is after_due_date while `reveal_after` (an aware datetime) is ahead."""
    default: str = "visible"
    names: dict = field(default_factory=dict)   # "part" or "part/check" -> visibility
    reveal_after: datetime = None

    def of(self, part, check=None):
        if check is not None and f"{part}/{check}" in self.names:
            chosen = self.names[f"{part}/{check}"]
        else:
            chosen = self.names.get(part, self.default)
        return "after_due_date" if chosen == "visible" and self.hiding() else chosen

    def hiding(self):
        """Whether checks are still hidden by `reveal_after` (now, at grading time)."""
        return self.reveal_after is not None and datetime.now(timezone.utc) < self.reveal_after

    def to_dict(self):
        return {DEFAULT: self.default, **self.names}


def read_date(text, name="--reveal-after"):
    """An aware datetime (UTC when no zone is given) of an ISO date or date and time."""
    try:
        when = datetime.fromisoformat(str(text))
    except ValueError:
        raise InputError(f"{name}: expected an ISO date such as 2026-12-01 or "
                         f"2026-12-01T17:00 (UTC unless a zone is given), got {text!r}") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def read_visibility(source=None, reveal_after=None):
    """A validated Visibility from a JSON file's path, a dict, or None (all visible);
    `reveal_after`: an ISO date (text) before which visible checks stay hidden.

    InputError names every unknown part or check and every unknown visibility,
    with the valid ones.
    """
    when = None if reveal_after is None else read_date(reveal_after)
    if source is None:
        return Visibility(reveal_after=when)
    if isinstance(source, (str, Path)):
        try:
            source = json.loads(read_regular(source, "--visibility").decode("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise InputError(f"--visibility {source}: not valid JSON ({err})") from None
    if not isinstance(source, dict):
        raise InputError(f"--visibility: expected a JSON object mapping names to a visibility, "
                         f"got {type(source).__name__}")
    checks = checks_of()
    known = set(checks) | {f"{p}/{name}" for p, cs in checks.items() for name, _ in cs}
    unknown = [k for k in source if k != DEFAULT and k not in known]
    if unknown:
        raise InputError(f"--visibility: unknown part or check {', '.join(map(repr, unknown))}; "
                         f"valid names: {DEFAULT!r}, a part ({', '.join(checks)}) or 'part/check' "
                         f"(e.g. {next(iter(sorted(known - set(checks))))!r})")
    bad = {k: v for k, v in source.items() if v not in VISIBILITIES}
    if bad:
        raise InputError(f"--visibility: unknown visibility "
                         f"{', '.join(f'{k!r}: {v!r}' for k, v in bad.items())}; "
                         f"valid visibilities: {', '.join(VISIBILITIES)}")
    names = {k: v for k, v in source.items() if k != DEFAULT}
    return Visibility(source.get(DEFAULT, "visible"), names, when)


def _test(part, name, points, max_points, output, visibility):
    return {"name": f"{part}/{name}", "score": points, "max_score": max_points,
            "status": "passed" if points == max_points else "failed",
            "output": output, "visibility": visibility}


def _check_output(check):
    err = "" if check.max_rel_error is None else f" (max rel err {check.max_rel_error:.1e})"
    return f"{check.message}{err}"


def _part_tests(result, checks, visibility):
    """One test per registered check; a check that did not run scores 0 with the part's
    message (a stub, a crash, a time-out). Unknown check names: one test for the part."""
    ran = {c.name: c for c in result.checks}
    if set(ran) - {name for name, _ in checks} or sum(c.points for c in ran.values()) \
            != result.points:
        return [_test(result.part, "all", result.points, result.max_points, result.message,
                      visibility.of(result.part))]
    tests = []
    for name, points in checks:
        check = ran.get(name)
        if check is None:
            tests.append(_test(result.part, name, 0, points, f"not graded: {result.message}",
                               visibility.of(result.part, name)))
        else:
            tests.append(_test(result.part, name, check.points, check.max_points,
                               _check_output(check), visibility.of(result.part, name)))
    return tests


def _flag_test(result):
    """The hidden, 0-point test listing the lines honesty.py flagged in a part."""
    lines = [f"{f['path']}:{f['line']}: {f['why']}: {f['source']}" for f in result.flags]
    return {"name": f"{result.part}/flagged for review", "score": 0, "max_score": 0,
            "status": "failed", "visibility": "hidden",
            "output": "For the teacher (hidden from students): this part's graded code was "
                      "flagged (an answer that may not be derived):\n" + "\n".join(lines)}


def _derivation_test(derivation, visibility):
    """The 0-point test carrying a part's written derivation, graded by hand."""
    worth = (f"worth {derivation.max_points} point{'s' * (derivation.max_points != 1)}, "
             if derivation.max_points else "")
    head = (f"Graded by hand ({worth}apart from the autograder's score): "
            f"derivations/{derivation.part}.md as submitted.")
    return {"name": f"{derivation.part}/derivation (graded by hand)", "score": 0,
            "max_score": 0, "output": f"{head}\n\n{derivation.text}", "output_format": "md",
            "tags": ["derivation"], "visibility": visibility.of(derivation.part),
            "extra_data": {"derivation": True, "answered": derivation.answered,
                           "max_points": derivation.max_points}}


def gradescope_results(report, visibility=None, execution_time=None):
    """The results.json dict of a GradeReport: one test per check, "score" the total, a
    hidden test per flagged part, and a test per written derivation (0 of 0 points)."""
    visibility = visibility or Visibility()
    checks = checks_of([r.part for r in report.parts])
    tests = [t for r in report.parts for t in _part_tests(r, checks[r.part], visibility)]
    graded = len(tests)
    tests += [_flag_test(r) for r in report.parts if getattr(r, "flags", None)]
    derivations = getattr(report, "derivations", [])
    tests += [_derivation_test(d, visibility) for d in derivations]
    folder = str(getattr(report, "directory", "") or "")
    for number, test in enumerate(tests, 1):
        test["number"] = str(number)
        if folder:                      # a traceback's paths, relative to the copy
            test["output"] = test["output"].replace(folder + os.sep, "").replace(folder, ".")
    results = {"score": report.points, "tests": tests, "stdout_visibility": "hidden",
               "output": f"numpy_transformer assignment: {len(report.parts)} parts, "
                         f"{graded} checks, {report.max_points} points; "
                         "each check's result is listed below."}
    if derivations:
        worth = sum(d.max_points for d in derivations)
        results["output"] += (f" The written derivations ({sum(d.answered for d in derivations)}"
                              f" of {len(derivations)} answered) are graded by hand"
                              f"{f' ({worth} points)' if worth else ''}, apart from this score.")
    if visibility.hiding():
        results["output"] += (f" Some checks stay hidden until "
                              f"{visibility.reveal_after.isoformat(' ', 'minutes')}.")
    if getattr(report, "warning", ""):
        results["output"] += f" The grader's {report.warning}"
    if execution_time is not None:
        results["execution_time"] = round(execution_time, 3)
    return results


def not_graded_results(message, parts=None, visibility=None, execution_time=None):
    """Score 0 for every check of `parts`, the reason in the top-level output."""
    visibility = visibility or Visibility()
    tests = [_test(part, name, 0, points, f"not graded: {message}", visibility.of(part, name))
             for part, checks in checks_of(parts).items() for name, points in checks]
    for number, test in enumerate(tests, 1):
        test["number"] = str(number)
    results = {"score": 0, "tests": tests, "stdout_visibility": "hidden",
               "output": f"Your submission could not be graded: {message}"}
    if execution_time is not None:
        results["execution_time"] = round(execution_time, 3)
    return results


def write_json(path, data):
    """Write `data` as JSON to `path` atomically (a reader never sees half a file; an error
    names `path`)."""
    with atomic_write(path, "w", suffix=".json") as f:
        f.write(json.dumps(data, indent=2) + "\n")
