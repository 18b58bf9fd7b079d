"""Ctrl-C and SIGTERM end every command the same way: one line, the temporary files
removed, the conventional exit status.

    handle_sigterm()          # SIGTERM raises Terminated (a KeyboardInterrupt)
    ...
    except KeyboardInterrupt as err:
        return interrupted(err)   # prints "interrupted" (130) or "terminated" (143)

Terminated is a KeyboardInterrupt, so every `finally` and `except BaseException` on the
way out runs as for Ctrl-C: atomic_write removes its temporary file, the grader its
folder. A training run replaces both handlers while it trains (training/signals.py:
finish the step, save, then stop) and puts these back after."""

import signal
import sys


class Terminated(KeyboardInterrupt):
    """SIGTERM (what `kill` and job schedulers send), raised where the command was."""


def _raise_terminated(signum, frame):
    raise Terminated


def handle_sigterm():
    """Make SIGTERM raise Terminated in the main thread (where one is)."""
    if hasattr(signal, "SIGTERM"):
        signal.signal(signal.SIGTERM, _raise_terminated)


def interrupted(err=None):
    """Print what stopped the command; its exit status (128 + the signal's number)."""
    terminated = isinstance(err, Terminated)
    try:
        print("terminated" if terminated else "interrupted", file=sys.stderr)
    except (OSError, ValueError):
        pass
    return 143 if terminated else 130
