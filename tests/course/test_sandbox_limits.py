"""A part is bounded in everything it could use: the network, processes, disk, memory, time,
and the packages it could import (issue 37, section 3).

Each probe is code planted at the start of GELU.backward that raises a RuntimeError
saying what it found; the part's message carries it. Where it matters, the same probe is
run outside the sandbox first, to show it does reach what the sandbox denies.
"""

import errno
import json
import os
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path

import numpy
import pytest

from doors import nt
from numpy_transformer.course.classroom.grade import grade
from numpy_transformer.course.sandbox.limits import part_groups
from numpy_transformer.course.copies.make import PACKAGE
from numpy_transformer.course.sandbox.namespaces import DISK_MB, PROCESSES
from test_assignment_grader import fresh
from test_grader_survives import BOX, prepend

pytestmark = pytest.mark.slow      # each test starts sandboxed graders: the slow pass

needs_private_root = pytest.mark.skipif(BOX.level != "root", reason=BOX.line)
GROUPS = part_groups()
needs_cgroup = pytest.mark.skipif(not GROUPS.parents, reason=f"no cgroup: {GROUPS.why}")


def probed(solution_copy, tmp_path, code, **options):
    """The message of GELU's part, graded with `code` planted at the start of its backward."""
    copy = fresh(solution_copy, tmp_path)
    prepend(copy, "GELU.backward", code)
    report = grade(copy, parts=["gelu"], **options)
    [result] = report.parts
    assert result.points == 0, result
    return result.message, report


def run_outside(code):
    """What `code` raises when run here, outside any sandbox (its RuntimeError's text)."""
    with pytest.raises(RuntimeError) as raised:
        exec(code, {})                                  # noqa: S102 - the test's own probe
    return str(raised.value)


CONNECT = '''import socket
try:
    with socket.create_connection(("127.0.0.1", {port}), timeout=60) as conn:
        said = conn.recv(16).decode()
except OSError as err:
    raise RuntimeError("NET refused: " + type(err).__name__ + ": " + str(err))
raise RuntimeError("NET connected: " + said)'''


@pytest.fixture
def loopback_server():
    """A TCP server on this host's 127.0.0.1 that greets whoever connects; its port."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(b"hello")
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


@pytest.mark.skipif(BOX.level not in ("root", "pid"), reason=BOX.line)
def test_a_part_cannot_reach_the_grading_hosts_loopback(solution_copy, tmp_path,
                                                        loopback_server):
    """Protection: the network namespace of each worker (loopback only, down)."""
    code = CONNECT.format(port=loopback_server)
    assert run_outside(code) == "NET connected: hello"          # the server answers here
    message, report = probed(solution_copy, tmp_path, code)
    assert "NET refused: " in message and "NET connected: hello" not in message, message
    assert "no network (a network namespace of its own)" in report.warning


FORKS = '''import os
alive_r, alive_w = os.pipe()
started = 0
try:
    for _ in range(300):
        if os.fork() == 0:
            os.close(alive_w)
            os.read(alive_r, 1)         # lives until the parent has ended (no clock)
            os._exit(0)
        started += 1
except OSError as err:
    raise RuntimeError(f"FORK stopped after {started}: {err}")
raise RuntimeError("FORK all 300 started")'''


@pytest.mark.skipif(not (GROUPS.parents or (BOX.level != "none" and os.geteuid() != 0)),
                    reason="neither a cgroup nor a binding RLIMIT_NPROC here")
def test_a_part_that_forks_300_times_is_stopped(solution_copy, tmp_path):
    """Protection: the cgroup's pids.max, or RLIMIT_NPROC in the part's user namespace."""
    message, report = probed(solution_copy, tmp_path, FORKS)
    stopped = re.search(r"FORK stopped after (\d+)", message)
    assert stopped and int(stopped[1]) < PROCESSES, message
    assert f"a part may run at most {PROCESSES} processes" in message
    assert f"{PROCESSES} processes" in report.warning


WRITES = '''import os, sys, tempfile
written, errors = {}, []
for name, folder in (("copy", os.getcwd()), ("tmp", tempfile.gettempdir()),
                     ("part", os.path.dirname(sys.argv[-1]))):
    written[name] = 0
    try:
        for index in range(20):                         # 20 files of 30 MiB: 600 MiB
            with open(os.path.join(folder, f"filler-{index}"), "wb") as file:
                for _ in range(30):
                    file.write(bytes(1 << 20))
                    written[name] += 1
    except OSError as err:
        errors.append(err)
said = " ".join(f"{k}={v}" for k, v in written.items())
raise RuntimeError(f"DISK {said} errors={[e.errno for e in errors]}: {errors[0].strerror}")'''


@needs_private_root
def test_writing_600_mib_fails_everywhere_a_part_can_write(solution_copy, tmp_path):
    """Protection: the one tmpfs of DISK_MB MiB holding the scratch copy and /tmp; the
    part's folder read-only."""
    message, report = probed(solution_copy, tmp_path, WRITES)
    found = re.search(r"DISK copy=(\d+) tmp=(\d+) part=(\d+) errors=\[([\d, ]*)\]", message)
    assert found, message
    copy, tmp, part = map(int, found.groups()[:3])
    assert copy + tmp <= DISK_MB and part == 0, message        # one budget for both
    assert [int(e) for e in found[4].split(",")] == [errno.ENOSPC, errno.ENOSPC, errno.EROFS]
    assert "No space left on device" in message, message
    assert f"(a part may write at most {DISK_MB} MiB in all)" in message, message
    assert f"{DISK_MB} MiB of disk" in report.warning


