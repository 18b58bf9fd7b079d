"""Forged backwards that a reading of the graded function cannot see, for the grader's watch
while they run (observe.py; tests: test_honesty_runtime.py).

Each FORGERIES entry is a part, the category it stands for, the region bodies it writes
(test_assignment_grader.replace_regions), and the other edits of the copy it needs: text
appended to a file of the package, a new file, or a text replaced outside the regions (the
ungraded forward). Each one hides from honesty.py's reading in its own way (a helper
module, names built at run time, exec, a method swapped in at import, the ungraded
forward); none is spelled like another. `apply(copy, name)` makes the edits.
"""

from pathlib import Path

from test_assignment_grader import replace_regions

GELU_FORMULA = "0.5 * z * (1.0 + xp.tanh(C * (z + A * z**3)))"

FORGERIES = {
    # -- complex step, out of the reading's sight ---------------------------------------------
    "complex step in a helper module": dict(
        part="gelu", category="complex",
        bodies={"GELU.backward": """
from . import _numerics
x, t = self.saved_for_backward()
return dy * _numerics.slope(x, self.C, self.A)"""},
        files={"layers/_numerics.py": f'''"""Numerics."""
import numpy as xp


def slope(x, C, A, h=1e-30):
    z = x + h * 1j
    return ({GELU_FORMULA}).imag / h
'''}),
    "complex step with names built at run time": dict(
        part="gelu", category="complex",
        bodies={"GELU.backward": """
x, t = self.saved_for_backward()
C, A, kind = self.C, self.A, getattr(xp, "comp" + "lex128")
unit = xp.sqrt(kind(-1.0))
z = x.astype(kind) + unit * 1e-30
w = 0.5 * z * (1.0 + xp.tanh(C * (z + A * z**3)))
return dy * getattr(w, "im" + "ag") / 1e-30"""}),
    # -- forward-mode differentiation with a number class of one's own ----------------------
    "dual numbers in a helper module": dict(
        part="gelu", category="dual",
        bodies={"GELU.backward": """
from ._dual import Dual
x, t = self.saved_for_backward()
z = Dual(x, xp.ones_like(x))
w = (z * z * z * self.A + z) * self.C
return dy * ((w.tanh() + 1.0) * z * 0.5).eps"""},
        files={"layers/_dual.py": '''"""Numbers with an infinitesimal part."""
import numpy as np


class Dual:
    def __init__(self, value, eps):
        self.value, self.eps = value, eps

    def __add__(self, other):
        if isinstance(other, Dual):
            return Dual(self.value + other.value, self.eps + other.eps)
        return Dual(self.value + other, self.eps)

    __radd__ = __add__

    def __mul__(self, other):
        if isinstance(other, Dual):
            return Dual(self.value * other.value,
                        self.value * other.eps + self.eps * other.value)
        return Dual(self.value * other, self.eps * other)

    __rmul__ = __mul__

    def tanh(self):
        t = np.tanh(self.value)
        return Dual(t, (1 - t * t) * self.eps)
'''}),
    "dual numbers column by column, class in the graded file": dict(
        part="layernorm", category="dual",
        bodies={"LayerNorm.backward": """
xhat, r = self.saved_for_backward()
D = self.d_model
x = xhat / r
dx = xp.zeros(dy.shape)
for i in range(D):
    seed = xp.zeros(D)
    seed[i] = 1.0
    v = _Jet(x, xp.broadcast_to(seed, x.shape))
    mu = v.mean()
    c = v - mu
    s = (c * c).mean()
    out = c * s.rsqrt(self.eps)
    dx[..., i] = (dy * self.params["gamma"] * out.d).sum(axis=-1)
self.grads["gamma"] += (dy * xhat).reshape(-1, D).sum(axis=0)
self.grads["beta"] += dy.reshape(-1, D).sum(axis=0)
return dx"""},
        append={"layers/normalization.py": '''

class _Jet:
    """A value with a directional derivative."""

    def __init__(self, v, d):
        self.v, self.d = v, d

    def __sub__(self, o):
        return _Jet(self.v - o.v, self.d - o.d)

    def __mul__(self, o):
        return _Jet(self.v * o.v, self.v * o.d + self.d * o.v)

    def mean(self):
        return _Jet(self.v.mean(axis=-1, keepdims=True), self.d.mean(axis=-1, keepdims=True))

    def rsqrt(self, eps):
        q = 1.0 / xp.sqrt(self.v + eps)
        return _Jet(q, -0.5 * q**3 * self.d)
'''}),
    # -- high precision -------------------------------------------------------------------
    "central differences in 50-digit decimal": dict(
        part="gelu", category="precision",
        bodies={"GELU.backward": """
import decimal
x, t = self.saved_for_backward()
decimal.getcontext().prec = 50
C, A, h = decimal.Decimal(self.C), decimal.Decimal(self.A), decimal.Decimal("1e-20")

def g(z):
    e = (2 * C * (z + A * z**3)).exp()
    return z * (1 + (e - 1) / (e + 1)) / 2

flat = [float((g(decimal.Decimal(v) + h) - g(decimal.Decimal(v) - h)) / (2 * h))
        for v in x.ravel().tolist()]
return dy * xp.array(flat).reshape(x.shape)"""}),
    "softmax's product in exact fractions": dict(
        part="softmax", category="precision",
        bodies={"softmax_backward": """
from fractions import Fraction as Q
P, G = xp.moveaxis(p, axis, -1), xp.moveaxis(dp, axis, -1)
out = xp.zeros(P.shape)
for idx in xp.ndindex(*P.shape[:-1]):
    row = [Q(v) for v in P[idx].tolist()]
    grad = [Q(v) for v in G[idx].tolist()]
    inner = sum(a * b for a, b in zip(row, grad))
    out[idx] = [float(a * (b - inner)) for a, b in zip(row, grad)]
return xp.moveaxis(out, -1, axis)"""}),
    # -- the derivative taken in the ungraded forward --------------------------------------
    "complex step in the ungraded forward": dict(
        part="gelu", category="in forward",
        bodies={"GELU.backward": """
return dy * self.slope"""},
        replace={"layers/activations.py": [(
            "        self.saved = (x, t)\n        return 0.5 * x * (1.0 + t)",
            "        self.saved = (x, t)\n        z = x + 1e-30j\n"
            f"        C, A = self.C, self.A\n        self.slope = ({GELU_FORMULA}).imag / 1e-30\n"
            "        return 0.5 * x * (1.0 + t)")]}),
    "central differences in the ungraded forward, forward inside itself": dict(
        part="layernorm", category="in forward",
        bodies={"LayerNorm.backward": """
xhat, r = self.saved_for_backward()
D = self.d_model
self.grads["gamma"] += (dy * xhat).reshape(-1, D).sum(axis=0)
self.grads["beta"] += dy.reshape(-1, D).sum(axis=0)
return xp.einsum("...j,...ji->...i", dy * self.params["gamma"], self.jacobian)"""},
        replace={"layers/normalization.py": [(
            "    def forward(self, x):\n",
            "    def forward(self, x, inner=False):\n"
            "        if not inner:\n"
            "            h, cols = 1e-5, []\n"
            "            for i in range(self.d_model):\n"
            "                e = xp.zeros(self.d_model)\n"
            "                e[i] = h\n"
            "                up, down = self.forward(x + e, True), self.forward(x - e, True)\n"
            "                cols.append((up - down) / (2 * h) / self.params['gamma'])\n"
            "            self.jacobian = xp.stack(cols, axis=-1)\n")]}),
    # -- code in the graded function's place --------------------------------------------------
    "method swapped in from __init__.py, stub left": dict(
        part="gelu", category="replaced",
        bodies={"GELU.backward": """
raise NotImplementedError("GELU.backward")"""},
        append={"__init__.py": '''

def _slope(self, dy):
    x, t = self.saved
    return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * self.C * (1.0 + 3.0 * self.A * x**2))


from .layers import activations as _activations  # noqa: E402
_activations.GELU.backward = _slope
'''}),
    "module-level object doing the work after the class": dict(
        part="linear", category="replaced",
        bodies={"Linear.backward": """
raise NotImplementedError("Linear.backward")"""},
        append={"layers/linear.py": '''

class _Worker:
    def __call__(self, layer, dy):
        x = layer.saved
        x2, dy2 = x.reshape(-1, layer.in_features), dy.reshape(-1, layer.out_features)
        layer.grads["weight"] += x2.T @ dy2
        if "bias" in layer.params:
            layer.grads["bias"] += dy2.sum(axis=0)
        return (dy2 @ layer.params["weight"].T).reshape(x.shape)


_WORKER = _Worker()
Linear.backward = lambda self, dy: _WORKER(self, dy)
'''}),
    # -- the watch switched off --------------------------------------------------------------
    "trace hook switched off before a complex step": dict(
        part="gelu", category="tamper",
        bodies={"GELU.backward": """
import sys
getattr(sys, "set" + "trace")(None)
x, t = self.saved_for_backward()
z = x + 1e-30 * xp.sqrt(-xp.ones(1, dtype=getattr(xp, "comp" + "lex128")))
w = 0.5 * z * (1.0 + xp.tanh(self.C * (z + self.A * z**3)))
return dy * getattr(w, "im" + "ag") / 1e-30"""}),
    # -- exec ------------------------------------------------------------------------------
    "complex step through builtins' exec": dict(
        part="gelu", category="exec",
        bodies={"GELU.backward": """
import builtins
x, t = self.saved_for_backward()
space = {"layer": self, "x": x}
run = getattr(builtins, "ex" + "ec")
run("w = layer.forward(x + 1e-30" + "j)\\nslope = w.im" + "ag / 1e-30", space)
self.saved = (x, t)
return dy * space["slope"]"""}),
    "central differences through exec, column by column": dict(
        part="layernorm", category="exec",
        bodies={"LayerNorm.backward": """
import builtins
xhat, r = self.saved_for_backward()
D = self.d_model
space = {"layer": self, "x": xhat / r, "xp": xp, "g": dy, "D": D}
getattr(builtins, "ex" + "ec")(
    "dx = xp.zeros(x.shape)\\n"
    "for i in range(D):\\n"
    "    e = xp.zeros(D)\\n"
    "    e[i] = 1e-6\\n"
    "    dx[..., i] = (g * (layer.forward(x + e) - layer.forward(x - e))).sum(axis=-1) / 2e-6\\n",
    space)
self.saved = (xhat, r)
self.grads["gamma"] += (dy * xhat).reshape(-1, D).sum(axis=0)
self.grads["beta"] += dy.reshape(-1, D).sum(axis=0)
return space["dx"]"""}),
    # -- plain float64 differences --------------------------------------------------------
    "central differences, the formula rewritten inline": dict(
        part="layernorm", category="differences",
        bodies={"LayerNorm.backward": """
xhat, r = self.saved_for_backward()
D, x, eps = self.d_model, xhat / r, self.eps
dx = xp.zeros(dy.shape)
for i in range(D):
    e = xp.zeros(D)
    e[i] = 1e-6
    plus, minus = x + e, x - e
    yp = (plus - plus.mean(-1, keepdims=True)) / xp.sqrt(plus.var(-1, keepdims=True) + eps)
    ym = (minus - minus.mean(-1, keepdims=True)) / xp.sqrt(minus.var(-1, keepdims=True) + eps)
    dx[..., i] = (dy * self.params["gamma"] * (yp - ym)).sum(axis=-1) / 2e-6
self.grads["gamma"] += (dy * xhat).reshape(-1, D).sum(axis=0)
self.grads["beta"] += dy.reshape(-1, D).sum(axis=0)
return dx"""}),
    "central differences in a helper module that runs the loss's forward": dict(
        part="cross_entropy", category="differences",
        bodies={"CrossEntropyLoss.backward": """
from ._probe import slopes
return float(dloss) * slopes(self, xp.log(p).reshape(shape), t.reshape(shape[:-1]))"""},
        files={"_probe.py": '''"""Probing."""
import numpy as np


def slopes(loss, logits, targets, h=1e-6):
    out = np.zeros(logits.shape)
    for index in np.ndindex(*logits.shape):
        step = np.zeros(logits.shape)
        step[index] = h
        up = float(loss.forward(logits + step, targets))
        down = float(loss.forward(logits - step, targets))
        out[index] = (up - down) / (2 * h)
    return out
'''}),
    "Richardson extrapolation, element by element": dict(
        part="softmax", category="Richardson",
        bodies={"softmax_backward": """
x = xp.log(xp.where(p > 0, p, 1.0))
out = xp.zeros(p.shape)
for idx in xp.ndindex(*p.shape):
    def f(h):
        bumped = x.copy()
        bumped[idx] += h
        return (dp * _apply(bumped, axis=axis, mask=p > 0)).sum()
    d1 = (f(1e-3) - f(-1e-3)) / 2e-3
    d2 = (f(5e-4) - f(-5e-4)) / 1e-3
    d3 = (f(2.5e-4) - f(-2.5e-4)) / 5e-4
    e1, e2 = (4 * d2 - d1) / 3, (4 * d3 - d2) / 3
    out[idx] = (16 * e2 - e1) / 15
return out * (p > 0)"""},
        append={"layers/softmax.py": "\n\n_apply = softmax     # the forward, another name\n"}),
    "Richardson extrapolation through getattr, all elements at once": dict(
        part="gelu", category="Richardson",
        bodies={"GELU.backward": """
x, t = self.saved_for_backward()
run = getattr(self, "for" + "ward")
def d(h):
    return (run(x + h) - run(x - h)) / (2 * h)
a, b, c = d(1e-2), d(5e-3), d(2.5e-3)
e1, e2 = (4 * b - a) / 3, (4 * c - b) / 3
self.saved = (x, t)
return dy * (16 * e2 - e1) / 15"""}),
}


def apply(copy, name):
    """Write the forgery `name` into the copy at `copy` (the regions and its other edits)."""
    forged, package = FORGERIES[name], Path(copy) / "numpy_transformer"
    replace_regions(copy, forged["bodies"])
    for path, text in forged.get("files", {}).items():
        (package / path).write_text(text)
    for path, text in forged.get("append", {}).items():
        file = package / path
        file.write_text(file.read_text() + text)
    for path, pairs in forged.get("replace", {}).items():
        file = package / path
        text = file.read_text()
        for old, new in pairs:
            assert old in text, (name, old)
            text = text.replace(old, new, 1)
        file.write_text(text)
    return forged["part"]
