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

The loss comes back as a 0-d array of the active array module (backend.xp), in
the logits' dtype, on every backend: `float(loss)` reads it; on a GPU it stays there until
read (a Python float would wait for the device every step). `loss(logits, targets)`
checks its inputs first (`check_inputs`, the ids in range included); a caller that
made them itself calls `forward`, as a module's parts do: the training loop passes
`num_tokens`, counted by the data pipeline on the host, so that nothing waits for
the device there.
"""

from .backend import xp
from .validation import check_float_array, check_integer, check_unit_interval, message
from .module import Module
from .errors import InputError, InputTypeError
from .layers import fused

fused_loss = fused.form("loss")         # None in a student copy that stubs part cross_entropy


class CrossEntropyLoss(Module):
    """Mean cross-entropy of `logits` (..., V) against integer `targets` (...).

    loss(logits, targets, num_tokens=None) -> `check_inputs`, then `forward`
    forward(logits, targets, num_tokens=None) -> the mean over counted tokens, a 0-d
                             array of backend.xp in the logits' dtype; num_tokens,
                             when given, is N counted on the host (else counted here)
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

    def forward(self, logits, targets, num_tokens=None):
        if fused.on(fused_loss):                                # one row kernel on a GPU
            return fused_loss.forward(self, logits, targets, num_tokens)
        V = logits.shape[-1]
        x = logits.reshape(-1, V)                               # (N, V), N = all tokens
        t = xp.asarray(targets).reshape(-1)                     # (N,) a caller's host ids too
        if self.ignore_index is None:
            valid = xp.ones(t.shape, dtype=bool)                # (N,) every token counts
        else:
            valid = t != self.ignore_index                      # (N,)
            t = xp.where(valid, t, 0)                           # (N,) ignored rows read class 0
        n = int(valid.sum()) if num_tokens is None else num_tokens   # here, or by the host
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
        loss = xp.asarray(total / max(n, 1))                    # () on the device, no wait

        self.num_tokens = n
        self.saved = (p, t, valid, rows, logits.shape)
        return loss

    def backward(self, dloss=1.0):
        """dlogits = dloss * (p - q) / N on counted rows, 0 on ignored rows."""
        if self.saved is None:
            raise InputError("CrossEntropyLoss.backward: backward called before forward "
                             "(each forward allows one backward)")
        if self.saved[3] is None:                               # the fused forward's (one kernel)
            return fused_loss.backward(self, dloss)
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

    def check_inputs(self, logits, targets, num_tokens=None):
        """InputError/InputTypeError for logits that are not a float array (..., V), targets
        that are not integer ids of shape logits.shape[:-1] in [0, V) (or ignore_index), or a
        num_tokens that is not a count."""
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
        V, targets = logits.shape[-1], xp.asarray(targets)
        counted = targets if self.ignore_index is None else targets[targets != self.ignore_index]
        low, high = (int(counted.min()), int(counted.max())) if counted.size else (0, 0)
        if low < 0 or high >= V:
            allowed = f"class ids in [0, {V})" + (
                "" if self.ignore_index is None else f" or ignore_index={self.ignore_index}")
            raise InputError(message("targets", allowed, f"id {low if low < 0 else high}"))
        if num_tokens is not None:
            check_integer(num_tokens, "num_tokens", minimum=0)
