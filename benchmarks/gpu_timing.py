"""One way to time a training step on a GPU: ours (CuPy) and PyTorch CUDA eager, the same
model, weights and batch, timed alike in one process, with the device's busy time and the
kernel launches per step beside each ratio (issue 50; docs/gpu.md, "One way to time").

    python benchmarks/gpu_timing.py --config base tiny small --path both --json OUT.json
    python benchmarks/gpu_timing.py --config tiny --path both --steps 2 --blocks 2 \\
        --device-backend simulator --torch-device cpu      # the script itself, on a CPU

Every ratio in docs/gpu.md comes from this module. Per configuration (benchmarks/harness.py,
float32, TF32 off on both sides), in this order:

1. sides: PyTorch eager (`DeviceTorchTrainer`) and ours on each path asked for, from the
   same weights and the same batch, all on the device at once:
     new  Adam(fast=True) (the flat-buffer optimizer where the tree has it) and the fused
          drop-ins on (numpy_transformer.layers.fused);
     old  Adam(fast="per-array") (the previous per-array fast update) and the fused
          drop-ins off (`fused.disabled()`).
   Where the tree lacks one of them, the path degrades and the output says so (`notes`):
   an Adam without "per-array" runs fast=True on both paths (today's per-array update),
   a tree without `layers.fused` runs the same layers on both.
2. warm-up: WARMUP steps of every side (CuPy compiles its kernels on first use); the first
   two losses of each, brought to the host between warm-up steps, are the parity check
   (float32: relative difference to PyTorch's below 1e-4 on both).
3. timing: BLOCKS rounds; in each round every side runs one block of STEPS steps back to
   back between two synchronisations of the whole device (torch.cuda.synchronize, which
   waits for CuPy's stream too, and CuPy's stream), the order of the sides reversed every
   round (A B C, C B A, ...), the garbage collector run before each block (outside the
   clock). A step is forward, cross-entropy, backward, the optimizer's step and zero_grad,
   its loss left on the device: no host copy and no synchronisation inside either side's
   step. Per block: ms per step (wall / STEPS) and queue ms per step (until the last step
   returned, before the final synchronisation: the host's time to queue the work). The
   median block is reported, with the fastest and slowest.
4. after all the timing in this process (a CUPTI trace may tax launches made after it),
   PROFILE_STEPS steps of each side under torch.profiler: CUPTI records every kernel of
   the process, CuPy's as well as PyTorch's, so one tool measures both sides: kernels,
   copies (memcpy) and memsets per step, the device-busy time per step (the kernels'
   summed durations: the floor a perfect launcher would reach) and the top kernels.
   Without a GPU (the device simulator), ours' launches are counted by
   numpy_transformer/testing/device_simulator.py (and its host copies per step), the
   busy time and PyTorch's launches are n/a.

Output: the table on stdout, `--markdown` the same, `--json` {"machine", "method", "paths",
"notes", "results": {config: {"sides": {"torch", "new", "old"}, "ratio": {"new", "old"},
"parity"}}, "rows": [one row per config and side, the docs table's columns]}; the JSON is
rewritten after every warm-up (the parity), configuration and profile, and on SIGINT
(stopped at its share) the results so far, the blocks already timed included, are written
before exit 1. Exit 1 when a parity check fails or
a side could not run, 2 when the libraries or the device are missing.
"""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import argparse  # noqa: E402
import collections  # noqa: E402
import contextlib  # noqa: E402
import datetime  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.harness import (ADAM, CONFIGS, LABEL_SMOOTHING, PAD,  # noqa: E402
                                NumpyTrainer, Setup, TorchTrainer)

DEFAULT_STEPS = {"tiny": 20, "small": 20, "base": 10}      # steps per block
BLOCKS = 5
WARMUP = 3
PROFILE_STEPS = 3
TOP = 10
PARITY_TOLERANCE = {"float32": 1e-4, "float64": 1e-10}
PATHS = ("new", "old")
SIDES = ("torch", "new", "old")                 # the order of the sides in the first round


# ------------------------------------------------------------------ the two libraries

