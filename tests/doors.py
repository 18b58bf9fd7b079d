"""Helpers of the tests: running commands as a user types them (in a fresh process), and
checking that an error names the parameter or option and the values (not its whole sentence)."""

import contextlib
import os
import re
import subprocess
import sys

import pytest

NT = [sys.executable, "-m", "numpy_transformer"]


def _pip_installed():
    """Whether numpy_transformer is pip-installed (`pip install -e .`), not only importable
    through PYTHONPATH (as the GPU check runs it, with nothing installed)."""
    import importlib.metadata
    try:
        importlib.metadata.distribution("numpy_transformer")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


needs_pip_installed = pytest.mark.skipif(
    not _pip_installed(), reason="numpy_transformer is not pip-installed here (only on "
    "PYTHONPATH): a process outside the grader has no teacher's package to find")


def nt(*args, cwd=None, timeout=300):
    """Run `python -m numpy_transformer ARGS`; the CompletedProcess (text output)."""
    return subprocess.run([*NT, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def ok(done):
    """The command succeeded without a traceback; its standard output."""
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout


def error(done, status, *words):
    """The command failed with `status` and a one-line `error: ...` holding every word."""
    assert done.returncode == status, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr
    first = done.stderr.strip().splitlines()[0]
    assert first.startswith("error: ") or ": error: " in first, first
    for word in words:
        assert word in first, first
    return first


def names(err_or_text, *words):
    """The message (an exception's or a text) holds every word, each as a whole word ("x" is not
    found in "expected", "4" not in "14"): a test checks the parameter or option named and the
    values, so rewording a message breaks no test. Returns the message."""
    text = str(err_or_text)
    for word in map(str, words):
        found = re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text)
        assert found, f"{word!r} not named in {text!r}"
    return text


@contextlib.contextmanager
def raises_naming(exc_type, *words):
    """`pytest.raises(exc_type)` whose message names every word (see `names`)."""
    with pytest.raises(exc_type) as info:
        yield info
    names(info.value, *words)


def shortened(argv):
    """A README training command (`python -m numpy_transformer train ...`) made short:
    --steps 6 (12 when resuming), --warmup 1 and --quick; other commands unchanged."""
    if argv[3] not in ("train", "train-lm"):
        return argv
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--steps", "--warmup"):
            skip = True
        else:
            out.append(arg)
    return out + ["--steps", "12" if "--resume" in argv else "6", "--warmup", "1", "--quick"]


WORDS = ["red", "green", "blue", "cat", "dog", "bird", "big", "small"]


def write_word_pairs(folder):
    """folder/pairs.tsv: a small word-level corpus ('a b<TAB>b a' for every two words, twice);
    returns its lines as (source, target)."""
    pairs = [(f"{a} {b}", f"{b} {a}") for a in WORDS for b in WORDS] * 2
    (folder / "pairs.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in pairs))
    return pairs


def blocked_places(folder):
    """Make in `folder` the places under which no file can be written: a regular file, a
    dangling symbolic link, a link loop and, for a user other than root (who may write
    anywhere), a folder without write permission. Returns {name: what the refusal says}."""
    (folder / "a_file").write_text("kept\n")
    (folder / "dangling").symlink_to("nowhere")
    (folder / "loop").symlink_to("loop")
    places = {"a_file": "is a file", "dangling": "dangling symbolic link", "loop": "link loop"}
    if os.geteuid() != 0:
        (folder / "closed").mkdir()
        (folder / "closed").chmod(0o555)
        places["closed"] = "without write permission"
    return places
