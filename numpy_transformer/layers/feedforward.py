"""Position-wise feed-forward network: two linear maps with an activation between."""

import numpy as np

from ..validation import check_choice, check_float_array, check_integer
from ..module import Module
from . import fused
from .activations import GELU, ReLU
from .dropout import Dropout
from .linear import Linear

ACTIVATIONS = {"relu": ReLU, "gelu": GELU}
fused_activation = fused.form("activation")   # None in a student copy that stubs part gelu


class FeedForward(Module):
    """FFN(x) = linear_2(dropout(act(linear_1(x)))), the same MLP at every position.

    The paper uses act = ReLU, D = 512, F = 2048 (section 3.3); GELU is the
    common modern choice. Dropout on the hidden layer is as in the reference
    implementations (it is a no-op when dropout=0).

    Shapes: x (B, T, D), linear_1 (D, F), hidden (B, T, F), linear_2 (F, D), y (B, T, D)
    Backward: the children's backward in reverse order:
        dh = linear_2.backward(dy); dh = dropout.backward(dh)
        dh = activation.backward(dh); dx = linear_1.backward(dh)
    Saved: none here; each child keeps its own.
    Checks: x, when called (`ffn(x)`, Module.__call__); forward calls its children's
        `forward`, which trust it.
    """

    def __init__(self, d_model, d_ff, dropout=0.0, activation="relu", *, rng=None):
        super().__init__()
        check_integer(d_model, "d_model")
        check_integer(d_ff, "d_ff")
        check_choice(activation, "activation", tuple(ACTIVATIONS))
        rng = rng if rng is not None else np.random.default_rng()
        self.d_model, self.d_ff, self.activation_name = d_model, d_ff, activation
        self.linear_1 = Linear(d_model, d_ff, rng=rng)
        # ReLU may work in place: nothing else keeps linear_1's output (linear_1 keeps
        # its input), and the hidden gradients are fresh arrays of linear_2's backward.
        self.activation = ReLU(overwrite=True) if activation == "relu" else GELU()
        self.dropout = Dropout(dropout, rng=rng, name="dropout")      # checks the rate
        self.linear_2 = Linear(d_ff, d_model, rng=rng)

    def forward(self, x):
        if fused.on(fused_activation):               # linear_1's bias inside the activation
            return fused_activation.feedforward(self, x)
        h = self.linear_1.forward(x)                 # (B, T, F)
        h = self.activation.forward(h)               # (B, T, F)
        h = self.dropout.forward(h)                  # (B, T, F)
        return self.linear_2.forward(h)              # (B, T, D)

    def backward(self, dy):
        # BEGIN SOLUTION feedforward
        # HINT: call the children's backward in the reverse order of forward
        dh = self.linear_2.backward(dy)              # (B, T, F)
        dh = self.dropout.backward(dh)               # (B, T, F)
        dh = self.activation.backward(dh)            # (B, T, F)
        return self.linear_1.backward(dh)            # (B, T, D)
        # END SOLUTION

    def check_inputs(self, x):
        check_float_array(x, "x", last_dim=self.d_model, last_dim_name="d_model")
