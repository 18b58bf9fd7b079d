"""Where does our training step spend its time? cProfile per function, grouped by layer.

    python benchmarks/profile_step.py --config small --threads 1
    python benchmarks/profile_step.py --config base --steps 3 --top 25

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

from benchmarks.harness import CONFIGS, NumpyTrainer, Setup  # noqa: E402


def profile(setup, steps, warmup=2):
    """(pstats.Stats over `steps` training steps, wall seconds per step without the profiler)."""
    trainer = NumpyTrainer(setup)
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
    args = p.parse_args(argv)
    setup = Setup(args.config, args.dtype, args.norm_first, args.attention)
    stats, plain = profile(setup, args.steps)
    table = rows(stats)
    total = sum(r[0] for r in table)
    print(f"{setup.label()}, {args.threads} threads: {1e3 * plain:.1f} ms/step "
          f"without the profiler, {1e3 * total / args.steps:.1f} ms/step profiled")
    print(f"{'self ms/step':>12s} {'share':>6s} {'cum ms/step':>11s} {'calls/step':>10s}  function")
    for tottime, cumtime, calls, label in table[:args.top]:
        print(f"{1e3 * tottime / args.steps:12.2f} {100 * tottime / total:5.1f}% "
              f"{1e3 * cumtime / args.steps:11.2f} {calls / args.steps:10.0f}  {label}")


if __name__ == "__main__":
    main()