class DeviceTorchTrainer(TorchTrainer):
    """harness.TorchTrainer with its parameters, Adam state, batch and masks on `device`.

    The reference model (benchmarks/torch_reference.py) is built on the CPU from our
    weights, then its leaf tensors are moved; the causal mask is made on the device
    each step (the reference would make it on the CPU), the padding masks follow the ids.
    """

    def __init__(self, setup, state, attention_impl="plain", adam_kwargs=None, device="cuda"):
        super().__init__(setup, state, attention_impl, adam_kwargs)
        from benchmarks.torch_reference import make_adam
        torch = self.torch
        self.device = torch.device(device)
        model = self.model
        model.params = {name: p.detach().to(self.device).requires_grad_(True)
                        for name, p in model.params.items()}
        model.pe = model.pe.to(self.device)
        self.optimizer = make_adam(model, **ADAM, **(adam_kwargs or {}))
        self.src, self.tgt_in, self.tgt_out = (t.to(self.device) for t in
                                               (self.src, self.tgt_in, self.tgt_out))

    def target_mask(self):
        """(B, 1, T, T) boolean: not padding and not in the future, made on the device."""
        T = self.tgt_in.shape[1]
        causal = self.torch.ones(T, T, dtype=self.torch.bool, device=self.device).tril()
        return (self.tgt_in != PAD)[:, None, None, :] & causal

    def logits(self):
        return self.model.forward(self.src, self.tgt_in, None, self.target_mask())

    def grads(self):
        """{dotted name: NumPy copy of the gradient} (zeros where none), from the device."""
        return {name: (p.grad if p.grad is not None else self.torch.zeros_like(p))
                .detach().cpu().numpy() for name, p in self.model.params.items()}


def device_sync(backend):
    """A function that waits for the active array module's queued work (no-op on a CPU)."""
    if backend == "cupy":
        import cupy
        return lambda: cupy.cuda.get_current_stream().synchronize()
    return lambda: None


def torch_sync(torch, device):
    """A function that waits for PyTorch's queued CUDA work (no-op on the CPU)."""
    if torch.device(device).type == "cuda":
        return torch.cuda.synchronize
    return lambda: None


def whole_device_sync(backend, torch, torch_device):
    """One synchronisation for every block of either side: PyTorch's (the whole device,
    CuPy's stream included) and CuPy's stream; on a CPU, nothing to wait for."""
    ours, theirs = device_sync(backend), torch_sync(torch, torch_device)

    def sync():
        theirs()
        ours()
    return sync


def load_libraries(args):
    """Select our backend, import torch and check the devices; (torch, error message)."""
    try:
        import torch
    except ImportError:
        return None, "PyTorch is not installed: python -m pip install torch==2.13.0"
    if args.torch_device == "cuda" and not torch.cuda.is_available():
        return None, (f"PyTorch {torch.__version__} sees no CUDA device: a CPU-only build "
                      "(reinstall a CUDA build of torch==2.13.0) or no GPU here")
    torch.backends.cuda.matmul.allow_tf32 = False       # full float32 on both sides: CuPy
    torch.backends.cudnn.allow_tf32 = False             # uses TF32 only with CUPY_TF32=1
    from numpy_transformer.backend import set_backend
    try:
        set_backend(args.device_backend)
        if args.device_backend == "cupy":
            import cupy
            cupy.cuda.runtime.getDeviceCount()           # raises without a usable GPU
    except Exception as err:                             # ImportError, CUDARuntimeError
        return None, f"{type(err).__name__}: {err}"
    return torch, None


# ------------------------------------------------------------------ the steps

def our_step(trainer):
    """Our step as a function that only queues the work: forward, cross-entropy, backward,
    Adam's step, zero_grad; the loss stays on the device (no host copy, no wait).

    The loss is given the batch's token count from the host, counted once here, as the
    Trainer gives it (`num_tokens=batch.ntokens`): without it the loss counts them on the
    device and brings the count back (`int(valid.sum())`), a wait for the device in the
    middle of every step that PyTorch's step does not make."""
    from numpy_transformer.backend import to_numpy
    model, loss_fn, optimizer = trainer.model, trainer.loss_fn, trainer.optimizer
    ntokens = int((to_numpy(trainer.tgt_out) != PAD).sum())

    def step():
        logits = model.forward(trainer.src, trainer.tgt_in)
        loss = loss_fn.forward(logits, trainer.tgt_out, num_tokens=ntokens)
        model.backward(loss_fn.backward())
        optimizer.step()
        optimizer.zero_grad()
        return loss
    return step


