"""How a process finds its MPI world, and how the ranks of a run fail together.

    comm = world()          # MPI.COMM_WORLD under `mpiexec -n 2` (or more), else None

An MPI launcher (`mpiexec -n N ...`) starts N copies of a command and tells each how
many there are in its environment (SIZE_VARIABLES). Without one, or with N = 1,
`world()` returns None and mpi4py is never imported: a plain run stays exactly as it
was. With one, it imports mpi4py (which starts MPI) and returns the world communicator.

Ranks that wait for each other must also fail together: a rank that stops on an error
leaves the others waiting in their next all-reduce forever. So
- `on_root(comm, action)` runs an action on rank 0 alone (claiming the run folder) and
  makes every rank raise if it failed there;
- `abort(comm, err)` reports an error that only this rank met and ends every rank
  (MPI_Abort), with the exit status the command line gives that error;
- `silence()` mutes a rank's output, as rank 0 alone prints.
"""

import os
import sys
import traceback

from ..errors import InputError

# Where launchers put the number of processes: MPICH, Intel MPI and Slurm's PMI (PMI_SIZE),
# Open MPI, MVAPICH.
SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")
_real_stderr = None       # a rank's own stderr, kept by silence() for abort()


def launched_size():
    """The number of processes an MPI launcher started (1 without a launcher)."""
    for name in SIZE_VARIABLES:
        value = os.environ.get(name, "").strip()
        if value.isdigit():
            return int(value)
    return 1


def world():
    """MPI.COMM_WORLD when a launcher started 2+ processes, else None (mpi4py not imported)."""
    if launched_size() < 2:
        return None
    try:
        from mpi4py import MPI
    except ImportError:
        raise InputError(f"started by an MPI launcher with {launched_size()} processes, but "
                         "mpi4py is not installed; pip install 'numpy_transformer[mpi]' "
                         "(from a clone: pip install -e '.[mpi]')") from None
    if MPI.COMM_WORLD.Get_size() != launched_size():      # else N runs, each thinking it is alone
        raise InputError(f"the MPI launcher started {launched_size()} processes, but mpi4py sees "
                         f"{MPI.COMM_WORLD.Get_size()}: mpiexec and mpi4py come from different "
                         f"MPI installations (use the mpiexec beside {sys.executable})")
    return MPI.COMM_WORLD


def mpi_names(comm):
    """(IN_PLACE, SUM) for comm: mpi4py's, or those a stand-in (thread_ranks.py) brings."""
    if hasattr(comm, "IN_PLACE"):
        return comm.IN_PLACE, comm.SUM
    from mpi4py import MPI
    return MPI.IN_PLACE, MPI.SUM


def one_line(err):
    return " ".join(str(err).split()) or type(err).__name__


def silence():
    """Send this process's stdout and stderr to the null device; abort() still reports."""
    global _real_stderr
    if _real_stderr is not None:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    _real_stderr = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)


def on_root(comm, action):
    """Run action() on rank 0 alone; if it failed there, every rank raises.

    Rank 0 raises its own error; the others an InputError (or, for a bug, a
    RuntimeError) with its message, so that every rank exits with the same status.
    """
    failure = None
    if comm.Get_rank() == 0:
        try:
            action()
        except Exception as err:
            failure = err
    outcome = None if failure is None else (isinstance(failure, (InputError, OSError)),
                                            one_line(failure))
    outcome = comm.bcast(outcome, root=0)
    if failure is not None:
        raise failure
    if outcome is not None:
        raise (InputError if outcome[0] else RuntimeError)(f"rank 0: {outcome[1]}")


def abort(comm, err):
    """Report `err`, raised on this rank only, and end every rank with its exit status.

    The status is the command line's: 2 bad input or an OS error, 130 interrupted, 1 a
    bug (shown with its traceback). A stand-in communicator (thread_ranks.py) cannot
    end threads: its Abort only frees the other ranks' waits, and the caller raises.
    """
    if hasattr(comm, "IN_PLACE"):                    # a stand-in: the caller raises err
        comm.Abort(1)
        return
    if isinstance(err, KeyboardInterrupt):
        status, text = 130, "interrupted"
    elif isinstance(err, (InputError, OSError)):
        status, text = 2, f"error: {one_line(err)}"
    else:
        status, text = 1, "internal error: " + "".join(
            traceback.format_exception(type(err), err, err.__traceback__)).rstrip()
    rank = comm.Get_rank()
    where = "" if rank == 0 else f"rank {rank}: "
    os.write(_real_stderr if _real_stderr is not None else 2, f"{where}{text}\n".encode())
    comm.Abort(status)
