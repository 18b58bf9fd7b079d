"""Data-parallel training: N ranks, each with its shard of every batch, one update.

    mpiexec -n 2 python -m numpy_transformer train --task reverse       # the command line
    trainer = DataParallelTrainer(model, stream, config, comm=world(), out="runs/x")

Every rank (an MPI process, mpi_world.py; or a thread, thread_ranks.py) holds a full
copy of the model and the same data stream, so all of them draw the same global batch
of B sequences, and the stream's position (saved in each checkpoint) does not depend
on N: a run saved by N ranks resumes on any other N. Rank k keeps the rows
[k B / N, (k + 1) B / N) of the batch. Then, every step:

    1. forward, loss and backward on the shard, the loss weighted by w_k = n_k / n
    2. ONE in-place Allreduce (a sum) of one flat buffer: every gradient, the weighted
       loss and each rank's stop request     -> every rank holds the batch's gradient
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

import math
import time
from dataclasses import replace

from ..backend import get_backend, xp
from ..validation import message
from ..errors import InputError, TrainingDiverged
from .config import TrainConfig
from .loop import Trainer
from .mpi_world import abort, mpi_names
from .state import model_generators

STOP_REASONS = ("SIGINT", "SIGTERM", "closed output", "stop requested", "SIGHUP")


class DataParallelTrainer(Trainer):
    """A Trainer for rank k of N: comm is MPI.COMM_WORLD (mpi_world.world()) or a ThreadComm.

    Takes Trainer's arguments; on the ranks other than 0, `evaluate`, `out` and `log` are
    dropped and the progress bar is off. `seconds` times the last all-reduce: "allreduce"
    the call (waiting for the slowest rank included), "copy" filling and emptying the buffer.
    """

    def __init__(self, model, stream, config=None, *, comm, **options):
        if get_backend() != "numpy":
            raise InputError("data-parallel training runs on the NumPy backend only, "
                             f"not {get_backend()!r}")
        self.comm, self.rank, self.size = comm, comm.Get_rank(), comm.Get_size()
        self._in_place, self._sum = mpi_names(comm)
        config = config if config is not None else TrainConfig()
        batch_size = getattr(stream, "batch_size", config.batch_size)
        if batch_size < self.size:
            raise InputError(message("--batch-size", f"at least one sequence for each of the "
                                     f"{self.size} ranks", batch_size))
        if self.rank:                                   # rank 0 alone evaluates and writes
            options.update(evaluate=None, out=None, log=None)
            config = replace(config, progress=False)
        self.stop_wish, self.seconds, self._buffer = None, {"allreduce": 0.0, "copy": 0.0}, None
        super().__init__(model, stream, config, **options)
        self.spread_dropout()

    def spread_dropout(self):
        """Jump rank k's dropout generators k times (k * 2^127 draws): independent masks.

        Done at the start and after resuming, from the states rank 0 saved: any N resumes.
        """
        for generator in model_generators(self.model):
            if self.rank and hasattr(generator.bit_generator, "jumped"):
                generator.bit_generator.state = generator.bit_generator.jumped(self.rank).state

    def resume(self, checkpoint):
        super().resume(checkpoint)
        self.spread_dropout()
        return self

    # One step: Trainer.train_step calls gradients(), then clips and updates.

    def shard(self, inputs, targets):
        """(this rank's inputs, its targets, its weight w_k = n_k / n) of a global batch.

        inputs: arrays with the batch axis first, (B, ...); targets (B, T). n counts the
        targets the loss counts (not its ignore_index), n_k those of this rank's rows.
        """
        B, pad = targets.shape[0], self.loss_fn.ignore_index
        lo, hi = self.rank * B // self.size, (self.rank + 1) * B // self.size
        counted = xp.ones(targets.shape, dtype=bool) if pad is None else targets != pad  # (B, T)
        n, n_k = int(counted.sum()), int(counted[lo:hi].sum())
        return tuple(x[lo:hi] for x in inputs), targets[lo:hi], (n_k / n if n else 0.0)

    def gradients(self, inputs, targets, ntokens=None):
        """The global batch's mean loss; every rank's model then holds its gradient.
        (`ntokens` is the global count; each rank counts its own shard.)"""
        inputs, targets, weight = self.shard(inputs, targets)
        loss = 0.0
        if weight:                                      # (a shard with no counted token adds 0)
            logits = self.model.forward(*inputs)                        # (B_k, T, V)
            loss = self.loss_fn.forward(logits, targets)
            if math.isfinite(loss):                     # d(w_k L_k): the weight goes in dloss
                self.model.backward(self.loss_fn.backward(weight))
        loss, stop = self.all_reduce(weight * loss)
        if stop is not None:                            # every rank stops after this step
            self._stop, self.stop_reason = True, stop
        if not math.isfinite(loss):                     # the same loss on every rank
            self._diverged(f"the loss became {loss}")
        return loss

    def all_reduce(self, weighted_loss):
        """Sum over the ranks, with one in-place Allreduce of one flat buffer: the model's
        gradients, the weighted losses and the stop requests. Returns (loss, stop reason)."""
        if self._buffer is None:
            self._allocate()
        buffer, P = self._buffer, self._num_grads
        start = time.perf_counter()
        for grad, view in self._views:
            view[...] = grad                            # pack
        buffer[P:] = 0
        buffer[P] = weighted_loss
        if self.stop_wish is not None:                  # a slot per rank: no sums of reasons
            reason = self.stop_wish if self.stop_wish in STOP_REASONS else "stop requested"
            buffer[P + 1 + self.rank] = STOP_REASONS.index(reason) + 1
        packed = time.perf_counter()
        self.comm.Allreduce(self._in_place, buffer, op=self._sum)
        reduced = time.perf_counter()
        for grad, view in self._views:
            grad[...] = view                            # unpack
        self.seconds = {"allreduce": reduced - packed,
                        "copy": packed - start + time.perf_counter() - reduced}
        codes = [int(code) for code in buffer[P + 1:] if code]
        stop = STOP_REASONS[codes[0] - 1] if codes else None     # the lowest rank's reason
        if stop is not None:
            self.stop_wish = None
        return float(buffer[P]), stop

    def _allocate(self):
        """The flat buffer (P gradients, the loss, N stop slots) and a view per gradient."""
        grads = [grad for _, _, grad in self.model.named_parameters()]
        P = sum(grad.size for grad in grads)
        self._buffer = xp.empty(P + 1 + self.size, dtype=xp.result_type(*grads))  # (P+1+N,)
        self._views, offset = [], 0
        for grad in grads:
            self._views.append((grad, self._buffer[offset:offset + grad.size].reshape(grad.shape)))
            offset += grad.size
        self._num_grads = P

    # Stopping and failing together.

    def request_stop(self, reason="stop requested"):
        """Ask every rank to stop: the request rides the next all-reduce, then all stop."""
        if self._stop or self.stop_wish is not None:
            return
        self.stop_wish = reason
        super().request_stop(reason)                    # its message, if any
        self._stop, self.stop_reason = False, None      # not yet: when the ranks agree

    def fit(self):
        """Trainer.fit on every rank; an error on one rank ends them all (mpi_world.abort).
        A diverged run is no such error: the loss and gradient norm come out of the
        all-reduce, so every rank raises TrainingDiverged at the same step."""
        self.stop_wish = None                           # as Trainer.fit forgets old requests
        try:
            return super().fit()
        except TrainingDiverged:
            raise
        except BaseException as err:
            abort(self.comm, err)
            raise
