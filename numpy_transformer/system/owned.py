"""Temporary files and folders that name the process owning them, so that the next start
removes what a killed process left behind (SIGKILL, a power cut: no cleanup runs).

    prefix = owned_prefix(".tmp-")      # ".tmp-4242-991170-": the pid and its start time
    with owner_lock(path): ...           # held while the owner writes `path`
    remove_stale(folder, ".tmp-")        # the `.tmp-PID-START-*` of owners that are gone
    OwnedFolder("nt-grader-")            # a TemporaryDirectory, the same way

An owner is gone when no process has its pid, or the process with that pid started at
another time (the pid was reused). While it lives an owner holds an advisory lock
(fcntl.flock) on its file (for a folder, on the file `.owner` inside it), so that the
file of a process this machine cannot see (another machine sharing the folder, another
PID namespace, whose pid means nothing here) is never taken for a dead one's: only what
no process locks is removed. Names without the pid and start time are never touched."""

import contextlib
import os
import re
import shutil
import tempfile

try:
    import fcntl
except ImportError:                    # Windows: no advisory locks; the pid alone decides
    fcntl = None

OWNER_FILE = ".owner"
_OWNER = re.compile(r"(\d+)-(\d+)-")


def start_time(pid):
    """The start time of process `pid` in clock ticks since boot (/proc/PID/stat's 22nd
    field), as text; None where it cannot be read (no such process, no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()    # the name may hold spaces
        return fields[19].decode()                          # fields 3, 4, ... 22
    except (OSError, IndexError):
        return None


def owned_prefix(prefix):
    """`prefix` followed by this process's pid and start time ("0" where unknown)."""
    pid = os.getpid()
    return f"{prefix}{pid}-{start_time(pid) or 0}-"


def owner_gone(pid, start):
    """Whether the process `pid` that started at `start` ("0": unknown) has ended."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:                    # PermissionError: it exists, another user's
        pass
    now = start_time(pid)
    return start != "0" and now is not None and now != start


@contextlib.contextmanager
def owner_lock(path):
    """Hold the advisory lock on the file `path` (see the module's docstring)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _unlocked(path):
    """Whether no process holds the lock of the file or folder `path`."""
    if fcntl is None:
        return True
    if os.path.isdir(path) and not os.path.islink(path):
        path = os.path.join(path, OWNER_FILE)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def remove_stale(folder, prefix):
    """Remove the files and folders `prefix` PID-START-* in `folder` whose owner is gone and
    that no process locks; returns their names. What cannot be removed (another user's) is
    left as it is."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    removed = []
    for name in names:
        found = _OWNER.match(name, len(prefix)) if name.startswith(prefix) else None
        if not found or not owner_gone(int(found[1]), found[2]):
            continue
        path = os.path.join(folder, name)
        if not _unlocked(path):
            continue
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
        except OSError:
            continue
        removed.append(name)
    return removed


class OwnedFolder(tempfile.TemporaryDirectory):
    """A temporary folder `prefix` PID-START-XXXX in the system's temporary folder, whose
    `.owner` file this process locks while it lives; the folders of the same prefix that
    dead processes left there are removed first (the grader's, after a SIGKILL)."""

    def __init__(self, prefix):
        remove_stale(tempfile.gettempdir(), prefix)
        super().__init__(prefix=owned_prefix(prefix))
        self._lock = os.open(os.path.join(self.name, OWNER_FILE), os.O_RDWR | os.O_CREAT,
                             0o600)
        if fcntl is not None:
            fcntl.flock(self._lock, fcntl.LOCK_EX)

    def cleanup(self):
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None
        super().cleanup()
