"""Data-parallel training: N ranks, each with its shard of every batch, one update.

    mpiexec -n 2 python -m numpy_transformer train --task reverse       # the command line
    trainer = DataParallelTrainer(model, stream, config, comm=world(),
                                  checkpointer=Checkpointer("runs/x"))
    # the same as: Trainer(model, stream, config, gradient_sync=AllReduce(comm), ...), with
    # evaluating, writing and logging left to rank 0

Every rank (an MPI process, mpi_world.py; or a thread, thread_ranks.py) holds a full
copy of the model and the same data stream, so all of them draw the same global batch
of B sequences, and the stream's position (saved in each checkpoint) does not depend
on N: a run saved by N ranks resumes on any other N. Rank k keeps the rows
[k B / N, (k + 1) B / N) of the batch (`AllReduce.shard`). Then, every step:

    1. forward, loss and backward on the shard, the loss weighted by w_k = n_k / n
    2. ONE in-place Allreduce (a sum) of the whole gradient: the Trainer's optimizer keeps
       every gradient in one flat buffer already (optim/flat.py), summed where it lies, no
       copy; then one of N + 1 numbers, the weighted loss and each rank's stop request
       (a model without a flat buffer: all of them packed into one buffer, one Allreduce,
       unpacked)                               -> every rank holds the batch's gradient
    3. clipping by the global norm (after the sum, so the same norm on every rank) and
       the same Adam step on every rank (Trainer.train_step): the copies stay identical.

Loss normalisation. A batch's loss is the mean over its n counted (non-pad) target
tokens. Shard k holds n_k of them, with its own mean L_k and gradient g_k, so

    L = sum_k (n_k / n) L_k          grad L = sum_k (n_k / n) g_k

Every rank knows n (it drew the whole batch) and backpropagates dloss = n_k / n (the
cross-entropy's backward scales its gradient by it), so the all-reduce's plain sum is
the gradient of the whole batch: N ranks equal one process on the same global batch,
up to rounding. Averaging instead (weight 1 / N, as PyTorch's DDP does) is wrong
whenever the shards hold different numbers of tokens (lesson 15).

Rank 0 alone evaluates and writes: the run folder and its lock, the checkpoints, the
history, the log lines. Rank k's dropout generators are jumped k times, so the shards
draw independent masks. A stop (Ctrl-C, SIGTERM, a closed output) travels in the
all-reduce, so every rank stops after the same step, and an error on one rank ends
them all (mpi_world.abort) rather than leave the others waiting.
"""

import contextlib
import time
from dataclasses import replace

from ..backend import get_backend, xp
from ..validation import message
from ..errors import InputError, TrainingDiverged
from ..optim.flat import gradient_buffer
from .config import TrainConfig
from .loop import Trainer
from .mpi_world import abort, mpi_names
from .dropout_generators import model_generators

STOP_REASONS = ("SIGINT", "SIGTERM", "closed output", "stop requested", "SIGHUP")


