"""Stopping a run cleanly: Ctrl-C (SIGINT), SIGTERM, a closed terminal (SIGHUP) and a
closed output all save first.

While `stop_requests(on_request)` is active in the main thread, SIGINT (Ctrl-C),
SIGTERM (what `kill` and job schedulers send) and SIGHUP (the terminal was
closed) call `on_request(name)` instead of killing the process; the training
loop then finishes the current step, writes a checkpoint and returns. A second
signal raises KeyboardInterrupt at once (Terminated, its kind, for SIGTERM and SIGHUP:
system/interrupts.py). `EXIT_STATUS` maps the reason to the
conventional exit status (128 + the signal's number; SIGHUP exits as SIGTERM
does, 143, since both mean "stopped from outside, saved").
"""

import contextlib
import os
import signal
import sys
import threading

from ..system.interrupts import Terminated

EXIT_STATUS = {"SIGINT": 130, "SIGTERM": 143, "SIGHUP": 143, "closed output": 141}
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                     if hasattr(signal, name))          # Windows has no SIGHUP


@contextlib.contextmanager
def stop_requests(on_request):
    """Route SIGINT, SIGTERM and SIGHUP to on_request(signal name) (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    requested = []

    def handler(signum, frame):
        if requested:                   # a second signal: at once (SIGTERM: "terminated")
            raise Terminated if signum != signal.SIGINT else KeyboardInterrupt
        requested.append(signum)
        on_request(signal.Signals(signum).name)

    previous = {s: signal.signal(s, handler) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


def stop_message(reason):
    """What a run says when a signal asks it to stop (None for other reasons)."""
    names = {"SIGINT": "Ctrl-C", "SIGTERM": "SIGTERM", "SIGHUP": "SIGHUP (terminal closed)"}
    if reason not in names:
        return None
    return (f"{names[reason]}: stopping after this step and saving a checkpoint "
            f"(send it again to stop at once)")


def silence_stdout():
    """After a broken pipe: send stdout to the null device, so later prints cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        sys.stdout = open(os.devnull, "w")


def write_line(text, bar, log, closed):
    """Write to the progress bar, else the log, else (output closed) stderr; False when the
    output turns out to be closed (a broken pipe, or a closed terminal's I/O error), after
    silencing it."""
    try:
        if bar is not None:
            bar.write(text)
        elif log is not None:
            log(text)
        elif closed:
            print(text, file=sys.stderr)
        return True
    except OSError:                     # BrokenPipeError, or EIO from a closed terminal
        silence_stdout()
        return False
