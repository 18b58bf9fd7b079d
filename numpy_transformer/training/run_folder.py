"""A run folder that is never lost: one writer at a time, no run replaced by accident.

    folder = RunFolder("runs/reverse").claim(resuming=False, overwrite=False)
    ...                                   # write last.npz, best.npz, history.json ...
    folder.release()

`claim` takes an exclusive lock on `folder/.lock` (held until `release` or the
end of the process, even one killed with SIGKILL, since the operating system
drops the lock with the process), so a second process writing the same folder
is refused instead of mixing its checkpoints with the first one's. A folder
that already holds a run (a checkpoint or a history) is refused unless the run
is resumed from it or `overwrite` is given; with `overwrite` the old run's
files are deleted first (RUN_FILES and the step-<N>.npz kept by --keep-last, never
a file of another name), so no stale best.npz outlives it. A run resumed in its own
folder from an earlier checkpoint (`claim(resuming=True, step=N)`, N the step of
best.npz or of a step-<N>.npz) is refused while the folder holds a later last.npz or
step-<N>.npz, which it would replace: it branches into a new folder (--out) instead.
Temporary files left by a save that was interrupted (`.tmp-*`) are removed. A folder
that is not empty and holds no run of ours (no checkpoint, no config.json written by a
Trainer) is refused, even with `overwrite`: its files are someone else's.

Its messages name the Trainer's parameters and method in backquotes, `out`, `overwrite`
and `resume` (Trainer.resume): the command line names its options of the same names there.
"""

import errno
import glob
import os
import re
import shlex
import stat

from ..validation import check_bool, message
from ..errors import InputError
from ..system.files import read_json, read_regular, write_json as write_json_file

try:
    import fcntl
except ImportError:                     # Windows: fall back to an exclusive-create pid file
    fcntl = None

RUN_FILES = ("last.npz", "best.npz", "history.json", "config.json", "results.json",
             "src_tokenizer.json", "tgt_tokenizer.json", "text_tokenizer.json")
STEP_FILE = re.compile(r"step-(\d+)\.npz")          # step-<N>.npz: TrainConfig.keep_last


def _open_lock(path, flags):
    """os.open of the lock file, refused unless it is a regular file (opened without
    blocking, then checked, so a FIFO planted there cannot hang the run)."""
    fd = os.open(path, flags | getattr(os, "O_NONBLOCK", 0), 0o644)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InputError(message("out", "a run folder whose .lock is a regular file",
                                 f"something else at {path!r}"))
    return fd


def _broken_link(path):
    """What the symbolic link `path` to nothing is: a loop, or a link to a missing target."""
    try:
        os.stat(path)
    except OSError as err:
        if err.errno == errno.ELOOP:
            return "a symbolic link loop"
    return f"a symbolic link to a missing target ({os.readlink(path)!r})"


def step_files(folder):
    """[(N, path)] of the step-<N>.npz checkpoints in `folder`, by N."""
    found = [(int(m.group(1)), os.path.join(folder, name))
             for name in os.listdir(folder) if (m := STEP_FILE.fullmatch(name))]
    return sorted(found)


