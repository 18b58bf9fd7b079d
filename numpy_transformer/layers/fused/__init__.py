"""Fused drop-ins: on a GPU each hot elementwise chain of a layer runs as one kernel.

A training step on CuPy is launch-bound (docs/gpu.md): Python queues a kernel for
every `+`, `*` and `exp`, about 16 us each, and the layers' chains of small
operations (LayerNorm, the masked softmax, GELU, the loss) cost more in launches
than in arithmetic. Each drop-in here does one chain in one kernel, computing what
the layer's plain code computes:

    norm.forward(ln, x, f)           LayerNorm(x + f) (or of x): y, and xhat, r for backward
    norm.backward(ln, dy)            LayerNorm.backward: dx by row blocks, dgamma, dbeta by column blocks
    softmax.forward(s, mask, d)      softmax(s / d, mask) over the last axis, a row kernel
    softmax.backward(dp, p)          softmax_backward(dp, p)
    activation.forward(act, h, b)    ReLU or GELU of h + b, with what the backward keeps
    activation.gelu_backward(g, dy)  GELU.backward
    activation.feedforward(ffn, x)   FeedForward.forward, linear_1's bias added inside the activation
    loss.forward(ce, x, t, n)        CrossEntropyLoss.forward: p and every token's loss in a row kernel
    loss.backward(ce, dloss)         CrossEntropyLoss.backward: (p - q) / N in place
    linear.backward(lin, dy)         Linear.backward with dW and db added inside the products
                                     (cuBLAS's beta = 1), TiedLinear's the same
    attention.forward(mha, q, k, v)  MultiHeadAttention.forward in training: the projections'
                                     bias kernels write the heads' layout (no copies)
    dropout_forward(drop, x)         Dropout.forward: the mask and its product, one kernel
    (and layers/fast.py's add_at: cupyx.scatter_add, one kernel)

The switch is read at every call: `set_enabled(False)` or `with disabled():` runs the
plain forms everywhere (the old path, for comparisons). Off the device (NumPy) every
layer runs its plain code whatever the switch, so the CPU path is unchanged. On the
device simulator (testing/device_simulator.py) a drop-in runs the plain form inside
`xp.counted_as_one(name)`: one launch, as CuPy will run it. On CuPy it compiles its
kernel on first use (CuPy is imported only there).

Every file here but this one and attention.py (forwards only) computes a graded part's
answer and says which (`FAST_FORM_OF`); a student copy that stubs the part leaves the file
out and the layer runs its plain code, the student's. tests/core/test_fused.py checks each drop-in against
its plain form.
"""

import contextlib
import importlib

import numpy

from ... import backend
from ...backend import get_backend, xp

_enabled = [True]
_kernels = {}           # (name, dtype) -> a compiled CuPy kernel

# CUDA helpers of the row kernels: one block of ROW_THREADS threads per row, its sums and
# maxima reduced in shared memory (T: the row's type, and NEG_INF, set by `row_kernel`; no
# header is included, so nothing relies on math.h's macros).
ROW_THREADS = 256
ROW_HELPERS = r"""
__device__ T block_sum(T v, T* sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    T total = sh[0];
    __syncthreads();
    return total;
}
__device__ T block_max(T v, T* sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s && sh[threadIdx.x + s] > sh[threadIdx.x]) sh[threadIdx.x] = sh[threadIdx.x + s];
        __syncthreads();
    }
    T top = sh[0];
    __syncthreads();
    return top;
}
"""


def set_enabled(flag):
    """Run the fused drop-ins on the device (True, the default) or the plain forms (False)."""
    _enabled[0] = bool(flag)


def enabled():
    """Whether the fused drop-ins are on (they run only on a device)."""
    return _enabled[0]


@contextlib.contextmanager
def disabled():
    """`with disabled(): ...` runs the plain forms, then restores the switch as it was."""
    saved = _enabled[0]
    _enabled[0] = False
    try:
        yield
    finally:
        _enabled[0] = saved


def form(name):
    """The drop-ins' module `name` of this package, or None where a student copy left it out."""
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as err:
        if err.name != f"{__name__}.{name}":
            raise
        return None


def on(form):
    """Whether a layer takes its fused form `form` (a module of this package, or None where a
    student copy left it out): the switch on, and the arrays on a device (CuPy or the simulator)."""
    return _enabled[0] and form is not None and backend._active is not numpy     # cheap on NumPy


def on_cupy():
    return get_backend() == "cupy"


def one_launch(name):
    """The simulator's count of a fused kernel: its body (the plain form) counts as one launch."""
    return xp.counted_as_one(name)


def also_launched(*names):
    """On the simulator, after a drop-in whose plain form ran in one `one_launch` region: count
    the device's other launches of that drop-in (their work is already done)."""
    for name in names:
        with one_launch(name):
            pass


def plain():
    """Inside a drop-in on the simulator: the layers' own code runs (the switch off for the
    region), counted as one launch by the caller's `one_launch`."""
    return disabled()


def row_kernel(name, source, dtype):
    """The CuPy RawKernel `name` of `source` (ROW_HELPERS and `T` = dtype's C type before it),
    compiled once per dtype."""
    key = (name, numpy.dtype(dtype).name)
    if key not in _kernels:
        import cupy
        ctype, neg_inf = {"float32": ("float", "__int_as_float(0xff800000)"),
                          "float64": ("double", "__longlong_as_double(0xfff0000000000000LL)")}[key[1]]
        head = f"typedef {ctype} T;\n#define NEG_INF {neg_inf}\n"
        _kernels[key] = cupy.RawKernel(head + ROW_HELPERS + source, name)
    return _kernels[key]


def elementwise(name, params, outputs, body):
    """The CuPy ElementwiseKernel `name` (built once)."""
    if (name, None) not in _kernels:
        import cupy
        _kernels[(name, None)] = cupy.ElementwiseKernel(params, outputs, body, name)
    return _kernels[(name, None)]


def rows(kernel, n_rows, args):
    """Launch a row kernel: one block of ROW_THREADS threads per row."""
    if n_rows:
        kernel((n_rows,), (ROW_THREADS,), args)


def i32(n):
    """A kernel's `int` argument (CuPy passes a Python int as a 64-bit one)."""
    return numpy.int32(n)


def i64(n):
    return numpy.int64(n)


def f64(x):
    return numpy.float64(x)


DROPOUT = ("nt_dropout_forward", "T x, float32 u, float32 p, T scale", "T mask, T y",
           "mask = u >= p ? scale : (T)0; y = x * mask;")


def dropout_forward(dropout, x):
    """Same as `dropout.forward(x)` in training with p > 0: y = x m / (1 - p), m kept where
    u >= p (u uniform in [0, 1), drawn as Dropout._keep draws it); keeps m / (1 - p).

    Shapes: x, y and the kept mask alike. Kernels: the draw, then one for the mask and y.
    """
    if not on_cupy():
        with one_launch("dropout_draw"), plain():
            keep = dropout._keep(x.shape)                               # (...) boolean
        with one_launch("dropout_forward"):
            mask = keep.astype(x.dtype)
            mask /= x.dtype.type(1.0 - dropout.p)
            dropout.saved = mask
            return x * mask
    seed = int(dropout.rng.integers(2**63))                             # as Dropout._keep
    u = xp.random.default_rng(seed).random(x.shape, dtype="float32")    # (...)
    kernel = elementwise(*DROPOUT)
    scale = x.dtype.type(1.0) / x.dtype.type(1.0 - dropout.p)         # as the plain mask /= (1 - p)
    mask, y = kernel(x, u, numpy.float32(dropout.p), scale)
    dropout.saved = mask
    return y
