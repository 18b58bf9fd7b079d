"""Bias plus activation in one kernel, GELU's backward in one: the math in layers/activations.py.

    forward(act, h, b=None)      same as act.forward(h + b) for a ReLU or a GELU, with what
                                 its backward keeps (ReLU: the mask h + b > 0; GELU: x, t)
    gelu_backward(gelu, dy)      same as gelu.backward(dy)
    feedforward(ffn, x)          same as ffn.forward(x), linear_1's bias added inside the
                                 activation's kernel (linear_1 keeps x, as its forward does)

ReLU's backward is one kernel already (dy times the kept mask).

This file is the fast form of assignment part gelu (FAST_FORM_OF): a student copy that stubs
the part leaves it out, and the layers run their plain code, GELU's backward the student's.
"""

from ...backend import xp
from . import elementwise, on_cupy, one_launch, plain

FAST_FORM_OF = "gelu"           # the graded part whose answer this file computes

# CuPy ElementwiseKernels: (name, inputs, outputs, body).
BIAS_RELU = ("nt_bias_relu", "T h, T b", "T y, bool keep",
             "T z = h + b; keep = z > (T)0; y = z * (T)keep;")
BIAS_GELU = ("nt_bias_gelu", "T h, T b, T c, T a", "T x, T t, T y",
             "x = h + b; t = tanh(c * (x + a * x * x * x)); y = (T)0.5 * x * ((T)1 + t);")
GELU_BACKWARD = ("nt_gelu_backward", "T dy, T x, T t, T c, T a", "T dx",
                 "T du = c * ((T)1 + (T)3 * a * x * x);"
                 "dx = dy * ((T)0.5 * ((T)1 + t) + (T)0.5 * x * ((T)1 - t * t) * du);")


def forward(act, h, b=None):
    """y = act(h + b) (b None: act(h)); act.saved as its plain forward sets it. h: (..., F),
    owned by the caller (a fresh product: a ReLU that overwrites writes y into it)."""
    from ..activations import ReLU
    relu = isinstance(act, ReLU)
    if not on_cupy():
        with one_launch("bias_relu" if relu else "bias_gelu"), plain():
            if b is not None:
                h += b                                      # (..., F) h is the caller's
            return act.forward(h)
    b = h.dtype.type(0) if b is None else b
    if relu:
        keep = xp.empty(h.shape, dtype=bool)
        y = h if act.overwrite else xp.empty_like(h)
        elementwise(*BIAS_RELU)(h, b, y, keep)
        act.saved = keep
        return y
    x, t, y = elementwise(*BIAS_GELU)(h, b, h.dtype.type(act.C), h.dtype.type(act.A))
    act.saved = (x, t)
    return y


def gelu_backward(gelu, dy):
    """Same as gelu.backward(dy): dy (0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 A x^2))."""
    if not on_cupy():
        with one_launch("gelu_backward"), plain():
            return gelu.backward(dy)
    x, t = gelu.saved_for_backward()
    return elementwise(*GELU_BACKWARD)(dy, x, t, dy.dtype.type(gelu.C), dy.dtype.type(gelu.A))


def feedforward(ffn, x):
    """Same as ffn.forward(x): linear_2(dropout(act(x W1 + b1))), b1 inside act's kernel."""
    l1 = ffn.linear_1
    l1.saved = x                                                  # what its backward reads
    h = x.reshape(-1, l1.in_features) @ l1.params["weight"]       # (N, F), N = B T
    h = h.reshape(*x.shape[:-1], l1.out_features)                 # (B, T, F)
    h = forward(ffn.activation, h, l1.params.get("bias"))         # (B, T, F)
    h = ffn.dropout.forward(h)                                    # (B, T, F)
    return ffn.linear_2.forward(h)                                # (B, T, D)
