"""Known slips: the arrays that common wrong answers give, for the diagnosis (diagnose.py).

Teacher side only: these hold the parts' formulas, so no student copy and no grading
worker has this file (make.py ships a list of files, runner.py copies another). The
grader's reference run (scoring.reference_results, with stand-ins) and `assignment make`'s
(the copy's expected.npz, the reference's own children) ask for them through
steps.known_slips; each scenario passes what it built and drew. Two kinds:

    "term.<label>"            one term of a sum the reference adds (the part that flows
                              through the mean, the Jacobian's diagonal part, ...): a
                              wrong array that lacks it, or has it twice, is named by it
    "term.<output>|<cause>"   the whole array `output` as a named slip computes it (the
                              derivative of another GELU form, the bias correction left
                              out, the dropout's backward skipped, ...): a wrong array
                              equal to it is named by `cause`

None is ever compared for points (parts.compare skips "term." arrays); a cause names
what went wrong in words, never the formula (the copy's leak test reads the messages).
The models' slips (attention, the projections, the stacks): known_slips_models.py.
"""

import math

import numpy as np

from . import known_slips_models as models


def slips(kind, context):
    """{"term.<...>": array} of the task kind `kind` from the scenario's `context`."""
    make = {**LAYERS, **models.MODELS}.get(kind)
    if make is None:
        return {}
    return {f"term.{key}": np.asarray(value, dtype=float)
            for key, value in make(**context).items()}


def layernorm(layer, x, dout):
    gamma, eps = layer.params["gamma"], layer.eps
    mu = x.mean(axis=-1, keepdims=True)
    r = 1.0 / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + eps)
    xhat, g = (x - mu) * r, dout * gamma
    lead = tuple(range(x.ndim - 1))
    held = {name: grad for name, _, grad in layer.named_parameters()}     # after the backward
    found = {}
    if "gamma" in held:         # what it holds, its own term swapped for the slip's
        found["grad.gamma|gamma's gradient leaves out the normalized input (xhat): only the "
              "incoming gradient is summed"] = (held["gamma"] - (dout * xhat).sum(axis=lead)
                                                + dout.sum(axis=lead))
    through_mean = np.broadcast_to(-r * g.mean(axis=-1, keepdims=True), x.shape)
    through_variance = -r * xhat * (g * xhat).mean(axis=-1, keepdims=True)
    return {**found, "the part that flows through the mean": through_mean,
            "the part that flows through the variance": through_variance,
            "dx.0|both parts, the one through the mean and the one through the variance, "
            "are left out": r * g,
            "dx.0|the incoming gradient is not scaled by gamma on its way to the input":
                r * (dout - dout.mean(axis=-1, keepdims=True)
                     - xhat * (dout * xhat).mean(axis=-1, keepdims=True)),
            "dx.0|the input gradient is not scaled by the inverse of the standard deviation "
            "(the normalization's own scale)": (g - g.mean(axis=-1, keepdims=True)
                                               - xhat * (g * xhat).mean(axis=-1, keepdims=True))}


def softmax(p, dp, axis):
    coupled = -p * (dp * p).sum(axis=axis, keepdims=True)
    found = {"the diagonal part of the Jacobian": p * dp,
             "dx.0|only the diagonal of the softmax's Jacobian is used (each output of a row "
             "depends on every input of that row)": dp * p * (1 - p)}
    if axis not in (-1, p.ndim - 1):
        found["dx.0|the sum runs over the last axis instead of the softmax's axis"] = (
            p * (dp - (dp * p).sum(axis=-1, keepdims=True)))
    for other in range(p.ndim):         # any other axis (the first, a middle one)
        if other not in (axis % p.ndim, p.ndim - 1):     # the last: named above
            found[f"dx.0|the sum runs over another axis (axis {other}) instead of the "
                  "softmax's axis"] = p * (dp - (dp * p).sum(axis=other, keepdims=True))
    found["dx.0|the result is not multiplied by the softmax's output (the probabilities) "
          "at the end"] = dp - (dp * p).sum(axis=axis, keepdims=True)
    found["dx.0|the coupled part is not multiplied by the softmax's output (the "
          "probabilities)"] = p * dp - (dp * p).sum(axis=axis, keepdims=True)
    found["dx.0|the sum over the softmax's axis leaves out a factor of the softmax's output "
          "(the probabilities)"] = p * (dp - dp.sum(axis=axis, keepdims=True))
    return {"the part that couples the entries along the softmax's axis": coupled, **found}


