"""Sinusoidal positional encoding, added to the embeddings, then dropout."""

import math

from ..backend import get_default_dtype, xp
from ..validation import check_float_array, check_length, check_integer, check_unit_interval
from ..module import Module
from .dropout import Dropout


def sinusoidal_table(max_len, d_model):
    """The (max_len, D) table of the paper (section 3.5), one row per position.

    Table: PE(pos, 2i)   = sin(pos / 10000^(2i/D))
           PE(pos, 2i+1) = cos(pos / 10000^(2i/D))
        1 / 10000^(2i/D) is computed as exp(2i * -(log(10000) / D)), which stays
        accurate for large D.

    Columns: an odd D gets one more sine column than cosine columns.
    Built in float64, returned in the default dtype.
    """
    # BEGIN SOLUTION positional_encoding
    # HINT: sin in the even columns, cos in the odd ones, angle pos / 10000^(2i/D); float64
    position = xp.arange(max_len, dtype=xp.float64)[:, None]          # (max_len, 1)
    div_term = xp.exp(xp.arange(0, d_model, 2, dtype=xp.float64)
                      * -(math.log(10000.0) / d_model))               # (ceil(D/2),)
    angles = position * div_term                                      # (max_len, ceil(D/2))
    pe = xp.empty((max_len, d_model), dtype=xp.float64)               # (max_len, D)
    pe[:, 0::2] = xp.sin(angles)
    pe[:, 1::2] = xp.cos(angles[:, : d_model // 2])
    return pe.astype(get_default_dtype())
    # END SOLUTION


class PositionalEncoding(Module):
    """Adds the fixed sinusoidal table to x, then applies dropout: y = Dropout(x + PE[:T]).

    Shapes: x (B, T, D), PE (max_len, D), y (B, T, D); needs T <= max_len.
    offset: x's first position (decoding with a KV cache feeds the tokens after `offset`
        earlier ones): y = Dropout(x + PE[offset : offset + T]), needs offset + T <= max_len.
    Backward: the table is a constant (not a parameter), so dx = Dropout backward of dy.
    Saved: none here; the child `dropout` keeps its mask.
    Checks: x and its length, when called (`pos(x)`, Module.__call__); a model checks
        the lengths of its ids at its own entry.
    """

    def __init__(self, d_model, max_len=5000, dropout=0.0, *, rng=None):
        super().__init__()
        check_integer(d_model, "d_model")
        check_integer(max_len, "max_len")
        check_unit_interval(dropout, "dropout")
        self.d_model, self.max_len = d_model, max_len
        self.pe = sinusoidal_table(max_len, d_model)                  # (max_len, D)
        self.dropout = Dropout(dropout, rng=rng)

    def forward(self, x, offset=0):
        T = x.shape[1]
        pe = self.pe[offset:offset + T].astype(x.dtype, copy=False)   # (T, D)
        return self.dropout.forward(x + pe)                           # (B, T, D)

    def backward(self, dy):
        # BEGIN SOLUTION positional_encoding
        # HINT: PE is a constant: only the dropout after the sum has a backward
        return self.dropout.backward(dy)                              # (B, T, D)
        # END SOLUTION

    def check_inputs(self, x, offset=0):
        check_float_array(x, "x", ndim=3, last_dim=self.d_model, last_dim_name="d_model")
        check_length(x, "x", self.max_len, offset)
