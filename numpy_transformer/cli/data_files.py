"""A run's data files, found again on `--resume`, even where they have moved.

    python -m numpy_transformer train --resume runs/translation/last.npz --src NEW.de --tgt NEW.en
    python -m numpy_transformer train-lm --resume runs/lm/last.npz --text NEW.txt

A run records the SHA-256 digest of each data file it names (DataConfig.sha256,
saved in every checkpoint) when it starts. On `--resume` each file is looked for at the
path the run saved, or at the new path given with its option, which must have the digest
the run recorded (a moved file is the same file; another one is refused). A file changed
in place since the run started is used as it is, with a note; a checkpoint written before
digests were recorded takes a new path with a warning.
"""

import os
import re
import shlex

from ..data.config import FILES
from ..errors import InputError
from ..system.files import file_sha256
from ..validation import message

# FILES: the data files a run may name, by DataConfig field (each is also the option:
# src -> --src).


def option(name):
    return "--" + name.replace("_", "-")


# {absolute path: the path as typed}: a run keeps its data files' absolute paths (config.json,
# the checkpoints: --resume finds them from any folder); what it prints shows them as typed.
TYPED = {}


def absolute(path):
    """os.path.abspath(path), remembered so that messages show `path` as it was typed."""
    full = os.path.abspath(path)
    if full != path:
        TYPED[full] = path
    return full


def as_typed(text):
    """`text` with each data path made absolute by this command shown as it was typed."""
    for full in sorted(TYPED, key=len, reverse=True):     # /a/b.txt.gz before /a/b.txt
        text = re.sub(re.escape(full) + r"(?![\w/\\-]|\.\w)", lambda _, typed=TYPED[full]: typed, text)
    return text


def record_digests(settings):
    """Make the settings' data paths absolute (so that --resume works from anywhere) and
    record their SHA-256 digests in settings["sha256"]."""
    for name in FILES:
        if settings.get(name):
            settings[name] = absolute(settings[name])
    settings["sha256"] = {name: file_sha256(settings[name], option(name))
                          for name in FILES if settings.get(name)}


def find_data(settings, given, resume, command):
    """Point a resumed run's settings at its data files: the new paths `given` (options
    named as settings), else the saved ones; each checked against the recorded digest."""
    recorded = dict(settings.get("sha256") or {})
    for name in FILES:
        if given.get(name) and not settings.get(name):
            print(f"note: the run in {resume} has no {option(name)} file; ignoring "
                  f"{option(name)}")
        elif given.get(name):
            path = absolute(given[name])
            recorded[name] = _checked(path, name, recorded.get(name), resume)
            settings[name] = path
        elif settings.get(name):
            _check_saved(settings[name], name, recorded.get(name), resume, command)
    settings["sha256"] = recorded


def _checked(path, name, digest, resume):
    """The digest of the file given for `name`, which must be the recorded one (if any)."""
    actual = file_sha256(path, option(name))
    if digest is None:
        print(f"warning: {resume} records no digest of its data (a checkpoint of an older "
              f"version); trusting that {as_typed(path)} is the run's {option(name)} file")
    elif actual != digest:
        raise InputError(message(option(name), f"the run's {option(name)} file (sha256 "
                                 f"{digest})", f"{as_typed(repr(path))}, a different file (sha256 {actual})"))
    return actual


def _check_saved(path, name, digest, resume, command):
    """The file at the saved path must still be there; if it has changed since (an edit
    made on purpose, such as a text that gained characters), a warning says so."""
    again = (f"python -m numpy_transformer {command} "
             f"{shlex.join(['--resume', str(resume), option(name)])} NEW_PATH")
    if not os.path.lexists(path):
        raise InputError(f"{option(name)}: the run's file {path!r} is gone; if it has moved, "
                         f"give its new place: {again}")
    if digest is not None and file_sha256(path, option(name)) != digest:
        print(f"note: the run's {option(name)} file {path} has changed since the run "
              f"started; resuming on it as it is now (if it has moved and this is another "
              f"file, give the run's own: {again})")
