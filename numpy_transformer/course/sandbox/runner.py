"""Starting the grading workers: one process per part, with time, memory, process and disk
limits, and a time limit for the whole submission.

    with Harness(python, timeout, total_timeout, memory_mb) as harness:
        outputs, status, problem = harness.run(student_dir, reference, timeout, memory_mb)
    observations(student_dir)     # what the worker saw of each part (observe.py), once

`Harness` copies the harness files (worker.py, harness.py, steps.py, scenarios_*.py,
standins.py, forgiving_loader.py, private_root.py: NumPy-only code, no reference solution) into a
temporary folder. `run` makes a scratch copy of the student's package (the worker writes
there, never into the student's folder), writes the part's tasks and input arrays and two
empty result files, starts

    python -I -B HARNESS/worker.py STUDENT TASKS.json INPUTS.npz OUTPUTS.npz STATUS.json

in STUDENT (the scratch copy) in a session of its own, inside namespaces.py's private root
where Linux allows it (then the worker sees only /nt/harness, /nt/student and /nt/part
besides Python and NumPy, reaches no network, can signal no process outside, and all it
started dies with it), in a cgroup of its own where limits.py may make one (memory and
processes of the whole part), with no variable of the grader's environment but PATH and
the locale's and one thread for BLAS: -B writes no __pycache__, RLIMIT_AS (memory per
process), RLIMIT_FSIZE and RLIMIT_CORE are set, stdin is closed, stdout thrown away and
stderr kept in a file (its last line explains a crash); the whole session is killed at
the time limit (the part's, or what is left of the submission's) and when the worker ends
(`unshare`, and with it every process of the namespace). `harness.warning` is the line
saying which protections and limits were in force. Then the two result files are loaded
(allow_pickle=False, sizes checked before anything is decompressed; scoring.py checks every
array's shape and dtype and every status entry before using it). `problem` is None, or why
the worker gave no results: not run (the submission's time spent), timed out, out of
memory, or the exit status and last line of a crash (an `os._exit(0)` at import counts: it
writes no results). A message that a limit's error ends (a fork refused, a full disk) names
the limit; the worker's path of the copy is replaced by the student's folder.
What the worker saw of each part while it ran (observe.py: the status's "observed" and
"cost" entries, which scoring.py ignores) is kept per copy until honesty.review takes
it (`observations(root)`), so grade.py's one call to review gets both opinions.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

from ...errors import InputError
from ...system.files import read_json
from ...system.interrupts import held
from ...system.owned import OwnedFolder
from .limits import MAX_RESULT_MB, limits_line, part_groups
from .namespaces import DISK_MB, INSIDE, PROCESSES, isolation

HERE = Path(__file__).resolve().parent
GRADING = HERE.parent / "grading"
HARNESS_FILES = {HERE: ("worker.py", "forgiving_loader.py", "private_root.py",   # the box's
                        "observe.py"),
                 GRADING: ("harness.py", "steps.py", "scenarios_layers.py",        # the table's
                           "scenarios_models.py", "standins.py")}
ENVIRONMENT = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "SYSTEMROOT")  # what a worker inherits
MEMORY_MB = 2048                    # default memory limit of a part (cgroup) and a process
TOTAL_TIMEOUT = 600.0               # default time limit of a whole submission, in seconds
MAX_RESULT_BYTES = MAX_RESULT_MB << 20      # result files larger than this are not read
RESULTS = ("outputs.npz", "status.json")    # the worker's result files, written in place
HITS = ((r"Resource temporarily unavailable|BlockingIOError", "a part may run at most "
         f"{PROCESSES} processes"),
        (r"No space left on device", f"a part may write at most {DISK_MB} MiB in all"),
        (r"File too large", f"a file may hold at most {MAX_RESULT_MB} MiB"))


def _limits(memory_mb, box, group):
    """preexec_fn of the worker: its cgroup, its memory, file size and core dump limits, its
    user (and, as that user with no namespace, its process limit: private_root.py sets it
    inside the namespaces)."""
    def apply():
        import resource
        if group is not None:
            group.join()
        size = int(memory_mb) << 20
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
        resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_RESULT_BYTES, MAX_RESULT_BYTES))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if box.user is not None and box.tool is None:
            resource.setrlimit(resource.RLIMIT_NPROC, (PROCESSES, PROCESSES))
        box.become()
    return apply if os.name == "posix" else None


def _last_line(path):
    with open(path, "rb") as file:
        file.seek(max(0, os.path.getsize(path) - 4096))
        lines = file.read().decode(errors="replace").strip().splitlines()
    return lines[-1][:300] if lines else ""


class Harness:
    """A temporary folder holding a copy of the harness; a context manager."""

    def __init__(self, python=None, timeout=60.0, total_timeout=TOTAL_TIMEOUT,
                 memory_mb=MEMORY_MB):
        self.python = python or sys.executable
        self.sandbox = isolation(self.python)
        self.groups = part_groups(self.python)
        self.total_timeout, self.deadline = float(total_timeout), None
        self.warning = (f"{self.sandbox.line}; "    # the protections and limits in force
                        + limits_line(self.sandbox, self.groups, timeout, total_timeout,
                                      memory_mb))

    def __enter__(self):
        self.tmp = None
        try:                        # a signal before `with` has entered: no __exit__ runs
            with held():            # nor between the folder's making and self.tmp
                self.tmp = OwnedFolder("nt-grader-")   # dead graders' folders go first
            self.folder = Path(self.tmp.name) / "harness"
            self.folder.mkdir()
            for folder, names in HARNESS_FILES.items():
                for name in names:
                    shutil.copyfile(folder / name, self.folder / name)
            (self.folder / "__init__.py").write_text('"""The grading harness (a copy)."""\n')
            self.sandbox.hand_over([self.tmp.name], [])
        except BaseException:
            if self.tmp is not None:
                self.tmp.cleanup()
            raise
        self.deadline = time.monotonic() + self.total_timeout
        return self

    def __exit__(self, *exc):
        self.tmp.cleanup()

    def run(self, root, reference, timeout, memory_mb=MEMORY_MB):
        """Run one part's tasks in a worker on a scratch copy of the copy in `root`:
        (outputs, status, problem). Once the submission's total time is spent, a part is
        not run; the last one started gets what is left of it."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            return {}, {}, (f"not run: the submission's total time limit "
                            f"({self.total_timeout:g} s) was spent before this part")
        limit = min(timeout, left)
        work, files, seen, argv = self._prepare(root, reference)
        group = self.groups.make(memory_mb)
        try:
            status = self._start(argv, work, files, memory_mb, group, limit)
        finally:
            stopped = group.close() if group is not None else {}
        if status is None:
            return {}, {}, (f"timed out after {timeout:g} s (the time limit of a part)"
                            if limit == timeout else f"timed out after {limit:.0f} s: the "
                            f"submission's total time limit ({self.total_timeout:g} s) was "
                            "reached")
        result = self._results(files, status, memory_mb)
        if stopped.get("oom_kills"):
            said = (f"ran out of memory (the limit is {memory_mb} MiB for all the part's "
                    "processes together)")
            if result[2] is not None:
                result = {}, {}, said
            for entry in result[1].values():            # a child killed, the worker not
                if isinstance(entry, dict) and entry.get("state") == "error":
                    entry["message"] = f"{entry.get('message', '')} (a process {said})"
        self._keep(root, reference, result[1])
        return _as_seen_from(root, seen["student"], _limits_named(result))

    def _keep(self, root, reference, status):
        """Keep what the worker saw of the part (observe.py: the status's "observed" and
        "cost") for honesty.py, which takes it with `observations(root)`; a new Harness's
        first part replaces what an earlier grading of the same copy left."""
        key = str(Path(root).resolve())
        owner, runs = OBSERVED.get(key, (None, []))
        if owner != id(self):
            runs = []
        kinds = sorted({t["kind"] for t in reference.tasks})
        runs.append((kinds, {t["id"]: t["kind"] for t in reference.tasks}, status))
        OBSERVED[key] = (id(self), runs)

    def _prepare(self, root, reference):
        """The part's folder (tasks, inputs, empty result files, a scratch copy), the paths
        the worker is given, and its argv."""
        work = Path(tempfile.mkdtemp(dir=self.tmp.name, prefix="part-"))
        for name in ("part", "root"):
            (work / name).mkdir()
        scratch = scratch_copy(root, work / "student")
        files = {name: str(work / "part" / name) for name in ("tasks.json", "inputs.npz",
                                                              *RESULTS)}
        for name in RESULTS:                  # bound one by one, writable, in a private root
            Path(files[name]).touch()
        self.sandbox.hand_over([work], [scratch, work / "part"])
        Path(files["tasks.json"]).write_text(json.dumps(reference.tasks), encoding="utf-8")
        np.savez(files["inputs.npz"], **reference.inputs)
        seen = {"harness": str(self.folder), "student": str(scratch),
                "part": str(work / "part")}            # the paths the worker is given
        if self.sandbox.level == "root":
            seen = {name: f"{INSIDE}/{name}" for name in seen}
        worker_argv = ["-I", "-B", seen["harness"] + "/worker.py", seen["student"],
                       *(f"{seen['part']}/{n}" for n in
                         ("tasks.json", "inputs.npz", "outputs.npz", "status.json"))]
        argv = self.sandbox.command(self.python, work / "root", {
            "harness": (self.folder, False), "part": (work / "part", False),
            **{f"part/{n}": (files[n], True) for n in RESULTS},
            "student": (scratch, "copy")}, worker_argv)
        files["stderr.txt"] = str(work / "stderr.txt")
        return work, files, seen, argv

    def _start(self, argv, work, files, memory_mb, group, limit):
        """Run the worker (in `group`, where there is one) for at most `limit` seconds: its
        exit status, or None when it timed out."""
        env = {k: v for k, v in os.environ.items() if k in ENVIRONMENT}   # no teacher's secret
        env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
                   NUMEXPR_NUM_THREADS="1", VECLIB_MAXIMUM_THREADS="1",
                   NUMPY_TRANSFORMER_BACKEND="numpy")     # the tasks' arrays are NumPy's
        with open(files["stderr.txt"], "wb") as stderr:
            worker = subprocess.Popen(argv, cwd=work / "student", env=env,
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=stderr, start_new_session=True,
                                      preexec_fn=_limits(memory_mb, self.sandbox, group))
            try:
                return worker.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                return None
            finally:
                _kill(worker)
                self.sandbox.sweep(self.python)     # as a user: all its processes

    def _results(self, files, status, memory_mb):
        last = _last_line(files["stderr.txt"])
        written = all(os.path.isfile(files[n]) and os.path.getsize(files[n]) > 0
                      for n in RESULTS)
        if "MemoryError" in last or (not written and "Cannot allocate memory" in last):
            return {}, {}, f"ran out of memory (the limit is {memory_mb} MiB)"
        if not written or status != 0:
            how = (f"was killed by signal {-status}" if status < 0 else
                   f"exited with status {status}")
            return {}, {}, (f"crashed: the grading process {how} before writing its results"
                            + (f": {last}" if last else ""))
        try:
            if (os.path.getsize(files["status.json"]) > MAX_RESULT_BYTES
                    or sum(i.file_size for i in zipfile.ZipFile(files["outputs.npz"]).infolist())
                    > MAX_RESULT_BYTES):
                return {}, {}, "the grading process wrote results too large to read"
            with np.load(files["outputs.npz"], allow_pickle=False) as data:
                outputs = {k: np.asarray(data[k]) for k in data.files}
            status_of = read_json(files["status.json"], "status.json")    # no FIFO
            if not isinstance(status_of, dict):
                raise ValueError("the status is not a JSON object")
        except (OSError, ValueError, InputError, zipfile.BadZipFile) as err:
            return {}, {}, f"unreadable results: {type(err).__name__}: {err}"
        if "fatal" in status_of:
            return {}, {}, f"the package does not import: {str(status_of['fatal'])[:300]}"
        return outputs, status_of, None