def torch_step(trainer):
    """PyTorch's step, the same work, its loss left on the device (no `.item()`)."""
    from benchmarks.torch_reference import cross_entropy
    optimizer = trainer.optimizer

    def step():
        loss = cross_entropy(trainer.logits(), trainer.tgt_out, PAD, LABEL_SMOOTHING)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss
    return step


# ------------------------------------------------------------------ the two paths

def fused_module():
    """(numpy_transformer.layers.fused or None, a note where it is missing or broken)."""
    try:
        from numpy_transformer.layers import fused
    except ImportError:
        return None, "fused drop-ins not in this tree (no numpy_transformer.layers.fused)"
    except Exception as err:                # another helper's file mid-edit, say
        return None, f"numpy_transformer.layers.fused does not import: {type(err).__name__}: {err}"
    if not (hasattr(fused, "disabled") or hasattr(fused, "set_enabled")):
        return None, "numpy_transformer.layers.fused has no disabled() nor set_enabled()"
    return fused, None


@contextlib.contextmanager
def fused_off(fused):
    """The fused drop-ins off for the region (`fused.disabled()`, else set_enabled)."""
    if fused is None:
        yield
    elif hasattr(fused, "disabled"):
        with fused.disabled():
            yield
    else:
        before = fused.enabled() if callable(getattr(fused, "enabled", None)) else True
        fused.set_enabled(False)
        try:
            yield
        finally:
            fused.set_enabled(before)


def path_context(path, fused):
    """A factory of the context each of a path's regions runs in (old: fused off)."""
    if path == "old":
        return lambda: fused_off(fused)
    return contextlib.nullcontext


def build_ours(setup, path, state, fused, notes):
    """Our trainer on `path` from `state`: (trainer, description of its optimizer)."""
    context = path_context(path, fused)
    with context():
        if path == "new":
            return NumpyTrainer(setup, state, fast=True), "Adam(fast=True)"
        try:
            return (NumpyTrainer(setup, state, fast="per-array"),
                    'Adam(fast="per-array")')
        except (TypeError, ValueError) as err:
            if "fast" not in str(err):
                raise
            note = ('Adam has no fast="per-array" in this tree (' + str(err).split("\n")[0][:120]
                    + '): the old path runs fast=True, which is the per-array update here')
            if note not in notes:
                notes.append(note)
            return NumpyTrainer(setup, state, fast=True), "Adam(fast=True) (per-array)"


class Side:
    """One side of the comparison: its step, the context its regions run in, its trainer."""

    def __init__(self, name, trainer, step, context, description):
        self.name, self.trainer, self.step = name, trainer, step
        self.context, self.description = context, description

    def loss(self, value):
        """A step's loss on the host (outside the timing)."""
        return float(value.item() if hasattr(value, "item") else value)


def build_sides(setup, paths, args, torch, fused, notes):
    """{name: Side}: PyTorch's and ours on each path, from the same weights."""
    sides, errors = {}, {}
    first = None
    for path in paths:
        try:
            trainer, description = build_ours(setup, path, first and first.model.state_dict(),
                                              fused, notes)
        except Exception as err:                        # the other path may still run
            errors[path] = f"{type(err).__name__}: {err}"[:300]
            continue
        first = first or trainer
        ctx = path_context(path, fused)
        sides[path] = Side(path, trainer, our_step(trainer), ctx,
                           description + (", fused off" if path == "old" and fused else
                                          ", fused on" if fused else ""))
    if first is None:
        trainer, _ = build_ours(setup, "new", None, fused, notes)   # raises what stops it
        first = trainer
    theirs = DeviceTorchTrainer(setup, first.model.state_dict(), device=args.torch_device)
    sides = {"torch": Side("torch", theirs, torch_step(theirs), contextlib.nullcontext,
                           f"PyTorch {torch.__version__} eager, torch.optim.Adam"), **sides}
    return sides, errors


# ------------------------------------------------------------------ the method

def warm_up(sides, steps, sync, errors):
    """WARMUP steps of every side; its first two losses on the host: {side: [l1, l2]}.
    A side whose warm-up raises is dropped (its error kept)."""
    losses = {}
    for name in list(sides):
        side = sides[name]
        try:
            with side.context():
                losses[name] = []
                for i in range(steps):
                    loss = side.step()
                    if i < 2:
                        losses[name].append(side.loss(loss))
                sync()
        except Exception as err:
            errors[name] = f"{type(err).__name__}: {err}"[:300]
            del sides[name]
            losses.pop(name, None)
    return losses


