"""Layer normalization over the last axis (Ba, Kiros & Hinton, 2016)."""

from ..backend import get_default_dtype, xp
from ..validation import check_float_array, check_integer, message
from ..module import Module
from ..errors import InputError, InputTypeError
from . import fast, fused

fused_norm = fused.form("norm")     # None in a student copy that stubs part layernorm


class LayerNorm(Module):
    """Normalize each vector over its D features, then scale and shift:

        mu = mean(x),   var = mean((x - mu)^2)          (biased, as in PyTorch)
        r = 1 / sqrt(var + eps),   xhat = (x - mu) r,   y = gamma * xhat + beta

    Shapes: x (..., D), gamma (D,), beta (D,), y (..., D); statistics (..., 1).

    Backward. Parameters: dgamma = sum over leading dims of dy * xhat, dbeta = sum of dy.
    Input: with g = dy * gamma (the gradient reaching xhat) and means taken over D,
        dxhat_j/dx_k = r (delta_jk - 1/D) - xhat_j * r * xhat_k / D
    since d mu/dx_k = 1/D and dr/dx_k = -r^3 (x_k - mu)/D = -r^2 xhat_k / D. Hence
        dx_k = sum_j g_j dxhat_j/dx_k = r (g_k - mean(g) - xhat_k mean(g * xhat)).
    Saved: xhat and r = 1/sigma, all the backward needs.
    Init: gamma = 1, beta = 0 (the identity after normalizing).
    Checks: x, when called (`norm(x)`, Module.__call__).
    """

    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        check_integer(d_model, "d_model")
        if isinstance(eps, bool) or not isinstance(eps, (int, float)):
            raise InputTypeError(message("eps", "a positive number", repr(eps)))
        if not eps > 0:
            raise InputError(message("eps", "a positive number", eps))
        self.d_model, self.eps = d_model, eps
        dtype = get_default_dtype()
        self.params = {"gamma": xp.ones(d_model, dtype=dtype),
                       "beta": xp.zeros(d_model, dtype=dtype)}
        self.grads = {k: xp.zeros_like(v) for k, v in self.params.items()}
        self.saved = None

    def forward(self, x):
        if fused.on(fused_norm):                                  # one kernel on a GPU
            return fused_norm.forward(self, x)
        mu = fast.mean(x, axis=-1, keepdims=True)                 # (..., 1)
        xc = x - mu                                               # (..., D) centred
        var = fast.mean(xc**2, axis=-1, keepdims=True)            # (..., 1) biased variance
        r = 1.0 / xp.sqrt(var + self.eps)                         # (..., 1) 1 / sigma
        xhat = xc * r                                             # (..., D)
        self.saved = (xhat, r)
        y = self.params["gamma"] * xhat                           # (..., D)
        y += self.params["beta"]
        return y

    def backward(self, dy):
        if fused.on(fused_norm):                                  # two kernels on a GPU
            return fused_norm.backward(self, dy)
        # BEGIN SOLUTION layernorm
        # HINT: ADD the gamma and beta grads; dx flows through xhat, the mean and the variance
        xhat, r = self.saved_for_backward()
        D = self.d_model
        # y = gamma * xhat + beta: sums over every leading dim
        self.grads["gamma"] += fast.sum((dy * xhat).reshape(-1, D), axis=0)   # (D,)
        self.grads["beta"] += fast.sum(dy.reshape(-1, D), axis=0)             # (D,)
        # xhat = (x - mu) r, with mu and r themselves functions of x
        g = dy * self.params["gamma"]                                         # (..., D)
        mean_g = fast.mean(g, axis=-1, keepdims=True)                         # (..., 1)
        mean_g_xhat = fast.mean(g * xhat, axis=-1, keepdims=True)             # (..., 1)
        dx = g - mean_g                                                       # (..., D)
        dx -= xhat * mean_g_xhat
        dx *= r
        return dx                                 # r (g - mean(g) - xhat mean(g xhat))
        # END SOLUTION

    def check_inputs(self, x):
        check_float_array(x, "x", last_dim=self.d_model, last_dim_name="d_model")
