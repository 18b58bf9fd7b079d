"""Linear's and TiedLinear's backward with the weight and bias gradients added inside the
matrix products (cuBLAS's gemm with beta = 1: out = op(a) op(b) + out), not by a second
kernel. The math: layers/linear.py.

    backward(linear, dy)        same as linear.backward(dy): dx; dW += x^T dy, db += 1^T dy
    tied_backward(tied, dy)     same as tied.backward(dy): dx; dE += dy^T x, db += 1^T dy

Three products a call (dx, dW, db: the bias's sum is a (1, N) @ (N, D_out) product).

This file is the fast form of assignment part linear (FAST_FORM_OF): a student copy that stubs
the part leaves it out, and the layers run their plain code, the student's.
"""

from .. import fast
from ...backend import xp
from . import also_launched, on_cupy, one_launch, plain

FAST_FORM_OF = "linear"         # the graded part whose answer this file computes


def _add_product(out, transa, a, transb, b):
    """out += op(a) op(b) in one launch (op: 'T' transposes, 'N' does not). Shapes: 2-D."""
    import cupy.cublas
    cupy.cublas.gemm(transa, transb, a, b, out=out, alpha=1.0, beta=1.0)


def _add_bias_grad(grad, dy2):
    """grad += sum over N of dy2 (N, D_out): 1 (1, N) @ dy2, added in the product."""
    _add_product(grad.reshape(1, -1), "N", fast.ones(dy2, dy2.shape[0]).reshape(1, -1), "N", dy2)


def _plain(layer, dy):
    """On the simulator: the layer's plain backward, counted as the device's launches."""
    with one_launch("gemm_accumulate"), plain():
        dx = layer.backward(dy)                         # dW (the region), db and dx
    also_launched(*["gemm_accumulate"] * ("bias" in layer.params), "gemm")   # db, dx
    return dx


def backward(linear, dy):
    """Same as linear.backward(dy). Shapes: dy (..., D_out), x (..., D_in), dx like x."""
    if not on_cupy():
        return _plain(linear, dy)
    x = linear.saved_for_backward()
    x2 = xp.ascontiguousarray(x.reshape(-1, linear.in_features))        # (N, D_in)
    dy2 = xp.ascontiguousarray(dy.reshape(-1, linear.out_features))     # (N, D_out)
    _add_product(linear.grads["weight"], "T", x2, "N", dy2)             # (D_in, D_out)
    if "bias" in linear.params:
        _add_bias_grad(linear.grads["bias"], dy2)                       # (D_out,)
    return (dy2 @ linear.params["weight"].T).reshape(x.shape)           # (..., D_in)


def tied_backward(tied, dy):
    """Same as tied.backward(dy). Shapes: dy (..., V), x (..., D), E (V, D), dx like x."""
    if not on_cupy():
        return _plain(tied, dy)
    x = tied.saved_for_backward()
    x2 = xp.ascontiguousarray(x.reshape(-1, tied.in_features))          # (N, D)
    dy2 = xp.ascontiguousarray(dy.reshape(-1, tied.out_features))       # (N, V)
    _add_product(tied.grads["weight"], "T", dy2, "N", x2)               # (V, D) = dE
    if "bias" in tied.params:
        _add_bias_grad(tied.grads["bias"], dy2)                         # (V,)
    return (dy2 @ tied.params["weight"]).reshape(x.shape)               # (..., D)