def parity(losses, dtype):
    """Each of our paths' first two losses against PyTorch's."""
    out = {}
    ref = losses.get("torch")
    for path in PATHS:
        if path not in losses or not ref:
            continue
        ours = losses[path]
        rel = [abs(a - b) / max(abs(b), 1e-30) for a, b in zip(ours, ref)]
        out[path] = {"loss": ours[0], "torch_loss": ref[0], "loss_rel_diff": rel[0],
                     "loss2_rel_diff": rel[1] if len(rel) > 1 else None,
                     "ok": all(np.isfinite(ours)) and max(rel) < PARITY_TOLERANCE[dtype]}
    return out


def run_block(step, steps, sync):
    """One block: (wall seconds per step, queue seconds per step), synchronised around."""
    gc.collect()
    sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    t1 = time.perf_counter()
    sync()
    t2 = time.perf_counter()
    return (t2 - t0) / steps, (t1 - t0) / steps


def time_sides(sides, steps, blocks, sync, times=None):
    """BLOCKS rounds of one block per side, the order reversed every round:
    {side: {"wall": [s per step per block], "queue": [...]}} (filled into `times`, given,
    as the blocks end)."""
    times = times if times is not None else {name: {"wall": [], "queue": []} for name in sides}
    order = list(sides)
    for r in range(blocks):
        for name in (order if r % 2 == 0 else order[::-1]):
            side = sides[name]
            with side.context():
                wall, queue = run_block(side.step, steps, sync)
            times[name]["wall"].append(wall)
            times[name]["queue"].append(queue)
    return times


def summarize(times, tokens):
    """The median block's ms per step, the fastest and slowest, queue ms, tokens/s."""
    wall, queue = times["wall"], times["queue"]
    median = statistics.median(wall)
    return {"ms_per_step": median * 1e3, "min_ms": min(wall) * 1e3, "max_ms": max(wall) * 1e3,
            "queue_ms": statistics.median(queue) * 1e3, "blocks": len(wall),
            "blocks_ms": [round(w * 1e3, 4) for w in wall], "tokens_per_s": tokens / median}


def cupti_profile(torch, step, sync, steps):
    """Kernels, copies and memsets per step, busy ms per step and the top kernels of
    `steps` steps, from a CUPTI trace (torch.profiler sees CuPy's kernels too)."""
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
    memsets = [e for e in events if e.get("cat") == "gpu_memset"]
    by_name = collections.defaultdict(lambda: [0, 0.0])
    for e in launched:
        by_name[e["name"][:70]][0] += 1
        by_name[e["name"][:70]][1] += e.get("dur", 0.0)
    top = sorted(by_name.items(), key=lambda kv: -kv[1][1])[:TOP]
    kernels, n_copies, n_memsets = (len(x) / steps for x in (launched, copies, memsets))
    return {"source": "CUPTI (torch.profiler)", "kernels": kernels, "copies": n_copies,
            "memsets": n_memsets, "launches": kernels + n_copies + n_memsets,
            "busy_ms": sum(e.get("dur", 0.0) for e in launched) / 1e3 / steps,
            "host_copies": None,
            "top": [{"name": n, "per_step": c / steps, "ms_per_step": d / 1e3 / steps}
                    for n, (c, d) in top]}


def simulator_count(step):
    """Ours on the device simulator: launches of one step by kind, and its host copies."""
    from numpy_transformer.testing import device_simulator
    before = device_simulator.stats.transfers
    with device_simulator.count_launches() as launches:
        step()
    return {"source": "device simulator", "kernels": launches.kernels,
            "copies": launches.copies, "memsets": launches.memsets,
            "launches": launches.total, "busy_ms": None,
            "host_copies": device_simulator.stats.transfers - before,
            "top": [{"name": n, "per_step": c, "ms_per_step": None}
                    for n, c in launches.by_name.most_common(TOP)]}


NO_COUNT = {"source": None, "kernels": None, "copies": None, "memsets": None,
            "launches": None, "busy_ms": None, "host_copies": None, "top": []}


def profile_sides(sides, args, torch, sync):
    """{side: counts} for every side: CUPTI on a GPU, the simulator's count for ours."""
    on_gpu = args.device_backend == "cupy" and args.torch_device == "cuda"
    out = {}
    for name, side in sides.items():
        try:
            with side.context():
                if on_gpu:
                    out[name] = cupti_profile(torch, side.step, sync, args.profile_steps)
                elif args.device_backend == "simulator" and name != "torch":
                    out[name] = simulator_count(side.step)
                else:
                    out[name] = dict(NO_COUNT)
        except Exception as err:
            out[name] = dict(NO_COUNT, error=f"{type(err).__name__}: {err}"[:300])
    return out


