"""Where does our training step spend its time? cProfile per function, grouped by layer.

    python benchmarks/profile_step.py --config small --threads 1
    python benchmarks/profile_step.py --config base --steps 3 --top 25
    python benchmarks/profile_step.py --config tiny --trainer      # Trainer.train_step

`--trainer` profiles the package's own `Trainer.train_step` (gradient clipping and the
loss check included) on the same batch, instead of the bare step of the comparison with
PyTorch (forward, backward, Adam). Both print the Python calls per step, the count
issue 39 follows.

NumPy's array operators (`@`, `+`, `*`, ufuncs called as operators) are not Python
calls, so cProfile charges their time to the Python function that runs them: the
"self" time of `LayerNorm.forward` is the cost of LayerNorm's own array arithmetic,
that of `Linear.backward` its two matmuls and the bias sum. Functions called by
name (np.where, np.exp, argsort, ...) appear on their own rows as built-ins.
"""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from benchmarks.threads import apply_thread_env_from_argv
    apply_thread_env_from_argv(sys.argv)

import argparse  # noqa: E402
import cProfile  # noqa: E402
import pstats  # noqa: E402
import time  # noqa: E402

from benchmarks.harness import (CONFIGS, LABEL_SMOOTHING, NumpyTrainer, Setup,  # noqa: E402
                                make_batch)


class PackageTrainer:
    """The package's Trainer on the harness's batch, every step: `step()` runs train_step."""

    def __init__(self, setup):
        from numpy_transformer.backend import on_device, set_default_dtype
        from numpy_transformer.models import build_transformer
        from numpy_transformer.training import TrainConfig, Trainer
        set_default_dtype(setup.dtype)
        src, tgt_in, tgt_out = (on_device(a) for a in make_batch(setup))
        self.batch = ((src, tgt_in), tgt_out, int((tgt_out != 0).sum()))
        config = TrainConfig(steps=10**9, warmup=10, clip_norm=1.0,
                             label_smoothing=LABEL_SMOOTHING, progress=False)
        self.trainer = Trainer(build_transformer(setup.model_config()), self, config, log=None)

    def next_batch(self):                       # the Trainer's stream
        return self.batch

    def step(self):
        return self.trainer.train_step()


def profile(setup, steps, warmup=2, kind=NumpyTrainer):
    """(pstats.Stats over `steps` training steps, wall seconds per step without the profiler)."""
    trainer = kind(setup)
    for _ in range(warmup):
        trainer.step()
    t0 = time.perf_counter()
    for _ in range(steps):
        trainer.step()
    plain = (time.perf_counter() - t0) / steps
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        trainer.step()
    prof.disable()
    return pstats.Stats(prof), plain


def rows(stats):
    """[(self seconds, cumulative seconds, calls, 'file:function')] for every function."""
    out = []
    for (filename, line, func), (_, ncalls, tottime, cumtime, _) in stats.stats.items():
        where = os.path.basename(filename) if filename != "~" else ""
        label = f"{where}:{line}({func})" if where else func
        out.append((tottime, cumtime, ncalls, label))
    return sorted(out, reverse=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", choices=sorted(CONFIGS), default="small")
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    p.add_argument("--norm-first", action="store_true")
    p.add_argument("--attention", choices=["mha", "mla"], default="mha")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--top", type=int, default=30)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--trainer", action="store_true",
                   help="profile the package's Trainer.train_step (clipping included)")
    args = p.parse_args(argv)
    setup = Setup(args.config, args.dtype, args.norm_first, args.attention)
    stats, plain = profile(setup, args.steps,
                           kind=PackageTrainer if args.trainer else NumpyTrainer)
    table = rows(stats)
    total = sum(r[0] for r in table)
    what = "Trainer.train_step" if args.trainer else "step"
    print(f"{setup.label()} {what}, {args.threads} threads: {1e3 * plain:.1f} ms/step "
          f"without the profiler, {1e3 * total / args.steps:.1f} ms/step profiled, "
          f"{stats.total_calls / args.steps:,.0f} Python calls/step")
    print(f"{'self ms/step':>12s} {'share':>6s} {'cum ms/step':>11s} {'calls/step':>10s}  function")
    for tottime, cumtime, calls, label in table[:args.top]:
        print(f"{1e3 * tottime / args.steps:12.2f} {100 * tottime / total:5.1f}% "
              f"{1e3 * cumtime / args.steps:11.2f} {calls / args.steps:10.0f}  {label}")


if __name__ == "__main__":
    main()
