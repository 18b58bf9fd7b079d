"""Stand-ins: simple layers with exact backward passes that are no part's solution.

A composite part (feed-forward, multi-head attention, the encoder and decoder
stacks, ...) is graded with the sub-layers that belong to OTHER parts replaced
by these stand-ins, in the student's worker and in the teacher's reference run
alike. Only the composition is then tested (the order of the children's
backward calls, residual sums, dmemory summed over the blocks), and a mistake
in, say, LayerNorm costs points in `layernorm` only. Each stand-in is a smooth,
nonlinear map (so a gradient passed to the wrong child or in the wrong order
shows) with a parameter (so a child whose backward runs twice, or never, shows).

    Map(A, b)        y = tanh(x) A + b              in place of Linear, FeedForward
    Elementwise()    y = sin(x)                     in place of ReLU / GELU
    Scale(s)         y = x s   (s fixed, has reapply)  in place of Dropout
    Drop(p, seed)    y = x m / (1 - p), a new mask m from its own generator at each
                     forward (counted: draws); reapply and backward use the kept m
    Norm(g, b)       y = tanh(x) g + b              in place of LayerNorm
    Attention(A, b)  y = tanh(q A) + mean_k(k * v) + b   a whole attention module
    attention(q, k, v, mask, dropout) / attention_backward(...)   the kernel's stand-in:
                     W = tanh(q k^T / 2), W' = dropout(W), O = W' v + q   (no softmax, no
                     scale); its dropout used as the real kernel uses it: forward in
                     the forward, reapply and backward in the backward (none: W' = W)
    softmax_backward(dp, p, axis)   dx = p (dp - mean(dp))  (a mean, not the sum)
    decay(p, wd)     p <- 0.97 p in place            in place of AdamW.decay

The grader hands the scenarios a StandIns (the switch of harness.run_task): it
builds these for the package under test, their arrays drawn from the task's
source. A student copy holds no stand-ins: its local check runs each part with
the package's own children.

Harness code: this file imports nothing but NumPy, because the grading worker
loads it by path beside the student's package (see worker.py). Stand-ins are
built for a given package's Module class: `kit(Module)`.
"""

import importlib

import numpy as np

_KITS = {}


def rows(a):
    """(N, D) view of (..., D)."""
    return a.reshape(-1, a.shape[-1])


def attention(q, k, v, mask=None, dropout=None):
    """Stand-in for scaled_dot_product_attention: (O, W) with W = tanh(q k^T / 2),
    O = dropout(W) v + q; W returned before the dropout, as the real one returns A."""
    weights = np.tanh(q @ k.swapaxes(-1, -2) / 2)                  # (B, H, Tq, Tk)
    dropped = weights if dropout is None else dropout.forward(weights)
    return dropped @ v + q, weights


def attention_backward(dout, q, k, v, weights, dropout=None):
    """Exact backward of `attention`, reading W from its argument (as the real one reads A)
    and dropout(W) from the dropout's kept mask (reapply), the weights' gradient through the
    dropout's backward: the dropout used as the real one uses it."""
    dropped = weights if dropout is None else dropout.reapply(weights)
    dv = dropped.swapaxes(-1, -2) @ dout                            # (B, H, Tk, Dh)
    dweights = dout @ v.swapaxes(-1, -2)                            # (B, H, Tq, Tk)
    if dropout is not None:
        dweights = dropout.backward(dweights)
    dscores = dweights * (1 - weights * weights) / 2
    return dscores @ k + dout, dscores.swapaxes(-1, -2) @ q, dv


def softmax_backward(dp, p, axis=-1):
    """Stand-in for softmax_backward (not it: a mean where the real one has a sum)."""
    return p * (dp - dp.mean(axis=axis, keepdims=True))


def decay(p, weight_decay):
    """Stand-in for AdamW.decay: p <- 0.97 p in place (no learning rate, no weight_decay)."""
    p *= 0.97


def kit(Module):
    """The stand-in classes as subclasses of `Module` (the package under test's):
    {"Map": ..., "Elementwise": ..., "Scale": ..., "Drop": ..., "Norm": ...,
    "Attention": ...}."""
    if Module not in _KITS:
        _KITS[Module] = {cls.__name__: type(cls.__name__, (cls, Module), {})
                         for cls in (Map, Elementwise, Scale, Drop, Norm, Attention)}
    return _KITS[Module]