def gelu(x, dout):
    C, A = math.sqrt(2.0 / math.pi), 0.044715
    t = np.tanh(C * (x + A * x**3))
    erf = np.vectorize(math.erf)(x / math.sqrt(2.0))
    exact = 0.5 * (1.0 + erf) + x * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    sig = 1.0 / (1.0 + np.exp(-1.702 * x))
    other = ("the derivative of another GELU form is used ({}): close to, but not, the tanh "
             "form's derivative")
    return {
        "dx.0|" + other.format("the exact one, with the error function"): dout * exact,
        "dx.0|" + other.format("the sigmoid approximation"):
            dout * (sig + 1.702 * x * sig * (1 - sig)),
        "dx.0|the derivative of the inner cubic term is left out (the chain rule stops "
        "one step early)": dout * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * C),
        "dx.0|the derivative of tanh is wrong (it is not one minus tanh)":
            dout * (0.5 * (1 + t) + 0.5 * x * (1 - t) * C * (1 + 3 * A * x**2)),
        "dx.0|the power rule's factor is left out of the inner derivative (the cubic "
        "term's exponent does not come down in front of it)":
            dout * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * C * (1 + A * x**2)),
        "dx.0|the inner derivative leaves out its leading constant (the scale in front of "
        "the inner polynomial)":
            dout * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * (1 + 3 * A * x**2)),
        "dx.0|the product rule's second term leaves out the input x that multiplies the "
        "tanh": dout * (0.5 * (1 + t) + 0.5 * (1 - t * t) * C * (1 + 3 * A * x**2)),
        "dx.0|the tanh's derivative is taken at the input instead of at the inner "
        "polynomial (the chain rule's inner argument)":
            dout * (0.5 * (1 + t) + 0.5 * x * (1 - np.tanh(x) ** 2) * C * (1 + 3 * A * x**2)),
        "dx.0|the derivative is evaluated at the layer's output instead of its input":
            dout * derivative_at(0.5 * x * (1 + t)),
        "the part from differentiating the tanh (the product rule's second term)":
            dout * 0.5 * x * (1 - t * t) * C * (1 + 3 * A * x**2),
        "the product rule's first term (the part where the tanh itself is kept)":
            dout * 0.5 * (1 + t)}


def derivative_at(y):
    """The tanh form of GELU's derivative at the points `y` (a slip evaluates it at the
    layer's output instead of its input)."""
    C, A = math.sqrt(2.0 / math.pi), 0.044715
    t = np.tanh(C * (y + A * y**3))
    return 0.5 * (1 + t) + 0.5 * y * (1 - t * t) * C * (1 + 3 * A * y**2)


def embedding(layer, ids, dout, before):
    grad = np.array(before, dtype=float)
    grad[ids] += dout * layer.multiplier
    return {"grad.weight|a repeated token id keeps only one of its rows (a fancy-index += "
            "does not add repeated indices)": grad}


