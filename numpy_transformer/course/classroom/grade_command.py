"""`assignment grade DIR ...` with course-site outputs: Gradescope's results.json, a class CSV.

    grade_command(dirs, json_out=None, gradescope_out=None, visibility=None, csv_out=None, ...)
    class_rows(named_reports, parts)  -> the CSV's rows (header first)

One DIR without --gradescope or --csv is grade.py's `grade_assignment`
unchanged. Otherwise each DIR is graded in turn and its table printed;
--gradescope FILE writes the one DIR's grade as Gradescope's results.json
(gradescope.py, visibility from --visibility FILE), and --csv FILE writes one
row per DIR: `student` (the folder's name; the path relative to the folders'
common parent when two names clash), each part's points, `total`, `max_points`
and `message` (why a DIR could not be graded, else empty). A DIR that cannot be
graded (not a student copy, a damaged assignment.json, ...) does not stop the
class: its row has empty points and the reason. Beside the CSV goes class.json
(every folder's checks and messages, the sandbox line), and --report DIR writes
the teacher's class summary with the similar pairs and each student's written
derivations beside their code (class_report.py, similarity.py);
--jobs N grades N folders at once, with the same results in the same order
(class_run.py). No output holds an absolute path.
"""

import csv
import json
import os
from contextlib import closing
from pathlib import Path

from ...errors import InputError
from ...system.files import atomic_write
from .gradescope import gradescope_results, read_visibility, write_json


def student_names(dirs):
    """A short unique name per folder: its name, or its path below the common parent."""
    paths = [Path(d).resolve() for d in dirs]
    names = [p.name for p in paths]
    if len(set(names)) == len(names):
        return names
    common = Path(os.path.commonpath(paths)) if len(paths) > 1 else paths[0].parent
    return [p.relative_to(common).as_posix() or p.name for p in paths]


def class_rows(named_reports, parts):
    """Rows of the class table: header, then one per (name, GradeReport or error message)."""
    rows = [["student", *parts, "total", "max_points", "message"]]
    for name, report in named_reports:
        if isinstance(report, str):
            rows.append([name, *[""] * len(parts), "", "", report])
            continue
        points = {r.part: r.points for r in report.parts}
        rows.append([name, *[points.get(p, "") for p in parts], report.points,
                     report.max_points, ""])
    return rows


def _check_request(dirs, json_out, gradescope_out, visibility, csv_out):
    if visibility is not None and gradescope_out is None:
        raise InputError("--visibility chooses who sees each Gradescope test; it needs "
                         "--gradescope FILE")
    if len(dirs) > 1 and (json_out or gradescope_out):
        raise InputError(f"--json and --gradescope describe one student copy, got {len(dirs)} "
                         "folders; use --csv FILE for a class-wide table")
    if len(set(Path(d).resolve() for d in dirs)) < len(dirs):
        raise InputError("DIR: the same folder is named twice")


def _write_json_report(report, name, path):
    data = {**report.to_dict(), "directory": name}
    with atomic_write(path, "w", suffix=".json") as file:            # never half a file
        file.write(json.dumps(data, indent=2) + "\n")


def grade_command(dirs, json_out=None, gradescope_out=None, visibility=None, csv_out=None,
                  parts=None, timeout=60.0, out=print, teacher=False, jobs=1, report=None,
                  **grading):
    """The `assignment grade` command; returns 0 when every copy has full marks, else 1.
    With `teacher`, the messages keep the parts' formulas (never for a student's eyes);
    `grading`: more keywords of grade.grade (seed: the grading secret, ...). `jobs` folders
    are graded at once (class_run.py); `report` is the class summary's folder (class_report.py)."""
    from .grade import grade_assignment
    from ..grading.scoring import validate_parts
    from .class_run import check_jobs
    dirs = list(dirs)
    _check_request(dirs, json_out, gradescope_out, visibility, csv_out)
    check_jobs(jobs)
    if len(dirs) == 1 and gradescope_out is None and csv_out is None and report is None:
        return grade_assignment(dirs[0], json_out=json_out, parts=parts, timeout=timeout,
                                out=out, teacher=teacher, **grading)
    if report is not None:          # before grading: a missing library costs no time
        from .class_report import need_matplotlib
        from .similarity import copydetect
        copydetect(), need_matplotlib()
    chosen = read_visibility(visibility) if gradescope_out else None
    names = student_names(dirs)
    graded = _grade_each(names, dirs, out, jobs, dict(grading, parts=parts, timeout=timeout,
                                                      teacher=teacher))
    if json_out:
        _write_json_report(graded[0][1], names[0], json_out)
        out(f"wrote {json_out}")
    if gradescope_out:
        write_json(gradescope_out, gradescope_results(graded[0][1], chosen))
        out(f"wrote {gradescope_out} (Gradescope results)")
    if csv_out:
        shown = validate_parts(parts) if parts is not None else _parts_of(graded)
        with atomic_write(csv_out, "w", ".csv", newline="") as file:     # never half a file
            csv.writer(file).writerows(class_rows(graded, shown))
        out(f"wrote {csv_out}: {len(graded)} student{'s' * (len(graded) != 1)}")
    if csv_out or report:
        _class_outputs(graded, dirs, parts, csv_out, report, out)
    full = all(not isinstance(r, str) and r.points == r.max_points for _, r in graded)
    return 0 if full else 1


def _class_outputs(graded, dirs, parts, csv_out, report, out):
    """class.json beside the CSV, and with `report` the class summary with the similar
    pairs (the teacher's only: in no student's output)."""
    from .class_run import class_json, json_beside
    from ..grading.scoring import validate_parts
    shown = validate_parts(parts) if parts is not None else _parts_of(graded)
    similar = None
    if report:
        from .class_report import write_report
        from .similarity import similar_pairs
        named = [(name, d) for (name, r), d in zip(graded, dirs) if not isinstance(r, str)]
        similar = similar_pairs(named, shown)
        page = write_report(report, graded, shown, similar, dict(named))
        out(f"wrote {page}: the class summary, {len(similar)} similar "
            f"pair{'s' * (len(similar) != 1)}")
    if csv_out:
        path = json_beside(csv_out)
        with atomic_write(path, "w", suffix=".json") as file:            # never half a file
            file.write(json.dumps(class_json(graded, shown, similar), indent=2) + "\n")
        out(f"wrote {path}: every part's checks and messages")


def _grade_each(names, dirs, out, jobs, grading):
    """[(name, GradeReport or why it was not graded)], tables printed in the folders' order
    (class_run.py grades `jobs` at once, with grade.grade's keywords `grading`). In a class
    run nothing one folder holds (a damaged assignment.json, say) stops the others."""
    from .class_run import outcomes
    graded, warned = [], False
    with closing(outcomes(names, dirs, jobs, **grading)) as each:
        for name, report in each:
            if len(dirs) > 1:
                out(f"== {name}")
            if isinstance(report, str):
                out(f"not graded: {report}")
            elif report.warning and not warned:
                out(report.warning)
                warned = True
            if not isinstance(report, str):
                out(report.table())
            graded.append((name, report))
    return graded


def _parts_of(graded):
    """Every part graded in any copy, in the order of PARTS."""
    from ..grading.scoring import validate_parts
    seen = {r.part for _, report in graded if not isinstance(report, str) for r in report.parts}
    return validate_parts(sorted(seen)) if seen else []
