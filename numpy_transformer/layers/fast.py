"""Faster forms of a few NumPy calls, for the layers' hot paths. Same numbers, no new math.

Every function here is a drop-in replacement for one plain NumPy call, named
after it and stated in its docstring; read `fast.sum(a, axis=0)` as
`a.sum(axis=0)`. They exist because NumPy reduces a short axis slowly: summing
or taking the max over rows of 32 or 64 numbers runs one small loop per row,
and in a small model those reductions (softmax rows, LayerNorm statistics,
bias gradients) cost as much as the matrix products around them. `add.at`, NumPy's
unbuffered add at given indices, is slow in NumPy and missing in CuPy.

    fast.sum(a, axis)    a.sum(axis=axis)    first or last axis: one matrix-vector product
    fast.mean(a, axis)   a.mean(axis=axis)   the same, divided by the axis length
    fast.max(a, axis)    a.max(axis=axis)    a short last axis: reduced as columns instead
    fast.ones(a, n)      xp.ones(n, a.dtype) made once per size and kept (read only)
    fast.add_at(a, i, v) xp.add.at(a, i, v)  rows sorted by index, each run summed by add.reduceat

Any other axis falls back to the plain call. On a GPU (and the device simulator) `add_at`
is one kernel, CuPy's `cupyx.scatter_add` (atomic adds: a repeated index's rows are summed
in no fixed order), unless the fused drop-ins are off (layers/fused/).
tests/core/test_fast.py checks each function against its plain form. Results agree up
to rounding (a matrix-vector product adds in another order than NumPy's pairwise sum,
`add_at` sums a repeated index's rows in another order); `max` is exact.
"""

from ..backend import xp
from . import fused

# Below this many entries per row, `max` over the last axis is faster as columns.
SHORT_ROW = 64

_ones = {}      # (array type, n, dtype) -> a vector of n ones, made once (never written to)


def ones(a, n):
    """Same as `xp.ones(n, dtype=a.dtype)` (on a's device), made once and reused: read only."""
    key = (type(a), n, a.dtype)
    if key not in _ones:
        _ones[key] = xp.ones(n, dtype=a.dtype)
    return _ones[key]


def sum(a, axis, keepdims=False):  # noqa: A001  (named after the NumPy call it replaces)
    """Same as `a.sum(axis=axis, keepdims=keepdims)` for the first or the last axis.

    Computed as a matrix-vector product with a vector of ones: rows (N, n) @ 1 (n,)
    for the last axis, 1 (n,) @ (n, M) for the first. BLAS does that several times
    faster than NumPy's reduction over short rows.
    """
    ax = axis % a.ndim
    n = a.shape[ax]
    if a.size == 0 or ax not in (0, a.ndim - 1):
        return a.sum(axis=axis, keepdims=keepdims)
    if a.ndim == 2 and not keepdims:                              # no reshapes needed
        return a @ ones(a, n) if ax == 1 else ones(a, n) @ a
    if ax == a.ndim - 1:
        s = a.reshape(-1, n) @ ones(a, n)                         # (N,)
        return s.reshape(a.shape[:-1] + (1,) * keepdims)          # (...,) or (..., 1)
    s = ones(a, n) @ a.reshape(n, -1)                             # (M,)
    return s.reshape((1,) * keepdims + a.shape[1:])               # (...,) or (1, ...)


def mean(a, axis, keepdims=False):
    """Same as `a.mean(axis=axis, keepdims=keepdims)`: `fast.sum` divided by the axis length."""
    if a.size == 0:
        return a.mean(axis=axis, keepdims=keepdims)
    s = sum(a, axis, keepdims)
    s *= 1.0 / a.shape[axis]                                      # a Python float: dtype kept
    return s


def max(a, axis, keepdims=False):  # noqa: A001
    """Same as `a.max(axis=axis, keepdims=keepdims)`, exactly.

    For a short last axis (fewer than SHORT_ROW entries), the rows (N, n) are first
    copied into columns (n, N): the max over axis 0 is then n - 1 element-wise
    maxima of long contiguous rows, which NumPy vectorises, instead of N tiny loops.
    """
    ax = axis % a.ndim
    n = a.shape[ax]
    if a.size == 0 or ax != a.ndim - 1 or n >= SHORT_ROW:
        return a.max(axis=axis, keepdims=keepdims)
    columns = xp.ascontiguousarray(a.reshape(-1, n).T)           # (n, N)
    m = columns.max(axis=0).reshape(a.shape[:-1])                 # (...,)
    return m[..., None] if keepdims else m                        # (..., 1) or (...,)


def add_at(a, index, values):
    """Same as `xp.add.at(a, index, values)` (NumPy's unbuffered add) for integer indices
    into the first axis of `a`; NumPy's documentation says what that adds where.

    Shapes: a (V, ...), index any shape (N entries in all), values index.shape + a.shape[1:].
    How: the N rows are sorted by index, so that equal indices sit next to each other, and
    one `add.reduceat` sums every run at once; the run's distinct indices then take a
    plain fancy-index +=. NumPy's `add.at` is several times slower, CuPy has none.
    """
    if fused.on(fused):                                           # one kernel on a GPU
        if fused.on_cupy():
            import cupyx
            cupyx.scatter_add(a, index, values)
            return
        with fused.one_launch("scatter_add"), fused.plain():
            return add_at(a, index, values)
    flat = index.reshape(-1)                                      # (N,)
    if flat.size == 0:
        return
    rows = values.reshape((flat.size,) + a.shape[1:])             # (N, ...)
    order = xp.argsort(flat)                                      # (N,)
    sorted_index = flat[order]                                    # (N,)
    first = xp.ones(flat.shape, dtype=xp.bool_)                   # (N,) True where a run starts
    first[1:] = sorted_index[1:] != sorted_index[:-1]
    starts = xp.flatnonzero(first)                                # (U,)  U distinct indices
    sums = xp.add.reduceat(rows[order], starts, axis=0)           # (U, ...)
    a[sorted_index[starts]] += sums                               # distinct rows: += is safe
