"""numpy_transformer: the Transformer of "Attention Is All You Need" in NumPy,
with an explicit, hand-derived backward for every layer."""

from .backend import (default_dtype, get_backend, get_default_dtype, set_backend,
                      set_default_dtype, to_numpy, xp)
from .checkpoint import Checkpoint, load_checkpoint, save_checkpoint
from .module import Module

__version__ = "0.1.0"