CHILDREN = '''import os, select
import numpy as np
ready_r, ready_w = os.pipe()
go_r, go_w = os.pipe()
children = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        os.close(go_w)
        held = np.ones(150_000_000)                     # 1.2 GB, every page touched
        os.write(ready_w, b"1")
        os.read(go_r, 1)                                # held until all three are heard of
        os._exit(0)
    children.append(pid)
os.close(ready_w)
os.close(go_r)
ready, status = 0, {}
while ready + len(status) < 3:          # each child has allocated, or died (no clock: a
    if select.select([ready_r], [], [], 0.1)[0]:        # loaded machine only takes longer)
        ready += len(os.read(ready_r, 3))
    for pid in children:
        if pid not in status and os.waitpid(pid, os.WNOHANG)[0]:
            status[pid] = "died"
os.close(go_w)                                          # all go
# A child that exits 0 held its 1.2 GB until all three had allocated or died: three such
# children held 3.6 GB at once.
holding = sum(1 for pid in children if pid not in status and os.waitpid(pid, 0)[1] == 0)
raise RuntimeError(f"MEMORY {holding} of 3 children held 1.2 GB at once")'''


@pytest.mark.slow                       # 3.6 GB touched twice: 10 to 30 s
@needs_cgroup
def test_three_children_of_1_2_gb_cannot_all_run(solution_copy, tmp_path):
    """Protection: the part's memory cgroup (2048 MiB for all its processes); each child
    alone is under the per-process limit, as outside, where all three run."""
    outside = subprocess.run([sys.executable, "-c", f"import resource; resource.setrlimit("
                              f"resource.RLIMIT_AS, (2048 << 20, 2048 << 20))\n{CHILDREN}"],
                             capture_output=True, text=True, timeout=120)
    assert "MEMORY 3 of 3" in outside.stderr, outside.stderr[-2000:]
    message, report = probed(solution_copy, tmp_path, CHILDREN)
    assert "MEMORY 3 of 3" not in message, message
    assert "ran out of memory (the limit is 2048 MiB for all the part's processes " \
        "together)" in message, message
    assert "2048 MiB of memory for all its processes (a cgroup)" in report.warning


