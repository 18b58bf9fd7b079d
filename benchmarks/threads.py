"""Fixing the number of BLAS/OpenMP threads: environment variables read once, at import.

OpenBLAS (numpy's BLAS here) and OpenMP read their thread count when the library is
loaded, so the variables must be set before `import numpy`; a script calls
`apply_thread_env_from_argv(sys.argv)` as its very first statement. Only `os` and
`sys` are imported here for that reason. PyTorch is told with torch.set_num_threads.
"""

import os

VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")


def thread_env(threads):
    """{variable: str(threads)} for every variable in VARIABLES."""
    return {name: str(threads) for name in VARIABLES}


def apply_thread_env_from_argv(argv):
    """Set VARIABLES from `--threads N` in argv (default: every core); returns N."""
    threads = None
    for i, arg in enumerate(argv):
        if arg == "--threads" and i + 1 < len(argv):
            threads = argv[i + 1]
        elif arg.startswith("--threads="):
            threads = arg.split("=", 1)[1]
    threads = int(threads) if threads and threads.isdigit() else os.cpu_count()
    os.environ.update(thread_env(threads))
    return threads