class AllReduce:
    """The GradientSync (gradient_sync.py) of rank k of N: comm is MPI.COMM_WORLD
    (mpi_world.world()) or a ThreadComm (thread_ranks.py).

    `seconds` times the last all-reduce: "allreduce" the calls (waiting for the slowest
    rank included), "copy" filling and emptying the buffer (about nothing when the
    gradient is one flat buffer, optim/flat.py).
    """

    alone = False                   # a stop request rides the next all-reduce

    def __init__(self, comm):
        self.comm, self.rank, self.size = comm, comm.Get_rank(), comm.Get_size()
        self.in_place, self.sum = mpi_names(comm)
        self.seconds = {"allreduce": 0.0, "copy": 0.0}
        self.buffer, self.views = None, []       # made on the first step (`allocate`)
        self.flat = None                         # the model's flat gradient (P,), if any

    def shard(self, inputs, targets, ntokens=None, ignore_index=None):
        """(this rank's inputs, its targets, None, its weight w_k = n_k / n) of a global batch.

        inputs: arrays with the batch axis first, (B, ...); targets (B, T). n counts the
        targets the loss counts (not ignore_index), n_k those of this rank's rows; the
        loss counts n_k itself (None), `ntokens` being the whole batch's n.
        """
        B = targets.shape[0]
        lo, hi = self.rank * B // self.size, (self.rank + 1) * B // self.size
        counted = xp.ones(targets.shape, dtype=bool) if ignore_index is None \
            else targets != ignore_index                                            # (B, T)
        n, n_k = int(counted.sum()), int(counted[lo:hi].sum())
        return tuple(x[lo:hi] for x in inputs), targets[lo:hi], None, (n_k / n if n else 0.0)

    def all_reduce(self, model, loss, weight, stop_request=None):
        """Sum over the ranks, in place: the model's gradients (one Allreduce of its flat
        gradient buffer where it has one, optim/flat.py), then the weighted losses w_k L_k
        and the stop requests (without a flat buffer: all in one packed buffer, one
        Allreduce). Returns (the batch's loss, a 0-d array of the gradients' dtype; the stop
        every rank agreed to, or None)."""
        flat = gradient_buffer(model)                   # (P,) or None
        if self.buffer is None or flat is not self.flat:
            self.allocate(model, flat)
        buffer, P = self.buffer, self.buffer.size - 1 - self.size
        start = time.perf_counter()
        for grad, view in self.views:
            view[...] = grad                            # pack
        buffer[P:] = 0
        buffer[P] = weight * loss
        if stop_request is not None:                    # a slot per rank: no sums of reasons
            reason = stop_request if stop_request in STOP_REASONS else "stop requested"
            buffer[P + 1 + self.rank] = STOP_REASONS.index(reason) + 1
        packed = time.perf_counter()
        if flat is not None:
            self.comm.Allreduce(self.in_place, flat, op=self.sum)    # the whole gradient
        self.comm.Allreduce(self.in_place, buffer, op=self.sum)
        reduced = time.perf_counter()
        for grad, view in self.views:
            grad[...] = view                            # unpack
        self.seconds = {"allreduce": reduced - packed,
                        "copy": packed - start + time.perf_counter() - reduced}
        codes = [int(code) for code in buffer[P + 1:] if code]
        stop = STOP_REASONS[codes[0] - 1] if codes else None     # the lowest rank's reason
        return xp.asarray(buffer[P]), stop

    def allocate(self, model, flat=None):
        """The buffer to sum: P gradients (none when they are the flat buffer `flat`), the
        loss, N stop slots; and a view of it per gradient to pack."""
        self.flat = flat
        grads = [grad for _, _, grad in model.named_parameters()] if flat is None else []
        P = sum(grad.size for grad in grads)
        dtype = xp.result_type(*grads) if flat is None else flat.dtype
        self.buffer = xp.empty(P + 1 + self.size, dtype=dtype)       # (P+1+N,)
        self.views, offset = [], 0
        for grad in grads:
            self.views.append((grad, self.buffer[offset:offset + grad.size].reshape(grad.shape)))
            offset += grad.size

    def spread_dropout(self, model):
        """Jump rank k's dropout generators k times (k * 2^127 draws): independent masks.

        Done at the start and after resuming, from the states rank 0 saved: any N resumes.
        """
        for generator in model_generators(model):
            if self.rank and hasattr(generator.bit_generator, "jumped"):
                generator.bit_generator.state = generator.bit_generator.jumped(self.rank).state

    @contextlib.contextmanager
    def failing_together(self):
        """An error on this rank alone ends every rank (mpi_world.abort). A diverged run is
        no such error: the loss and gradient norm come out of the all-reduce, so every rank
        raises TrainingDiverged at the same step."""
        try:
            yield
        except TrainingDiverged:
            raise
        except BaseException as err:
            abort(self.comm, err)
            raise


def DataParallelTrainer(model, stream, config=None, *, comm, **options):
    """A Trainer for rank k of N, its gradients summed by AllReduce(comm).

    Takes Trainer's arguments; on the ranks other than 0, `evaluate`, `checkpointer` and
    `log` are dropped and the progress bar is off. NumPy backend only (MPI sums host buffers).
    """
    if get_backend() != "numpy":
        raise InputError("data-parallel training runs on the NumPy backend only, "
                         f"not {get_backend()!r}")
    sync = AllReduce(comm)
    config = config if config is not None else TrainConfig()
    batch_size = getattr(stream, "batch_size", config.batch_size)
    if batch_size < sync.size:
        raise InputError(message("batch_size", f"at least one sequence for each of the "
                                 f"{sync.size} ranks", batch_size))
    if sync.rank:                                       # rank 0 alone evaluates and writes
        options.update(evaluate=None, checkpointer=None, log=None)
        config = replace(config, progress=False)
    return Trainer(model, stream, config, gradient_sync=sync, **options)
