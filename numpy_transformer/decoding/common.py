"""What every decoding method shares: dropout off while decoding, the KV cache to fill."""

from contextlib import contextmanager

from ..validation import check_bool, message
from ..errors import InputError
from ..kv_cache import KVCache


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
