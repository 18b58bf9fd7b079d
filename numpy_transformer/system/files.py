"""Files: writing them so that a crash never leaves a half-written one behind, and
reading only regular files (a FIFO would block forever, /dev/zero never ends)."""

import errno
import hashlib
import io
import json
import os
import stat
import sys
import tempfile
from contextlib import contextmanager

from ..validation import message
from ..errors import InputError, InputTypeError
from .owned import owned_prefix, owner_lock, remove_stale


def check_regular_file(path, name):
    """FileNotFoundError for a missing path, InputError for anything but a regular file
    (InputTypeError for a path that is not a str or os.PathLike: no bytes, no descriptor)."""
    if not isinstance(path, (str, os.PathLike)):
        raise InputTypeError(message(name, "a file name (a str or os.PathLike)",
                                     type(path).__name__))
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise FileNotFoundError(message(name, "an existing file", repr(str(path)))) from None
    except OSError as err:
        raise InputError(message(name, "a readable file",
                                 f"{str(path)!r} ({err.strerror or err})")) from None
    _check_mode(mode, path, name)


def _check_mode(mode, path, name):
    if stat.S_ISDIR(mode):
        raise InputError(message(name, "a file", f"the directory {str(path)!r}"))
    if not stat.S_ISREG(mode):
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a device" \
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" \
            if stat.S_ISSOCK(mode) else "a special file"
        raise InputError(message(name, "a regular file", f"{kind}: {str(path)!r}"))


def open_regular(path, name):
    """The regular file `path` opened for reading bytes, after check_regular_file.

    It is opened without blocking and checked again once open, so a FIFO swapped in
    between the two cannot hang the reader."""
    check_regular_file(path, name)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:
        raise InputError(message(name, "a readable file",
                                 f"{str(path)!r} ({err.strerror or err})")) from None
    try:
        _check_mode(os.fstat(fd).st_mode, path, name)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def read_regular(path, name):
    """The bytes of the regular file `path` (see open_regular)."""
    with open_regular(path, name) as f:
        try:
            return f.read()
        except OSError as err:
            raise InputError(message(name, "a readable file",
                                     f"{str(path)!r} ({err.strerror or err})")) from None


