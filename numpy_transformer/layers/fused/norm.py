"""LayerNorm in two kernels a step: a row kernel forward (the residual add inside it), and one
backward whose blocks are the rows (dx) and, after them, the columns (dgamma and dbeta: they
read only dy and xhat, which are whole before the launch). The math: layers/normalization.py.

    forward(norm, x, f=None)   same as norm.forward(x + f) (or norm.forward(x)): y, and
                               norm.saved = (xhat, r) as the plain forward keeps them
    backward(norm, dy)         same as norm.backward(dy): dx, and dgamma, dbeta added

This file is the fast form of assignment part layernorm (FAST_FORM_OF): a student copy
that stubs the part leaves it out, and LayerNorm runs its plain code, the student's.
"""

from ...backend import xp
from . import ROW_THREADS, f64, i32, i64, on_cupy, one_launch, plain, row_kernel, rows

FAST_FORM_OF = "layernorm"      # the graded part whose answer this file computes

FORWARD = r"""
extern "C" __global__ void nt_layernorm_forward(const T* a, const T* b, int has_b,
        const T* gamma, const T* beta, double eps, int D, T* y, T* xhat, T* r) {
    __shared__ T sh[256];
    long long row = blockIdx.x, at = row * D;
    T s = 0;
    for (int j = threadIdx.x; j < D; j += blockDim.x) s += a[at + j] + (has_b ? b[at + j] : (T)0);
    T mu = block_sum(s, sh) / D;                                   // mean of z = a + b
    T q = 0;
    for (int j = threadIdx.x; j < D; j += blockDim.x) {
        T c = a[at + j] + (has_b ? b[at + j] : (T)0) - mu;
        q += c * c;
    }
    T rr = (T)1 / sqrt(block_sum(q, sh) / D + (T)eps);             // 1 / sigma
    for (int j = threadIdx.x; j < D; j += blockDim.x) {
        T h = (a[at + j] + (has_b ? b[at + j] : (T)0) - mu) * rr;
        xhat[at + j] = h;
        y[at + j] = gamma[j] * h + beta[j];
    }
    if (threadIdx.x == 0) r[row] = rr;
}
"""

# Blocks 0 .. N-1: one row each (dx). The blocks after them: dgamma += sum over rows of
# dy * xhat, dbeta += sum of dy, one thread per column, in row order (the same order every
# run; no atomics).
BACKWARD = r"""
extern "C" __global__ void nt_layernorm_backward(const T* dy, const T* xhat, const T* r,
        const T* gamma, long long N, int D, T* dx, T* dgamma, T* dbeta) {
    __shared__ T sh[256];
    if (blockIdx.x >= N) {                                      // a block of columns
        long long j = (blockIdx.x - N) * blockDim.x + threadIdx.x;
        if (j >= D) return;
        T sg = 0, sb = 0;
        for (long long n = 0; n < N; n++) {
            sg += dy[n * D + j] * xhat[n * D + j];
            sb += dy[n * D + j];
        }
        dgamma[j] += sg;
        dbeta[j] += sb;
        return;
    }
    long long row = blockIdx.x, at = row * D;
    T sg = 0, sgx = 0;
    for (int j = threadIdx.x; j < D; j += blockDim.x) {
        T g = dy[at + j] * gamma[j];
        sg += g;
        sgx += g * xhat[at + j];
    }
    T mean_g = block_sum(sg, sh) / D, mean_gx = block_sum(sgx, sh) / D;
    for (int j = threadIdx.x; j < D; j += blockDim.x)
        dx[at + j] = r[row] * (dy[at + j] * gamma[j] - mean_g - xhat[at + j] * mean_gx);
}
"""

def forward(norm, x, f=None):
    """y = LayerNorm(x + f) (f None: of x), norm.saved = (xhat, r). Shapes: x, f, y (..., D)."""
    if not on_cupy():
        with one_launch("layernorm_forward"), plain():
            return norm.forward(x if f is None else x + f)
    D = norm.d_model
    a = xp.ascontiguousarray(x)
    b = a if f is None else xp.ascontiguousarray(f)
    y, xhat = xp.empty_like(a), xp.empty_like(a)                  # (..., D)
    r = xp.empty(a.shape[:-1] + (1,), dtype=a.dtype)              # (..., 1)
    kernel = row_kernel("nt_layernorm_forward", FORWARD, a.dtype)
    rows(kernel, a.size // D, (a, b, i32(f is not None), norm.params["gamma"],
                               norm.params["beta"], f64(norm.eps), i32(D), y, xhat, r))
    norm.saved = (xhat, r)
    return y


def backward(norm, dy):
    """Same as norm.backward(dy): dx (..., D); dgamma, dbeta (D,) added into norm.grads."""
    if not on_cupy():
        with one_launch("layernorm_backward"), plain():
            return norm.backward(dy)
    xhat, r = (xp.ascontiguousarray(a) for a in norm.saved_for_backward())
    D = norm.d_model
    dy = xp.ascontiguousarray(dy)
    dx = xp.empty_like(dy)                                         # (..., D)
    n = dy.size // D                                               # rows, then columns' blocks
    kernel = row_kernel("nt_layernorm_backward", BACKWARD, dy.dtype)
    kernel((n + (D + ROW_THREADS - 1) // ROW_THREADS,), (ROW_THREADS,),
           (dy, xhat, r, norm.params["gamma"], i64(n), i32(D), dx, norm.grads["gamma"],
            norm.grads["beta"]))
    return dx
