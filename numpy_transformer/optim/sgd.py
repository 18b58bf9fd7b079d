"""Stochastic gradient descent with momentum, exactly as torch.optim.SGD (dampening 0).

For every parameter p with gradient g, at each step:

    d = g + wd * p                 L2 weight decay joins the gradient
    b = mu * b + d                 momentum buffer (b starts at 0, so b_1 = d_1)
    d = d + mu * b   (nesterov)    look ahead along the momentum ...
    d = b            (otherwise)   ... or follow it
    p <- p - lr * d

With mu = 0 this is plain gradient descent, p <- p - lr * (g + wd * p).
"""

from ..backend import xp
from ..validation import message
from ..validation import check_nonnegative, check_positive
from .base import Optimizer
from ..errors import InputError, InputTypeError


class SGD(Optimizer):
    """SGD with optional (Nesterov) momentum and L2 weight decay.

    State per parameter: momentum_buffer (only when momentum > 0).
    """

    num_scratch = 2

    def __init__(self, model, lr=1e-3, momentum=0.0, weight_decay=0.0, nesterov=False,
                 param_groups=None):
        super().__init__(model, param_groups, lr=lr, momentum=momentum,
                         weight_decay=weight_decay, nesterov=nesterov)

    def _configure(self, lr, momentum, weight_decay, nesterov):
        check_positive(lr, "lr")
        check_nonnegative(momentum, "momentum")
        check_nonnegative(weight_decay, "weight_decay")
        if not isinstance(nesterov, bool):
            raise InputTypeError(message("nesterov", "True or False", repr(nesterov)))
        if nesterov and momentum == 0:
            raise InputError(message("momentum", "a number > 0 when nesterov=True", momentum))
        self.lr, self.momentum = lr, momentum
        self.weight_decay, self.nesterov = weight_decay, nesterov

    @property
    def buffer_names(self):
        return ("momentum_buffer",) if self.momentum > 0 else ()

    def hyperparameters(self):
        return {"lr": self.lr, "momentum": self.momentum,
                "weight_decay": self.weight_decay, "nesterov": self.nesterov}

    def _update(self, p, g, state, scratch, weight_decay):
        s1, s2 = scratch
        d = g
        if weight_decay:
            xp.multiply(p, weight_decay, out=s1)          # d = g + wd p
            s1 += g
            d = s1
        if self.momentum:
            b = state["momentum_buffer"]
            b *= self.momentum                             # b = mu b + d
            b += d
            if self.nesterov:
                xp.multiply(b, self.momentum, out=s2)      # d = d + mu b
                s2 += d
                d = s2
            else:
                d = b
        xp.multiply(d, self.lr, out=s2)                    # p -= lr d
        p -= s2
