"""Cross-entropy loss over a vocabulary, fused with a stable log-softmax.

For one token with logits x (V,), target class t and smoothing eps, the target
distribution is q = (1 - eps) onehot(t) + eps / V (PyTorch's label smoothing:
the eps mass is spread over all V classes, the target included). With
log-probabilities z = log_softmax(x) = x - m - log sum_j exp(x_j - m), m = max x,

    loss = -sum_j q_j z_j = -(1 - eps) z_t - (eps / V) sum_j z_j

and the reported loss is the mean over the N counted tokens (those whose target
is not `ignore_index`).

Gradient. dz_j/dx_k = delta_jk - p_k with p = softmax(x), so

    dloss/dx_k = -sum_j q_j (delta_jk - p_k) = p_k sum_j q_j - q_k = p_k - q_k

since q sums to 1. Over the batch: dlogits = (p - q) / N on counted rows and 0
on ignored rows. Fusing log-softmax with the loss gives this simple, stable
form; going through softmax's own Jacobian would divide by tiny probabilities.

When every target is ignored (N = 0) we return loss 0.0 and a zero gradient,
so a batch of pure padding changes nothing. (PyTorch returns NaN there.)

On a GPU the loss stays there: with NumPy, forward returns a Python float; on
a device, a 0-d device array (a float would wait for the GPU every step). The
training loop passes `num_tokens`, counted by the data pipeline on the host, so
that neither the count nor the check of the target ids needs the device.
"""

from .backend import get_backend, xp
from .validation import check_float_array, check_unit_interval, message
from .module import Module
from .errors import InputError, InputTypeError


class CrossEntropyLoss(Module):
    """Mean cross-entropy of `logits` (..., V) against integer `targets` (...).

    forward(logits, targets, num_tokens=None) -> the mean over counted tokens: a Python
                             float (NumPy) or a 0-d device array (CuPy); num_tokens, when
                             given, is N counted on the host and the targets are trusted
    backward(dloss=1.0)      -> dlogits (..., V), same dtype as logits
    num_tokens               the number of counted tokens N in the last forward

    Saved: the probabilities p (N_all, V) and the targets. `backward` turns p
    into the gradient in place (no second (N_all, V) array) and drops the
    saved state, so call `forward` again before the next `backward`.
    """

    def __init__(self, ignore_index=None, label_smoothing=0.0):
        super().__init__()
        if ignore_index is not None and (isinstance(ignore_index, bool)
                                         or not isinstance(ignore_index, int)):
            raise InputTypeError(message("ignore_index", "None or an integer class id",
                                    repr(ignore_index)))
        check_unit_interval(label_smoothing, "label_smoothing")
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing
        self.num_tokens = 0
        self.saved = None

    def _check(self, logits, targets):
        check_float_array(logits, "logits")
        if logits.ndim < 2 or 0 in logits.shape:
            raise InputError(message("logits", "a non-empty array (..., V) with at least 2 "
                                     "dimensions", f"shape {tuple(logits.shape)}"))
        if not hasattr(targets, "dtype") or targets.dtype.kind not in "iu":
            got = f"dtype {targets.dtype}" if hasattr(targets, "dtype") else type(targets).__name__
            raise InputTypeError(message("targets", "an integer array of class ids", got))
        if tuple(targets.shape) != tuple(logits.shape[:-1]):
            raise InputError(message("targets", f"shape {tuple(logits.shape[:-1])} "
                                     "(logits.shape[:-1])", f"shape {tuple(targets.shape)}"))

    def _counted(self, targets, V):
        """(valid mask, targets with ignored ids set to 0); checks ids lie in [0, V)."""
        targets = xp.asarray(targets)                           # (N,) a caller's host ids too
        valid = xp.ones(targets.shape, dtype=bool) if self.ignore_index is None \
            else targets != self.ignore_index                  # (N,)
        safe = xp.where(valid, targets, 0)                      # (N,) ignored rows read class 0
        low, high = int(safe.min()), int(safe.max())
        if low < 0 or high >= V:
            allowed = f"class ids in [0, {V})" + (
                "" if self.ignore_index is None else f" or ignore_index={self.ignore_index}")
            raise InputError(message("targets", allowed, f"id {low if low < 0 else high}"))
        return valid, safe

    def _trusted(self, targets):
        """(valid mask, targets with ignored ids set to 0), without a look at the values."""
        targets = xp.asarray(targets)                           # (N,)
        if self.ignore_index is None:
            return xp.ones(targets.shape, dtype=bool), targets
        valid = targets != self.ignore_index                     # (N,)
        return valid, xp.where(valid, targets, 0)

    def forward(self, logits, targets, num_tokens=None):
        self._check(logits, targets)
        V = logits.shape[-1]
        x = logits.reshape(-1, V)                               # (N, V), N = all tokens
        if num_tokens is None:                                  # count and check on the device
            valid, t = self._counted(targets.reshape(-1), V)    # (N,), (N,)
            n = int(valid.sum())
        else:                                                   # counted by the data pipeline
            valid, t = self._trusted(targets.reshape(-1))
            n = num_tokens
        rows = xp.arange(x.shape[0])                            # (N,)
        eps = self.label_smoothing

        z = x - x.max(axis=-1, keepdims=True)                   # (N, V) shifted logits
        z_t = z[rows, t]                                        # (N,)
        z_sum = z.sum(axis=-1) if eps else None                 # (N,)
        p = xp.exp(z, out=z)                                    # (N, V) reuse the buffer
        s = p.sum(axis=-1)                                      # (N,)
        p /= s[:, None]                                         # (N, V) softmax
        log_s = xp.log(s)                                       # (N,)

        per_token = (log_s - z_t) * (1 - eps)                   # (N,) -(1-eps) log p_t
        if eps:
            per_token += (V * log_s - z_sum) * (eps / V)        # -(eps/V) sum_j log p_j
        total = xp.where(valid, per_token, 0).sum()            # () on the device
        if get_backend() == "numpy":
            loss = float(total) / n if n else 0.0
        else:
            loss = total / max(n, 1)                            # () no wait for the device

        self.num_tokens = n
        self.saved = (p, t, valid, rows, logits.shape)
        return loss

    def backward(self, dloss=1.0):
        """dlogits = dloss * (p - q) / N on counted rows, 0 on ignored rows."""
        if self.saved is None:
            raise InputError("CrossEntropyLoss.backward: backward called before forward "
                             "(each forward allows one backward)")
        p, t, valid, rows, shape = self.saved
        self.saved = None
        # BEGIN SOLUTION cross_entropy
        # HINT: from p and the smoothed target q (see the docstring), over N counted rows; 0 on ignored
        V, eps = shape[-1], self.label_smoothing
        scale = valid.astype(p.dtype) * (float(dloss) / max(self.num_tokens, 1))  # (N,)
        dx = p                                                  # (N, V) overwrite p in place
        if eps:
            dx -= eps / V                                       # p - eps / V
        dx[rows, t] -= 1 - eps                                  # ... - (1 - eps) onehot(t)
        dx *= scale[:, None]                                    # (N, V)
        return dx.reshape(shape)                                # (..., V)
        # END SOLUTION