class StandIns:
    """The stand-ins of one task, for the package named `pkg`, their arrays from `source`;
    each named as the child it replaces ("standin.<name>...")."""

    # the functions a scenario puts in place of the package's own
    kernel, kernel_backward = staticmethod(attention), staticmethod(attention_backward)
    softmax_backward, decay = staticmethod(softmax_backward), staticmethod(decay)

    def __init__(self, pkg, source):
        self.classes = kit(importlib.import_module(f"{pkg}.module").Module)
        self.source = source

    def map(self, name, d_in, d_out):
        """A Map (in place of a Linear or a FeedForward) with drawn A and b."""
        A = self.source.normal(f"standin.{name}.A", (d_in, d_out), scale=d_in ** -0.5)
        return self.classes["Map"](A, self.source.normal(f"standin.{name}.b", (d_out,)))

    def norm(self, name, d_model):
        return self.classes["Norm"](self.source.normal(f"standin.{name}.g", (d_model,)),
                                    self.source.normal(f"standin.{name}.b", (d_model,)))

    def scale(self, name, shape):
        """A Scale (in place of a Dropout) with a drawn s."""
        return self.classes["Scale"](self.source.normal(f"standin.{name}", shape))

    def attention(self, name, d_model):
        A = self.source.normal(f"standin.{name}.A", (d_model, d_model), d_model ** -0.5)
        return self.classes["Attention"](A, self.source.normal(f"standin.{name}.b",
                                                               (d_model,)))

    def drop(self, p):
        """A Drop (a dropout drawing a new mask at each forward), its seed drawn; p = 0: an
        off one (every mask all ones), no seed drawn (the task's arrays as without it)."""
        seed = self.source.integers("standin.dropout_seed", (), 0, 2 ** 31) if p else 0
        return self.classes["Drop"](p, int(seed))

    def elementwise(self):
        return self.classes["Elementwise"]()


class StandIn:
    """What every stand-in shares: its parameters and their gradients (a mixin of Module)."""

    def __init__(self, **params):
        super().__init__()
        self.params = dict(params)
        self.grads = {name: np.zeros_like(p) for name, p in params.items()}
        self.saved = None

    def add(self, name, value):
        self.grads[name] += value


class Map(StandIn):
    """y = tanh(x) A + b; A fixed, b a parameter."""

    def __init__(self, A, b):
        super().__init__(bias=b)
        self.A = A

    def forward(self, x):
        self.saved = np.tanh(x)
        return self.saved @ self.A + self.params["bias"]

    def backward(self, dy):
        t = self.saved
        self.add("bias", rows(dy).sum(axis=0))
        return (dy @ self.A.T) * (1 - t * t)


class Elementwise(StandIn):
    """y = sin(x)."""

    def forward(self, x):
        self.saved = x.copy()
        return np.sin(x)

    def backward(self, dy):
        return dy * np.cos(self.saved)


class Scale(StandIn):
    """y = x s with a fixed s (broadcast); reapply(x) = x s, like Dropout's."""

    def __init__(self, s):
        super().__init__()
        self.s, self.p = s, 0.5

    def forward(self, x):
        self.saved = True
        return x * self.s

    def reapply(self, x):
        return x * self.s

    def backward(self, dy):
        return dy * self.s


class Drop(StandIn):
    """Dropout whose forward draws a new mask each call: a backward that calls forward again
    gets another mask (and draws counts it)."""

    def __init__(self, p, seed):
        super().__init__()
        self.p, self.rng, self.draws, self.mask = p, np.random.default_rng(seed), 0, None

    def forward(self, x):
        self.draws += 1
        self.mask = (self.rng.random(np.shape(x)) >= self.p) / (1 - self.p)
        return x * self.mask

    def reapply(self, x):
        return x * self.mask

    def backward(self, dy):
        return dy * self.mask


class Norm(StandIn):
    """y = tanh(x) g + b; g and b parameters."""

    def __init__(self, g, b):
        super().__init__(gain=g, bias=b)

    def forward(self, x):
        self.saved = np.tanh(x)
        return self.saved * self.params["gain"] + self.params["bias"]

    def backward(self, dy):
        t = self.saved
        self.add("gain", rows(dy * t).sum(axis=0))
        self.add("bias", rows(dy).sum(axis=0))
        return dy * self.params["gain"] * (1 - t * t)


class Attention(StandIn):
    """y = tanh(q A) + mean over keys of (k * tanh(v)) + b: reads q, k and v; returns 3
    grads. Key and value enter unlike each other, so where one array is both (the memory
    of a cross-attention, a self-attention's input) its key and value gradients differ,
    and the diagnosis can tell which of the two a caller left out."""

    def __init__(self, A, b):
        super().__init__(bias=b)
        self.A = A

    def forward(self, q, k, v, mask=None, cache=None):
        t, u = np.tanh(q @ self.A), np.tanh(v)                         # (B, Tq, D), (B, Tk, D)
        self.saved = (t, k, u)
        return t + (k * u).mean(axis=1, keepdims=True) + self.params["bias"]

    def backward(self, dy):
        t, k, u = self.saved
        self.add("bias", rows(dy).sum(axis=0))
        dq = (dy * (1 - t * t)) @ self.A.T                              # (B, Tq, D)
        dmean = dy.sum(axis=1, keepdims=True) / k.shape[1]               # (B, 1, D)
        self.returned = (dq, dmean * u, dmean * k * (1 - u * u))   # the terms a caller sums
        return self.returned
