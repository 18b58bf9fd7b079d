"""Time one training step on the GPU (CuPy) against PyTorch CUDA eager, same weights.

    python benchmarks/gpu_step.py --config tiny small base --json out.json --markdown out.md
    python benchmarks/gpu_step.py --config tiny --steps 2 --device-backend simulator \\
        --torch-device cpu                       # the script itself, on a CPU machine

For each configuration (benchmarks/harness.py: CONFIGS, float32 by default):
1. parity: ours (on the active backend) and the PyTorch reference (on --torch-device)
   start from the same weights; first- and second-step losses and every first-step
   gradient must agree (harness.check_against_torch: 1e-4 relative on the losses);
2. timing: one full step (forward, cross-entropy, backward, Adam, zero_grad) of each,
   by the one method of benchmarks/gpu_timing.py (ours on its new path only; gpu_timing.py
   times both paths, with launches and busy time): after WARMUP steps, --blocks rounds
   of one block of --steps steps per side between two synchronisations of the device, no
   host copy inside either step (until 2026-11-28 this script synchronised and copied the
   loss to the host every step: docs/gpu.md, "One way to time");
3. decoding: our greedy decoding with the KV cache (numpy_transformer.decoding) of the
   configuration's batch for `length` new tokens (EOS disabled), median of 3 runs.

Reported: median step ms (and quartiles, over the blocks) of ours and PyTorch, ours / PyTorch, tokens/s
(source + target tokens of the batch / step time), decode ms per token (one decoding
step of the whole batch) and generated tokens/s. Exit code 1 when a parity check fails.
"""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import argparse  # noqa: E402
import contextlib  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.gpu_timing import (BLOCKS, DEFAULT_STEPS,  # noqa: E402,F401
                                   DeviceTorchTrainer, Side, device_sync, load_libraries,
                                   our_step, time_sides, torch_step, torch_sync)
from benchmarks.harness import (CONFIGS, NumpyTrainer, Setup,  # noqa: E402
                                check_against_torch, make_batch)

WARMUP = 3
DECODE_REPEATS = 3
NO_EOS = None       # no end token: every run decodes the same number of tokens


def timed(fn, sync):
    """Seconds `fn()` takes, the device synchronised before and after (decoding)."""
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - t0


def summarize(seconds, tokens):
    """Median, quartiles (ms) and tokens/s of a list of step times."""
    q = statistics.quantiles(seconds, n=4) if len(seconds) > 1 else [seconds[0]] * 3
    median = statistics.median(seconds)
    return {"median_ms": median * 1e3, "q1_ms": q[0] * 1e3, "q3_ms": q[2] * 1e3,
            "n": len(seconds), "tokens_per_s": tokens / median,
            "steps_ms": [s * 1e3 for s in seconds]}


def time_steps(setup, args, torch_factory, syncs):
    """Our trainer and PyTorch's from the same weights, timed by gpu_timing.py's method:
    {"ours": [seconds per step, one per block], "torch": [...]}."""
    ours = NumpyTrainer(setup)
    theirs = torch_factory(setup, ours.model.state_dict())
    sides = {"ours": Side("ours", ours, our_step(ours), contextlib.nullcontext, "ours"),
             "torch": Side("torch", theirs, torch_step(theirs), contextlib.nullcontext, "torch")}

    def sync():
        syncs[1]()
        syncs[0]()
    for side in sides.values():
        for _ in range(WARMUP):
            side.step()
    times = time_sides(sides, args.steps_for(setup.name), args.blocks, sync)
    return {name: t["wall"] for name, t in times.items()}


def time_decode(setup, sync, beam=0):
    """Our greedy decoding with the KV cache of the setup's batch (beam search of `beam`
    hypotheses when beam > 0: the same model, source and length): a result dict."""
    from numpy_transformer.decoding import KVCache, beam_search, greedy_decode
    from numpy_transformer.models import build_transformer
    model = build_transformer(setup.model_config()).eval()
    src, _, _ = make_batch(setup)
    B, steps = src.shape[0], setup.length
    if beam:            # beam search needs an end token: a hypothesis may stop early
        def decode(n):
            return beam_search(model, src, beam, n, use_cache=True, cache=KVCache())
    else:
        def decode(n):
            return greedy_decode(model, src, n, eos_id=NO_EOS, use_cache=True, cache=KVCache())
    decode(2)                                                                    # warm-up
    runs, out = [], None
    for _ in range(DECODE_REPEATS):
        def run():
            nonlocal out
            out = decode(steps)
        runs.append(timed(run, sync))
    generated = max(len(h) for h in out) if beam else int(out.shape[1])
    generated = max(generated, 1)
    median = statistics.median(runs)
    return {"batch_size": B, "beam": beam or 1, "generated": generated,
            "median_ms": median * 1e3, "ms_per_token": median * 1e3 / generated,
            "tokens_per_s": B * generated / median, "runs_ms": [r * 1e3 for r in runs]}


