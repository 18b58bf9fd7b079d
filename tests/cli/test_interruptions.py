"""Issue 52, B: SIGTERM ends a command as Ctrl-C does (a line, its temporary files removed,
exit 143); what a killed command leaves is removed at the next start; Ctrl-C while the
command starts prints `interrupted` and exits 130, never a traceback.

No test waits a fixed time: each waits for a state (a temporary file appears, NumPy is
being loaded), with a generous deadline."""

import os
import signal
import subprocess
import sys
import time

import pytest
from doors import NT, nt, ok

QUICK = ("--task", "reverse", "--quick", "--steps", "6", "--no-progress", "--no-figures")
DEADLINE = 120                 # seconds to reach a state: generous, never a measurement


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "r"
    ok(nt("train", *QUICK, "--out", out))
    return out / "best.npz"


def _start(args, **kwargs):
    return subprocess.Popen([*NT, *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


def _wait_for(found, process):
    """Poll until found() is true (or the process ended); whether it was found."""
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end and process.poll() is None:
        if found():
            return True
        time.sleep(0.005)
    return found()


def _ended(process):
    """(stdout, stderr) of a process told to stop; one still running at the deadline is
    aborted and its Python threads' stacks (PYTHONFAULTHANDLER in its environment) fail the
    test, so a hang says where it was."""
    try:
        return process.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)
        out, err = process.communicate(timeout=DEADLINE)
        raise AssertionError(f"still running {DEADLINE} s after the signal:\n{err}") from None


def _temporaries(folder):
    return [n for n in os.listdir(folder) if n.startswith(".tmp-")]


def _long_translation(ckpt, folder):
    """`translate` of many lines, one at a time, into folder/out.txt."""
    (folder / "in.txt").write_text("abcdefgh\n" * 20000)
    return _start(["translate", "--checkpoint", ckpt, "--input", folder / "in.txt",
                   "--output", folder / "out.txt", "--batch-size", "1"])


def test_sigterm_while_writing_says_terminated_and_leaves_no_temporary_file(ckpt, tmp_path):
    process = _long_translation(ckpt, tmp_path)
    assert _wait_for(lambda: _temporaries(tmp_path), process), process.communicate()
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=DEADLINE)
    assert process.returncode == 143, err
    assert err.strip().splitlines()[-1] == "terminated" and "Traceback" not in err, err
    assert not _temporaries(tmp_path) and not (tmp_path / "out.txt").exists()


def test_a_killed_writers_temporary_file_is_removed_by_the_next_write(ckpt, tmp_path):
    process = _long_translation(ckpt, tmp_path)
    assert _wait_for(lambda: _temporaries(tmp_path), process), process.communicate()
    process.kill()                                      # SIGKILL: no cleanup runs
    process.communicate(timeout=DEADLINE)
    left = _temporaries(tmp_path)
    assert left and left[0].startswith(f".tmp-{process.pid}-")
    ok(nt("translate", "--checkpoint", ckpt, "abc", "--output", tmp_path / "out.txt"))
    assert not _temporaries(tmp_path)


def _loading_numpy(pid):
    """Whether NumPy's compiled core is mapped in process `pid` (it imports NumPy)."""
    try:
        with open(f"/proc/{pid}/maps") as maps:
            return "_multiarray_umath" in maps.read()
    except OSError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_ctrl_c_while_starting_says_interrupted_never_a_traceback(ckpt):
    """SIGINT as soon as NumPy starts loading (the package's first import): wherever it
    lands, during the imports or once the command reads its input, the outcome is one line
    and exit 130. SIGINT is set to its default in the child (a background job ignores it)."""
    process = _start(["translate", "--checkpoint", ckpt], stdin=subprocess.PIPE,
                     preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert _wait_for(lambda: _loading_numpy(process.pid), process)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=DEADLINE)      # closes its input after
    assert process.returncode == 130, err
    assert err.strip().splitlines()[-1] == "interrupted" and "Traceback" not in err, err


