"""Safe checkpoints: one `.npz` file of plain arrays plus a JSON header.

    save_checkpoint("run/last.npz", model, optimizer, step=1200, val_loss=0.31)
    ckpt = load_checkpoint("run/last.npz")
    ckpt.model, ckpt.optimizer_state, ckpt.metadata
    model, tokenizers, meta = load_run("run/best.npz")      # with the run's tokenizers

format.py writes and reads the file (checksums, atomic saves, no pickles),
inspect.py checks the zip directory and array headers before any data is read,
load.py checks the configuration and rebuilds the model, runs.py loads a
training run (model, tokenizers, settings).
"""

from .format import read_checkpoint_arrays, save_checkpoint
from .load import Checkpoint, load_checkpoint
from .runs import KINDS, load_run, run_kind

__all__ = ["save_checkpoint", "load_checkpoint", "read_checkpoint_arrays", "Checkpoint",
           "load_run", "run_kind", "KINDS"]
