"""Boolean attention masks. True means "may attend"; masks broadcast to (B, H, T_q, T_k)."""

from .backend import xp
from .validation import check_integer, message
from .errors import InputError, InputTypeError


def make_padding_mask(ids, pad_id):
    """(B, 1, 1, S) mask that hides the key positions holding `pad_id`.

    ids: (B, S) integer token ids (host ids move to the device; the mask is made there).
    """
    if not hasattr(ids, "dtype") or ids.dtype.kind not in "iu":
        raise InputTypeError(message("ids", "an integer array of token ids",
                                getattr(ids, "dtype", type(ids).__name__)))
    if ids.ndim != 2:
        raise InputError(message("ids", "shape (B, S)", f"shape {tuple(ids.shape)}"))
    return (xp.asarray(ids) != pad_id)[:, None, None, :]     # (B, 1, 1, S)


def make_causal_mask(T):
    """(1, 1, T, T) mask that lets position t attend to positions <= t only."""
    check_integer(T, "T")
    return _causal(T)


def _causal(T):
    """`make_causal_mask` for a T already known good (the length of checked ids)."""
    return xp.tril(xp.ones((T, T), dtype=xp.bool_))[None, None]   # (1, 1, T, T)


def make_decoder_mask(tgt_ids, pad_id):
    """(B, 1, T, T) mask for decoder self-attention: causal AND not padding."""
    padding = make_padding_mask(tgt_ids, pad_id)                  # checks tgt_ids: (B, T)
    return padding & _causal(tgt_ids.shape[1])                    # (B, 1, T, T)
