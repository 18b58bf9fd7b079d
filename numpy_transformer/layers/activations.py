"""Element-wise activations: ReLU and GELU (tanh form)."""

import math

from ..backend import xp
from ..module import Module
from ..validation import check_bool
from . import fused

fused_activation = fused.form("activation")     # None in a student copy that stubs part gelu


class ReLU(Module):
    """y = max(x, 0), computed as x * (x > 0).

    Backward: dx = dy where x > 0, else 0 (we take the derivative at 0 to be 0).
    Saved: the boolean mask x > 0.
    overwrite=True: forward overwrites x with y and backward overwrites dy with dx,
    saving two arrays of x's size; only for a caller that owns both and needs
    neither afterwards (FeedForward: its hidden layer).
    """

    def __init__(self, *, overwrite=False):
        super().__init__()
        check_bool(overwrite, "overwrite")
        self.overwrite = overwrite
        self.saved = None

    def forward(self, x):
        if fused.on(fused_activation):                  # one kernel on a GPU
            return fused_activation.forward(self, x)
        self.saved = x > 0
        return xp.multiply(x, self.saved, out=x if self.overwrite else None)

    def backward(self, dy):
        positive = self.saved_for_backward()
        return xp.multiply(dy, positive, out=dy if self.overwrite else None)


class GELU(Module):
    """Gaussian error linear unit, tanh approximation (Hendrycks & Gimpel, 2016):

        y = 0.5 x (1 + tanh(u)),   u = c (x + 0.044715 x^3),   c = sqrt(2 / pi)

    Backward, with t = tanh(u):
        dy/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 * 0.044715 x^2)
    Saved: x and t.
    """

    C = math.sqrt(2.0 / math.pi)
    A = 0.044715

    def __init__(self):
        super().__init__()
        self.saved = None

    def forward(self, x):
        if fused.on(fused_activation):                  # one kernel on a GPU
            return fused_activation.forward(self, x)
        t = xp.tanh(self.C * (x + self.A * x**3))
        self.saved = (x, t)
        return 0.5 * x * (1.0 + t)

    def backward(self, dy):
        if fused.on(fused_activation):                  # one kernel on a GPU
            return fused_activation.gelu_backward(self, dy)
        # BEGIN SOLUTION gelu
        # HINT: dy times dy/dx of 0.5 x (1 + tanh(u)), u = c (x + A x^3); forward saved x and t
        x, t = self.saved_for_backward()
        du_dx = self.C * (1.0 + 3.0 * self.A * x**2)
        return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du_dx)
        # END SOLUTION
