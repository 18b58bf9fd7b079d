"""Adam and AdamW, update for update the same as torch.optim.Adam / torch.optim.AdamW.

With gradient g_t at step t (t = 1, 2, ...), for every parameter p:

    g_t <- g_t + wd * p                  (Adam only: L2 weight decay joins the gradient)
    p   <- p * (1 - lr * wd)             (AdamW only: decoupled weight decay, applied first)
    m_t = b1 m_{t-1} + (1 - b1) g_t       first moment (running mean of g)
    v_t = b2 v_{t-1} + (1 - b2) g_t^2     second moment (running mean of g^2)
    m_hat = m_t / (1 - b1^t),  v_hat = v_t / (1 - b2^t)     bias corrections
    p  <- p - lr * m_hat / (sqrt(v_hat) + eps)

m and v start at 0, so early on they are biased towards 0 by factors
(1 - b1^t) and (1 - b2^t); dividing by them undoes the bias. On the first step
m_1 / sqrt(v_1) = g / |g|, so every coordinate moves by about lr * sign(g): the
step size is set by lr, not by the gradient's scale.

Why AdamW: in Adam the weight decay (an L2 term of the loss) goes through the same
adaptive scaling as the gradient, so weights with large gradients are barely decayed.
AdamW (Loshchilov & Hutter, 2019) decouples the decay from that scaling instead.
"""

import functools

from ..backend import xp
from ..validation import message
from ..validation import check_nonnegative, check_positive, check_unit_interval
from .base import Optimizer
from ..errors import InputTypeError

try:            # absent from a student copy that stubs part adam (fast.py's FAST_FORM_OF)
    from . import fast as fast_forms
except ImportError:
    fast_forms = None


class Adam(Optimizer):
    """Adam (Kingma & Ba, 2015) with L2 weight decay, exactly as torch.optim.Adam.

    State per parameter: exp_avg (m) and exp_avg_sq (v), shaped like the parameter.
    fast, the form of step(), the same numbers to rounding whichever is chosen:
      False        the plain `_update` below, one parameter at a time (the textbook, graded);
      True         the Trainer's: the model's parameters and gradients re-homed into one
                   flat buffer per dtype (optim/flat.py: the layers' arrays become views of
                   it, so take arrays from `model.params` after building the optimizer), and
                   optim/fast.py's `adam_flat_step` updates them all at once (blocks of the
                   CPU's cache on NumPy, a dozen kernels on a device); `zero_grad` is one
                   fill and `grads` the buffer (clip_grad_norm: one reduction);
      "per-array"  optim/fast.py's `adam_update` in place of `_update`, one parameter at a
                   time in two scratch buffers (the Trainer's before the flat form).
    A package without optim/fast.py (a student copy that stubs part adam) runs the plain
    `_update`, the student's, whatever `fast` says.
    """

    buffer_names = ("exp_avg", "exp_avg_sq")
    decoupled = False   # AdamW sets True

    def __init__(self, model, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 param_groups=None, fast=False):
        if not (isinstance(fast, bool) or (isinstance(fast, str) and fast == "per-array")):
            raise InputTypeError(message("fast", "True, False or 'per-array'", repr(fast)))
        form = fast if fast_forms is not None else False      # chosen once, here
        self.fast, self.num_scratch, self.on_flat_buffers = fast, 2 if form else 0, form is True
        super().__init__(model, param_groups, lr=lr, betas=betas, eps=eps,
                         weight_decay=weight_decay)
        if form is True:
            self._flat_step = functools.partial(fast_forms.adam_flat_step, self)
        elif form:
            self._update = functools.partial(fast_forms.adam_update, self)

    def _configure(self, lr, betas, eps, weight_decay):
        check_positive(lr, "lr")
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise InputTypeError(message("betas", "a pair (beta1, beta2)", repr(betas)))
        check_unit_interval(betas[0], "betas[0]")
        check_unit_interval(betas[1], "betas[1]")
        check_positive(eps, "eps")
        check_nonnegative(weight_decay, "weight_decay")
        self.lr, self.betas = lr, (float(betas[0]), float(betas[1]))
        self.eps, self.weight_decay = eps, weight_decay

    def hyperparameters(self):
        return {"lr": self.lr, "betas": self.betas, "eps": self.eps,
                "weight_decay": self.weight_decay}

    def _update(self, p, g, state, scratch, weight_decay):
        """One update of p, in place, with wd = weight_decay (its group's): the module
        docstring's lines,

            m = b1 m + (1 - b1) g,   v = b2 v + (1 - b2) g^2,
            m_hat = m / (1 - b1^t),   v_hat = v / (1 - b2^t),
            p <- p - lr m_hat / (sqrt(v_hat) + eps)

        m, v and p are written in place, never rebound (scratch: unused here)."""
        m, v = state["exp_avg"], state["exp_avg_sq"]
        (b1, b2), t, wd = self.betas, self.step_count, weight_decay
        if wd and self.decoupled:
            self.decay(p, wd)                         # AdamW: p <- p (1 - lr wd), first
        # BEGIN SOLUTION adam
        # HINT: in place: L2 decay (Adam only), m and v, then the bias-corrected step (docstring)
        if wd and not self.decoupled:
            g = g + wd * p                            # Adam: L2 decay joins the gradient
        m[...] = b1 * m + (1 - b1) * g                # first moment
        v[...] = b2 * v + (1 - b2) * g * g            # second moment
        m_hat = m / (1 - b1**t)                       # bias corrections
        v_hat = v / (1 - b2**t)
        p -= self.lr * m_hat / (xp.sqrt(v_hat) + self.eps)
        # END SOLUTION


class AdamW(Adam):
    """AdamW: Adam with decoupled weight decay, exactly as torch.optim.AdamW.

    Each step first shrinks p <- p (1 - lr wd), then takes a plain Adam step. With
    `param_groups` (see optim/groups.py, `decay_groups`) wd is the group's: the usual
    recipe decays the matrices only, never biases or LayerNorm gains and shifts.
    """

    decoupled = True

    def __init__(self, model, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
                 param_groups=None, fast=False):
        super().__init__(model, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         param_groups=param_groups, fast=fast)

    def decay(self, p, weight_decay):
        """Decoupled weight decay of one parameter, in place: p <- p (1 - lr wd), with the
        current lr (a schedule may have changed it) and wd = weight_decay (its group's)."""
        # BEGIN SOLUTION adamw
        # HINT: shrink p in place (never rebind it) by the factor 1 - lr * weight_decay
        p *= 1 - self.lr * weight_decay
        # END SOLUTION
