"""The GPU check's steps, in one time budget: run by benchmarks/gpu_check.sh (after its
GPU and install checks), or on its own on a CPU as the rehearsal. The prepared call of
issue 50 (docs/gpu.md, "The prepared call").

    python benchmarks/gpu_check.py --out DIR [--budget 480] [--workers 4]
    python benchmarks/gpu_check.py --out DIR --rehearse     # CPU: simulator + PyTorch CPU

Steps, in order of what matters most (a step cut short leaves the earlier ones' results),
each given a share of what is left of the budget (a step that ends early leaves its time
to the next ones):

    versions       Python, NumPy, CuPy, PyTorch and the device                (fixed 60 s)
    timing-base    benchmarks/gpu_timing.py --config base --path both: base, our new path
                   (flat-buffer Adam, fused drop-ins) and old path (per-array Adam, fused
                   off) against PyTorch CUDA eager, by the one method, with launches and
                   busy time from CUPTI (share 35)
    timing-tiny-small  the same for tiny and small                            (share 15)
    main-job       `train --task reverse`, its held-out exact match from results.json: run
                   beside the tests, in the same window (the tests keep the CPU cores busy,
                   the main job the GPU); never beside a timing step
    tests          the tests on the device backend (NUMPY_TRANSFORMER_BACKEND=cupy) with
                   `-n WORKERS` (pytest-xdist): the fused drop-ins' and the flat optimizer's
                   equality tests first, then the core layer tests, the rest of tests/core,
                   tests/library                                                (share 50)

The timing steps run alone (a host-bound step is timed on a quiet host), base first: the
ratio that matters most (base, the new path against PyTorch) comes out even when a later
step is cut. Each timing step writes its JSON as it goes (after every configuration), so a
step stopped at its share still leaves what it measured.

The main job's run folder is made in a temporary folder, and only its results.json is
copied to --out (main_job_results.json): the device call brings back 8 files at most.

A step that reaches its share is interrupted (SIGINT, so pytest prints how many tests
ran and gpu_timing.py writes what it has; then SIGKILL) and reported as "stopped at its
share", with its last line: how far it got. Everything goes to --out, the report rewritten
after every step: gpu_check.md (the timing tables, the main job's accuracy and every
step's outcome), gpu_check.json (the same as data: "rows" holds one row per configuration,
side and path, the columns of docs/gpu.md's table), gpu_check.log (every step's whole
output as it comes), timing_base.json, timing_tiny_small.json, main_job_results.json:
6 files, within what a device call brings back. Exit 0 when every step passed, 1 otherwise.

The rehearsal (--rehearse) runs the same steps on a CPU with the device simulator
(numpy_transformer/testing/device_simulator.py) for CuPy and PyTorch on the CPU, small
sizes: tiny in place of base, small in place of tiny and small, few steps, 60 training
steps, the fused and optimizer tests and tests/core. CI runs it
(tests/library/test_benchmarks_gpu.py), so a broken step shows before device time is spent.
"""

import argparse
import datetime
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)        # benchmarks.gpu_timing, for the report's tables
# The tests under CuPy, most telling first (pytest drops repeats; a pattern that matches
# nothing is left out): the fused drop-ins' and the flat optimizer's equality tests, the
# optimizer tests, the core layer tests, the rest of the core, the library.
TEST_ORDER = ["tests/core/test_fused*.py", "tests/core/test_flat*.py", "tests/core/test_optim*.py",
              "tests/core/test_fast.py", "tests/core/test_adamw_groups.py",
              "tests/core/test_linear.py", "tests/core/test_normalization.py",
              "tests/core/test_softmax.py", "tests/core/test_attention.py",
              "tests/core/test_feedforward.py", "tests/core/test_activations.py",
              "tests/core/test_dropout.py", "tests/core/test_embedding.py",
              "tests/core/test_residual.py", "tests/core/test_losses.py",
              "tests/core/test_transformer.py", "tests/core/test_torch_parity_layers.py",
              "tests/core", "tests/library"]
