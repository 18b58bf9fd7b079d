"""The `assignment` command: `make` a student copy, `grade` one.

    python -m numpy_transformer assignment make --out DIR [--parts linear layernorm ...]
    python -m numpy_transformer assignment grade DIR [--json FILE] [--parts ...]

`add_subcommand(subparsers)` registers it on the package's command line; each
sub-command's `run(args)` returns the exit status (2 for a usage error such as
an unknown part or a DIR that is not a student copy).
"""

import sys

from .parts import PARTS


def _run_make(args):
    from .make import make_assignment
    return make_assignment(args.out, args.parts, solutions=args.solutions)


def _run_grade(args):
    from .grade import grade_assignment
    return grade_assignment(args.dir, json_out=args.json, parts=args.parts, timeout=args.timeout)


def _guarded(run):
    """Turn the clear ValueErrors (bad part, bad DIR, bad markers) into `error: ...`, exit 2."""
    def guarded(args):
        try:
            return run(args)
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    return guarded


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
    make.set_defaults(run=_guarded(_run_make))
    grade = commands.add_parser("grade", help="grade the student copy in DIR")
    grade.add_argument("dir", metavar="DIR", help="a folder made by `assignment make`")
    grade.add_argument("--json", metavar="FILE", help="also write the scores as JSON to FILE")
    grade.add_argument("--parts", nargs="+", metavar="PART",
                       help="grade only these parts (default: the copy's)")
    grade.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                       help="time limit of each part (default 60)")
    grade.set_defaults(run=_guarded(_run_grade))
    return parser