def measure_config(name, args, torch, fused, notes, report=None):
    """Steps 1-3 of the method for one configuration: its result dict (and its sides).
    With `report`, the result is placed in it at once and filled as it grows, so that a
    SIGINT (KeyboardInterrupt) in the timing still leaves the rounds already done."""
    setup = Setup(name, args.dtype)
    paths = [p for p in PATHS if p in args.paths]
    sync = whole_device_sync(args.device_backend, torch, args.torch_device)
    result = {"config": name, "setup": setup.label(), "batch_size": setup.batch_size,
              "length": setup.length, "tokens_per_step": setup.tokens_per_step,
              "steps_per_block": args.steps_for(name), "blocks": args.blocks,
              "warmup": args.warmup, "sides": {}, "ratio": {}, "errors": {}, "parity": {}}
    if report is not None:
        report["results"][name] = result
    sides, errors = build_sides(setup, paths, args, torch, fused, notes)
    result["errors"].update(errors)
    losses = warm_up(sides, args.warmup, sync, result["errors"])
    result["parity"] = parity(losses, args.dtype)
    for path, p in result["parity"].items():
        print(f"{name} {path}: loss {p['loss']:.6f} vs PyTorch {p['torch_loss']:.6f} (rel "
              f"{p['loss_rel_diff']:.1e}, step 2 rel {p['loss2_rel_diff']:.1e}) -> "
              f"{'ok' if p['ok'] else 'FAILED'}", flush=True)
    if report is not None:
        write(report, args)
    if "torch" not in sides:
        return result, sides
    times = {side_name: {"wall": [], "queue": []} for side_name in sides}
    try:
        time_sides(sides, args.steps_for(name), args.blocks, sync, times)
    finally:                                    # stopped: the rounds done so far
        for side_name, side in sides.items():
            if times[side_name]["wall"]:
                result["sides"][side_name] = {"description": side.description, **summarize(
                    times[side_name], setup.tokens_per_step)}
        if "torch" in result["sides"]:
            t = result["sides"]["torch"]["ms_per_step"]
            for path in paths:
                if path in result["sides"]:
                    result["ratio"][path] = result["sides"][path]["ms_per_step"] / t
    print(f"{name}: " + ", ".join(
        f"{s} {r['ms_per_step']:.2f} ms/step (queued in {r['queue_ms']:.2f})"
        for s, r in result["sides"].items()) + "; ours / PyTorch " + ", ".join(
        f"{p} {r:.2f}" for p, r in result["ratio"].items()), flush=True)
    for side_name, err in result["errors"].items():
        print(f"{name} {side_name}: could not run: {err}", flush=True)
    return result, sides


# ------------------------------------------------------------------ the report

def rows(report):
    """One row per configuration and side: what docs/gpu.md's table shows."""
    out = []
    for name, r in report["results"].items():
        for side in SIDES:
            if side not in r["sides"]:
                continue
            s = r["sides"][side]
            c = r.get("counts", {}).get(side, NO_COUNT)
            p = r["parity"].get(side, {})
            out.append({"config": name, "side": "PyTorch" if side == "torch" else "ours",
                        "path": None if side == "torch" else side,
                        "ms_per_step": s["ms_per_step"], "min_ms": s["min_ms"],
                        "max_ms": s["max_ms"], "queue_ms": s["queue_ms"],
                        "ratio": r["ratio"].get(side), "busy_ms": c.get("busy_ms"),
                        "launches": c.get("launches"), "kernels": c.get("kernels"),
                        "copies": c.get("copies"), "memsets": c.get("memsets"),
                        "host_copies": c.get("host_copies"), "count_source": c.get("source"),
                        "parity_ok": p.get("ok"), "loss_rel_diff": p.get("loss_rel_diff")})
    return out