def test_sigterm_while_starting_says_terminated(ckpt):
    process = _start(["translate", "--checkpoint", ckpt], stdin=subprocess.PIPE)
    assert _wait_for(lambda: _loading_numpy(process.pid), process)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=DEADLINE)
    assert process.returncode in (143, -signal.SIGTERM), err   # before our handler: killed
    assert "Traceback" not in err, err


SIGNAL_STATE = """
import os, sys
import numpy_transformer
print("numpy.random" in sys.modules)
for task in os.listdir("/proc/self/task"):
    if int(task) != os.getpid():
        with open(f"/proc/self/task/{task}/status") as status:
            print(next(int(line.split()[1], 16) for line in status if line.startswith("SigBlk")))
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs /proc")
def test_the_package_loads_numpy_so_that_no_signal_is_lost():
    """A SIGTERM that lands in numpy.random's first import is swallowed by its Cython code,
    and one taken by a BLAS thread reaches Python late (the package's _load_numpy): a grader
    sent SIGTERM just after its folder was made graded on, 1 run in 12. Importing the
    package imports numpy.random, and NumPy's threads block both signals."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "2"}
    done = subprocess.run([sys.executable, "-c", SIGNAL_STATE], env=env, capture_output=True,
                          text=True, check=True)
    loaded, *masks = done.stdout.split()
    assert loaded == "True"
    both = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGTERM - 1))
    assert all(int(mask) & both == both for mask in masks), masks


def _graders(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("nt-grader-"))


@pytest.mark.slow
def test_a_killed_graders_folder_is_removed_by_the_next_grade_and_sigterm_cleans_up(
        tmp_path):
    """Slow (student copies, two graders): test_outputs_guarded.py has the quick form. The
    second grade's one part sleeps an hour, so it is still running when SIGTERM comes,
    however slow the machine (a blank copy's grade could end before the signal)."""
    from numpy_transformer.course.copies.make import package_regions
    from numpy_transformer.course.copies.markers import write_region_bodies
    ok(nt("assignment", "make", "--out", tmp_path / "copy"))
    ok(nt("assignment", "make", "--out", tmp_path / "sleeps", "--parts", "linear"))
    package = tmp_path / "sleeps" / "numpy_transformer"
    regions = [r for r in package_regions(package) if r.qualname == "Linear.backward"]
    write_region_bodies(package, regions, ["import time\ntime.sleep(3600)\nreturn dy"])
    scratch = tmp_path / "tmp"                  # the graders' temporary folder (TMPDIR)
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch), "PYTHONFAULTHANDLER": "1"}
    first = _start(["assignment", "grade", tmp_path / "copy"], env=env,
                   start_new_session=True, stdin=subprocess.DEVNULL)
    assert _wait_for(lambda: _graders(scratch), first), first.communicate()
    killed = _graders(scratch)
    os.killpg(first.pid, signal.SIGKILL)        # the grader and its workers: no cleanup
    first.communicate(timeout=DEADLINE)
    assert _graders(scratch) == killed
    second = _start(["assignment", "grade", tmp_path / "sleeps", "--timeout", "3600"], env=env,
                    stdin=subprocess.DEVNULL)
    assert _wait_for(lambda: _graders(scratch) and _graders(scratch) != killed, second)
    assert not set(killed) & set(_graders(scratch))        # the dead one's went first
    second.send_signal(signal.SIGTERM)
    out, err = _ended(second)
    assert second.returncode == 143, err
    assert err.strip().splitlines()[-1] == "terminated" and "Traceback" not in err, err
    assert not _graders(scratch)


def test_a_second_sigterm_while_training_saves_is_said_as_terminated(monkeypatch):
    """The training loop's handler (training/signals.py): the first signal asks for a save,
    a second stops at once, as its own kind."""
    from numpy_transformer.system.interrupts import Terminated, interrupted
    from numpy_transformer.training.signals import stop_requests
    asked = []
    with stop_requests(asked.append):
        os.kill(os.getpid(), signal.SIGTERM)
        assert asked == ["SIGTERM"]
        with pytest.raises(Terminated) as second:
            os.kill(os.getpid(), signal.SIGTERM)
    assert interrupted(second.value) == 143
