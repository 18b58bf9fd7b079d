"""Files: writing them so that a crash never leaves a half-written one behind, and
reading only regular files (a FIFO would block forever, /dev/zero never ends)."""

import json
import os
import stat
import tempfile
from contextlib import contextmanager

from .validation import message
from .errors import InputError


def check_regular_file(path, name):
    """FileNotFoundError for a missing path, InputError for anything but a regular file."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise FileNotFoundError(message(name, "an existing file", repr(str(path)))) from None
    except OSError as err:
        raise InputError(message(name, "a readable file",
                                 f"{str(path)!r} ({err.strerror or err})")) from None
    if stat.S_ISDIR(mode):
        raise InputError(message(name, "a file", f"the directory {str(path)!r}"))
    if not stat.S_ISREG(mode):
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a device" \
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" \
            if stat.S_ISSOCK(mode) else "a special file"
        raise InputError(message(name, "a regular file", f"{kind}: {str(path)!r}"))


@contextmanager
def atomic_write(path, mode="wb", suffix=""):
    """`with atomic_write(path) as f: ...` writes a temporary file beside `path` and, only
    when the block succeeds, flushes it to disk and renames it over `path` (an atomic step).
    If the block fails or is interrupted, the temporary file is removed and the old `path`,
    if any, is untouched."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=suffix, dir=folder)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)                 # mkstemp makes it private (0600)
        encoding = None if "b" in mode else "utf-8"
        with os.fdopen(fd, mode, encoding=encoding) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def write_json(path, data):
    """Write `data` as readable JSON (sorted keys, NumPy scalars as floats) atomically."""
    with atomic_write(path, "w", suffix=".json") as f:
        json.dump(data, f, indent=2, sort_keys=True, default=float)
        f.write("\n")
    return path
