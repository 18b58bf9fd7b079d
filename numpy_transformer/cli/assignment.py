"""The `assignment` command: `make` a student copy, `grade` copies, pack an `autograder`,
and, in a student copy, `check` its parts.

    python -m numpy_transformer assignment make --out DIR [--parts linear layernorm ...]
        [--derivation-points N]
    python -m numpy_transformer assignment grade DIR [--json FILE] [--parts ...]
        [--gradescope results.json [--visibility FILE]] [--teacher] [--seed N] [--refuse-flagged]
        [--timeout SECONDS] [--total-timeout SECONDS]
    python -m numpy_transformer assignment grade DIR1 DIR2 ... --csv class.csv [--jobs N]
        [--report SUMMARY_DIR]
    python -m numpy_transformer assignment autograder --out autograder.zip [--visibility FILE]
        [--seed N] [--refuse-flagged] [--reveal-after DATE] [--total-timeout SECONDS]
        [--derivation-points N]
    python -m numpy_transformer assignment check [PART ...]     # in a student copy

`add_subcommand(subparsers)` registers it on the package's command line; each
sub-command's `run(args)` returns the exit status. Bad input (an unknown part,
a DIR that is not a student copy, bad markers) ends as every command's does:
`error: ...` and exit status 2.
"""

from .options import add_common, nonnegative_int, positive_float, positive_int
from .outputs import check_outputs, overwrite_option


def _run_make(args):
    from ..course.copies.make import make_assignment
    return make_assignment(args.out, args.parts, solutions=args.solutions, teacher=args.teacher,
                           derivation_points=args.derivation_points)


def _run_grade(args):
    from ..course.classroom.grade_command import grade_command
    from ..course.classroom.class_run import class_files
    check_outputs({"--json": args.json, "--gradescope": args.gradescope, "--csv": args.csv,
                   **class_files(args.csv, args.report)},
                  inputs={"--visibility": args.visibility}, overwrite=args.overwrite)
    return grade_command(args.dirs, json_out=args.json, gradescope_out=args.gradescope,
                         jobs=args.jobs, report=args.report,
                         visibility=args.visibility, csv_out=args.csv, parts=args.parts,
                         timeout=args.timeout, teacher=args.teacher,
                         refuse_flagged=args.refuse_flagged, seed=args.seed,
                         total_timeout=args.total_timeout)


def _run_check(args):
    from ..course.grading.local_check import check_command
    return check_command(args.parts or None)


def _run_autograder(args):
    from ..course.classroom.autograder import make_autograder
    check_outputs({"--out": args.out}, inputs={"--visibility": args.visibility},
                  overwrite=args.overwrite)
    return make_autograder(args.out, args.parts, args.visibility, args.timeout, seed=args.seed,
                           refuse_flagged=args.refuse_flagged, reveal_after=args.reveal_after,
                           total_timeout=args.total_timeout,
                           derivation_points=args.derivation_points)


DERIVATION_HELP = ("what each part's written derivation (derivations/<part>.md) is worth, "
                   "graded by hand apart from the autograded points (default 0: read, not "
                   "scored)")

VISIBILITY_HELP = ('a JSON file mapping "default", part names and "part/check" names to '
                   "visible, hidden, after_due_date or after_published (default: all visible)")


TOTAL_HELP = ("time limit of a whole submission: parts not run when it is spent score 0, "
              "saying so (default 600)")


REFUSE_HELP = ("score 0 for a part whose graded code computes on complex numbers, reads .imag, "
               "loads a file or calls its own forward in its backward (default: such code is "
               "only reported to the teacher, with its line)")


def _add_grade(commands):
    grade = commands.add_parser(
        "grade", help="grade student copies (table, JSON, Gradescope, class CSV)",
        description="Grade each DIR, a copy made by `assignment make`: run its parts in "
        "worker processes against the reference's outputs, print each part's points, and exit "
        "with status 1 below full marks; optionally write the scores as JSON, Gradescope's "
        "results.json or a class table (CSV, with a JSON of every check beside it), grading "
        "--jobs folders at once, and a class summary page for the teacher (--report).")
    grade.add_argument("dirs", nargs="+", metavar="DIR", help="folders made by `assignment make`")
    grade.add_argument("--json", metavar="FILE", help="also write the scores as JSON to FILE")
    grade.add_argument("--gradescope", metavar="FILE",
                       help="also write the grade in Gradescope's results.json format to FILE")
    grade.add_argument("--visibility", metavar="FILE",
                       help=VISIBILITY_HELP + "; needs --gradescope")
    grade.add_argument("--csv", metavar="FILE",
                       help="write a class table to FILE: one row per DIR, each part's points "
                            "and the total; and beside it FILE's .json (class.csv: class.json) "
                            "with every part's checks and messages")
    grade.add_argument("--jobs", type=positive_int, default=1, metavar="N",
                       help="grade N folders at once, each in a grader process of its own "
                            "(each part still in its own sandboxed worker; the same results "
                            "and order as --jobs 1; default 1)")
    grade.add_argument("--report", metavar="SUMMARY_DIR",
                       help="write the class summary for the teacher: SUMMARY_DIR/index.html "
                            "(the score distribution, each part's pass rate, its most common "
                            "diagnosed causes, pairs of similar solutions) and its figures; "
                            "needs matplotlib and copydetect (pip install "
                            "'numpy_transformer[course]')")
    grade.add_argument("--parts", nargs="+", metavar="PART",
                       help="grade only these parts (default: the copy's)")
    grade.add_argument("--timeout", type=positive_float, default=60.0, metavar="SECONDS",
                       help="time limit of each part (default 60)")
    grade.add_argument("--total-timeout", type=positive_float, default=600.0,
                       metavar="SECONDS", help=TOTAL_HELP)
    grade.add_argument("--seed", type=nonnegative_int, metavar="N",
                       help="draw the grader's inputs with this secret, to reproduce a grade "
                            "(default: a new random secret per run; never the inputs of the "
                            "copy's `assignment check`)")
    grade.add_argument("--refuse-flagged", action="store_true", help=REFUSE_HELP)
    grade.add_argument("--teacher", action="store_true",
                       help="the messages unredacted (the check sentences state no formula "
                            "either way; a student's report, and Gradescope's, is passed "
                            "through formulas.redact as a safety net)")
    overwrite_option(grade, "the files of --json, --gradescope, --csv (and its .json) and "
                            "--report")
    add_common(grade, threads=False)     # the workers run on one thread
    grade.set_defaults(run=_run_grade)