def test_the_whole_submission_has_a_time_limit(solution_copy, tmp_path):
    """Protection: grade's total_timeout: the part running when it is spent is stopped, the
    parts after it are not run; each scores 0 saying so."""
    copy = fresh(solution_copy, tmp_path)
    prepend(copy, "Linear.backward", "import time\ntime.sleep(3600)")  # only the limit ends it
    report = grade(copy, parts=["linear", "gelu", "softmax"], total_timeout=4)
    linear, gelu, softmax = report.parts
    # stopped by the limit; on a machine so busy that the grader's start took the 4 s, not
    # even started: either way the limit, not a clock in this test, decides
    assert linear.points == 0 and re.search(r"the submission's total time limit \(4 s\) was "
                                            r"(reached|spent before this part)",
                                            linear.message), linear
    for result in (gelu, softmax):
        assert result.points == 0 and result.message == (
            "not run: the submission's total time limit (4 s) was spent before this part")
    assert "; 4 s for the whole submission" in report.warning


def test_the_total_time_limit_is_an_option_and_every_output_names_the_limits(solution_copy,
                                                                            tmp_path):
    copy = fresh(solution_copy, tmp_path)
    done = nt("assignment", "grade", copy, "--parts", "gelu", "--timeout", "30",
              "--total-timeout", "90", "--json", tmp_path / "grade.json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    [line] = [s for s in done.stdout.splitlines() if s.startswith("sandbox: ")]
    for words in ("limits per part: ", "network", "processes", "MiB of memory", "disk",
                  "30 s of time; 90 s for the whole submission"):
        assert words in line, line
    assert json.loads((tmp_path / "grade.json").read_text())["sandbox"] == line
    nt("assignment", "grade", copy, "--parts", "gelu", "--gradescope",
       tmp_path / "results.json", cwd=tmp_path)
    said = json.loads((tmp_path / "results.json").read_text())["output"]
    assert ", 60 s of time; 600 s for the whole submission" in said, said


IMPORT_BESIDE = '''import sys
sys.path.append({site!r})
try:
    import pytest
except ImportError as err:
    raise RuntimeError("BASE no pytest: " + str(err))
raise RuntimeError("BASE imported pytest from " + pytest.__file__)'''


@needs_private_root
def test_a_venvs_base_site_packages_cannot_be_imported(solution_copy, tmp_path):
    """Protection: of the workers' Python only the standard library and NumPy are bound;
    every site-packages of the virtual environment and of its base is hidden. The grader
    runs from a venv whose own site-packages is empty but for a .pth naming the base's (as
    a pyenv or conda base with a venv on top); pytest is installed in that base."""
    site = str(Path(pytest.__file__).resolve().parents[1])
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    [own_site] = venv.glob("lib/python3*/site-packages")
    (own_site / "base.pth").write_text(
        f"{Path(numpy.__file__).resolve().parents[1]}\n{PACKAGE.parent}\n")
    python = str(venv / "bin" / "python")
    code = IMPORT_BESIDE.format(site=site)
    here = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=300)
    assert "BASE imported pytest" in here.stderr, here.stderr              # outside: found
    copy = fresh(solution_copy, tmp_path)
    prepend(copy, "GELU.backward", code)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([python, "-m", "numpy_transformer", "assignment", "grade", str(copy),
                           "--parts", "gelu", "--json", str(tmp_path / "grade.json")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    [result] = json.loads((tmp_path / "grade.json").read_text())["parts"]
    assert "BASE no pytest" in result["message"], done.stdout + done.stderr


PID_LEVEL_VIEW = '''import json, resource, socket
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=60).close()
    network = "connected"
except OSError as err:
    network = type(err).__name__
print(json.dumps({{"network": network, "nproc": resource.getrlimit(resource.RLIMIT_NPROC)}}))'''


@pytest.mark.skipif(BOX.level not in ("root", "pid"), reason=BOX.line)
def test_without_a_private_root_the_network_and_process_limits_still_hold(loopback_server):
    """Protection: level "pid" (a kernel refusing mounts) still runs private_root.py in a
    network namespace, which sets RLIMIT_NPROC before the worker starts."""
    from numpy_transformer.course.sandbox.namespaces import Sandbox
    box = Sandbox("pid", "as if mounts were refused", BOX.tool)
    argv = box.command(sys.executable, None, {"harness": (PACKAGE / "course" / "sandbox",
                                                          False)},
                       ["-I", "-c", PID_LEVEL_VIEW.format(port=loopback_server)])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    seen = json.loads(done.stdout)
    assert seen["network"] != "connected" and seen["nproc"] == [PROCESSES, PROCESSES], seen


def test_where_the_network_namespace_is_refused_the_line_says_so():
    """The fallback of a kernel that allows the other namespaces but not a network one:
    unshare without --net, and the line says the network is not closed, and why."""
    from numpy_transformer.course.sandbox.limits import limits_line
    from numpy_transformer.course.sandbox.namespaces import Sandbox
    box = Sandbox("root", "network namespace refused: unshare refused: ...", "/usr/bin/unshare",
                  network=False)
    argv = box.command(sys.executable, "/nonexistent", {"harness": ("/nonexistent", False)},
                       ["-c", "pass"])
    assert "--net" not in argv and "--pid" in argv, argv
    assert box.line.startswith("sandbox: user+mount+pid namespaces, private root"), box.line
    said = limits_line(box, GROUPS, 60, 600, 2048)
    assert said.startswith("limits per part: network not closed (no network namespace: "
                           "network namespace refused: "), said
    assert Sandbox("pid", "x", "/usr/bin/unshare").network and not Sandbox("none", "x").network


@needs_cgroup
def test_cgroups_left_by_a_killed_grader_are_removed_and_none_is_left_after_grading(
        solution_copy, tmp_path):
    from numpy_transformer.course.sandbox import limits
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    stale = [os.path.join(parent, f"nt-part-{dead}-0") for parent in GROUPS.parents.values()]
    for folder in stale:
        os.mkdir(folder)
    limits.part_groups.cache_clear()
    try:
        assert limits.part_groups().parents == GROUPS.parents
        assert not any(os.path.exists(folder) for folder in stale), stale
        grade(fresh(solution_copy, tmp_path), parts=["gelu"])
        mine = [n for parent in GROUPS.parents.values() for n in os.listdir(parent)
                if n.startswith(f"nt-part-{os.getpid()}-")]
        assert mine == [], mine
    finally:
        for folder in stale:
            if os.path.exists(folder):
                os.rmdir(folder)


@pytest.mark.parametrize("euid", [0, 1000])
def test_without_a_cgroup_the_line_says_what_bounds_the_total(monkeypatch, euid):
    """The fallback where no cgroup may be made: RLIMIT_NPROC x RLIMIT_AS for a grader who is
    not root; for the real root (whom RLIMIT_NPROC does not bind) processes not limited."""
    from numpy_transformer.course.sandbox import limits
    from numpy_transformer.course.sandbox.namespaces import Sandbox
    monkeypatch.setattr(limits.os, "geteuid", lambda: euid)
    said = limits.limits_line(Sandbox("root", "", "/usr/bin/unshare"),
                              limits.PartGroups({}, "cgroup v2 without delegation"), 60, 600,
                              2048)
    if euid:
        assert (f"{PROCESSES} processes (RLIMIT_NPROC; no cgroup: cgroup v2 without "
                f"delegation), 2048 MiB of memory per process (RLIMIT_AS), {PROCESSES} x "
                "2048 MiB in all") in said, said
    else:
        assert "processes not limited (no cgroup: cgroup v2 without delegation; " \
            "RLIMIT_NPROC does not bind the grader's user here), 2048 MiB of memory per " \
            "process (RLIMIT_AS), not in all" in said, said
