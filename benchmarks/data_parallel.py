"""Time one training step on N = 1 and N = 2 MPI ranks, and the all-reduce's share of it.

    python benchmarks/data_parallel.py --all                     # small and base, N = 1 and 2
    mpiexec -n 2 python benchmarks/data_parallel.py --config small        # one measurement

The configurations and the global batch are benchmarks/harness.py's (small: d_model 256,
2+2 layers, batch 32 x 32; base: d_model 512, 6+6 layers, batch 16 x 32), float32,
dropout 0, one BLAS thread per rank. N = 1 is the plain Trainer (no MPI); N = 2 is a
DataParallelTrainer under mpiexec, each rank taking half of every batch. A step is
Trainer.train_step: forward, loss, backward, [all-reduce], clipping, Adam. Every step
starts after a barrier, so its time is the slower rank's. Reported, as medians over the
timed steps (after 2 warm-up steps):
- step: the step's time on rank 0;
- all-reduce: the Allreduce call, waiting for the slower rank included, and its share;
- copy: filling and emptying the flat buffer;
- transfer alone: an Allreduce of the same buffer right after a barrier (no waiting).
With --all, each (configuration, N) runs --repeats times, alternately, in fresh processes,
and the fastest run is kept: on a shared machine the others' load only ever slows a run.
"""

import os
import sys

if __name__ == "__main__":
    # Before numpy is imported anywhere: BLAS reads its thread count once, at load.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from benchmarks.threads import apply_thread_env_from_argv
    apply_thread_env_from_argv(sys.argv + ["--threads", "1"] if "--threads" not in sys.argv
                               else sys.argv)

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.harness import CONFIGS, LABEL_SMOOTHING, PAD, Setup, make_batch  # noqa: E402

STEPS = {"tiny": 20, "small": 15, "base": 8}
WARMUP = 2
MARK = "@@"


class FixedStream:
    """The same global batch every step: ((src, tgt_in), tgt_out, ntokens)."""

    def __init__(self, setup):
        self.src, self.tgt_in, self.tgt_out = make_batch(setup)
        self.batch_size = setup.batch_size

    def next_batch(self):
        return (self.src, self.tgt_in), self.tgt_out, int((self.tgt_out != PAD).sum())

    def state_dict(self):
        return {}


def measure(config, steps):
    """Rank 0's medians, as a dict (None on the other ranks)."""
    from numpy_transformer.backend import set_default_dtype
    from numpy_transformer.models import build_transformer
    from numpy_transformer.training import TrainConfig, Trainer
    from numpy_transformer.training.distributed import DataParallelTrainer
    from numpy_transformer.training.mpi_world import mpi_names, world
    setup = Setup(config)
    set_default_dtype(setup.dtype)
    model, stream = build_transformer(setup.model_config()), FixedStream(setup)
    train = TrainConfig(steps=10_000, lr=5e-4, warmup=10, label_smoothing=LABEL_SMOOTHING,
                        eval_every=0, checkpoint_every=0, log_every=0, progress=False,
                        batch_size=setup.batch_size)
    comm = world()
    if comm is None:
        trainer = Trainer(model, stream, train, log=None)
    else:
        trainer = DataParallelTrainer(model, stream, train, comm=comm, log=None)
    rows = []
    for i in range(WARMUP + steps):
        if comm is not None:
            comm.Barrier()
        start = time.perf_counter()
        trainer.train_step()
        seconds = time.perf_counter() - start
        if i >= WARMUP:
            rows.append((seconds, *(getattr(trainer.gradient_sync, "seconds", {}).get(k, 0.0)
                                    for k in ("allreduce", "copy"))))
    transfer = 0.0
    if comm is not None:
        buffer = np.ones(model.num_parameters() + 1 + comm.Get_size(), dtype=setup.dtype)
        in_place, total = mpi_names(comm)
        times = []
        for _ in range(5):
            comm.Barrier()
            start = time.perf_counter()
            comm.Allreduce(in_place, buffer, op=total)
            times.append(time.perf_counter() - start)
        transfer = statistics.median(times)
        if comm.Get_rank():
            return None
    step, allreduce, copy = (statistics.median(column) for column in zip(*rows))
    return {"config": config, "ranks": 1 if comm is None else comm.Get_size(),
            "parameters": model.num_parameters(), "steps": steps, "step_s": step,
            "allreduce_s": allreduce, "copy_s": copy, "transfer_s": transfer,
            "allreduce_share": allreduce / step}


def find_mpiexec():
    path = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return path if os.access(path, os.X_OK) else shutil.which("mpiexec")


def run_all(configs, repeats, json_path):
    """Each configuration with N = 1 and N = 2, the fastest of `repeats` runs; the table."""
    mpiexec = find_mpiexec()
    if mpiexec is None:
        sys.exit("mpiexec not found: pip install -e '.[mpi]'")
    best = {}
    loads = [os.getloadavg()[0]]
    for _ in range(repeats):
        for config in configs:
            for ranks in (1, 2):
                command = [sys.executable, os.path.abspath(__file__), "--config", config,
                           "--threads", "1"]
                command = command if ranks == 1 else [mpiexec, "-n", "2", *command]
                done = subprocess.run(command, capture_output=True, text=True, check=True)
                line = next(x for x in done.stdout.splitlines() if x.startswith(MARK))
                r = json.loads(line[len(MARK):])
                if (config, ranks) not in best or r["step_s"] < best[config, ranks]["step_s"]:
                    best[config, ranks] = r
                loads.append(os.getloadavg()[0])
    results = list(best.values())
    print(f"fastest of {repeats} runs each; 1-minute load average during the runs "
          f"{min(loads):.1f} to {max(loads):.1f} on {os.cpu_count()} cores\n")
    print("| config | N | step | speed-up | all-reduce (share of the step) | copy | "
          "transfer alone |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        one = next(x for x in results if x["config"] == r["config"] and x["ranks"] == 1)
        D, _, _, ne, nd, B, T, _ = CONFIGS[r["config"]]
        name = f"{r['config']} (d_model {D}, {ne}+{nd} layers, batch {B} x {T})"
        reduce = "-" if r["ranks"] == 1 else \
            f"{1e3 * r['allreduce_s']:.1f} ms ({100 * r['allreduce_share']:.0f}%)"
        copy = "-" if r["ranks"] == 1 else f"{1e3 * r['copy_s']:.1f} ms"
        transfer = "-" if r["ranks"] == 1 else f"{1e3 * r['transfer_s']:.1f} ms"
        print(f"| {name} | {r['ranks']} | {1e3 * r['step_s']:.0f} ms | "
              f"{one['step_s'] / r['step_s']:.2f} | {reduce} | {copy} | {transfer} |")
    if json_path:
        with open(json_path, "w") as f:
            json.dump(results, f, indent=2)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", choices=sorted(CONFIGS), default="small")
    p.add_argument("--steps", type=int, help="timed steps (default: small 15, base 8)")
    p.add_argument("--threads", type=int, default=1, help="BLAS threads per rank (default 1)")
    p.add_argument("--all", action="store_true", help="small and base, N = 1 and 2")
    p.add_argument("--repeats", type=int, default=3, help="with --all: runs of each (default 3)")
    p.add_argument("--json", help="with --all: also write the results to this file")
    args = p.parse_args()
    if args.all:
        return run_all(["small", "base"], args.repeats, args.json)
    result = measure(args.config, args.steps or STEPS[args.config])
    if result is not None:
        print(MARK + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
