"""numpy_transformer: the Transformer of "Attention Is All You Need" in NumPy,
with an explicit, hand-derived backward for every layer.

Importing the package loads its core alone (backend, Module, layers, models, losses,
optimizers, masks, gradient checker: docs/design.md); `Checkpoint`, `load_checkpoint` and
`save_checkpoint` are imported from `numpy_transformer.checkpoint` on first use, and
`load_trained` (a trained run, to translate or generate with) from
`numpy_transformer.trained`."""

try:
    from .backend import (default_dtype, get_backend, get_default_dtype, set_backend,
                          set_default_dtype, to_numpy, xp)
    from .module import Module
    from .version import __version__
except KeyboardInterrupt as _err:     # Ctrl-C while `python -m numpy_transformer` starts
    import sys as _sys
    if _sys.argv[:1] != ["-m"]:       # (runpy's argv[0] until __main__.py runs): one line
        raise
    from .system.interrupts import interrupted as _interrupted
    raise SystemExit(_interrupted(_err)) from None

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