def _add_autograder(commands):
    pack = commands.add_parser(
        "autograder", help="write a Gradescope autograder zip",
        description="Write ZIP, to upload to Gradescope as the assignment's autograder: "
        "setup.sh, run_autograder and the grader, grading the chosen parts with the time "
        "limit and the visibility given.")
    pack.add_argument("--out", required=True, metavar="ZIP",
                      help="the zip to write (setup.sh, run_autograder and the grader)")
    pack.add_argument("--parts", nargs="+", metavar="PART",
                      help="the parts to grade (default: all)")
    pack.add_argument("--visibility", metavar="FILE", help=VISIBILITY_HELP)
    pack.add_argument("--derivation-points", type=nonnegative_int, default=0, metavar="N",
                      help=DERIVATION_HELP)
    pack.add_argument("--timeout", type=positive_float, default=60.0, metavar="SECONDS",
                      help="time limit of each part (default 60)")
    pack.add_argument("--seed", type=nonnegative_int, metavar="N",
                      help="a grading secret kept in the zip (closed to the student's code): "
                           "every submission graded on the same inputs (default: new random "
                           "inputs for each submission)")
    pack.add_argument("--total-timeout", type=positive_float, default=600.0,
                      metavar="SECONDS", help=TOTAL_HELP)
    pack.add_argument("--refuse-flagged", action="store_true", help=REFUSE_HELP)
    pack.add_argument("--reveal-after", metavar="DATE",
                      help="keep the checks that would be visible hidden until DATE (ISO, e.g. "
                           "2026-12-01 or 2026-12-01T17:00, UTC unless a zone is given): "
                           "graded before it they are after_due_date in Gradescope")
    overwrite_option(pack, "ZIP")
    add_common(pack, threads=False)           # writes a zip: no BLAS
    pack.set_defaults(run=_run_autograder)


def add_subcommand(subparsers, list_parts=True):
    """Register `assignment make|grade|autograder` on an argparse sub-parsers object; with
    `list_parts`, its description names the parts (which loads the course's registry)."""
    description = "Backward-pass assignments graded with the gradient checker."
    if list_parts:
        from ..course.parts import PARTS
        description += f" Parts: {', '.join(PARTS)}."
    parser = subparsers.add_parser(
        "assignment", help="make a student copy with stubbed backward passes, grade copies, "
                           "or pack a Gradescope autograder", description=description)
    commands = parser.add_subparsers(dest="assignment_command",
                                     metavar="{make,grade,autograder,check}", required=True)
    make = commands.add_parser(
        "make", help="write a student copy of the package into DIR",
        description="Write a copy of the package into DIR in which the chosen parts' backward "
        "passes are stubs for the student to write (with --solutions: kept, a copy to check "
        "the grader with), and a README for the student.")
    make.add_argument("--out", required=True, metavar="DIR",
                      help="a new (or empty) folder for the copy")
    make.add_argument("--parts", nargs="+", metavar="PART",
                      help="the parts to stub (default: all)")
    make.add_argument("--solutions", action="store_true",
                      help="keep the reference code (a solution copy, to check the grader)")
    make.add_argument("--teacher", action="store_true",
                      help="also copy the answer keys of the lessons' think questions "
                           "(notebooks/answers/) and keep the parts' formulas in docstrings "
                           "and lessons: a teacher copy, not for students")
    make.add_argument("--derivation-points", type=nonnegative_int, default=0, metavar="N",
                      help=DERIVATION_HELP)
    add_common(make, threads=False)           # copies files: no BLAS
    make.set_defaults(run=_run_make)
    _add_grade(commands)
    _add_autograder(commands)
    check = commands.add_parser("check", help="in a student copy: check parts against the "
                                              "expected outputs shipped with it",
                                description="In a student copy: check the chosen parts "
                                "against the expected outputs shipped with it, and print "
                                "what passes.")
    check.add_argument("parts", nargs="*", metavar="PART", help="the parts (default: all)")
    add_common(check)
    check.set_defaults(run=_run_check)
    return parser
