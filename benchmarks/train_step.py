"""Time one full training step (forward, cross-entropy, backward, Adam) against PyTorch.

    python benchmarks/train_step.py --config small
    python benchmarks/train_step.py --all --threads 2 --json results.json
    python benchmarks/train_step.py --smoke            # one tiny step, correctness only

For each configuration:
1. parity: ours and the PyTorch reference (benchmarks/torch_reference.py) start from the
   same weights; the first- and second-step losses and every first-step gradient must
   agree (relative 1e-4 / 1e-2 in float32, 1e-10 / 1e-7 in float64);
2. timing: ours and PyTorch each run in their OWN worker process (so each peak RSS is
   its own), driven step by step from here and interleaved (ours, torch, torch, ours,
   ...), so that both see the same machine load; both use the same thread count;
3. report: median step time and its interquartile range, tokens/s (source + target
   tokens), the share of forward / backward / optimizer, peak RSS, ours/PyTorch, and
   the roofline: the FLOPs of the step's matmuls (benchmarks/flops.py) over this
   machine's measured matmul speed on those very shapes, as a share of the step time.
"""

import os
import sys

if __name__ == "__main__":
    # Before numpy is imported anywhere: BLAS reads its thread count once, at load.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from benchmarks.threads import apply_thread_env_from_argv
    apply_thread_env_from_argv(sys.argv)

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.flops import count_step_flops, step_matmuls, time_matmuls  # noqa: E402
from benchmarks.harness import (CONFIGS, NumpyTrainer, Setup, TorchTrainer,  # noqa: E402
                                check_against_torch, peak_rss_mb, rss_mb)
from benchmarks.step_report import print_parity, print_result  # noqa: E402

DEFAULT_STEPS = {"tiny": 30, "small": 20, "base": 10}
WARMUP = 3
MARK = "@@"          # worker replies are lines starting with MARK, then JSON


def torch_available():
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


# The worker: one library, one model, commands on stdin, JSON replies on stdout.

def worker_main(args):
    setup = Setup(args.config, args.dtype, args.norm_first, args.attention)
    if args.worker == "torch":
        import torch
        torch.set_num_threads(args.threads)
    else:
        import numpy_transformer  # noqa: F401
    rss_import = rss_mb()                 # the library imported, nothing built yet
    if args.worker == "torch":
        state = np.load(args.weights)
        adam = {"fused": True} if args.torch_adam == "fused" else {}
        trainer = TorchTrainer(setup, state, args.torch_attention, adam)
    else:
        trainer = NumpyTrainer(setup)
    reply({"ready": True, "rss_after_import_mb": rss_import, "rss_after_build_mb": rss_mb()})
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "step":
            loss, phases = trainer.step()
            reply({"loss": loss, **phases})
        elif cmd == "memory":
            reply({"peak_rss_mb": peak_rss_mb(), "rss_mb": rss_mb()})
        elif cmd == "roofline":
            fwd, bwd = step_matmuls(setup.model_config(), setup.batch_size, setup.length,
                                    setup.length)
            lib = "torch" if args.worker == "torch" else "numpy"
            r = time_matmuls(fwd + bwd, setup.dtype, lib)
            reply({"seconds": r["seconds"], "gflops": r["gflops"], "flops": r["flops"]})
        elif cmd == "quit":
            break


def reply(obj):
    sys.stdout.write(MARK + json.dumps(obj) + "\n")
    sys.stdout.flush()


class Worker:
    """A worker subprocess driven one command at a time."""

    def __init__(self, kind, args, weights):
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", kind,
               "--config", args.config, "--dtype", args.dtype, "--attention", args.attention,
               "--threads", str(args.threads), "--torch-attention", args.torch_attention,
               "--torch-adam", args.torch_adam]
        if args.norm_first:
            cmd.append("--norm-first")
        if weights:
            cmd += ["--weights", weights]
        self.kind = kind
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1)
        self.info = self.read()

    def read(self):
        for line in self.proc.stdout:
            if line.startswith(MARK):
                return json.loads(line[len(MARK):])
        raise RuntimeError(f"{self.kind} worker exited (code {self.proc.wait()})")

    def ask(self, cmd):
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        return self.read()

    def close(self):
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        self.proc.wait(timeout=60)


# The driver.

def summarize(steps, tokens, flops):
    """Median, quartiles, tokens/s, GFLOP/s and phase shares of a list of step timings."""
    totals = [sum(s[p] for p in ("forward", "backward", "optimizer")) for s in steps]
    q = statistics.quantiles(totals, n=4) if len(totals) > 1 else [totals[0]] * 3
    median = statistics.median(totals)
    shares = {p: sum(s[p] for s in steps) / sum(totals) for p in ("forward", "backward",
                                                                   "optimizer")}
    return {"median_s": median, "q1_s": q[0], "q3_s": q[2], "n": len(totals),
            "tokens_per_s": tokens / median, "gflops": flops / median / 1e9, "shares": shares,
            "steps_s": totals}


