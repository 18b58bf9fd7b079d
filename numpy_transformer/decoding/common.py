"""What every decoding method shares: dropout off while decoding, the KV cache to fill, and
one error, not a stream of NumPy warnings, when the model's activations are not finite."""

import warnings
from contextlib import contextmanager

from ..backend import xp
from ..validation import check_bool, message
from ..errors import InputError
from ..kv_cache import KVCache


class NotFinite(InputError):
    """The model's activations overflowed while decoding (weights too large for its dtype):
    nothing it decodes means anything. The command line names the checkpoint (`about`)."""
    about = "checkpoint"


def finite(call, *args, **kwargs):
    """call(*args, **kwargs) (a model's encode, or a step's logits) with NumPy's overflow
    warnings held back; NotFinite, said once, if a value it returns is NaN or infinite."""
    with warnings.catch_warnings():     # NumPy's overflow warnings (a device gives none)
        warnings.simplefilter("ignore", RuntimeWarning)
        values = call(*args, **kwargs)
    if not bool(xp.isfinite(values).all()):
        raise NotFinite(f"the model's activations are not finite while decoding (NaN or infinity: "
                        f"its weights overflow {values.dtype}); it cannot decode")
    return values


@contextmanager
def eval_mode(model):
    """Dropout off while decoding; the model's train/eval mode restored after."""
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


def start_cache(use_cache, cache):
    """The KVCache to fill: the caller's (to inspect it afterwards), a new one, or None."""
    check_bool(use_cache, "use_cache")
    if cache is None:
        return KVCache() if use_cache else None
    if not use_cache:
        raise InputError(message("cache", "None when use_cache=False", "a KVCache"))
    if cache.length or cache.layers:
        raise InputError(message("cache", "an empty KVCache", repr(cache)))
    return cache