OBSERVED = {}       # the copy's folder -> (id of its Harness, [(kinds, {task id: kind}, status)])


def observations(root):
    """[(task kinds, {task id: kind}, status)] of each part the last Harness ran on the copy in
    `root`, in order, and forgotten here (honesty.review turns them into flags)."""
    return OBSERVED.pop(str(Path(root).resolve()), (None, []))[1]


def scratch_copy(root, into):
    """A copy of the student's package and of the files beside it (no links, no caches,
    no other folders, no FIFO or device: only regular files and folders) for one worker:
    what the worker writes there is thrown away. A module that is not a regular file is
    left out, so its import fails and costs the parts that need it."""
    def skipped(folder, names):
        return [n for n in names if n == "__pycache__" or n.endswith(".pyc")
                or os.path.islink(os.path.join(folder, n))
                or not (os.path.isfile(os.path.join(folder, n))
                        or os.path.isdir(os.path.join(folder, n)))]
    into.mkdir()
    for entry in Path(root).iterdir():
        if entry.is_symlink():
            continue
        if entry.name == "numpy_transformer" and entry.is_dir():
            shutil.copytree(entry, into / entry.name, ignore=skipped)
        elif entry.is_file():
            shutil.copyfile(entry, into / entry.name)
    return into


def _limits_named(result):
    """`result` with the limit named in each message that a limit's error ends (a fork
    refused, a full disk, a file too large)."""
    outputs, status, problem = result

    def named(text):
        hits = [why for pattern, why in HITS if re.search(pattern, text)]
        return text + "".join(f" ({why})" for why in hits[:1])
    for entry in status.values():
        if isinstance(entry, dict) and isinstance(entry.get("message"), str):
            entry["message"] = named(entry["message"])
    return outputs, status, problem and named(problem)


def _as_seen_from(root, inside, result):
    """`result` with the worker's path of the copy replaced by the copy's own in messages."""
    outputs, status, problem = result
    for entry in status.values():
        if isinstance(entry, dict) and isinstance(entry.get("message"), str):
            entry["message"] = entry["message"].replace(inside, str(root))
    return outputs, status, problem and problem.replace(inside, str(root))


def _kill(worker):
    """End the worker's whole session (it may have started processes of its own)."""
    if os.name == "posix":
        try:
            os.killpg(worker.pid, signal.SIGKILL)
        except OSError:                       # the session is gone already
            pass
    elif worker.poll() is None:
        worker.kill()
    worker.wait()
