"""Linear: an affine map over the last axis; TiedLinear: the same map with an embedding's matrix."""

import numpy as np

from ..backend import get_default_dtype, xp
from ..validation import check_bool, check_float_array
from ..module import Module
from . import fast, fused

fused_linear = fused.form("linear")     # None in a student copy that stubs part linear


class Linear(Module):
    """Affine map over the last axis: y = x W + b.

    Shapes: x (..., D_in), W (D_in, D_out), b (D_out,), y (..., D_out)
    Backward: with x and dy flattened to (N, D_in) and (N, D_out), N = all leading dims,
        dx = dy W^T        dW = x^T dy        db = sum over N of dy
    Saved: x, needed for dW.
    Init: W ~ Normal(0, 1/D_in), so y keeps the scale of x; b = 0.
    Checks: x, when called (`linear(x)`, Module.__call__); a bigger module calls `forward`.
    """

    def __init__(self, in_features, out_features, bias=True, *, rng=None):
        super().__init__()
        check_bool(bias, "bias")
        rng = rng if rng is not None else np.random.default_rng()
        dtype = get_default_dtype()
        self.in_features, self.out_features = in_features, out_features
        W = rng.normal(0.0, in_features**-0.5, (in_features, out_features))
        self.params = {"weight": xp.asarray(W, dtype=dtype)}
        if bias:
            self.params["bias"] = xp.zeros(out_features, dtype=dtype)
        self.grads = {k: xp.zeros_like(v) for k, v in self.params.items()}
        self.saved = None

    def forward(self, x):
        self.saved = x
        # One (N, D_in) @ (D_in, D_out) product over all leading dims: NumPy would
        # otherwise run one small matmul per batch row, 1.5-2.5x slower.
        y = x.reshape(-1, self.in_features) @ self.params["weight"]      # (N, D_out)
        if "bias" in self.params:
            y += self.params["bias"]
        return y.reshape(*x.shape[:-1], self.out_features)               # (..., D_out)

    def backward(self, dy):
        if fused.on(fused_linear):                        # gradients added inside the products
            return fused_linear.backward(self, dy)
        # BEGIN SOLUTION linear
        # HINT: ADD x^T dy and sum(dy) into grads; return dy W^T
        x = self.saved_for_backward()
        x2 = x.reshape(-1, self.in_features)              # (N, D_in)
        dy2 = dy.reshape(-1, self.out_features)           # (N, D_out)
        self.grads["weight"] += x2.T @ dy2                # (D_in, D_out)
        if "bias" in self.params:
            self.grads["bias"] += fast.sum(dy2, axis=0)   # (D_out,)
        return (dy2 @ self.params["weight"].T).reshape(x.shape)   # (..., D_in)
        # END SOLUTION

    def check_inputs(self, x):
        check_float_array(x, "x", last_dim=self.in_features, last_dim_name="in_features")


class TiedLinear(Module):
    """Output projection that shares its matrix with an Embedding (weight tying,
    paper section 3.4): logits = x E^T + b, with E the embedding's (V, D) weight.

    Shapes: x (..., D), E (V, D), b (V,), y (..., V)
    Backward: with x and dy flattened to (N, D) and (N, V),
        dx = dy E        dE += dy^T x        db = sum over N of dy
    dE is added into the embedding's own gradient array, so the embedding and the
    projection accumulate into one place.
    Saved: x, needed for dE.
    Checks: x, when called (`tied(x)`, Module.__call__); a model calls `forward`.
    """

    def __init__(self, embedding, bias=True):
        super().__init__()
        check_bool(bias, "bias")
        E = embedding.params["weight"]                                # (V, D), shared
        self.in_features, self.out_features = E.shape[1], E.shape[0]  # D, V
        self.params = {"weight": E}
        self.grads = {"weight": embedding.grads["weight"]}
        if bias:
            self.params["bias"] = xp.zeros(E.shape[0], dtype=E.dtype)
            self.grads["bias"] = xp.zeros_like(self.params["bias"])
        self.saved = None

    def forward(self, x):
        self.saved = x
        y = x.reshape(-1, self.in_features) @ self.params["weight"].T    # (N, V)
        if "bias" in self.params:
            y += self.params["bias"]
        return y.reshape(*x.shape[:-1], self.out_features)               # (..., V)

    def backward(self, dy):
        if fused.on(fused_linear):                        # gradients added inside the products
            return fused_linear.tied_backward(self, dy)
        # BEGIN SOLUTION linear
        # HINT: ADD dy^T x (shaped as E) and sum(dy) into grads; return dy E
        x = self.saved_for_backward()
        x2 = x.reshape(-1, self.in_features)              # (N, D)
        dy2 = dy.reshape(-1, self.out_features)           # (N, V)
        self.grads["weight"] += dy2.T @ x2                # (V, D) = dE
        if "bias" in self.params:
            self.grads["bias"] += fast.sum(dy2, axis=0)   # (V,)
        return (dy2 @ self.params["weight"]).reshape(x.shape)     # (..., D)
        # END SOLUTION

    def check_inputs(self, x):
        check_float_array(x, "x", last_dim=self.in_features, last_dim_name="d_model")
