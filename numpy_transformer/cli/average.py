"""`python -m numpy_transformer average`: one checkpoint whose weights are the mean of several.

    python -m numpy_transformer train --task reverse --keep-last 5 --out runs/x
    python -m numpy_transformer average runs/x/step-*.npz --out runs/x/avg.npz
    python -m numpy_transformer evaluate --checkpoint runs/x/avg.npz
"""

import glob
import os
import shlex

from ..checkpoint.average import save_average
from ..errors import InputError
from ..validation import message
from .options import add_common
from .outputs import check_outputs, overwrite_option


def add_parser(commands):
    p = commands.add_parser(
        "average", help="average the weights of several checkpoints of one run",
        description="Write a checkpoint whose weights are the mean of the given checkpoints' "
        "weights (the paper averages the last 5 checkpoints of a run). They must come from one "
        "run: the same model settings and tokenizers. The result keeps its tokenizers and "
        "loads with evaluate, translate and generate; it has no optimizer state (it is not "
        "resumed). `train --keep-last K` keeps the last K checkpoints as OUT/step-<N>.npz.")
    p.add_argument("checkpoints", nargs="+", metavar="CKPT",
                   help="checkpoint files (a quoted pattern such as 'runs/x/step-*.npz' is "
                   "expanded too)")
    p.add_argument("--out", required=True, metavar="AVG", help="the averaged checkpoint (.npz)")
    overwrite_option(p, "AVG")
    add_common(p, threads=False)              # a mean: no BLAS
    p.set_defaults(run=run_average)


def _expand(names):
    """The files named, a pattern (*, ?, [) that names no file expanded in sorted order."""
    paths = []
    for name in names:
        if not os.path.exists(name) and any(c in name for c in "*?["):
            found = sorted(glob.glob(name))
            if not found:
                raise InputError(message("CKPT", "a checkpoint file or a pattern matching some",
                                         f"{name!r}, which matches nothing"))
            paths += found
        else:
            paths.append(name)
    return paths


def run_average(args):
    paths = _expand(args.checkpoints)
    check_outputs({"--out": args.out}, inputs={"CKPT": paths}, overwrite=args.overwrite)
    meta = save_average(paths, args.out, overwrite=args.overwrite)
    steps = [s for s in meta["averaged_steps"] if s is not None]
    at = f" (step{'s' * (len(steps) > 1)} {', '.join(map(str, sorted(steps)))})" if steps else ""
    print(f"averaged {len(paths)} checkpoint{'s' * (len(paths) > 1)}{at} into {args.out}")
    use = "generate" if meta.get("kind") == "lm" else "evaluate"
    print(f"next:  python -m numpy_transformer {use} --checkpoint {shlex.quote(args.out)}")
    return 0
