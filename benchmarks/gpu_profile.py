"""Where a training step's time goes on a GPU: kernels and copies per step, the kernels'
device time, the host's time to queue them; ours (CuPy) and PyTorch CUDA eager on the
same weights; and our step captured once as a CUDA graph and replayed (the remedy for a
step whose GPU waits on Python's kernel launches).

    python benchmarks/gpu_profile.py --config tiny base --json OUT.json --markdown OUT.md
    python benchmarks/gpu_profile.py --config tiny --steps 2 --device-backend simulator \\
        --torch-device cpu                       # the script itself, on a CPU machine

Per configuration (benchmarks/harness.py, float32, TF32 off) and per side, after 3
warm-up steps (the step: forward, cross-entropy, backward, Adam, zero_grad, as
benchmarks/gpu_step.py times it):

    step ms     the median wall time of a step, the device synchronised before and after
    queue ms    ours: the time Python takes to queue a step's work, not waiting for it.
                Close to `step ms`: the GPU waits on the host (launch-bound)
    kernels     kernels launched per step, from CUPTI (torch.profiler), which sees every
                kernel of the process: CuPy's as well as PyTorch's
    copies      host <-> device copies per step (memcpy, not memset)
    busy ms     the kernels' summed device time per step: what a perfect launcher costs
    graph ms    ours: one CUDA graph launch per step (cupy.cuda.Stream.begin_capture);
                Adam's step count is frozen in the graph (its bias correction is a host
                scalar), so this is a timing of the remedy, not yet a training path

With the simulator (no GPU) there is no CUPTI and no graph: those columns say n/a.
"""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import argparse  # noqa: E402
import collections  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from benchmarks.gpu_step import (DeviceTorchTrainer, device_sync, load_libraries,  # noqa: E402
                                 torch_sync)
from benchmarks.harness import CONFIGS, NumpyTrainer, Setup  # noqa: E402

WARMUP = 3
TOP = 10            # kernels by device time, per configuration and side


def our_step(trainer):
    """Our step as a function that only queues the work (no host copy of the loss)."""
    model, loss_fn, optimizer = trainer.model, trainer.loss_fn, trainer.optimizer

    def step():
        logits = model.forward(trainer.src, trainer.tgt_in)
        loss = loss_fn.forward(logits, trainer.tgt_out)
        model.backward(loss_fn.backward())
        optimizer.step()
        optimizer.zero_grad()
        return loss
    return step


def wall_and_queue(step, sync, steps):
    """Median (step ms, queue ms): synchronised wall time, and the time until `step`
    returns (its work queued, not done)."""
    walls, queues = [], []
    for _ in range(steps):
        sync()
        t0 = time.perf_counter()
        step()
        t1 = time.perf_counter()
        sync()
        walls.append(time.perf_counter() - t0)
        queues.append(t1 - t0)
    return statistics.median(walls) * 1e3, statistics.median(queues) * 1e3


def kernels(torch, step, sync, steps, on_gpu):
    """Kernels, copies and busy ms per step, and the top kernels, from a CUPTI trace."""
    if not on_gpu:
        return {"kernels": None, "copies": None, "busy_ms": None, "top": []}
    from torch.profiler import ProfilerActivity, profile
    sync()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        sync()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    launched = [e for e in events if e.get("cat") == "kernel"]
    copies = [e for e in events if e.get("cat") == "gpu_memcpy"]
    by_name = collections.defaultdict(lambda: [0, 0.0])
    for e in launched:
        by_name[e["name"][:70]][0] += 1
        by_name[e["name"][:70]][1] += e.get("dur", 0.0)
    top = sorted(by_name.items(), key=lambda kv: -kv[1][1])[:TOP]
    return {"kernels": len(launched) / steps, "copies": len(copies) / steps,
            "busy_ms": sum(e.get("dur", 0.0) for e in launched) / 1e3 / steps,
            "top": [{"name": n, "per_step": c / steps, "ms_per_step": d / 1e3 / steps}
                    for n, (c, d) in top]}