def file_sha256(path, name):
    """The hex SHA-256 of the regular file `path` (see open_regular), read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open_regular(path, name) as f:
        while chunk := f.read(2**20):
            digest.update(chunk)
    return digest.hexdigest()


def check_writable_folder(folder, name, given=None):
    """InputError naming `name` (and the path `given` for it) unless files can be written in
    `folder`: a folder one may write in, or a missing one whose nearest existing parent is
    (atomic_write makes the missing folders). Commands check their outputs so before any
    work: a file, a dangling symbolic link or a link loop on the way, or a folder without
    write permission, then costs one line, not a download or a translation."""
    folder = os.path.abspath(folder)
    here = folder
    while not os.path.lexists(here):              # "a/b" under a file "a": lstat fails too
        here = os.path.dirname(here)
    why = _not_writable(here)
    if why:
        got = repr(str(given if given is not None else folder))
        raise InputError(message(name, "a place to write in (a folder one may write in, or "
                                 "a name one can be made at)", f"{got} ({why})"))


def _not_writable(path):
    """Why no file can be made in the existing `path`, or None."""
    try:
        mode = os.stat(path).st_mode
    except OSError as err:
        if err.errno == errno.ELOOP:
            return f"{path!r} is a symbolic link loop"
        if os.path.islink(path):
            return f"{path!r} is a dangling symbolic link (to {os.readlink(path)!r})"
        return f"{path!r}: {err.strerror or err}"
    if not stat.S_ISDIR(mode):
        return f"{path!r} is {'a file' if stat.S_ISREG(mode) else 'not a folder'}"
    if not os.access(path, os.W_OK | os.X_OK):
        return f"{path!r} is a folder without write permission"
    return None


STDOUT_NAMES = ("-", "/dev/stdout")     # output names that mean standard output
_OUTPUTS = {}                           # absolute path: (option, may replace it)


def is_stdout(path):
    """Whether the output name `path` means standard output ("-" or "/dev/stdout")."""
    return path is not None and str(path) in STDOUT_NAMES


def declare_output(path, option, *, replace):
    """Record that the user named `path` as the output `option` (after the checks of
    cli/outputs.py, before any work): atomic_write then creates it only if no file has
    that name at its end (of two commands writing one file, the second fails) unless
    `replace` (--overwrite)."""
    _OUTPUTS[os.path.abspath(path)] = (option, replace)


def kind_of(path):
    """What the existing `path` is when it is not a regular file ("a FIFO", "a symbolic
    link to '/dev/null'", ...); None for a regular file or no file at all."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    if stat.S_ISLNK(mode):
        target = os.readlink(path)
        missing = "" if os.path.exists(path) else " (missing)"
        return f"a symbolic link to {target!r}{missing}"
    return None if stat.S_ISREG(mode) else "a folder" if stat.S_ISDIR(mode) \
        else "a character device" if stat.S_ISCHR(mode) else "a block device" \
        if stat.S_ISBLK(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a socket" \
        if stat.S_ISSOCK(mode) else "a special file"


def refuse_special(path, option=None):
    """InputError when the existing `path` is not a regular file: an output is never
    renamed over a device, a FIFO, a socket, a folder or a symbolic link (its target would
    survive while the link went), even with --overwrite."""
    kind = kind_of(path)
    if kind:
        raise InputError(f"{option or 'output'} {path} is {kind}; refusing to replace it "
                         f"(an output replaces only a regular file)")


@contextmanager
def atomic_write(path, mode="wb", suffix="", newline=None):
    """`with atomic_write(path) as f: ...` writes a temporary file beside `path` and, only
    when the block succeeds, flushes it to disk and renames it over `path` (an atomic step).
    If the block fails or is interrupted, the temporary file is removed and the old `path`,
    if any, is untouched. An OS error names `path`, never the temporary file. `newline` is
    open()'s, for text modes ("" for the csv module).

    What is not a regular file (a device, a FIFO, a folder, a symbolic link) is never
    replaced; a `path` declared with declare_output is made exclusively unless replacing
    is allowed (linked into place: the link fails if another writer made it meanwhile);
    "-" or "/dev/stdout" declared so is standard output, written through. The temporary
    file is `.tmp-PID-START-XXXX` (owned.py): one that a killed process left beside
    `path` is removed by the next write there."""
    option, replace = _OUTPUTS.get(os.path.abspath(path), (None, True))
    if option is not None and is_stdout(path):
        yield from _standard_output(mode)
        return
    refuse_special(path, option)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    remove_stale(folder, ".tmp-")
    try:
        fd, tmp = tempfile.mkstemp(prefix=owned_prefix(".tmp-"), suffix=suffix, dir=folder)
    except OSError as err:
        raise _naming(err, path, None) from None
    try:
        with owner_lock(tmp):
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)                 # mkstemp makes it private (0600)
            encoding = None if "b" in mode else "utf-8"
            with os.fdopen(fd, mode, encoding=encoding, newline=newline) as f:
                yield f
                f.flush()
                os.fsync(f.fileno())
            _put_in_place(tmp, path, option, replace)
    except BaseException as err:
        if os.path.exists(tmp):
            os.remove(tmp)
        if isinstance(err, OSError) and _naming(err, path, tmp) is not err:
            raise _naming(err, path, tmp) from None
        raise


def _put_in_place(tmp, path, option, replace):
    """Rename `tmp` over `path`, or (not `replace`) link it there, failing if it exists."""
    if replace:
        refuse_special(path, option)              # made while we wrote
        os.replace(tmp, path)
        return
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise InputError(f"{option} {path} already exists (another command wrote it "
                         f"meanwhile); choose another {option}, or replace it with "
                         f"--overwrite") from None
    except OSError as err:
        if err.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
            raise
        _rename_if_absent(tmp, path, option)      # no hard links here (FAT, some mounts)
        return
    os.remove(tmp)


def _rename_if_absent(tmp, path, option):
    if os.path.lexists(path):
        raise InputError(f"{option} {path} already exists (another command wrote it "
                         f"meanwhile); choose another {option}")
    os.replace(tmp, path)


STDOUT = "standard output"               # how an OS error of standard output names it


class _StandardOutput(io.FileIO):
    """Standard output's file descriptor, whose OS errors name it (a full disk would
    otherwise read `[Errno 28] No space left on device`, naming nothing)."""

    def write(self, b):
        try:
            return super().write(b)
        except OSError as err:
            raise type(err)(err.errno, err.strerror, STDOUT) from None


def name_standard_output():
    """Make sys.stdout's OS errors name standard output (a command's process only: it
    replaces sys.stdout by the same stream over _StandardOutput)."""
    old = sys.stdout
    try:
        raw = _StandardOutput(old.fileno(), "w", closefd=False)
    except (AttributeError, OSError, ValueError):        # no real standard output
        return
    old.flush()                                       # buffered as it was (python -u)
    binary = raw if isinstance(getattr(old, "buffer", None), io.RawIOBase) \
        else io.BufferedWriter(raw)
    sys.stdout = io.TextIOWrapper(binary, encoding=old.encoding, errors=old.errors,
                                  line_buffering=old.line_buffering,
                                  write_through=getattr(old, "write_through", False))


def _standard_output(mode):
    """The body of atomic_write for standard output: written through, flushed at the end;
    an OS error names standard output."""
    stream = sys.stdout.buffer if "b" in mode else sys.stdout
    try:
        yield stream
        stream.flush()
    except OSError as err:
        if isinstance(err, BrokenPipeError):
            raise
        raise type(err)(err.errno, err.strerror, STDOUT) from None


def _naming(err, path, tmp):
    """`err` as the same OS error about `path` when it named the temporary file `tmp` (any
    file when tmp is None; or none: a full disk while writing), so that a message names the
    file asked for rather than `.tmp-XXXX`."""
    if err.errno is None or (tmp is not None and err.filename not in (tmp, None)):
        return err
    return type(err)(err.errno, err.strerror, str(path))


def write_json(path, data):
    """Write `data` as readable JSON (sorted keys, NumPy scalars as floats) atomically."""
    with atomic_write(path, "w", suffix=".json") as f:
        json.dump(data, f, indent=2, sort_keys=True, default=float)
        f.write("\n")
    return path


def read_json(path, name):
    """The JSON value in the regular file `path`; InputError naming `name` if it is not
    JSON (or nests too deep, or holds an integer too long to read)."""
    raw = read_regular(path, name)
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise InputError(message(name, "a JSON file", f"{type(err).__name__}: "
                                 f"{str(err)[:200]}")) from None


def read_notebook_cells(path):
    """The cells of the Jupyter notebook at `path`; InputError naming it unless it is JSON
    with a list of cells, each an object whose source is text (or a list of lines)."""
    notebook = read_json(path, str(path))
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list) or not all(map(_is_cell, cells)):
        raise InputError(message(str(path), "a Jupyter notebook (a list of cells, each an "
                                 "object with a text source)", "another JSON value"))
    return cells


def _is_cell(cell):
    source = cell.get("source", "") if isinstance(cell, dict) else None
    return isinstance(source, str) or isinstance(source, list) \
        and all(isinstance(line, str) for line in source)
