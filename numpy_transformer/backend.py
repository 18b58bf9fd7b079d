"""The array module `xp` (NumPy by default, CuPy on request) and the default dtype.

Every piece of compute code in the package does its array math through `xp`:

    from numpy_transformer.backend import xp
    y = xp.matmul(a, b)

`xp` is a thin stand-in that forwards every attribute to the active module, so
switching backends is one call (or one environment variable) and no import has
to be redone:

    set_backend("cupy")                       # or NUMPY_TRANSFORMER_BACKEND=cupy

Switch before building a model: arrays already made stay on the device they
were made on. A third backend, "simulator", is test support: a CPU array module
that is as strict as CuPy about host and device (device_simulator.py), so that a
machine without a GPU still finds code that would break on one.

Arrays cross between host and device in two places only: `xp.asarray` (the
data pipeline moves each batch to the device) and `to_numpy` (metrics,
checkpoints, figures bring results back).
"""

import os

import numpy
from .errors import InputError, InputTypeError

_BACKENDS = ("numpy", "cupy", "simulator")
_active = numpy
_default_dtype = numpy.dtype(numpy.float32)


class _ArrayModule:
    """Forwards `xp.anything` to the active array module (numpy or cupy)."""

    def __getattr__(self, name):
        # Called only for names not yet looked up: keep the answer as an instance
        # attribute, so the next `xp.name` is a plain attribute read (set_backend clears).
        value = getattr(_active, name)
        setattr(self, name, value)
        return value

    def __repr__(self):
        return f"<array module {_active.__name__!r} (numpy_transformer.backend.xp)>"


xp = _ArrayModule()


def set_backend(name):
    """Make `xp` NumPy (`"numpy"`) or CuPy (`"cupy"`) from now on."""
    global _active
    if name not in _BACKENDS:
        raise InputError(f"backend must be one of {_BACKENDS}, got {name!r}")
    if name == "cupy":
        try:
            import cupy
        except ImportError as err:
            raise ImportError(
                "backend 'cupy' was requested but CuPy is not installed; install the "
                'GPU extra with `pip install -e ".[gpu]"` (needs an NVIDIA GPU and CUDA 12)'
            ) from err
        _active = cupy
    elif name == "simulator":
        from .testing import device_simulator
        _active = device_simulator.module
    else:
        _active = numpy
    vars(xp).clear()                          # forget what the old module answered


def get_backend():
    """Name of the active array module: "numpy", "cupy" or "simulator"."""
    return _active.__name__


def to_numpy(x):
    """A NumPy array holding `x` (copied from the GPU when `x` is a CuPy array)."""
    if type(x).__module__.startswith(("cupy", "numpy_transformer.testing.device_simulator")):
        return x.get()
    return numpy.asarray(x)


def on_device(x):
    """`x` on the active device: a host array or scalar is copied there, a device array kept."""
    return xp.asarray(x)


def get_default_dtype():
    """The floating dtype new parameters and activations use (float32 unless set)."""
    return _default_dtype


def set_default_dtype(dtype):
    """Set the default floating dtype: a NumPy dtype or its name ("float32", "float64")."""
    global _default_dtype
    try:
        dt = numpy.dtype(dtype)
    except TypeError as err:
        raise InputTypeError(f"dtype must be a NumPy floating dtype or its name, got {dtype!r}") from err
    if dt.kind != "f":
        raise InputTypeError(f"dtype must be a floating dtype (float16/32/64), got {dt.name}")
    _default_dtype = dt


class default_dtype:
    """Context manager: `with default_dtype("float64"): ...` then restore the old one."""

    def __init__(self, dtype):
        self.dtype = dtype

    def __enter__(self):
        self.saved = get_default_dtype()
        set_default_dtype(self.dtype)
        return get_default_dtype()

    def __exit__(self, *exc):
        set_default_dtype(self.saved)


_env = os.environ.get("NUMPY_TRANSFORMER_BACKEND", "").strip().lower()
if _env:
    set_backend(_env)


def keep_freed_memory():
    """Make the C allocator keep freed memory for reuse instead of returning it at once.

    A training step allocates and frees the same arrays every time. glibc's malloc
    gives memory back to the OS eagerly (blocks above its mmap threshold, and the top
    of the heap beyond its trim threshold, both 128 KiB at start), so every step
    page-faults the same memory in again: thousands of faults, 5-15 % of a step for
    the small models. glibc raises both thresholds (up to 32 and 64 MiB) after it sees
    a block that large freed; allocating (untouched: no memory is used) and freeing
    one 31 MiB array does it at once. It only changes when glibc returns memory; on
    other C libraries it does nothing. Called once, when the package is imported.
    """
    numpy.empty(31 << 20, dtype=numpy.uint8)     # freed as soon as it is made


keep_freed_memory()
