"""Options that name a file a command writes: nothing a user made is ever lost.

    check_outputs({"--json": args.json}, inputs={"--checkpoint": args.checkpoint},
                  overwrite=args.overwrite)

Every command checks its output-file options with `check_outputs` before doing any
work, so a mistake costs nothing but a one-line `error:` (exit status 2):
- an empty name is refused (it would otherwise quietly mean a default);
- a folder is refused: these options name files;
- what is not a regular file (a device, a FIFO, a socket, a symbolic link) is refused even
  with --overwrite, naming its kind; "-" and "/dev/stdout" mean standard output, written
  through, for the options that may print (`stdout`), and are refused for the others;
- an existing file is refused unless --overwrite is given, and a file that another command
  makes while this one works is not replaced either (system/files.py: declare_output);
- a name under which no file can be made (a read-only folder, a file or a dangling link
  on the way) is refused before the work, not after it;
- one of the command's own inputs, or the file of another output option (the same real
  path, links followed), is refused even with --overwrite, naming both options;
- a file of a run folder (a checkpoint, history.json, config.json, ...) is refused even
  with --overwrite: it belongs to the run (`train --overwrite` replaces whole runs).
"""

import glob
import os

from ..errors import InputError
from ..system.files import check_writable_folder, declare_output, is_stdout, refuse_special
from ..training.run_folder import RUN_FILES, STEP_FILE, RunFolder
from ..validation import message


def check_outputs(outputs, *, inputs=None, overwrite=False, stdout=()):
    """Refuse output files that would lose something (see the module's docstring), and
    declare the others to atomic_write.

    outputs: {option: path or None}; inputs: {option: path, list of paths or None};
    stdout: the options that "-" may send to standard output."""
    sources = [(option, path) for option, given in (inputs or {}).items()
               for path in ([given] if isinstance(given, str) else given or []) if path]
    for option, path in outputs.items():
        if path is None:
            continue
        check_name(option, path)
        if is_stdout(path):
            if option not in stdout:
                raise InputError(message(option, "a file name (it is not written to "
                                         "standard output)", repr(str(path))))
            declare_output(path, option, replace=True)
            continue
        _check_not_read(option, path, sources)
        sources.append((option, path))          # two outputs must not share a file either
        _check_free(option, path, overwrite)
        check_writable_folder(os.path.dirname(os.path.abspath(path)), option, path)
        declare_output(path, option, replace=overwrite)


def check_name(option, path):
    """An empty name is refused: it would quietly mean the default."""
    if not str(path).strip():
        raise InputError(message(option, "a file or folder name", repr(str(path))))


def _check_not_read(option, path, sources):
    real = os.path.realpath(path)
    for other, source in sources:
        if os.path.realpath(source) == real:
            raise InputError(f"{option} {path}: is also {other} {source}; choose another "
                             f"{option} (a command never writes over its own input or "
                             f"output, even with --overwrite)")


def _check_free(option, path, overwrite):
    if os.path.isdir(path):
        raise InputError(message(option, "a file name", f"the folder {str(path)!r}"))
    folder, name = os.path.split(os.path.abspath(path))
    ours = name in RUN_FILES or STEP_FILE.fullmatch(name)
    if ours and os.path.isdir(folder) and RunFolder(folder).holds_run():
        raise InputError(f"{option} {path}: belongs to the run in {folder}; choose another "
                         f"{option} (--overwrite never replaces a run's own files)")
    refuse_special(path, option)
    if os.path.lexists(path) and not overwrite:
        raise InputError(f"{option}: {path} already exists; choose another {option}, or "
                         f"replace it with --overwrite")


def overwrite_option(p, what="FILE"):
    """--overwrite, for a command whose output-file options are checked here."""
    p.add_argument("--overwrite", action="store_true",
                   help=f"replace {what} if it exists (never an input of the command, nor a "
                   "file of a run folder)")


FIGURES = ("loss.png", "lr.png", "positional.png", "attention_*.png")   # a run's figures


def check_figures_folder(path, *, overwrite=False):
    """`train --figures DIR`: a folder, whose PNG files of a run's names only --overwrite
    replaces (checked before training, not when the figures are drawn)."""
    if os.path.lexists(path) and not os.path.isdir(path):
        raise InputError(message("--figures", "a folder", f"the file {str(path)!r}"))
    found = sorted(os.path.basename(f) for pattern in FIGURES
                   for f in glob.glob(os.path.join(glob.escape(str(path)), pattern)))
    for name in found:                          # replaced only if a regular file
        refuse_special(os.path.join(str(path), name), "--figures")
    if found and not overwrite:
        raise InputError(f"--figures {path}: already holds {', '.join(found)}; choose another "
                         f"--figures, or replace them with --overwrite")
