"""The grader outlives every submission, and each fault costs only its own part or folder.

Through the command line, as a teacher grades a class:
- A part that sends SIGKILL to its parent, or `kill(-1)` to every process it may signal,
  or that leaves a double-forked daemon behind: the grader goes on, every folder gets its
  row, no process outside the worker is touched, the daemon is gone when its part ends
  (in user + PID namespaces, namespaces.py; skipped where Linux refuses them). A part that
  dies (a segmentation fault) scores 0 with the reason in the table, the others keep
  their points.
- Where namespaces are not available the grader says so once, and in Gradescope's output.
- A syntax error inside one part's solution region costs that part only.
- A damaged assignment.json costs its own folder only, with the reason in its row.
"""

import csv
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from doors import NT, nt
from numpy_transformer.course.copies.make import package_regions
from numpy_transformer.course.sandbox.namespaces import isolation
from test_assignment_grader import fresh

pytestmark = pytest.mark.slow      # each test starts sandboxed graders: the slow pass

BOX = isolation()          # the protections this machine allows (namespaces.py)
needs_namespaces = pytest.mark.skipif(BOX.level == "none", reason=BOX.line)


def prepend(root, qualname, code):
    """Put `code` (lines) at the start of the solution region `qualname` of the copy."""
    package = Path(root) / "numpy_transformer"
    [region] = [r for r in package_regions(package) if r.qualname == qualname]
    lines = (package / region.path).read_text().split("\n")
    lines[region.begin + 1:region.begin + 1] = [region.indent + c for c in code.split("\n")]
    (package / region.path).write_text("\n".join(lines))


def class_of(solution_copy, tmp_path, hostile=None, code=""):
    """Folders a, b, c: solution copies, `hostile` (b by default) with `code` in GELU's
    backward."""
    folders = [fresh(solution_copy, tmp_path, name) for name in "abc"]
    if code:
        prepend(tmp_path / (hostile or "b"), "GELU.backward", code)
    return folders


def rows(path):
    with open(path, newline="", encoding="utf-8") as file:
        return {row["student"]: row for row in csv.DictReader(file)}


def grade_class(folders, tmp_path, *parts, env=None):
    args = ["assignment", "grade", *folders, "--parts", *parts, "--csv", tmp_path / "class.csv"]
    done = subprocess.run([*NT, *map(str, args)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL, env=env)
    assert done.returncode in (0, 1), f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


KILL_PARENT = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)"
SEGFAULT = "import ctypes\nctypes.string_at(0)"


@needs_namespaces
def test_a_part_that_kills_its_parent_or_dies_costs_only_that_part(solution_copy, tmp_path):
    folders = class_of(solution_copy, tmp_path, code=KILL_PARENT)
    prepend(tmp_path / "c", "GELU.backward", SEGFAULT)
    done = grade_class(folders, tmp_path, "gelu", "softmax")
    table = rows(tmp_path / "class.csv")
    # b's signal reached no process: in its namespace the worker's parent is process 0,
    # that is its own process group, and process 1 (the worker) ignores its own SIGKILL.
    assert [table[s]["total"] for s in "abc"] == ["20", "20", "10"], done.stdout
    assert table["c"]["gelu"] == "0" and table["c"]["softmax"] == "10"
    [line] = [x for x in done.stdout.split("== c")[1].splitlines() if x.startswith("gelu")]
    assert "crashed" in line and "killed by signal 11" in line, done.stdout


def pid_namespace():
    return os.readlink("/proc/self/ns/pid")


@needs_namespaces
def test_kill_minus_one_reaches_no_process_outside_the_worker(solution_copy, tmp_path):
    # The guard keeps a grader without namespaces from sending kill(-1) to all our processes.
    code = (f"import os, signal\nif os.readlink('/proc/self/ns/pid') == {pid_namespace()!r}:\n"
            "    raise RuntimeError('not isolated: kill(-1) not sent')\n"
            "try:\n    os.kill(-1, signal.SIGKILL)\n"
            "except ProcessLookupError:\n    pass               # no process it may signal")
    bystander = subprocess.Popen(["sleep", "300"])
    try:
        done = grade_class(class_of(solution_copy, tmp_path, code=code), tmp_path, "gelu")
        assert bystander.poll() is None, "kill(-1) reached a process outside the worker"
    finally:
        bystander.kill()
        bystander.wait()
    table = rows(tmp_path / "class.csv")
    assert [table[s]["gelu"] for s in "abc"] == ["10", "10", "10"], done.stdout