def markdown(report):
    """The report as Markdown: a line of context, the table, the notes."""
    m = report["machine"]

    def cell(value, fmt="{:.2f}"):
        return "n/a" if value is None else fmt.format(value)
    lines = [f"Measured {m['date']} on {m['device']} (ours: {m['backend']}"
             + (f" {m['cupy']}" if m.get("cupy") else "") + f"; PyTorch {m['torch']} on "
             f"{m.get('torch_gpu', m['torch_device'])}); {m['dtype']}, TF32 off on both sides; "
             f"one method (benchmarks/gpu_timing.py): {report['method']['summary']}", "",
             "| config | side | path | ms/step (min-max) | queue ms | **ours / PyTorch** "
             "| busy ms | launches/step | kernels | copies | memsets | parity |",
             "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|"]
    for row in report["rows"]:
        parity_cell = ("" if row["parity_ok"] is None else
                       f"{'ok' if row['parity_ok'] else 'FAILED'} ({row['loss_rel_diff']:.0e})")
        lines.append(
            f"| {row['config']} | {row['side']} | {row['path'] or ''} | "
            f"{row['ms_per_step']:.2f} ({row['min_ms']:.2f}-{row['max_ms']:.2f}) | "
            f"{row['queue_ms']:.2f} | " + (f"**{row['ratio']:.2f}**" if row["ratio"] else "")
            + f" | {cell(row['busy_ms'])} | {cell(row['launches'], '{:,.0f}')} | "
            f"{cell(row['kernels'], '{:,.0f}')} | {cell(row['copies'], '{:,.0f}')} | "
            f"{cell(row['memsets'], '{:,.0f}')} | {parity_cell} |")
    sources = sorted({r["count_source"] for r in report["rows"] if r["count_source"]})
    if sources:
        lines.append(f"\nLaunches counted by: {', '.join(sources)}.")
    for path, info in report["paths"].items():
        lines.append(f"- path {path}: {info}")
    for note in report["notes"]:
        lines.append(f"- note: {note}")
    for name, r in report["results"].items():
        for side, err in r["errors"].items():
            lines.append(f"- {name} {side}: could not run: {err}")
        for side, c in r.get("counts", {}).items():
            if c.get("error"):
                lines.append(f"- {name} {side}: no launch count: {c['error']}")
            if c.get("top") and c.get("busy_ms") is not None:
                lines.append(f"\n{name}, {side}: the {TOP} kernels of most device time "
                             "(launches per step, ms per step)\n")
                lines += [f"  - {k['per_step']:.0f} x, {k['ms_per_step']:.3f} ms: `{k['name']}`"
                          for k in c["top"]]
    if report.get("interrupted"):
        lines.append("\n(stopped before the end: the results so far)")
    return "\n".join(lines) + "\n"


def machine_info(args, torch):
    """Versions and device names, for the report."""
    info = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "backend": args.device_backend, "torch_device": args.torch_device,
            "dtype": args.dtype, "python": platform.python_version(), "numpy": np.__version__,
            "torch": torch.__version__, "platform": platform.platform(),
            "cpus": os.cpu_count(), "device": "CPU"}
    if args.device_backend == "cupy":
        import cupy
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        info["cupy"] = cupy.__version__
        info["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
        info["device"] = props["name"].decode() if isinstance(props["name"], bytes) \
            else str(props["name"])
    if args.torch_device == "cuda":
        info["torch_gpu"] = torch.cuda.get_device_name()
    return info


def write(report, args):
    """The report so far to --json and --markdown (rewritten whole each time)."""
    report["rows"] = rows(report)
    for path, text in ((args.json, lambda: json.dumps(report, indent=1)),
                       (args.markdown, lambda: markdown(report))):
        if path:
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                f.write(text())
            os.replace(tmp, path)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", nargs="+", choices=sorted(CONFIGS), default=["base", "tiny", "small"],
                   help="configurations, measured in this order (default base tiny small)")
    p.add_argument("--path", choices=["old", "new", "both"], default="both",
                   help="ours on the new path (fast=True, fused on), the old one "
                        "(fast=\"per-array\", fused off) or both (default)")
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    p.add_argument("--steps", type=int, default=None,
                   help=f"steps per block (default {DEFAULT_STEPS})")
    p.add_argument("--blocks", type=int, default=BLOCKS,
                   help=f"timed blocks per side (default {BLOCKS})")
    p.add_argument("--warmup", type=int, default=WARMUP,
                   help=f"warm-up steps per side (default {WARMUP}, at least 2: parity)")
    p.add_argument("--profile-steps", type=int, default=PROFILE_STEPS,
                   help=f"steps per side under CUPTI (default {PROFILE_STEPS}; 0: none)")
    p.add_argument("--device-backend", choices=["cupy", "simulator"], default="cupy",
                   help="our array module: CuPy, or the CPU device simulator")
    p.add_argument("--torch-device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--json", metavar="OUT", help="write the report to this JSON file")
    p.add_argument("--markdown", metavar="OUT", help="write the table to this Markdown file")
    args = p.parse_args(argv)
    for option in ("steps", "blocks"):
        value = getattr(args, option)
        if value is not None and value < 1:
            p.error(f"--{option}: expected at least 1, got {value}")
    if args.warmup < 2:
        p.error(f"--warmup: expected at least 2 (the parity check's two losses), got {args.warmup}")
    if args.profile_steps < 0:
        p.error(f"--profile-steps: expected 0 or more, got {args.profile_steps}")
    args.paths = PATHS if args.path == "both" else (args.path,)
    args.steps_for = lambda name: args.steps or DEFAULT_STEPS[name]
    return args


