"""Cross-entropy with label smoothing: softmax and every token's loss in one row kernel, the
gradient (p - q) / N in one elementwise kernel. The math: losses.py.

    forward(ce, logits, targets, num_tokens)   same as ce.forward(...): the mean loss, a 0-d
                                               array (the row kernel, then its sum and the
                                               division by N: three launches)
    backward(ce, dloss)                        same as ce.backward(dloss), p overwritten

The backward follows its forward: ce.saved's row indices are None after this forward, and
CrossEntropyLoss.backward then comes here, whatever the switch says by then.

This file is the fast form of assignment part cross_entropy (FAST_FORM_OF): a student copy that
stubs the part leaves it out, and the loss runs its plain code, the student's.
"""

from ...backend import xp
from . import i32, i64, on_cupy, one_launch, plain, row_kernel, rows, elementwise

FAST_FORM_OF = "cross_entropy"  # the graded part whose answer this file computes

FORWARD = r"""
extern "C" __global__ void nt_cross_entropy_forward(const T* x, const long long* t_in,
        long long ignore, int has_ignore, int V, T one_minus_eps, T eps_over_v, T* p,
        T* per_token, bool* valid, long long* t_out) {
    __shared__ T sh[256];
    long long row = blockIdx.x, at = row * V, t = t_in[row];
    bool ok = !(has_ignore && t == ignore);
    if (!ok) t = 0;                                              // ignored rows read class 0
    T top = NEG_INF;
    for (int j = threadIdx.x; j < V; j += blockDim.x) if (x[at + j] > top) top = x[at + j];
    top = block_max(top, sh);
    T s = 0, z_sum = 0;
    for (int j = threadIdx.x; j < V; j += blockDim.x) {
        T z = x[at + j] - top, e = exp(z);                       // z: the shifted logits
        p[at + j] = e;
        s += e;
        z_sum += z;
    }
    s = block_sum(s, sh);
    z_sum = block_sum(z_sum, sh);
    for (int j = threadIdx.x; j < V; j += blockDim.x) p[at + j] /= s;
    if (threadIdx.x == 0) {
        T log_s = log(s), z_t = x[at + t] - top;
        T loss = (log_s - z_t) * one_minus_eps;                  // -(1 - eps) log p_t
        if (eps_over_v != 0) loss += ((T)V * log_s - z_sum) * eps_over_v;   // -(eps/V) sum log p
        per_token[row] = ok ? loss : (T)0;
        valid[row] = ok;
        t_out[row] = t;
    }
}
"""


# (p - q) / N in place: q = eps / V + (1 - eps) onehot(t); ignored rows 0. An ElementwiseKernel.
BACKWARD = ("nt_cross_entropy_backward",
            "T p, raw int64 t, raw bool valid, int64 V, T smooth, T hit, T scale", "T dx",
            "long long n = i / V; T g = p - smooth; if (i % V == t[n]) g -= hit;"
            "dx = valid[n] ? g * scale : (T)0;")


def forward(ce, logits, targets, num_tokens=None):
    """The mean loss over counted tokens, as ce.forward; ce.saved for the backward.
    Shapes: logits (..., V), targets (...); p (N, V), the per-token losses (N,)."""
    V, eps, ignore = logits.shape[-1], ce.label_smoothing, ce.ignore_index
    x = logits.reshape(-1, V)                                   # (N, V)
    t = xp.asarray(targets).reshape(-1)                         # (N,)
    if on_cupy():
        x = xp.ascontiguousarray(x)
        p, per_token = xp.empty_like(x), xp.empty(x.shape[:1], dtype=x.dtype)   # (N, V), (N,)
        valid, t_out = xp.empty(t.shape, dtype=bool), xp.empty(t.shape, dtype=xp.int64)
        rows(row_kernel("nt_cross_entropy_forward", FORWARD, x.dtype), x.shape[0],
             (x, t.astype(xp.int64, copy=False), i64(0 if ignore is None else ignore),
              i32(ignore is not None), i32(V), x.dtype.type(1 - eps), x.dtype.type(eps / V),
              p, per_token, valid, t_out))
        t = t_out
    else:
        with one_launch("cross_entropy_forward"):
            p, per_token, valid, t = _plain_rows(x, t, eps, ignore)
    n = int(valid.sum()) if num_tokens is None else num_tokens  # here, or by the host
    loss = xp.asarray(per_token.sum() / max(n, 1))              # () on the device, no wait
    ce.num_tokens = n
    ce.saved = (p, t, valid, None, logits.shape)                # None: the backward comes here
    return loss


def _plain_rows(x, t, eps, ignore):
    """What the row kernel computes, in the plain loss's own lines (losses.py)."""
    V = x.shape[-1]
    valid = xp.ones(t.shape, dtype=bool) if ignore is None else t != ignore     # (N,)
    t = t if ignore is None else xp.where(valid, t, 0)                        # (N,)
    rows_index = xp.arange(x.shape[0])                                          # (N,)
    z = x - x.max(axis=-1, keepdims=True)                                       # (N, V)
    z_t = z[rows_index, t]                                                      # (N,)
    z_sum = z.sum(axis=-1) if eps else None                                     # (N,)
    p = xp.exp(z, out=z)                                                        # (N, V)
    s = p.sum(axis=-1)                                                          # (N,)
    p /= s[:, None]
    log_s = xp.log(s)
    per_token = (log_s - z_t) * (1 - eps)                                       # (N,)
    if eps:
        per_token += (V * log_s - z_sum) * (eps / V)
    return p, xp.where(valid, per_token, 0), valid, t


def backward(ce, dloss=1.0):
    """Same as ce.backward(dloss): dloss (p - q) / N on counted rows, 0 on ignored, in p."""
    if not on_cupy():
        p, t, valid, _, shape = ce.saved_for_backward()
        with one_launch("cross_entropy_backward"), plain():
            ce.saved = (p, t, valid, xp.arange(t.shape[0]), shape)     # the plain form's rows
            return ce.backward(dloss)
    p, t, valid, _, shape = ce.saved_for_backward()
    ce.saved = None
    V, eps = shape[-1], ce.label_smoothing
    kernel = elementwise(*BACKWARD)
    scale = p.dtype.type(float(dloss) / max(ce.num_tokens, 1))
    kernel(p, t, valid, V, p.dtype.type(eps / V), p.dtype.type(1 - eps), scale, p)
    return p.reshape(shape)                                     # (..., V)
