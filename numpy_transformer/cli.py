"""Command line: `python -m numpy_transformer COMMAND --help`."""

import argparse
import sys


def _gradcheck(args):
    from .selfcheck import run_report
    return 0 if run_report(models=not args.layers_only, seed=args.seed) else 1


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m numpy_transformer",
        description="A NumPy Transformer with hand-written backward passes.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = commands.add_parser("gradcheck", help="check every layer's backward against finite "
                            "differences (float64) and print a report")
    p.add_argument("--layers-only", action="store_true", help="skip the whole-model checks")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    p.set_defaults(run=_gradcheck)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "run", None) is None:
        parser.print_help()
        return 2
    try:
        return args.run(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
