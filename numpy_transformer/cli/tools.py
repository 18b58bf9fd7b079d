"""`gradcheck` and `figures`: the finite-difference report, and the lessons' key figures.

    python -m numpy_transformer gradcheck                 # every layer and model, float64
    python -m numpy_transformer figures --out figures/    # PNG files, under a minute
"""

import time

from .options import add_common, nonnegative_int


def add_parsers(commands):
    p = commands.add_parser("gradcheck", help="check every layer's backward against finite "
                            "differences (float64) and print a report")
    p.add_argument("--layers-only", action="store_true", help="skip the whole-model checks")
    p.add_argument("--seed", type=nonnegative_int, default=0,
                   help="seed of the random inputs (default 0)")
    add_common(p)
    p.set_defaults(run=run_gradcheck)

    p = commands.add_parser(
        "figures", help="draw the key figures of the lessons as PNG files",
        description="Write the lessons' key figures (positional encoding, masks, gradient "
        "norms through depth, KV-cache bytes, the Noam schedule, attention maps of a briefly "
        "trained reverse model) as PNG files.")
    p.add_argument("--out", default="figures", help="folder for the PNG files (default figures/)")
    p.add_argument("--quick", action="store_true",
                   help="smaller, faster versions (a few seconds; for tests)")
    p.add_argument("--seed", type=nonnegative_int, default=0,
                   help="seed of the weights, data and inputs (default 0)")
    add_common(p)
    p.set_defaults(run=run_figures)


def run_gradcheck(args):
    from ..gradcheck_report import run_report
    return 0 if run_report(models=not args.layers_only, seed=args.seed) else 1


def run_figures(args):
    from ..lesson_figures import write_figures
    start = time.perf_counter()
    paths = write_figures(args.out, quick=args.quick, seed=args.seed)
    print(f"{len(paths)} figures in {time.perf_counter() - start:.0f} s:")
    for path in paths:
        print(f"  {path}")
    return 0
