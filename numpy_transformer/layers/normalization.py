"""Layer normalization over the last axis (Ba, Kiros & Hinton, 2016)."""

from ..backend import get_default_dtype, xp
from ..checks import check_float_array, check_positive_int, message
from ..module import Module
from ..errors import InputError, InputTypeError


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
    Cache: xhat and r = 1/sigma, all the backward needs.
    Init: gamma = 1, beta = 0 (the identity after normalizing).
    """

    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        check_positive_int(d_model, "d_model")
        if isinstance(eps, bool) or not isinstance(eps, (int, float)):
            raise InputTypeError(message("eps", "a positive number", repr(eps)))
        if not eps > 0:
            raise InputError(message("eps", "a positive number", eps))
        self.d_model, self.eps = d_model, eps
        dtype = get_default_dtype()
        self.params = {"gamma": xp.ones(d_model, dtype=dtype),
                       "beta": xp.zeros(d_model, dtype=dtype)}
        self.grads = {k: xp.zeros_like(v) for k, v in self.params.items()}
        self.cache = None

    def forward(self, x):
        check_float_array(x, "x", last_dim=self.d_model, last_dim_name="d_model")
        D = self.d_model
        x2 = x.reshape(-1, D)                                     # (N, D), N = all leading dims
        # Row means as a matrix-vector product and the variance as row-wise dot products:
        # NumPy's .mean over a short last axis is several times slower, and needs temporaries.
        mu = x2 @ xp.full(D, 1.0 / D, dtype=x.dtype)              # (N,)
        xhat = x2 - mu[:, None]                                   # (N, D), centred for now
        var = xp.einsum("nd,nd->n", xhat, xhat) / D               # (N,)
        r = (1.0 / xp.sqrt(var + self.eps))[:, None]              # (N, 1)
        xhat *= r                                                 # (N, D), now normalized
        self.cache = (xhat.reshape(x.shape), r.reshape(*x.shape[:-1], 1))
        y = xhat * self.params["gamma"]                           # (N, D)
        y += self.params["beta"]
        return y.reshape(x.shape)                                 # (..., D)

    def backward(self, dy):
        # BEGIN SOLUTION layernorm
        # HINT: ADD the gamma, beta grads; dx = r (g - mean(g) - xhat mean(g xhat)), g = dy gamma
        xhat, r = self.cache
        D, gamma = self.d_model, self.params["gamma"]
        dy2, xhat2 = dy.reshape(-1, D), xhat.reshape(-1, D)      # (N, D)
        # y = gamma * xhat + beta. Sums over N as (1, ..., 1) @ matrix: faster than .sum(0)
        ones = xp.ones(dy2.shape[0], dtype=dy.dtype)              # (N,)
        dy_xhat = dy2 * xhat2                                     # (N, D)
        self.grads["gamma"] += ones @ dy_xhat                     # (D,)
        self.grads["beta"] += ones @ dy2                          # (D,)
        # xhat = (x - mu) r, with mu and r themselves functions of x. With g = dy * gamma,
        # the row means are matrix-vector products: mean(g) = dy @ gamma / D and
        # mean(g * xhat) = (dy * xhat) @ gamma / D
        mean_g = dy2 @ (gamma / D)                                # (N,)
        mean_g_xhat = dy_xhat @ (gamma / D)                       # (N,)
        dx = dy2 * gamma                                          # (N, D), g for now
        dx -= mean_g[:, None]
        dx -= xp.multiply(xhat2, mean_g_xhat[:, None], out=dy_xhat)   # reuse the buffer
        dx *= r.reshape(-1, 1)
        return dx.reshape(dy.shape)                               # (..., D)
        # END SOLUTION