def processes_holding(token):
    """Pids of the processes whose command line holds `token`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and token in (entry / "cmdline").read_bytes().decode():
                found.append(int(entry.name))
        except OSError:
            pass
    return found


def still_running(token, wait=300):
    """The processes holding `token` that are left once those being ended are gone: looked
    for again until none is (a daemon here never ends by itself, so one that was not ended
    stays; `wait` only stops a test that would hang)."""
    deadline = time.monotonic() + wait
    while processes_holding(token) and time.monotonic() < deadline:
        time.sleep(0.2)
    return processes_holding(token)


def daemon_code(token):
    return ("import os, sys\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
            "        os.execv(sys.executable, [sys.executable, '-c', "
            f"'import time\\nwhile True: time.sleep(60)', {token!r}])\n    os._exit(0)\n"
            "os.wait()")


@needs_namespaces
def test_a_daemon_is_gone_when_its_part_ends(solution_copy, tmp_path):
    token = f"nt-daemon-{os.getpid()}-{time.time_ns()}"
    copy = fresh(solution_copy, tmp_path)
    prepend(copy, "GELU.backward", daemon_code(token))
    try:
        done = nt("assignment", "grade", copy, "--parts", "gelu", cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert still_running(token) == [], "a daemon outlived its part"
    finally:
        for pid in processes_holding(token):        # only today's grader leaves them
            os.kill(pid, signal.SIGKILL)


def test_without_namespaces_the_grader_says_so_once(solution_copy, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "unshare").write_text("#!/bin/sh\necho 'unshare: Operation not permitted' >&2\n"
                                     "exit 1\n")
    (bin_dir / "unshare").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = grade_class(class_of(solution_copy, tmp_path), tmp_path, "softmax", env=env)
    assert done.stdout.count("not isolated") == 1, done.stdout
    assert "Operation not permitted" in done.stdout
    assert [rows(tmp_path / "class.csv")[s]["total"] for s in "abc"] == ["10", "10", "10"]
    results = tmp_path / "results.json"
    subprocess.run([*NT, "assignment", "grade", str(tmp_path / "a"), "--parts", "softmax",
                    "--gradescope", str(results)], cwd=tmp_path, env=env, timeout=300,
                   capture_output=True, stdin=subprocess.DEVNULL)
    assert "not isolated" in json.loads(results.read_text())["output"]


def test_a_syntax_error_in_one_part_costs_only_that_part(solution_copy, tmp_path):
    copy = fresh(solution_copy, tmp_path)
    prepend(copy, "GELU.backward", "broken = (dy +")
    done = nt("assignment", "grade", copy, "--parts", "linear", "softmax", "gelu",
              "feedforward", "--json", tmp_path / "grade.json", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    parts = {p["part"]: p for p in json.loads((tmp_path / "grade.json").read_text())["parts"]}
    assert {name: p["points"] for name, p in parts.items()} == {
        "linear": 10, "softmax": 10, "gelu": 0, "feedforward": 10}, done.stdout
    assert "SyntaxError" in parts["gelu"]["message"]
    assert "activations.py, line" in parts["gelu"]["message"], parts["gelu"]["message"]


@pytest.mark.parametrize("damage", ["{not json", '["linear"]', '{"parts": 3}', "\udcff"])
def test_a_damaged_manifest_costs_only_its_folder(solution_copy, tmp_path, damage):
    folders = class_of(solution_copy, tmp_path)
    (tmp_path / "b" / "assignment.json").write_bytes(
        damage.encode("utf-8", errors="surrogateescape"))
    done = grade_class(folders, tmp_path, "softmax")
    assert done.returncode == 1
    table = rows(tmp_path / "class.csv")
    assert [table[s]["total"] for s in "abc"] == ["10", "", "10"], done.stdout + done.stderr
    assert "assignment.json is damaged" in table["b"]["message"], table["b"]
    assert str(tmp_path) not in table["b"]["message"]