def graph_replay(step, steps):
    """Median ms of our step captured once as a CUDA graph and launched; or the error."""
    import cupy
    stream = cupy.cuda.Stream(non_blocking=True)
    try:
        with stream:
            step()
            step()                          # the pool holds every block the step needs
            stream.synchronize()
            stream.begin_capture()
            try:
                step()
            finally:
                graph = stream.end_capture()
            times = []
            for _ in range(steps):
                stream.synchronize()
                t0 = time.perf_counter()
                graph.launch(stream)
                stream.synchronize()
                times.append(time.perf_counter() - t0)
        return {"graph_ms": statistics.median(times) * 1e3, "graph_error": None}
    except Exception as err:                # what stops the capture is the finding
        return {"graph_ms": None, "graph_error": f"{type(err).__name__}: {err}"[:300]}


def profile_config(name, args, torch, on_gpu):
    """Both sides of one configuration: {"ours": {...}, "torch": {...}}."""
    setup = Setup(name, "float32")
    ours = NumpyTrainer(setup)
    theirs = DeviceTorchTrainer(setup, ours.model.state_dict(), device=args.torch_device)
    sides = {"ours": (our_step(ours), device_sync(args.device_backend)),
             "torch": (theirs.step, torch_sync(torch, args.torch_device))}
    result = {}
    for side, (step, sync) in sides.items():
        for _ in range(WARMUP):
            step()
        wall, queue = wall_and_queue(step, sync, args.steps)
        result[side] = {"step_ms": wall, "queue_ms": queue if side == "ours" else None,
                        **kernels(torch, step, sync, min(args.steps, 3), on_gpu)}
        print(f"{name} {side}: step {wall:.2f} ms, queued in {queue:.2f} ms, kernels per "
              f"step {result[side]['kernels']}, busy {result[side]['busy_ms']} ms", flush=True)
    result["ours"].update(graph_replay(sides["ours"][0], args.steps) if on_gpu else
                          {"graph_ms": None, "graph_error": "no GPU"})
    print(f"{name} ours as a CUDA graph: {result['ours']['graph_ms']} ms "
          f"{result['ours']['graph_error'] or ''}", flush=True)
    return result


def markdown(results):
    """The table, then each configuration's top kernels of ours."""
    def cell(value, fmt="{:.2f}"):
        return "n/a" if value is None else fmt.format(value)
    lines = ["| config | side | step ms | queue ms | kernels/step | copies/step | busy ms/step "
             "| graph ms |", "|---|---|--:|--:|--:|--:|--:|--:|"]
    for name, result in results.items():
        for side in ("ours", "torch"):
            r = result[side]
            lines.append(f"| {name} | {side} | {cell(r['step_ms'])} | {cell(r['queue_ms'])} "
                         f"| {cell(r['kernels'], '{:.0f}')} | {cell(r['copies'], '{:.0f}')} "
                         f"| {cell(r['busy_ms'])} | {cell(r.get('graph_ms'))} |")
    for name, result in results.items():
        if result["ours"].get("graph_error"):
            lines.append(f"\n{name}: the graph capture stopped: {result['ours']['graph_error']}")
        for side in ("ours", "torch"):
            if result[side]["top"]:
                lines.append(f"\n{name}, {side}: the {TOP} kernels of most device time "
                             "(launches per step, ms per step)\n")
                lines += [f"- {k['per_step']:.0f} x, {k['ms_per_step']:.3f} ms: `{k['name']}`"
                          for k in result[side]["top"]]
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", nargs="+", choices=sorted(CONFIGS), default=["tiny", "base"])
    p.add_argument("--steps", type=int, default=10, help="timed steps (default 10)")
    p.add_argument("--device-backend", choices=["cupy", "simulator"], default="cupy")
    p.add_argument("--torch-device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--json", metavar="OUT", help="write the results to this JSON file")
    p.add_argument("--markdown", metavar="OUT", help="write the table to this Markdown file")
    args = p.parse_args(argv)
    if args.steps < 1:
        p.error(f"--steps: expected at least 1, got {args.steps}")
    return args


def main(argv=None):
    args = parse_args(argv)
    torch, error = load_libraries(args)
    if error:
        print(f"gpu_profile.py: {error}", file=sys.stderr)
        return 2
    on_gpu = args.device_backend == "cupy" and args.torch_device == "cuda"
    results = {}
    for name in args.config:
        try:
            results[name] = profile_config(name, args, torch, on_gpu)
        except Exception as err:            # the next configuration may still tell
            print(f"gpu_profile.py: {name}: {type(err).__name__}: {err}", file=sys.stderr)
    table = markdown(results)
    print("\n" + table)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