REHEARSAL_TESTS = TEST_ORDER[:5] + ["tests/core"]
TIMING_FILES = {"timing-base": "timing_base.json", "timing-tiny-small": "timing_tiny_small.json"}
SHARES = {"timing-base": 35, "timing-tiny-small": 15, "tests": 50}
BESIDE = "beside"   # the share of a step run in the next step's window
VERSIONS_SECONDS = 60
GRACE = 20          # seconds between SIGINT and SIGKILL
VERSIONS = ("import sys, numpy, torch; "
            "print('python', sys.version.split()[0], '| numpy', numpy.__version__, '| torch',"
            " torch.__version__, '| torch CUDA', torch.version.cuda, torch.cuda.is_available());"
            "import importlib.util as u; c = u.find_spec('cupy');"
            "c and print('cupy', __import__('cupy').__version__, '| CUDA runtime',"
            " __import__('cupy').cuda.runtime.runtimeGetVersion(), '| device',"
            " __import__('cupy').cuda.runtime.getDeviceProperties(0)['name'])")


def test_paths(patterns):
    """The test files and folders the patterns name, in order, the missing left out."""
    out = []
    for pattern in patterns:
        for path in sorted(glob.glob(os.path.join(ROOT, pattern))):
            rel = os.path.relpath(path, ROOT)
            if rel not in out:
                out.append(rel)
    return out


def plan(args):
    """[(name, argv, share or fixed seconds)] of the steps, for the device or the rehearsal."""
    py, out = args.python, args.out
    tests = test_paths(REHEARSAL_TESTS if args.rehearse else TEST_ORDER)
    train = [py, "-m", "numpy_transformer", "train", "--task", "reverse", "--no-progress",
             "--out", os.path.join(args.scratch, "reverse"), "--overwrite"]

    def timing(step, configs):
        argv = [py, "benchmarks/gpu_timing.py", "--path", "both", "--dtype", "float32",
                "--json", os.path.join(out, TIMING_FILES[step]), "--config", *configs]
        if args.rehearse:
            return argv + ["--steps", "2", "--blocks", "2", "--device-backend", "simulator",
                           "--torch-device", "cpu"]
        return argv + ["--device-backend", "cupy", "--torch-device", "cuda"]
    if args.rehearse:
        train += ["--steps", "60"]
        base, rest = ["tiny"], ["small"]            # on a CPU: the small ones stand in
    else:
        base, rest = ["base"], ["tiny", "small"]
    return [("versions", [py, "-c", VERSIONS], None),
            ("timing-base", timing("timing-base", base), SHARES["timing-base"]),
            ("timing-tiny-small", timing("timing-tiny-small", rest), SHARES["timing-tiny-small"]),
            ("main-job", train, BESIDE),
            ("tests", [py, "-m", "pytest", "-q", "-p", "no:nbmake", "-n", str(args.workers),
                       "-m", "not slow", *tests], SHARES["tests"])]


