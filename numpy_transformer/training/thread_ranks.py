"""N ranks as N threads of one process: a stand-in for MPI, for lessons and tests.

    def train(comm):                      # runs once per rank, each in its own thread
        model = build_transformer(config)
        DataParallelTrainer(model, stream, train_config, comm=comm).fit()
        return model.state_dict()

    states = run_ranks(train, 2)          # [rank 0's result, rank 1's result]

`ThreadComm` answers the calls that distributed.py and mpi_world.py make of an mpi4py
communicator: Get_rank, Get_size, an in-place Allreduce of a sum, bcast and Abort. So a
lesson or a test runs the package's very data-parallel path (shards, weights n_k / n,
one flat buffer, one all-reduce per step) in one process, without MPI. NumPy releases
Python's lock inside its matrix products, so the threads even compute side by side.
"""

import threading
from functools import reduce


class _Group:
    """What the threads of one group share: a barrier and one mailbox slot per rank."""

    def __init__(self, size):
        self.size = size
        self.barrier = threading.Barrier(size)
        self.slots = [None] * size


class ThreadComm:
    """Rank `rank` of a group of threads, with the mpi4py calls that training makes."""

    IN_PLACE = "in place"
    SUM = "sum"

    def __init__(self, group, rank):
        self._group, self._rank = group, rank

    def Get_rank(self):
        return self._rank

    def Get_size(self):
        return self._group.size

    def _gather(self, value):
        """Every rank's value, in rank order, on every rank."""
        group = self._group
        group.slots[self._rank] = value
        group.barrier.wait()                 # all values are in
        values = list(group.slots)
        group.barrier.wait()                 # all have read: the slots may be reused
        return values

    def Allreduce(self, sendbuf, recvbuf, op):
        """recvbuf <- the sum of every rank's recvbuf, added in rank order (so the same
        numbers on every rank); only the in-place form, the one training uses."""
        if sendbuf is not self.IN_PLACE or op is not self.SUM:
            raise NotImplementedError("ThreadComm.Allreduce: only an in-place sum")
        total = reduce(lambda a, b: a + b, self._gather(recvbuf))    # a new array
        self._group.barrier.wait()          # every rank has summed before any overwrites
        recvbuf[...] = total

    def bcast(self, obj, root=0):
        return self._gather(obj)[root]

    def Abort(self, status=1):
        """Threads cannot be killed: break the others' waits (the error is raised after)."""
        self._group.barrier.abort()


def run_ranks(fn, size):
    """Run fn(comm) once per rank, each in its own thread; their results, by rank.

    An error in one rank breaks the other ranks' waits, and is raised here.
    """
    group = _Group(size)
    results, errors = [None] * size, [None] * size

    def run(rank):
        try:
            results[rank] = fn(ThreadComm(group, rank))
        except BaseException as err:
            errors[rank] = err
            group.barrier.abort()

    threads = [threading.Thread(target=run, args=(rank,)) for rank in range(size)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    raised = [e for e in errors if e is not None]
    first = [e for e in raised if not isinstance(e, threading.BrokenBarrierError)] or raised
    if first:
        raise first[0]
    return results
