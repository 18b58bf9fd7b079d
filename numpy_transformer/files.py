"""Writing files so that a crash never leaves a half-written one behind."""

import os
import tempfile
from contextlib import contextmanager


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
