"""Kernel launches per training step, counted on the CPU by the device simulator.

    python benchmarks/launches.py --json OUT.json            # tiny, small and base
    python benchmarks/launches.py --config tiny small

The step is the one `benchmarks/gpu_profile.py` profiles on a GPU (its `our_step`: forward,
cross-entropy, backward, Adam's step, zero_grad; no copy of the loss to the host), on the
configurations of benchmarks/harness.py in float32, run under the device simulator
(numpy_transformer/testing/device_simulator.py), which counts what CuPy would queue: every
kernel, memset and copy (see its docstring for the rules). One warm-up step, then one
counted step: the count does not change from step to step.

Printed per configuration: launches per step in all, by phase (forward, loss: its forward
and its gradient, backward, optimizer: Adam's step and zero_grad), the optimizer's share,
and the kinds (kernels, memsets, copies). The JSON holds
{"tiny": {"launches": N, "optimizer": M, "kernels": K, "memsets": S, "copies": C,
"phases": {...}, "top": {...}}, ...}. tests/library/test_launches.py holds these counts to
the committed ones (benchmarks/results/launches.json): they may fall, never rise.

Calibrated against the H200 profile of 2026-11-27 (benchmarks/results/gpu-2026-11-27-h200,
CUPTI's kernels a step): see docs/gpu.md, "Kernel launches counted on the CPU".
"""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

from benchmarks.harness import CONFIGS  # noqa: E402

PHASES = ("forward", "loss", "backward", "optimizer")
TOP = 12


def _counted(function, counter_of):
    """`function`, its launches counted on a counter of its own (added to `counter_of`)."""
    from numpy_transformer.testing import device_simulator

    def call(*args, **kwargs):
        with device_simulator.count_launches() as launches:
            result = function(*args, **kwargs)
        counter_of.append(launches)
        return result
    return call


def count_step(name):
    """Launches of one training step of configuration `name` (after a warm-up step)."""
    from benchmarks.gpu_profile import our_step
    from benchmarks.harness import NumpyTrainer, Setup
    from numpy_transformer.backend import get_backend, set_backend
    from numpy_transformer.testing import device_simulator

    saved = get_backend()
    set_backend("simulator")
    try:
        trainer = NumpyTrainer(Setup(name, "float32"))
        step = our_step(trainer)
        step()                                          # warm-up: what a first step builds
        phases = {phase: [] for phase in PHASES}
        model, loss_fn, optimizer = trainer.model, trainer.loss_fn, trainer.optimizer
        wrapped = [(model, "forward", "forward"), (model, "backward", "backward"),
                   (loss_fn, "forward", "loss"), (loss_fn, "backward", "loss"),
                   (optimizer, "step", "optimizer"), (optimizer, "zero_grad", "optimizer")]
        for owner, method, phase in wrapped:           # instance attributes, removed below
            setattr(owner, method, _counted(getattr(owner, method), phases[phase]))
        try:
            t0 = time.perf_counter()
            with device_simulator.count_launches() as launches:
                step()
            seconds = time.perf_counter() - t0
        finally:
            for owner, method, _ in wrapped:
                delattr(owner, method)
    finally:
        set_backend(saved)
    by_phase = {phase: sum(c.total for c in counters) for phase, counters in phases.items()}
    return {"launches": launches.total, "optimizer": by_phase["optimizer"],
            "kernels": launches.kernels, "memsets": launches.memsets, "copies": launches.copies,
            "phases": by_phase, "parameter_arrays": len(trainer.optimizer._slots),
            "top": dict(launches.by_name.most_common(TOP)), "seconds": seconds}


def table(results):
    """The results as a Markdown table."""
    lines = ["| config | launches/step | forward | loss | backward | optimizer (share) "
             "| kernels | memsets | copies | parameter arrays |",
             "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for name, r in results.items():
        p = r["phases"]
        lines.append(f"| {name} | {r['launches']:,} | {p['forward']:,} | {p['loss']:,} "
                     f"| {p['backward']:,} | {r['optimizer']:,} "
                     f"({r['optimizer'] / r['launches']:.0%}) | {r['kernels']:,} "
                     f"| {r['memsets']:,} | {r['copies']:,} | {r['parameter_arrays']} |")
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", nargs="+", choices=sorted(CONFIGS),
                   default=["tiny", "small", "base"])
    p.add_argument("--json", metavar="OUT", help="write the counts to this JSON file")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    results = {}
    for name in args.config:
        results[name] = r = count_step(name)
        print(f"{name}: {r['launches']:,} launches a step (optimizer {r['optimizer']:,}), "
              f"counted in {r['seconds']:.1f} s; most: "
              + ", ".join(f"{k} {v}" for k, v in list(r["top"].items())[:6]), flush=True)
    print("\n" + table(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({name: {k: v for k, v in r.items() if k != "seconds"}
                       for name, r in results.items()}, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