def positional_encoding(max_len, d_model):
    angles_of = lambda step, sign=-1.0: (np.arange(max_len, dtype=float)[:, None] * np.exp(
        np.arange(0, d_model, step, dtype=float)[: (d_model + 1) // 2]
        * sign * (math.log(10000.0) / d_model)))
    found = {}
    for cause, angles, first, second in (
            ("sine and cosine are swapped (cosine in the even columns)", angles_of(2),
             np.cos, np.sin),
            ("the frequencies fall off half as fast as they should across the columns (the "
             "exponent's column index is halved)", angles_of(1), np.sin, np.cos),
            ("the frequencies grow across the columns where they should fall off (the "
             "exponent's sign is flipped)", angles_of(2, 1.0), np.sin, np.cos),
            ("the odd columns hold sines too (no cosine in the table)", angles_of(2),
             np.sin, np.sin)):
        pe = np.empty((max_len, d_model))
        pe[:, 0::2] = first(angles)
        pe[:, 1::2] = second(angles[:, : d_model // 2])
        found[f"table|{cause}"] = pe
    return found


def cross_entropy(targets, dx, ignore_index, smoothing, vocab, dloss):
    valid = np.ones(targets.shape, bool) if ignore_index is None else targets != ignore_index
    counted = max(int(valid.sum()), 1)
    rows = np.flatnonzero(valid.reshape(-1))
    target = np.zeros((targets.size, vocab))
    target[rows, targets.reshape(-1)[rows]] = -(1 - smoothing) * float(dloss) / counted
    found = {"the target class's part": target.reshape(dx.shape),
             "dx.0|the ignored rows are counted in the average (it divides by every row)":
             dx * counted / valid.size,
             "dx.0|the average over the counted tokens is taken twice": dx / counted}
    if smoothing:
        scale = valid[..., None] * (float(dloss) / counted)
        found["dx.0|the smoothing is spread over one class too few"] = (
            dx + scale * (smoothing / vocab - smoothing / (vocab - 1)))
    return found


def adam(params, grads, steps, hyper, optimizer, decay):
    """Whole runs of Adam's updates, each with one slip ({name: first value}, {(step, name):
    gradient}; `optimizer` "Adam" or "AdamW", whose decay is the stand-in `decay`). The
    slips are a family by hyper-parameter: each moment's rate (the other beta), each bias
    correction's step count (one later, one earlier) or its absence, each moment's state not
    kept, the epsilon's place, the decay coupled where it is decoupled and the reverse."""
    lr, (b1, b2) = hyper["lr"], hyper.get("betas", (0.9, 0.999))
    eps = hyper.get("eps", 1e-8)
    wd = hyper.get("weight_decay", 0.01 if optimizer == "AdamW" else 0.0)
    coupled = bool(wd) and optimizer == "Adam"          # Adam's L2 joins the gradient

    def run(p, name, first=True, second=True, kept=(True, True), l2=coupled, late=(0, 0),
            sign=1.0, inside=False, squared=True, rates=(b1, b2), shrink=None, root=True):
        m, v, found = 0.0 * p, 0.0 * p, {}
        for step in range(steps):
            t, before = step + 1, p.copy()
            if wd and optimizer == "AdamW":
                decay(p, wd)
            if shrink == "before":
                p -= lr * wd * p
            g = grads[step, name] + (sign * wd * p if l2 else 0.0)
            m_new = rates[0] * m + (1 - rates[0]) * g
            v_new = rates[1] * v + (1 - rates[1]) * (g * g if squared else g)
            with np.errstate(invalid="ignore", divide="ignore"):
                m_hat = m_new / (1 - b1 ** (t + late[0])) if first else m_new
                v_hat = v_new / (1 - b2 ** (t + late[1])) if second else v_new
                if inside:
                    p -= lr * m_hat / np.sqrt(v_hat + eps)
                else:
                    p -= lr * m_hat / ((np.sqrt(v_hat) if root else v_hat) + eps)
            if shrink == "after":
                p -= lr * wd * before
            m, v = (m_new if kept[0] else m), (v_new if kept[1] else v)
            with np.errstate(invalid="ignore"):     # a step count one earlier: inf at step 1
                found[step] = p - before
        return found
    slips_ = adam_slip_table(b1, b2, wd, optimizer, coupled)
    return {f"update.{step}.{name}|{cause}": update
            for cause, slip in slips_.items() for name, p0 in params.items()
            for step, update in run(np.array(p0, dtype=float), name, **slip).items()}


def adam_slip_table(b1, b2, wd, optimizer, coupled):
    """{cause: the keywords of `adam`'s run that make that slip}: the family of Adam's
    slips by hyper-parameter (rates, step counts, state, epsilon, decay)."""
    not_kept = ("is not kept from one step to the next (the optimizer's state is rebound to a "
                "new array, not updated in place, so the stored one never changes)")
    slips_ = {"the bias correction is left out": dict(first=False, second=False),
              "only the first moment is bias-corrected": dict(second=False),
              "only the second moment is bias-corrected": dict(first=False),
              "the moments are not kept from one step to the next (the optimizer's state is "
              "not updated in place)": dict(kept=(False, False)),
              f"the first moment {not_kept}": dict(kept=(False, True)),
              f"the second moment {not_kept}": dict(kept=(True, False)),
              "the epsilon is placed inside the square root (it belongs outside it)":
                  dict(inside=True),
              "the second moment is not squared (it accumulates the raw gradient, which can "
              "be negative under the square root)": dict(squared=False),
              "the square root of the second moment is left out (the step divides by the "
              "second moment itself)": dict(root=False),
              "the two moments' rates are swapped (beta1 and beta2 exchanged)":
                  dict(rates=(b2, b1)),
              "the first moment is averaged with the second moment's rate (beta2 where "
              "beta1 belongs)": dict(rates=(b2, b2)),
              "the second moment is averaged with the first moment's rate (beta1 where "
              "beta2 belongs)": dict(rates=(b1, b1))}
    for off, said in ((1, "one step later"), (-1, "one step earlier")):
        where = f"the step count of the bias correction is off by one (it counts from {said})"
        slips_[where] = dict(late=(off, off))
        slips_[f"{where}, in the first moment's correction"] = dict(late=(off, 0))
        slips_[f"{where}, in the second moment's correction"] = dict(late=(0, off))
    if coupled:
        slips_["the L2 weight decay is left out of the gradient"] = dict(l2=False)
        slips_["the L2 weight decay enters the gradient with the wrong sign"] = dict(
            sign=-1.0)
        decoupled = ("Adam's L2 weight decay is applied as a decoupled shrink of the weights "
                     "(AdamW's way), not added into the gradient that the moments average")
        slips_[decoupled] = dict(l2=False, shrink="before")
        slips_[decoupled.replace("weights", "weights after the step")] = dict(
            l2=False, shrink="after")
    if wd and optimizer == "AdamW":
        slips_["the weight decay is also added to the gradient (AdamW's decay is decoupled "
               "only)"] = dict(l2=True)
    return slips_


def adamw_decay(p, lrs, weight_decay):
    """One parameter's decays, once per learning rate, each run with one slip: the learning
    rate left out, a constant subtracted where each entry shrinks in proportion to itself,
    the shrink factor itself taken as the change (the weight scaled by the small number)."""
    found = {}
    slips_ = {"the learning rate is left out of the decay": lambda p, lr: -weight_decay * p,
              "the decay subtracts a constant amount, the same for every entry, where each "
              "entry should shrink in proportion to its own size (a multiplication)":
                  lambda p, lr: -lr * weight_decay + 0.0 * p,
              "the decay subtracts a constant amount without the learning rate, where each "
              "entry should shrink in proportion to its own size (a multiplication)":
                  lambda p, lr: -weight_decay + 0.0 * p,
              "the weight is multiplied by the small decay amount itself instead of by one "
              "minus it (the shrink factor is not taken from one)":
                  lambda p, lr: (lr * weight_decay - 1.0) * p,
              "the weight is divided by the shrink factor where it is multiplied (it grows)":
                  lambda p, lr: p / (1 - lr * weight_decay) - p}
    for cause, change_of in slips_.items():
        q = np.array(p, dtype=float)
        for i, lr in enumerate(lrs):
            change = change_of(q, lr)
            found[f"change.{i}|{cause}"] = change
            q = q + change
    return found


LAYERS = {"layernorm": layernorm, "softmax": softmax, "gelu": gelu, "embedding": embedding,
          "positional_encoding": positional_encoding, "cross_entropy": cross_entropy,
          "adam": adam, "adamw_decay": adamw_decay}
