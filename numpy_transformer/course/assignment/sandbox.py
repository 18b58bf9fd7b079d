"""Where a grading worker runs: in user and PID namespaces of its own, where Linux allows it.

    prefix, warning = isolation()     # prefix: argv words to put before the worker's command

On Linux the worker is started as

    unshare --user --map-root-user --pid --fork --mount-proc --kill-child python ... worker.py

(util-linux). It is then process 1 of a PID namespace of its own, with its own /proc: it
sees no process outside, so it can signal none (`os.getppid()` is 0 there, and
`os.kill(-1, ...)` reaches only the worker's own processes), and when it ends, or when the
grader kills `unshare` at the time limit, the kernel kills every process it started,
double-forked daemons included. The user namespace lets an unprivileged teacher create the
PID namespace; files are read and written with the teacher's own user as before.

Where unshare is missing or refused (another OS, namespaces disabled in the kernel or the
container), `prefix` is empty and `warning` says so: the workers then run as before, each
in a session of its own, which a submission can leave, and from which it can signal the
grader's processes (every process of the teacher's user).
"""

import functools
import shutil
import subprocess
import sys

UNSHARE = ("--user", "--map-root-user", "--pid", "--fork", "--mount-proc", "--kill-child")
WARNING = ("warning: student code is not isolated from the grader ({why}); a submission "
           "could signal the grader's processes or leave processes behind")


@functools.lru_cache(maxsize=None)
def isolation():
    """([unshare argv words] or [], a warning or ""), probed once per process."""
    tool = shutil.which("unshare")
    if not sys.platform.startswith("linux") or tool is None:
        return [], WARNING.format(why="unshare (util-linux) is not available")
    try:
        probe = subprocess.run([tool, *UNSHARE, sys.executable, "-I", "-S", "-c", ""],
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        return [], WARNING.format(why=f"unshare failed: {err}")
    if probe.returncode != 0:
        said = probe.stderr.decode(errors="replace").strip().splitlines()
        return [], WARNING.format(why="unshare refused: " + (said[-1][:200] if said else
                                                              f"status {probe.returncode}"))
    return [tool, *UNSHARE], ""