class RunFolder:
    def __init__(self, path):
        self.path = str(path)
        self._lock = None

    def holds_run(self):
        """True if the folder has a checkpoint or a history of an earlier run."""
        return any(os.path.exists(os.path.join(self.path, name))
                   for name in ("last.npz", "best.npz", "history.json")) \
            or bool(step_files(self.path))

    def later_checkpoints(self, step):
        """[name] of the folder's last.npz and step-<N>.npz written after `step`."""
        from ..checkpoint import read_checkpoint_arrays
        later = [os.path.basename(path) for n, path in step_files(self.path) if n > step]
        last = os.path.join(self.path, "last.npz")
        try:
            saved = read_checkpoint_arrays(last)[0]["metadata"]["step"]
        except (InputError, OSError, KeyError, TypeError):
            saved = None                   # none, or unreadable: nothing good is replaced
        if isinstance(saved, int) and saved > step:
            later.insert(0, f"last.npz (step {saved})")
        return later

    def _refuse_replacing(self, step):
        later = self.later_checkpoints(step)
        if later:
            raise InputError(
                f"resume: {self.path} holds checkpoints of this run later than step {step} "
                f"({', '.join(later)}), which resuming there would replace; branch into a new "
                f"folder with `out` NEWDIR, or continue the latest with `resume` "
                f"{shlex.quote(os.path.join(self.path, 'last.npz'))}")

    def others(self):
        """What the folder holds when it is neither empty nor a run of ours (else [])."""
        if not os.path.isdir(self.path):
            return []
        names = sorted(n for n in os.listdir(self.path)
                       if n != ".lock" and not n.startswith(".tmp-"))
        checkpoints = any(os.path.exists(os.path.join(self.path, name))
                          for name in ("last.npz", "best.npz")) or step_files(self.path)
        return [] if checkpoints or self._our_config() else names

    def _our_config(self):
        """True if config.json is the one a Trainer writes (model_class, model, train)."""
        try:                         # a regular file only (files.py): a FIFO would block
            config = read_json(os.path.join(self.path, "config.json"), "config.json")
        except (OSError, InputError):                 # missing, not JSON, or not a file
            return False
        return isinstance(config, dict) and {"model_class", "model", "train"} <= set(config)

    def _refuse_others(self):
        others = self.others()
        if others:
            shown = ", ".join(others[:4]) + (", ..." if len(others) > 4 else "")
            raise InputError(message("out", "a new or empty folder, or a run folder",
                                     f"{self.path}, which holds other files ({shown}); choose "
                                     f"another `out` (`overwrite` replaces only a run)"))

    def claim(self, *, resuming=False, overwrite=False, step=None):
        """Lock the folder for this process and check that no run in it would be lost
        (`step`: the step of the checkpoint a run resumed in this folder starts from)."""
        check_bool(resuming, "resuming")
        check_bool(overwrite, "overwrite")
        if os.path.exists(self.path) and not os.path.isdir(self.path):
            raise InputError(message("out", "a folder", f"the file {self.path!r}"))
        if os.path.islink(self.path) and not os.path.exists(self.path):
            raise InputError(message("out", "a folder, or a name for a new one",
                                     f"{self.path!r}, {_broken_link(self.path)}"))
        self._refuse_others()                # before the lock: nothing written there
        os.makedirs(self.path, exist_ok=True)
        self._take_lock()
        try:
            if resuming and step is not None:
                self._refuse_replacing(step)
            if self.holds_run() and not resuming:
                if not overwrite:
                    last = os.path.join(self.path, "last.npz")
                    raise InputError(
                        f"out: {self.path} already holds a run; continue it with `resume` "
                        f"{last}, replace it with `overwrite`, or choose another `out`")
                for name in RUN_FILES:
                    if os.path.exists(os.path.join(self.path, name)):
                        os.remove(os.path.join(self.path, name))
                for _, path in step_files(self.path):
                    os.remove(path)
            for tmp in glob.glob(os.path.join(self.path, ".tmp-*")):
                os.remove(tmp)                   # left by a save that was interrupted
        except BaseException:
            self.release()
            raise
        return self

    def _take_lock(self):
        path = os.path.join(self.path, ".lock")
        try:
            self._lock_file(path)
        except OSError as err:
            if err.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise
            raise InputError(f"out: {self.path} is a folder one cannot write in "
                             f"({err.strerror}); a run writes its checkpoints there: make it "
                             f"writable, or choose another `out` NEWDIR (a resumed run "
                             f"continues there)") from None

    def _lock_file(self, path):
        if fcntl is None:
            try:
                fd = _open_lock(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                raise InputError(self._in_use(path)) from None
        else:
            fd = _open_lock(path, os.O_CREAT | os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                raise InputError(self._in_use(path)) from None
            os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock = (fd, path)

    def _in_use(self, path):
        try:
            pid = read_regular(path, ".lock").decode("utf-8", "replace").strip() or "?"
        except (OSError, InputError):
            pid = "?"
        return (f"out: {self.path} is in use by another training run (process {pid}); wait "
                f"for it to finish, or choose another `out`")

    def write_json(self, name, data):
        """Write `data` as readable JSON to folder/name, atomically."""
        write_json_file(os.path.join(self.path, name), data)

    def release(self):
        if self._lock is None:
            return
        fd, path = self._lock
        self._lock = None
        if fcntl is None:
            os.close(fd)
            os.remove(path)
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
