"""Ctrl-C and SIGTERM end every command the same way: one line, the temporary files
removed, the conventional exit status.

    handle_sigterm()          # SIGTERM raises Terminated (a KeyboardInterrupt)
    ...
    except KeyboardInterrupt as err:
        return interrupted(err)   # prints "interrupted" (130) or "terminated" (143)

Terminated is a KeyboardInterrupt, so every `finally` and `except BaseException` on the
way out runs as for Ctrl-C: atomic_write removes its temporary file, the grader its
folder. A training run replaces both handlers while it trains (training/signals.py:
finish the step, save, then stop) and puts these back after.

    with held():              # Ctrl-C and SIGTERM wait until the block is done
        self.folder = OwnedFolder(...)      # made and named: its cleanup can find it

A signal between the making of a thing and the line that names it would leave the thing
where no cleanup looks (a grader's folder, made and not yet held); `held` keeps both
signals pending through such a block, and they are raised just after it."""

import contextlib
import signal
import sys
import threading


class Terminated(KeyboardInterrupt):
    """SIGTERM (what `kill` and job schedulers send), raised where the command was."""


def _raise_terminated(signum, frame):
    raise Terminated


def handle_sigterm():
    """Make SIGTERM raise Terminated in the main thread (where one is)."""
    if hasattr(signal, "SIGTERM"):
        signal.signal(signal.SIGTERM, _raise_terminated)


@contextlib.contextmanager
def held():
    """Ctrl-C and SIGTERM kept pending while the block runs, raised as usual after it (in
    the main thread of a system with signal masks; elsewhere the block runs as it is)."""
    signals = {getattr(signal, name) for name in ("SIGINT", "SIGTERM") if hasattr(signal, name)}
    if not hasattr(signal, "pthread_sigmask") or \
            threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def interrupted(err=None):
    """Print what stopped the command; its exit status (128 + the signal's number)."""
    terminated = isinstance(err, Terminated)
    try:
        print("terminated" if terminated else "interrupted", file=sys.stderr)
    except (OSError, ValueError):
        pass
    return 143 if terminated else 130