def run_setup(setup, args, have_torch):
    """Parity check, interleaved timing and roofline of one configuration; returns a dict."""
    from numpy_transformer.backend import set_default_dtype
    from numpy_transformer.models import build_transformer
    cfg = setup.model_config()
    B, T = setup.batch_size, setup.length
    flops = count_step_flops(cfg, B, T, T)
    result = {"setup": setup.label(), "config": setup.name, "dtype": setup.dtype,
              "norm_first": setup.norm_first, "attention": setup.attention,
              "threads": args.threads, "batch_size": B, "length": T,
              "tokens_per_step": setup.tokens_per_step, "flops": flops}
    set_default_dtype(setup.dtype)
    model = build_transformer(cfg)
    result["num_params"] = model.num_parameters()
    state = model.state_dict()
    del model
    print(f"\n== {result['setup']}: {result['num_params'] / 1e6:.2f}M parameters, batch {B} x "
          f"length {T} ({setup.tokens_per_step} tokens/step), "
          f"{flops['total'] / 1e9:.2f} GFLOP/step in matmuls, {args.threads} threads")
    if have_torch:
        result["parity"] = check_against_torch(setup, {"attention_impl": args.torch_attention})
        print_parity(result["parity"])
    if args.smoke:
        trainer = NumpyTrainer(setup)
        loss, _ = trainer.step()
        result["smoke_loss"] = loss
        result["ok"] = bool(np.isfinite(loss)) and result.get("parity", {}).get("ok", True)
        print(f"smoke: one step, loss {loss:.6f} (no timing in --smoke mode)")
        return result

    steps = args.steps or DEFAULT_STEPS[setup.name]
    timings, memory, roofline = time_workers(args, state if have_torch else None, steps)
    for kind in timings:
        s = summarize(timings[kind], setup.tokens_per_step, flops["total"])
        s.update(memory[kind])
        s["peak_above_import_mb"] = s["peak_rss_mb"] - s["rss_after_import_mb"]
        if kind in roofline:
            s["roofline"] = roofline[kind]
            s["roofline_share"] = roofline[kind]["seconds"] / s["median_s"]
        result[kind] = s
    if "torch" in result:
        pairs = [a / b for a, b in zip(result["ours"]["steps_s"], result["torch"]["steps_s"])]
        result["ratio"] = result["ours"]["median_s"] / result["torch"]["median_s"]
        result["ratio_paired_median"] = statistics.median(pairs)
    print_result(result)
    return result


def time_workers(args, state, steps):
    """Our worker (and PyTorch's, started from `state`, when given), stepped alternately:
    ({kind: [step timings]}, {kind: memory readings}, {kind: roofline} or {})."""
    with tempfile.TemporaryDirectory() as tmp:
        workers = [Worker("ours", args, None)]
        if state is not None:
            weights = os.path.join(tmp, "weights.npz")
            np.savez(weights, **state)
            workers.append(Worker("torch", args, weights))
        try:
            timings = {w.kind: [] for w in workers}
            for i in range(WARMUP + steps):
                order = workers if i % 2 == 0 else workers[::-1]
                for w in order:
                    r = w.ask("step")
                    if i >= WARMUP:
                        timings[w.kind].append(r)
            memory = {w.kind: {**w.info, **w.ask("memory")} for w in workers}
            roofline = {w.kind: w.ask("roofline") for w in workers} if args.roofline else {}
        finally:
            for w in workers:
                w.close()
    return timings, memory, roofline


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", choices=sorted(CONFIGS), default="small")
    p.add_argument("--all", action="store_true", help="every configuration, smallest first")
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    p.add_argument("--norm-first", action="store_true", help="pre-norm (default post-norm)")
    p.add_argument("--attention", choices=["mha", "mla"], default="mha")
    p.add_argument("--steps", type=int, default=None,
                   help=f"timed steps after {WARMUP} warm-up steps (default {DEFAULT_STEPS})")
    p.add_argument("--threads", type=int, default=os.cpu_count(),
                   help="BLAS / torch threads for both libraries (default: every core)")
    p.add_argument("--smoke", action="store_true",
                   help="one tiny step and the parity check: correctness only, no timing")
    p.add_argument("--no-torch", action="store_true", help="skip PyTorch even if installed")
    p.add_argument("--no-roofline", dest="roofline", action="store_false",
                   help="skip timing the matmul shapes")
    p.add_argument("--torch-attention", choices=["plain", "sdpa"], default="plain",
                   help="the reference's attention: plain ops (like ours) or fused SDPA")
    p.add_argument("--torch-adam", choices=["default", "fused"], default="default",
                   help="torch.optim.Adam's default (for-loop on CPU) or fused=True")
    p.add_argument("--json", metavar="OUT", help="write the results to this JSON file")
    p.add_argument("--worker", choices=["ours", "torch"], help=argparse.SUPPRESS)
    p.add_argument("--weights", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.steps is not None and args.steps < 10:
        p.error("--steps must be >= 10 (timings are medians of at least 10 steps)")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        return worker_main(args)
    have_torch = not args.no_torch and torch_available()
    if have_torch:
        __import__("torch").set_num_threads(args.threads)     # for the parity check here
    if args.smoke:
        names = ["tiny"]
    else:
        names = ["tiny", "small", "base"] if args.all else [args.config]
    print(f"numpy {np.__version__}; python {platform.python_version()}; "
          f"{os.cpu_count()} cores; threads {args.threads}; "
          + (f"torch {__import__('torch').__version__}" if have_torch
             else "PyTorch not used (not installed or --no-torch)"))
    results = []
    t0 = time.perf_counter()
    for name in names:
        args.config = name
        setup = Setup(name, args.dtype, args.norm_first, args.attention)
        results.append(run_setup(setup, args, have_torch))
    print(f"\n(total {time.perf_counter() - t0:.0f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": {"cores": os.cpu_count(), "threads": args.threads,
                                   "numpy": np.__version__, "platform": platform.platform()},
                       "results": results}, f, indent=1)
    ok = all(r.get("ok", True) and r.get("parity", {}).get("ok", True) for r in results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