def run_setup(setup, args, torch_factory, syncs):
    """Parity, step timing and decode timing of one configuration; a result dict."""
    result = {"config": setup.name, "dtype": setup.dtype, "setup": setup.label(),
              "batch_size": setup.batch_size, "length": setup.length,
              "tokens_per_step": setup.tokens_per_step}
    print(f"\n== {setup.label()}: batch {setup.batch_size} x length {setup.length} "
          f"({setup.tokens_per_step} tokens/step)", flush=True)
    parity = check_against_torch(setup, torch_trainer=torch_factory)
    result["parity"] = parity
    print(f"parity: loss {parity['loss']:.6f} vs torch {parity['torch_loss']:.6f} "
          f"(rel {parity['loss_rel_diff']:.1e}, step 2 rel {parity['loss2_rel_diff']:.1e}), "
          f"worst gradient rel {parity['grad_max_rel_err']:.1e} -> "
          f"{'ok' if parity['ok'] else 'FAILED'}", flush=True)
    times = time_steps(setup, args, torch_factory, syncs)
    for kind in ("ours", "torch"):
        result[kind] = summarize(times[kind], setup.tokens_per_step)
    result["ratio"] = result["ours"]["median_ms"] / result["torch"]["median_ms"]
    result["decode"] = time_decode(setup, syncs[0])
    if args.beam:
        result["beam"] = time_decode(setup, syncs[0], beam=args.beam)
    o, t, d = result["ours"], result["torch"], result["decode"]
    print(f"step: ours {o['median_ms']:.2f} ms, torch {t['median_ms']:.2f} ms, ours/torch "
          f"{result['ratio']:.2f}; tokens/s {o['tokens_per_s']:.0f} / {t['tokens_per_s']:.0f}"
          f"; decode (KV cache) {d['ms_per_token']:.2f} ms/token, "
          f"{d['tokens_per_s']:.0f} tokens/s", flush=True)
    return result


def machine_info(args, torch):
    """Versions and device names, for the report."""
    info = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "backend": args.device_backend, "torch_device": args.torch_device,
            "dtype": args.dtype,
            "python": platform.python_version(), "numpy": np.__version__,
            "torch": torch.__version__, "platform": platform.platform(), "device": "CPU"}
    if args.device_backend == "cupy":
        import cupy
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        info["cupy"] = cupy.__version__
        info["device"] = props["name"].decode() if isinstance(props["name"], bytes) \
            else str(props["name"])
    if args.torch_device == "cuda":
        info["torch_gpu"] = torch.cuda.get_device_name()
    return info


def markdown(report):
    """The report as a Markdown section: one line of context, then one row per config."""
    m = report["machine"]
    lines = [f"Measured {m['date']} on {m['device']} (ours: {m['backend']}"
             + (f" {m['cupy']}" if "cupy" in m else "") + f"; PyTorch {m['torch']} on "
             f"{m.get('torch_gpu', m['torch_device'])}); {m['dtype']}, TF32 off on both sides, "
             "post-norm, MHA; medians.",
             "",
             "| config | ours ms | PyTorch ms | **ours / PyTorch** | tokens/s ours / torch "
             "| decode ms/token | decode tokens/s | beam ms/token | parity (loss rel diff) |",
             "|--------|--------:|-----------:|------:|------:|------:|------:|------:|------|"]
    for r in report["results"]:
        o, t, d, p = r["ours"], r["torch"], r["decode"], r["parity"]
        lines.append(f"| {r['config']} | {o['median_ms']:.2f} | {t['median_ms']:.2f} | "
                     f"**{r['ratio']:.2f}** | {o['tokens_per_s']:,.0f} / "
                     f"{t['tokens_per_s']:,.0f} | {d['ms_per_token']:.2f} | "
                     f"{d['tokens_per_s']:,.0f} | "
                     + (f"{r['beam']['ms_per_token']:.2f} (K={r['beam']['beam']})"
                        if "beam" in r else "-")
                     + f" | {'ok' if p['ok'] else 'FAILED'} "
                     f"({p['loss_rel_diff']:.0e}) |")
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", nargs="+", choices=sorted(CONFIGS), default=["small"],
                   help="one or more configurations (benchmarks/harness.py)")
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    p.add_argument("--steps", type=int, default=None,
                   help=f"steps per timed block, after {WARMUP} warm-up steps "
                        f"(default {DEFAULT_STEPS})")
    p.add_argument("--blocks", type=int, default=BLOCKS,
                   help=f"timed blocks per side (default {BLOCKS})")
    p.add_argument("--device-backend", choices=["cupy", "simulator"], default="cupy",
                   help="our array module: CuPy, or the CPU device simulator (to test this "
                        "script without a GPU)")
    p.add_argument("--torch-device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--beam", type=int, default=0, metavar="K",
                   help="also time beam search of K hypotheses with the KV cache (default: no)")
    p.add_argument("--json", metavar="OUT", help="write the results to this JSON file")
    p.add_argument("--markdown", metavar="OUT", help="write the table to this Markdown file")
    args = p.parse_args(argv)
    if args.steps is not None and args.steps < 1:
        p.error("--steps must be >= 1")
    if args.blocks < 1:
        p.error("--blocks must be >= 1")
    if args.beam < 0 or args.beam == 1:
        p.error(f"--beam: expected 0 (no beam timing) or at least 2, got {args.beam}")
    args.steps_for = lambda name: args.steps or DEFAULT_STEPS[name]
    return args


def main(argv=None):
    args = parse_args(argv)
    torch, error = load_libraries(args)
    if error:
        print(f"gpu_step.py: {error}", file=sys.stderr)
        return 2
    info = machine_info(args, torch)
    print(f"ours: {info['backend']} on {info['device']}; PyTorch {info['torch']} on "
          f"{info.get('torch_gpu', args.torch_device)}; numpy {info['numpy']}", flush=True)

    def torch_factory(setup, state):
        return DeviceTorchTrainer(setup, state, device=args.torch_device)
    syncs = (device_sync(args.device_backend), torch_sync(torch, args.torch_device))
    t0 = time.perf_counter()
    results = [run_setup(Setup(name, args.dtype), args, torch_factory, syncs)
               for name in args.config]
    report = {"machine": info, "steps": {n: args.steps_for(n) for n in args.config},
              "blocks": args.blocks, "warmup": WARMUP, "method": "benchmarks/gpu_timing.py",
              "results": results}
    print(f"\n(total {time.perf_counter() - t0:.0f} s)\n\n" + markdown(report))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(report))
    return 0 if all(r["parity"]["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
