"""Input checks shared by every public entry point, with one message format.

Each failed check raises `ValueError` (wrong value or shape) or `TypeError`
(wrong kind of thing) whose message names the argument, what was expected and
what was given:

    ValueError: x: expected last dimension 512 (d_model), got shape (2, 7, 256)

They run at the edges: configurations, the loss, the optimizers, and a module's
`check_inputs`, which calling it runs before `forward` (`layer(x)`, `model(src, tgt)`:
Module.__call__). A module's parts call each other's `forward`: nothing is checked twice.
They only look at shapes and dtypes (cheap), except `check_ids`, which reads the
ids once to find their range.
"""

import math
import numbers

import numpy

from .backend import xp
from .errors import InputError, InputTypeError


def message(name, expected, got):
    """The one error-message format: 'name: expected ..., got ...'."""
    return f"{name}: expected {expected}, got {got}"


def check_float_array(x, name, ndim=None, last_dim=None, last_dim_name=None):
    """x must be a floating array with `ndim` dims and last dimension `last_dim`."""
    if not hasattr(x, "shape") or not hasattr(x, "dtype"):
        raise InputTypeError(message(name, "an array", type(x).__name__))
    if x.dtype.kind != "f":
        raise InputTypeError(message(name, "a floating-point array", f"dtype {x.dtype}"))
    if ndim is not None and x.ndim != ndim:
        raise InputError(message(name, f"{ndim} dimensions", f"shape {tuple(x.shape)}"))
    if last_dim is not None and (x.ndim == 0 or x.shape[-1] != last_dim):
        what = f"last dimension {last_dim}" + (f" ({last_dim_name})" if last_dim_name else "")
        raise InputError(message(name, what, f"shape {tuple(x.shape)}"))
    if ndim is not None and ndim >= 2 and 0 in x.shape[:-1]:
        raise InputError(message(name, "a non-empty batch and sequence", f"shape {tuple(x.shape)}"))


def check_length(x, name, max_len, past=0):
    """x (B, T, ...) must fit a positional table of `max_len` positions after `past`
    earlier ones (a KV cache's): past + T <= max_len."""
    T = x.shape[1]
    if past + T > max_len:
        expected = (f"sequence length T <= max_len={max_len}" if not past else
                    f"sequence length T <= max_len={max_len} - {past} cached positions")
        raise InputError(message(name, expected, f"T={T} (shape {tuple(x.shape)})"))


def check_ids(ids, name, vocab_size, ndim=None):
    """ids must be an integer array with values in [0, vocab_size).

    The values are checked for host (NumPy) arrays only: reading a device array's
    min and max back would make every step wait for the GPU. Ids on a device were
    made by the data pipeline from checked host arrays (batching.py)."""
    if not hasattr(ids, "dtype"):
        raise InputTypeError(message(name, "an integer array of token ids", type(ids).__name__))
    if ids.dtype.kind not in "iu":
        raise InputTypeError(message(name, "an integer array of token ids", f"dtype {ids.dtype}"))
    if ndim is not None and ids.ndim != ndim:
        raise InputError(message(name, f"{ndim} dimensions", f"shape {tuple(ids.shape)}"))
    if ids.size == 0:
        raise InputError(message(name, "at least one token id", f"shape {tuple(ids.shape)}"))
    if not isinstance(ids, numpy.ndarray):
        return
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= vocab_size:
        bad = low if low < 0 else high
        raise InputError(message(name, f"token ids in [0, {vocab_size})", f"id {bad}"))


def id_array(ids, name):
    """`ids` as an array (a list of rows of ids is taken); InputError naming `name` for rows
    of different lengths (NumPy cannot make one array of them)."""
    try:
        return xp.asarray(ids)
    except (ValueError, TypeError) as err:
        raise InputError(message(name, "rows of token ids of one length (pad the shorter)",
                                 f"{type(ids).__name__}: {str(err)[:120]}")) from None


def check_mask(mask, name, shape):
    """mask must be boolean and broadcast to `shape` (B, H, T_q, T_k)."""
    if mask is None:
        return
    if not hasattr(mask, "dtype"):
        raise InputTypeError(message(name, "a boolean array", type(mask).__name__))
    if mask.dtype != xp.bool_:
        raise InputTypeError(message(name, "a boolean array (True = may attend)", f"dtype {mask.dtype}"))
    if mask.ndim != len(shape) or any(m not in (1, s) for m, s in zip(mask.shape, shape)):
        raise InputError(message(name, f"a shape broadcastable to {tuple(shape)}",
                                 f"shape {tuple(mask.shape)}"))


def _check_number(value, name, expected, kind=numbers.Real):
    """value must be a finite number of `kind` (a bool is not a number here)."""
    if isinstance(value, bool) or not isinstance(value, kind):
        raise InputTypeError(message(name, expected, repr(value)))
    if not math.isfinite(value):
        raise InputError(message(name, expected, value))


def check_integer(value, name, minimum=1):
    """value must be an integer >= minimum (a size, a step count)."""
    expected = f"an integer >= {minimum}"
    _check_number(value, name, expected, numbers.Integral)
    if value < minimum:
        raise InputError(message(name, expected, value))


def check_positive(value, name):
    """value must be a finite real number > 0 (a rate, a norm)."""
    _check_number(value, name, "a number > 0")
    if value <= 0:
        raise InputError(message(name, "a number > 0", value))


def check_nonnegative(value, name):
    """value must be a finite real number >= 0."""
    _check_number(value, name, "a number >= 0")
    if value < 0:
        raise InputError(message(name, "a number >= 0", value))


def check_unit_interval(value, name):
    """value must be a real number in [0, 1) (a dropout rate, label smoothing, a beta)."""
    _check_number(value, name, "a number in [0, 1)")
    if not 0 <= value < 1:
        raise InputError(message(name, "a number in [0, 1)", value))


def check_bool(value, name):
    """value must be True or False (the string "False" is true to `if`; never guessed)."""
    if not isinstance(value, bool):
        raise InputTypeError(message(name, "True or False", repr(value)))


def check_choice(value, name, choices):
    if value not in choices:
        raise InputError(message(name, f"one of {tuple(choices)}", repr(value)))


def check_aligned(outputs, references, name, what):
    """(list(outputs), list(references)): one reference per output, and at least one output."""
    outputs, references = list(outputs), list(references)
    if len(outputs) != len(references):
        raise InputError(message("references", f"{len(outputs)} references (one per {what})",
                                 len(references)))
    if not outputs:
        raise InputError(message(name, f"at least one {what}", "an empty list"))
    return outputs, references
