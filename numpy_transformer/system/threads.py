"""How many CPU threads NumPy's BLAS (the matrix-multiply library) may use.

The matrices of a small Transformer are small (64 x 64, batches of a few
thousand rows), so a BLAS call takes microseconds and extra threads mostly add
start-up and hand-over time; on a busy 2-core laptop, one thread is usually the
fastest. BLAS reads its thread count when NumPy is first imported, so
`OPENBLAS_NUM_THREADS=1 python ...` always works; `set_num_threads` changes it
afterwards, through `threadpoolctl` when installed, else by calling OpenBLAS
directly (the library NumPy's wheels ship with).
"""

import ctypes
import glob
import os

from ..validation import check_integer

_SETTERS = ("openblas_set_num_threads", "openblas_set_num_threads64_",
            "scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads")
_limits = None      # keeps a threadpoolctl limit alive


def _openblas_libraries():
    """Paths of the OpenBLAS libraries bundled with NumPy's wheels (Linux, Windows, macOS)."""
    import numpy
    root = os.path.dirname(numpy.__file__)
    patterns = [os.path.join(root, "..", "numpy.libs", "*openblas*"),
                os.path.join(root, ".dylibs", "*openblas*")]
    return sorted(path for pattern in patterns for path in glob.glob(pattern))


def _set_with_ctypes(n):
    done = False
    for path in _openblas_libraries():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _SETTERS:
            if hasattr(lib, name):
                getattr(lib, name)(ctypes.c_int(n))
                done = True
    return done


def set_num_threads(n):
    """Let BLAS use `n` threads from now on; True if a BLAS library took the setting.

    Also sets OMP/OPENBLAS/MKL_NUM_THREADS in the environment, for child processes.
    """
    global _limits
    check_integer(n, "threads")
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return _set_with_ctypes(n)
    _limits = threadpool_limits(limits=n, user_api="blas")
    return True
