"""The masked softmax over the last axis in one row kernel, and its backward in another.
The math: layers/softmax.py.

    forward(x, mask=None, divisor=None)   same as softmax(x / divisor, -1, mask)
                                          (attention's scores and their 1 / sqrt(Dh))
    backward(dp, p)                       same as softmax_backward(dp, p, -1)

A row with no key allowed is all zeros, as the plain form makes it. The mask is read
where it lies, through its broadcast strides (no (B, H, Tq, Tk) copy of it).

This file is the fast form of assignment part softmax (FAST_FORM_OF): a student copy that
stubs the part leaves it out, and softmax runs its plain code, the student's.
"""

from ...backend import xp
from . import i32, i64, on_cupy, one_launch, plain, row_kernel, rows

FAST_FORM_OF = "softmax"        # the graded part whose answer this file computes

FORWARD = r"""
extern "C" __global__ void nt_softmax_forward(const T* x, const bool* mask, int has_mask,
        long long m0, long long m1, long long m2, long long m3, int H, int Tq, int n,
        T divisor, T* p) {
    __shared__ T sh[256];
    long long row = blockIdx.x, at = row * n;
    long long q = row % Tq, h = (row / Tq) % H, b = row / ((long long)Tq * H);
    const bool* keep = mask + b * m0 + h * m1 + q * m2;         // this row's mask, stride m3
    T top = NEG_INF;
    for (int j = threadIdx.x; j < n; j += blockDim.x)
        if ((!has_mask || keep[j * m3]) && x[at + j] / divisor > top) top = x[at + j] / divisor;
    top = block_max(top, sh);
    if (top == NEG_INF) top = 0;                              // nothing kept: all zeros
    T s = 0;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        T e = (!has_mask || keep[j * m3]) ? exp(x[at + j] / divisor - top) : (T)0;
        p[at + j] = e;
        s += e;
    }
    s = block_sum(s, sh);
    if (s == 0) s = 1;                                          // 0 / 1 = 0, never NaN
    for (int j = threadIdx.x; j < n; j += blockDim.x) p[at + j] /= s;
}
"""

BACKWARD = r"""
extern "C" __global__ void nt_softmax_backward(const T* dp, const T* p, int n, T* dx) {
    __shared__ T sh[256];
    long long at = (long long)blockIdx.x * n;
    T s = 0;
    for (int j = threadIdx.x; j < n; j += blockDim.x) s += dp[at + j] * p[at + j];
    s = block_sum(s, sh);
    for (int j = threadIdx.x; j < n; j += blockDim.x) dx[at + j] = p[at + j] * (dp[at + j] - s);
}
"""


def forward(x, mask=None, divisor=None):
    """p = softmax(x / divisor, -1, mask), a new array of x's shape (..., n); x left alone.

    mask: boolean, broadcastable to x (True = keep). divisor: a number, or None (1)."""
    from ..softmax import softmax
    if not on_cupy() or x.ndim > 4:
        with one_launch("softmax_forward"), plain():
            return softmax(x if divisor is None else x / divisor, -1, mask)
    x = xp.ascontiguousarray(x)
    shape4 = (1,) * (4 - x.ndim) + x.shape                        # (B, H, Tq, Tk)
    if mask is None:
        m, strides = x, (0, 0, 0, 0)                              # not read
    else:
        m = xp.broadcast_to(xp.asarray(mask, dtype=bool).reshape(
            (1,) * (x.ndim - mask.ndim) + mask.shape), x.shape)   # a view, strides 0 where broadcast
        strides = (0,) * (4 - x.ndim) + tuple(s // m.itemsize for s in m.strides)
    p = xp.empty_like(x)
    kernel = row_kernel("nt_softmax_forward", FORWARD, x.dtype)
    rows(kernel, x.size // shape4[3],
         (x, m, i32(mask is not None), *map(i64, strides), i32(shape4[1]), i32(shape4[2]),
          i32(shape4[3]), x.dtype.type(1 if divisor is None else divisor), p))
    return p


def backward(dp, p):
    """Same as softmax_backward(dp, p, -1): p (dp - rowsum(dp p)). Shapes: dp, p (..., n)."""
    if not on_cupy():
        from ..softmax import softmax_backward
        with one_launch("softmax_backward"), plain():
            return softmax_backward(dp, p, -1)
    dp, p = xp.ascontiguousarray(dp), xp.ascontiguousarray(p)
    dx = xp.empty_like(p)
    n = p.shape[-1]
    rows(row_kernel("nt_softmax_backward", BACKWARD, p.dtype), p.size // n if n else 0,
         (dp, p, i32(n), dx))
    return dx