def environment(args):
    """The steps' environment: the checkout importable (offline: nothing is installed), the
    backend chosen, TF32 off for CuPy (PyTorch's matmul default is off too)."""
    env = dict(os.environ, NUMPY_TRANSFORMER_BACKEND="simulator" if args.rehearse else "cupy",
               CUPY_TF32="0", PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")]))
    if args.rehearse:
        env.setdefault("OMP_NUM_THREADS", "1")
    return env


def default_sigint():
    """In a step's process, before it starts: SIGINT at its default, so that the SIGINT that
    stops a step at its share is heard even where this script was started ignoring it (a
    shell's background job), and pytest prints how far it got."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def launch(name, argv, seconds, env, log, prefix=""):
    """Start one step, to run for at most `seconds`: a dict for `finish`. Its output goes
    to the log as it comes, each line after `prefix` (a step run beside another)."""
    log.write(f"\n=== {name} ({seconds:.0f} s at most): {' '.join(argv)}\n")
    log.flush()
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=default_sigint)
    lines = []
    reader = threading.Thread(target=copy_lines, args=(proc.stdout, log, lines, prefix),
                              daemon=True)
    reader.start()
    return {"name": name, "proc": proc, "reader": reader, "lines": lines,
            "start": time.monotonic(), "seconds": seconds}


def run_step(name, argv, seconds, env, log):
    """Run one step for at most `seconds`; a dict: outcome, exit code, seconds, last line."""
    return finish(launch(name, argv, seconds, env, log), log)


def finish(job, log):
    """Wait for a launched step until its time is up (then stop it); its outcome dict."""
    name, proc, lines, seconds = job["name"], job["proc"], job["lines"], job["seconds"]
    stopped = False
    try:
        proc.wait(timeout=max(0.0, job["start"] + seconds - time.monotonic()))
    except subprocess.TimeoutExpired:
        stopped = True
        os.killpg(proc.pid, signal.SIGINT)          # pytest prints how far it got
        try:
            proc.wait(timeout=GRACE)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    job["reader"].join(timeout=GRACE)
    took = time.monotonic() - job["start"]
    outcome = (f"stopped at its share ({seconds:.0f} s)" if stopped
               else "passed" if proc.returncode == 0 else f"FAILED (exit {proc.returncode})")
    last = (lines[-1].strip("= ").strip() if lines else "")[:200]
    log.write(f"--- {name}: {outcome} in {took:.0f} s\n")
    return {"step": name, "outcome": outcome, "passed": outcome == "passed",
            "exit_code": proc.returncode, "seconds": round(took, 1), "last_line": last}


def copy_lines(stream, log, lines, prefix=""):
    """Copy a step's output into the log as it comes; keep its non-blank lines."""
    for line in stream:
        log.write(prefix + line)
        log.flush()
        if line.strip():
            lines.append(line.rstrip())


def run_all(args, after_step=lambda done: None):
    """Every step in order within the budget; the list of their outcome dicts.
    `after_step(done)` runs after every step (the report, rewritten as it grows)."""
    env, steps, done = environment(args), plan(args), []
    ends = time.monotonic() + args.budget
    with open(os.path.join(args.out, "gpu_check.log"), "a") as log:
        beside = None                       # a step launched to run in the next one's window
        for i, (name, argv, share) in enumerate(steps):
            if share == BESIDE:
                beside = (name, argv)
                continue
            left = ends - time.monotonic()
            later = sum(s for _, _, s in steps[i:] if s not in (None, BESIDE))
            seconds = VERSIONS_SECONDS if share is None else left * share / later
            if seconds < 5:
                done += [{"step": n, "outcome": "not run: the budget was spent", "passed": False,
                          "seconds": 0.0, "last_line": ""} for n in [*(beside[:1] if beside else []), name]]
                beside = None
                continue
            job = beside and launch(*beside, seconds, env, log, prefix=f"[{beside[0]}] ")
            beside = None
            outcomes = [run_step(name, argv, seconds, env, log)]
            if job:
                outcomes.insert(0, finish(job, log))
            for outcome in outcomes:
                done.append(outcome)
                print(f"{outcome['step']}: {outcome['outcome']} in {outcome['seconds']:.0f} s "
                      f"-- {outcome['last_line']}", flush=True)
            after_step(done)
    return done


def keep_main_job_results(args):
    """Copy the main job's results.json from the scratch folder to --out."""
    results = os.path.join(args.scratch, "reverse", "results.json")
    if os.path.exists(results):
        shutil.copyfile(results, os.path.join(args.out, "main_job_results.json"))


def main_job_accuracy(out):
    """The main job's held-out exact match and token accuracy, from its results.json."""
    try:
        with open(os.path.join(out, "main_job_results.json")) as f:
            held_out = json.load(f)["held_out"]
        return {k: held_out[k] for k in ("exact_match", "token_accuracy") if k in held_out}
    except (OSError, KeyError, ValueError):
        return None


def _read(path, missing):
    """The text of the file at `path`, or `missing` where there is none."""
    if not os.path.exists(path):
        return missing
    with open(path) as f:
        return f.read()


def timing_reports(out):
    """{step: gpu_timing.py's report} of the timing steps that wrote one."""
    reports = {}
    for step, name in TIMING_FILES.items():
        try:
            reports[step] = json.loads(_read(os.path.join(out, name), "null"))
        except ValueError:                  # cut while writing: gpu_timing writes atomically
            reports[step] = None
    return {k: v for k, v in reports.items() if v}


def write_report(args, steps, started):
    """gpu_check.md and gpu_check.json in --out (rewritten after every step)."""
    from benchmarks.gpu_timing import markdown
    reports = timing_reports(args.out)
    accuracy = main_job_accuracy(args.out)
    where = ("rehearsal on the CPU: device simulator, PyTorch CPU" if args.rehearse
             else "CuPy and PyTorch CUDA")
    lines = [f"## GPU check, {started} ({where}; TF32 off on both sides)", ""]
    for step in TIMING_FILES:
        lines += [f"### {step} (benchmarks/gpu_timing.py)", "",
                  markdown(reports[step]) if step in reports else
                  f"(no table: the {step} step wrote nothing; see gpu_check.log)\n"]
    lines += ["Main job (`train --task reverse`): " + (
                 f"held-out exact match {100 * accuracy['exact_match']:.1f}%, token accuracy "
                 f"{100 * accuracy['token_accuracy']:.1f}%" if accuracy else "no results.json"),
              "", f"Steps of benchmarks/gpu_check.sh (budget {args.budget:.0f} s):", ""]
    lines += [f"- {s['step']}: {s['outcome']} in {s['seconds']:.0f} s"
              + (f" -- last line: {s['last_line']}" if s["last_line"] else "") for s in steps]
    with open(os.path.join(args.out, "gpu_check.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    rows = [row for step in TIMING_FILES if step in reports for row in reports[step]["rows"]]
    with open(os.path.join(args.out, "gpu_check.json"), "w") as f:
        json.dump({"date": started, "rehearsal": args.rehearse, "budget_s": args.budget,
                   "steps": steps, "main_job": accuracy, "rows": rows,
                   "timing": reports}, f, indent=1)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="folder for gpu_check.md, .json and .log")
    p.add_argument("--budget", type=float, default=480.0,
                   help="seconds for all steps together (default 480)")
    p.add_argument("--workers", type=int, default=4, help="pytest-xdist workers (default 4)")
    p.add_argument("--rehearse", action="store_true",
                   help="on a CPU: the device simulator for CuPy, PyTorch on the CPU, small sizes")
    p.add_argument("--python", default=sys.executable, help="the interpreter of every step")
    args = p.parse_args(argv)
    if not args.budget >= 60:
        p.error(f"--budget: expected at least 60 seconds, got {args.budget:g}")
    if args.workers < 1:
        p.error(f"--workers: expected at least 1, got {args.workers}")
    return args


def main(argv=None):
    args = parse_args(argv)
    args.out = os.path.abspath(args.out)
    os.makedirs(args.out, exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    def after_step(done):
        keep_main_job_results(args)
        write_report(args, done, started)
    with tempfile.TemporaryDirectory(prefix="gpu_check-") as args.scratch:
        steps = run_all(args, after_step)
        keep_main_job_results(args)
    write_report(args, steps, started)
    print(open(os.path.join(args.out, "gpu_check.md")).read())
    print(f"written: {args.out}/gpu_check.md, gpu_check.json, gpu_check.log, "
          "main_job_results.json, " + ", ".join(TIMING_FILES.values()))
    return 0 if all(s["passed"] for s in steps) else 1


if __name__ == "__main__":
    sys.exit(main())
