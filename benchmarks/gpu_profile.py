"""Where a training step's time goes on a GPU: kernels, copies and memsets per step and
the kernels' device time, ours (CuPy) and PyTorch CUDA eager on the same weights, from a
CUPTI trace; and our step captured once as a CUDA graph and replayed (the remedy for a step
whose GPU waits on Python's kernel launches).

    python benchmarks/gpu_profile.py --config tiny base --json OUT.json --markdown OUT.md
    python benchmarks/gpu_profile.py --config tiny --path both --device-backend simulator \
        --torch-device cpu                       # the script itself, on a CPU machine

No timing of its own: the step times and every ratio come from benchmarks/gpu_timing.py
(the one method, docs/gpu.md "One way to time"), which also prints these counts beside
them. This script profiles the same step (gpu_timing's `our_step` and `torch_step`, the
sides built by gpu_timing for --path new, old or both) after WARMUP steps and lists the
TOP kernels of most device time, then tries the CUDA graph:

    kernels     kernels launched per step, from CUPTI (torch.profiler), which sees every
                kernel of the process: CuPy's as well as PyTorch's
    copies      host <-> device copies per step (memcpy); memsets apart
    busy ms     the kernels' summed device time per step: what a perfect launcher costs
    graph ms    ours: one CUDA graph launch per step (cupy.cuda.Stream.begin_capture);
                Adam's step count is frozen in the graph (its bias correction is a host
                scalar), so this is a timing of the remedy, not yet a training path

With the simulator (no GPU) ours' launches are the simulator's count; busy time, PyTorch's
launches and the graph say n/a.
"""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

from benchmarks.gpu_timing import (PATHS, TOP, build_sides, fused_module,  # noqa: E402,F401
                                   load_libraries, our_step, profile_sides, torch_step,
                                   warm_up, whole_device_sync)
from benchmarks.harness import CONFIGS, Setup  # noqa: E402

WARMUP = 3


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
    """Every side of one configuration: {side: counts (gpu_timing.profile_sides)}, ours'
    new path (else old) with the graph try's graph_ms and graph_error."""
    fused, note = fused_module()
    notes = [note] if note else []
    setup = Setup(name, "float32")
    sync = whole_device_sync(args.device_backend, torch, args.torch_device)
    paths = [p for p in PATHS if p in args.paths]
    sides, errors = build_sides(setup, paths, args, torch, fused, notes)
    warm_up(sides, WARMUP, sync, errors)
    result = profile_sides(sides, args, torch, sync)
    for side, err in errors.items():
        result[side] = {"error": err, "top": []}
    ours = next((p for p in paths if p in sides), None)
    if ours:
        with sides[ours].context():
            result[ours].update(graph_replay(sides[ours].step, args.steps) if on_gpu else
                                {"graph_ms": None, "graph_error": "no GPU"})
    for side, r in result.items():
        print(f"{name} {side}: {r.get('launches')} launches per step ({r.get('kernels')} "
              f"kernels), busy {r.get('busy_ms')} ms; graph {r.get('graph_ms')} "
              f"{r.get('graph_error') or ''} {r.get('error') or ''}", flush=True)
    return {"sides": result, "notes": notes}


def markdown(results):
    """The table, then each configuration's top kernels of each side."""
    def cell(value, fmt="{:.2f}"):
        return "n/a" if value is None else fmt.format(value)
    lines = ["| config | side | kernels/step | copies/step | memsets/step | busy ms/step "
             "| graph ms |", "|---|---|--:|--:|--:|--:|--:|"]
    for name, result in results.items():
        for side, r in result["sides"].items():
            lines.append(f"| {name} | {side} | {cell(r.get('kernels'), '{:.0f}')} "
                         f"| {cell(r.get('copies'), '{:.0f}')} "
                         f"| {cell(r.get('memsets'), '{:.0f}')} | {cell(r.get('busy_ms'))} "
                         f"| {cell(r.get('graph_ms'))} |")
    for name, result in results.items():
        lines += [f"\n{name}: note: {n}" for n in result["notes"]]
        for side, r in result["sides"].items():
            if r.get("graph_error"):
                lines.append(f"\n{name}, {side}: the graph capture stopped: {r['graph_error']}")
            if r.get("error"):
                lines.append(f"\n{name}, {side}: could not run: {r['error']}")
            if r.get("top"):
                lines.append(f"\n{name}, {side}: the {TOP} kernels of most "
                             + ("device time (launches per step, ms per step)\n"
                                if r.get("busy_ms") is not None else "launches (per step)\n"))
                lines += [f"- {k['per_step']:.0f} x"
                          + (f", {k['ms_per_step']:.3f} ms" if k["ms_per_step"] is not None
                             else "") + f": `{k['name']}`" for k in r["top"]]
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", nargs="+", choices=sorted(CONFIGS), default=["tiny", "base"])
    p.add_argument("--steps", type=int, default=10,
                   help="graph replays timed (default 10)")
    p.add_argument("--profile-steps", type=int, default=3,
                   help="steps per side under CUPTI (default 3)")
    p.add_argument("--path", choices=["old", "new", "both"], default="new",
                   help="ours on gpu_timing.py's new path (default), old one or both")
    p.add_argument("--device-backend", choices=["cupy", "simulator"], default="cupy")
    p.add_argument("--torch-device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--json", metavar="OUT", help="write the results to this JSON file")
    p.add_argument("--markdown", metavar="OUT", help="write the table to this Markdown file")
    args = p.parse_args(argv)
    if args.steps < 1:
        p.error(f"--steps: expected at least 1, got {args.steps}")
    if args.profile_steps < 1:
        p.error(f"--profile-steps: expected at least 1, got {args.profile_steps}")
    args.paths = PATHS if args.path == "both" else (args.path,)
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
