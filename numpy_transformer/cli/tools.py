"""`gradcheck` and `figures`: the finite-difference report, and the lessons' key figures.

    python -m numpy_transformer gradcheck                 # every layer and model, float64
    python -m numpy_transformer figures                   # PNG files in runs/figures/, under a minute
    python -m numpy_transformer figures --all             # + the README runs', from runs/
    python -m numpy_transformer figures --all --only multi30k_recipe   # one README run's
    python -m numpy_transformer figures --run runs/reverse   # re-draw one run's figures
"""

import os
import time

from ..errors import InputError
from ..validation import message
from .options import add_common, nonnegative_int


def add_parsers(commands):
    p = commands.add_parser(
        "gradcheck", help="check every layer's backward against finite differences (float64) "
        "and print a report",
        description="Compare every layer's hand-written backward (and, unless --layers-only, "
        "each whole model's) with central finite differences in float64; print each case's "
        "largest relative error, and exit with status 1 if one is above its tolerance.")
    p.add_argument("--layers-only", action="store_true", help="skip the whole-model checks")
    p.add_argument("--seed", type=nonnegative_int, default=0,
                   help="seed of the random inputs (default 0)")
    p.add_argument("--markdown", action="store_true",
                   help="print the report as a Markdown table of each case's largest relative "
                   "error, to 2 significant digits (docs/gradcheck.md's table)")
    add_common(p)
    p.set_defaults(run=run_gradcheck)

    p = commands.add_parser(
        "figures", help="draw the key figures of the lessons as PNG files",
        description="Write the lessons' key figures (positional encoding, masks, gradient "
        "norms through depth, KV-cache bytes, the Noam schedule, attention maps of a briefly "
        "trained reverse model) as PNG files. With --all, also re-draw the figures of the "
        "README's runs from their run folders and write their JSON summaries (every figure "
        "the repository commits); with --run, re-draw one run's figures.")
    p.add_argument("--out", help="folder for the PNG files (default runs/figures/, so that a "
                   "clone's committed figures/ stay as they are; figures/ with --all, whose "
                   "job is to re-draw them; RUN/figures with --run)")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--all", action="store_true",
                      help="also the README runs' figures and summaries, from --runs")
    what.add_argument("--run", metavar="DIR", dest="run_dir",
                      help="only re-draw the figures of the run in DIR (from its files)")
    p.add_argument("--runs", default="runs", metavar="DIR", dest="runs_dir",
                   help="folder holding the README runs' folders, for --all (default runs/)")
    p.add_argument("--only", metavar="NAME", action="append",
                   help="with --all: only this README run's figures and summary, not the "
                   "lessons' (repeatable; a name of the README's Results table, such as "
                   "multi30k_recipe)")
    p.add_argument("--quick", action="store_true",
                   help="smaller, faster versions (a few seconds; for tests)")
    p.add_argument("--seed", type=nonnegative_int, default=0,
                   help="seed of the weights, data and inputs (default 0)")
    add_common(p)
    p.set_defaults(run=run_figures)


def run_gradcheck(args):
    from ..tools.gradcheck_report import run_report
    return 0 if run_report(models=not args.layers_only, seed=args.seed,
                           markdown=args.markdown) else 1


def run_figures(args):
    from ..course.lessons.figures import write_figures
    from ..tools.readme_runs import draw_run, readme_runs, write_all
    start = time.perf_counter()
    names = [r.name for r in readme_runs()]
    for name in args.only or ():
        if name not in names:
            raise InputError(message("--only", f"one of {', '.join(names)}", name))
    if args.run_dir:
        if not os.path.isfile(os.path.join(args.run_dir, "history.json")):
            raise InputError(message("--run", "a run folder (with history.json)", args.run_dir))
        paths = draw_run(args.run_dir, args.out or os.path.join(args.run_dir, "figures"))
    else:
        out = args.out or ("figures" if args.all else os.path.join("runs", "figures"))
        if args.only and not args.all:
            raise InputError(message("--only", "to come with --all", " ".join(args.only)))
        if args.all:
            paths = write_all(out, args.runs_dir, only=args.only)
        if not args.only:
            paths = write_figures(out, quick=args.quick, seed=args.seed) + (paths if args.all else [])
    print(f"{len(paths)} figures in {time.perf_counter() - start:.0f} s:")
    for path in paths:
        print(f"  {path}")
    return 0