def method(args):
    """The method's parameters, as the report records them."""
    steps = {n: args.steps_for(n) for n in args.config}
    return {"summary": f"{args.warmup} warm-up steps per side, then {args.blocks} rounds of "
                       f"one block per side ({', '.join(f'{n} {s}' for n, s in steps.items())} "
                       "steps between two synchronisations of the device, the sides' order "
                       "reversed every round, no host copy in either step); median block; "
                       "busy time and launches from a CUPTI trace after all timing",
            "warmup": args.warmup, "blocks": args.blocks, "steps_per_block": steps,
            "profile_steps": args.profile_steps}


def main(argv=None):
    args = parse_args(argv)
    torch, error = load_libraries(args)
    if error:
        print(f"gpu_timing.py: {error}", file=sys.stderr)
        return 2
    fused, fused_note = fused_module()
    notes = [fused_note] if fused_note else []
    report = {"machine": machine_info(args, torch), "method": method(args), "paths": {},
              "notes": notes, "results": {}, "interrupted": False}
    if "new" in args.paths:
        report["paths"]["new"] = ("Adam(fast=True), fused drop-ins " +
                                  ("on" if fused else "absent"))
    if "old" in args.paths:
        report["paths"]["old"] = ('Adam(fast="per-array"), fused drop-ins ' +
                                  ("off" if fused else "absent"))
    m = report["machine"]
    print(f"ours: {m['backend']} on {m['device']}; PyTorch {m['torch']} on "
          f"{m.get('torch_gpu', args.torch_device)}; paths {', '.join(args.paths)}"
          + "".join(f"\nnote: {n}" for n in notes), flush=True)
    all_sides, failed = {}, False
    sync = whole_device_sync(args.device_backend, torch, args.torch_device)
    try:
        for name in args.config:                # 1-3: all the timing first
            try:
                _, all_sides[name] = measure_config(name, args, torch, fused, notes, report)
            except Exception as err:            # the next configuration may still tell
                print(f"gpu_timing.py: {name}: {type(err).__name__}: {err}", file=sys.stderr)
                report["results"].setdefault(name, {
                    "config": name, "sides": {}, "ratio": {}, "parity": {}, "errors": {}})
                report["results"][name]["errors"]["all"] = f"{type(err).__name__}: {err}"[:300]
            write(report, args)
        if args.profile_steps:                  # 4: then the launches and busy time
            for name, sides in all_sides.items():
                report["results"][name]["counts"] = counts = profile_sides(sides, args, torch, sync)
                print(f"{name}: " + "; ".join(
                    f"{s} {c['launches'] if c['launches'] is not None else 'n/a'} launches, busy "
                    f"{'n/a' if c['busy_ms'] is None else format(c['busy_ms'], '.2f')} ms"
                    for s, c in counts.items()) + " per step", flush=True)
                write(report, args)
    except KeyboardInterrupt:                   # stopped at its share: keep what there is
        report["interrupted"] = failed = True
        print("gpu_timing.py: interrupted; writing the results so far", file=sys.stderr)
    if (len(args.paths) == 2 and fused is None
            and any(n.startswith('Adam has no fast="per-array"') for n in notes)):
        notes.append("in this tree the old and new paths run the same code: their "
                     "difference is the method's noise")
    write(report, args)
    print("\n" + markdown(report))
    for r in report["results"].values():
        failed = failed or bool(r["errors"]) or not all(p["ok"] for p in r["parity"].values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
