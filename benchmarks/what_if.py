"""What would a change to the library buy? Candidate optimisations, measured, not applied.

    python benchmarks/what_if.py --config small --threads 1
    python benchmarks/what_if.py --config base --threads 1 --patch linear_2d --steps 4

Each candidate below is an alternative implementation of one library method, swapped
in with a context manager (the library files are not touched). One trainer runs
training steps alternately with and without the candidate (baseline, candidate,
candidate, baseline, ...), so both see the same machine load; the median step times
give the saving (the median of the paired ratios is printed). Every candidate must
compute the same numbers as the code it replaces: the loss after two full steps
(forward, backward, Adam) with and without it is printed too.

    linear_2d      Linear: one 2-D GEMM over all B*T rows instead of numpy's batched
                   3-D @ 2-D matmul (which runs one small GEMM per batch row), both in
                   forward (x W) and backward (dy W^T)
"""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from benchmarks.threads import apply_thread_env_from_argv
    apply_thread_env_from_argv(sys.argv)

import argparse  # noqa: E402
import statistics  # noqa: E402
from contextlib import contextmanager, nullcontext  # noqa: E402

from benchmarks.harness import CONFIGS, NumpyTrainer, Setup  # noqa: E402


@contextmanager
def swapped(cls, **methods):
    """Temporarily replace methods of `cls`."""
    saved = {name: cls.__dict__[name] for name in methods}
    for name, fn in methods.items():
        setattr(cls, name, fn)
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(cls, name, fn)


def linear_2d():
    from numpy_transformer.checks import check_float_array
    from numpy_transformer.layers.linear import Linear

    def forward(self, x):
        check_float_array(x, "x", last_dim=self.in_features, last_dim_name="in_features")
        self.cache = x
        y = x.reshape(-1, self.in_features) @ self.params["weight"]       # (N, D_out)
        if "bias" in self.params:
            y += self.params["bias"]
        return y.reshape(*x.shape[:-1], self.out_features)               # (..., D_out)

    def backward(self, dy):
        x, W = self.cache, self.params["weight"]
        x2 = x.reshape(-1, self.in_features)                             # (N, D_in)
        dy2 = dy.reshape(-1, self.out_features)                          # (N, D_out)
        self.grads["weight"] += x2.T @ dy2
        if "bias" in self.params:
            self.grads["bias"] += dy2.sum(axis=0)
        return (dy2 @ W.T).reshape(x.shape)                              # (..., D_in)

    return swapped(Linear, forward=forward, backward=backward)


PATCHES = {"linear_2d": linear_2d}


def same_numbers(setup, patch):
    """|loss difference| after two full steps (forward, backward, Adam) with and without."""
    losses = []
    for use in (False, True):
        trainer = NumpyTrainer(setup)
        with (PATCHES[patch]() if use else nullcontext()):
            trainer.step()
            loss, _ = trainer.step()
        losses.append(loss)
    return abs(losses[1] - losses[0])


def measure(setup, patch, steps):
    """(baseline median s, patched median s, median of paired ratios) over interleaved steps."""
    trainer = NumpyTrainer(setup)
    for _ in range(2):
        trainer.step()
    times = {False: [], True: []}
    for i in range(2 * steps):
        patched = (i % 4) in (1, 2)                    # B P P B B P P B ...
        with (PATCHES[patch]() if patched else nullcontext()):
            _, phases = trainer.step()
        times[patched].append(sum(phases.values()))
    ratios = [p / b for p, b in zip(times[True], times[False])]
    median = statistics.median
    return median(times[False]), median(times[True]), median(ratios)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", choices=sorted(CONFIGS), default="small")
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    p.add_argument("--patch", choices=sorted(PATCHES), action="append")
    p.add_argument("--steps", type=int, default=10, help="steps per variant")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    args = p.parse_args(argv)
    setup = Setup(args.config, args.dtype)
    print(f"{setup.label()}, {args.threads} threads, {args.steps} steps per variant, interleaved")
    for patch in args.patch or sorted(PATCHES):
        dloss = same_numbers(setup, patch)
        base, new, ratio = measure(setup, patch, args.steps)
        print(f"{patch:12s} baseline {1e3 * base:8.1f} ms  patched {1e3 * new:8.1f} ms  "
              f"saving {100 * (1 - ratio):5.1f}% (median of paired ratios)   "
              f"|step-2 loss diff| {dloss:.1e}")


if __name__ == "__main__":
    main()
