"""The `assignment` command: `make` a student copy, `grade` one.

    python -m numpy_transformer assignment make --out DIR [--parts linear layernorm ...]
    python -m numpy_transformer assignment grade DIR [--json FILE] [--parts ...]

`add_subcommand(subparsers)` registers it on the package's command line; each
sub-command's `run(args)` returns the exit status. Bad input (an unknown part,
a DIR that is not a student copy, bad markers) ends as every command's does:
`error: ...` and exit status 2.
"""

from ..assignment.parts import PARTS
from .options import add_common, positive_float


def _run_make(args):
    from ..assignment.make import make_assignment
    return make_assignment(args.out, args.parts, solutions=args.solutions)


def _run_grade(args):
    from ..assignment.grade import grade_assignment
    return grade_assignment(args.dir, json_out=args.json, parts=args.parts, timeout=args.timeout)


def add_subcommand(subparsers):
    """Register `assignment make` and `assignment grade` on an argparse sub-parsers object."""
    parser = subparsers.add_parser(
        "assignment", help="make a student copy with stubbed backward passes, or grade one",
        description="Backward-pass assignments graded with the gradient checker. "
                    f"Parts: {', '.join(PARTS)}.")
    commands = parser.add_subparsers(dest="assignment_command", metavar="{make,grade}",
                                     required=True)
    make = commands.add_parser("make", help="write a student copy of the package into DIR")
    make.add_argument("--out", required=True, metavar="DIR",
                      help="a new (or empty) folder for the copy")
    make.add_argument("--parts", nargs="+", metavar="PART",
                      help="the parts to stub (default: all)")
    make.add_argument("--solutions", action="store_true",
                      help="keep the reference code (a solution copy, to check the grader)")
    add_common(make)
    make.set_defaults(run=_run_make)
    grade = commands.add_parser("grade", help="grade the student copy in DIR")
    grade.add_argument("dir", metavar="DIR", help="a folder made by `assignment make`")
    grade.add_argument("--json", metavar="FILE", help="also write the scores as JSON to FILE")
    grade.add_argument("--parts", nargs="+", metavar="PART",
                       help="grade only these parts (default: the copy's)")
    grade.add_argument("--timeout", type=positive_float, default=60.0, metavar="SECONDS",
                       help="time limit of each part (default 60)")
    add_common(grade)
    grade.set_defaults(run=_run_grade)
    return parser
