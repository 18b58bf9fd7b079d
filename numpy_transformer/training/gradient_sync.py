"""How the Trainer's gradients are shared: nothing to share in one process (`OneProcess`),
or summed over N ranks (`AllReduce`, distributed.py).

A step of the Trainer (loop.py) asks its gradient sync two things:

    inputs, targets, ntokens, weight = sync.shard(inputs, targets, ntokens, ignore_index)
    ...                                # forward, loss L and backward(weight) on that part
    loss, stop = sync.all_reduce(model, L, weight, stop_request)

- `shard`: the part of the global batch this process trains on, and the weight w of its
  loss in the batch's loss (one process: the whole batch, w = 1);
- `all_reduce`: after the backward pass, make every process's gradients the gradient of
  the whole batch, and return the batch's loss, sum_k w_k L_k, with the stop every
  process agreed to (None: go on). `stop_request` is this process's own request (a
  Ctrl-C, say), None when there is none.

A stop asked for in one process is taken at once (`alone`); N ranks must agree on the
step after which they all stop, so their requests ride the next `all_reduce`.
Besides: `rank` and `size`; `spread_dropout(model)` once the model's dropout generators
are set (at the start and after resuming: ranks draw independent masks); and
`with failing_together(): ...` around a run, so that an error in one process ends all of
them, rather than leave the others waiting for it forever.
"""

import contextlib
from typing import Protocol


class GradientSync(Protocol):
    """What a Trainer asks of the part that shares its gradients (the module docstring)."""

    rank: int                   # this process's number, 0 to size - 1 (0 writes and logs)
    size: int                   # how many processes train together
    alone: bool                 # True: a stop request is taken at once, no one to agree with

    def shard(self, inputs, targets, ntokens, ignore_index):
        """(inputs, targets, ntokens or None, weight) of this process's part of a batch."""

    def all_reduce(self, model, loss, weight, stop_request):
        """Sum the gradients over the processes; (the batch's loss, the agreed stop or None)."""

    def spread_dropout(self, model):
        """Make this process's dropout masks independent of the others' (no-op alone)."""

    def failing_together(self):
        """A context manager: an error inside it in this process ends the others' waits."""


class OneProcess:
    """The GradientSync of a run in one process: the whole batch, nothing to sum."""

    rank, size, alone = 0, 1, True

    def shard(self, inputs, targets, ntokens, ignore_index):
        return inputs, targets, ntokens, 1.0

    def all_reduce(self, model, loss, weight, stop_request):
        return loss, None               # a stop request was taken when it came (`alone`)

    def spread_dropout(self, model):
        pass

    def failing_together(self):
        return contextlib.nullcontext()
