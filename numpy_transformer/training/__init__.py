"""Training: the loop (loop.py), its settings (config.py), the batch streams it draws
from (streams.py), what a run keeps besides weights (state.py: the run state, with its
history.py), the run folder it writes (run_folder.py), how it stops cleanly (signals.py),
and data-parallel training under MPI (distributed.py, mpi_world.py; thread_ranks.py runs
ranks as threads).

    from numpy_transformer.training import Checkpointer, PairStream, TrainConfig, Trainer
    trainer = Trainer(model, PairStream.from_task(task, tok, 64),
                      TrainConfig(steps=3000, best_metric="exact_match"), evaluate=...,
                      checkpointer=Checkpointer("runs/reverse"))
    result = trainer.fit()

The Trainer's parts, each replaceable: a Checkpointer (checkpoints.py), a GradientSync
(OneProcess, gradient_sync.py; AllReduce, distributed.py) and a HostSync (host_sync.py).
"""

from ..errors import TrainingDiverged
from .checkpoints import Checkpointer
from .config import TrainConfig
from .distributed import AllReduce, DataParallelTrainer
from .gradient_sync import OneProcess
from .history import History
from .host_sync import HostSync
from .loop import Trainer
from .run_folder import RunFolder
from .state import RunState, TrainResult
from .streams import PairStream, TextStream

__all__ = ["Trainer", "TrainResult", "TrainConfig", "TrainingDiverged", "PairStream",
           "TextStream", "History", "RunFolder", "DataParallelTrainer", "Checkpointer",
           "OneProcess", "AllReduce", "HostSync", "RunState"]
