"""Checks of the layer parts: linear, embedding, positional_encoding, layernorm, softmax,
gelu, dropout and feedforward.

Every check compares the student's arrays with the reference's on the same
inputs (parts.py): a correct backward agrees to rounding (~1e-15 relative,
pass at 1e-12); a wrong one is off by 1e-3 or more. Every axis has its own
size, so a swapped or wrongly summed axis shows, and parameter gradients start
from random values where a check says "prefilled", so a gradient written with
= instead of += shows. A check that compares gradients gives nothing for
zeros: a blank answer scores 0.
"""

from ..parts import check, task

IDS = [[1, 3, 1, 6, 3], [0, 1, 1, 2, 6],
       [5, 4, 0, 0, 2]]                # repeated ids in a row and across rows
MASK = [[[True] * 5, [False] * 5, [True] * 5, [True] * 5],
        [[True, True, True, False, False]] * 4,
        [[True, False, True, True, True]] * 4]        # (3, 4, 5): row (0, 1) fully masked

CHECKS = [
    check("linear", "linear_gradients", 4, [
        task("linear", 1, d_in=6, d_out=5, lead=[3, 4]),
        task("linear", 2, d_in=5, d_out=3, lead=[7], bias=False)],
        "the gradients of the input, the weight and the bias, for inputs with two leading axes "
        "and with one, with a bias and without"),
    check("linear", "linear_accumulates", 3, [
        task("linear", 3, d_in=7, d_out=5, lead=[3, 4], prefill=True)],
        "gradients already held in grads (prefilled here) are kept"),
    check("linear", "tied_linear_shares_its_gradient", 3, [
        task("tied_linear", 4, vocab=7, d_model=5, lead=[3, 4])],
        "the gradient of the tied weight, in the array TiedLinear shares with the embedding"),

    check("embedding", "embedding_gradients", 4, [
        task("embedding", 5, vocab=7, d_model=6, ids=IDS, scale=True),
        task("embedding", 6, vocab=7, d_model=6, ids=IDS, scale=False)],
        "the gradient of the embedding table, with the scale and without, for ids repeated "
        "within a row and across rows"),
    check("embedding", "embedding_repeated_ids", 3, [
        task("embedding", 7, vocab=6, d_model=5, ids=[[2, 2], [2, 2], [2, 2]], scale=False)],
        "every repeated id: one id at every position of the batch"),
    check("embedding", "embedding_accumulates", 3, [
        task("embedding", 8, vocab=7, d_model=6, ids=IDS, prefill=True)],
        "gradients already held (a tied output layer's) are kept"),

    check("positional_encoding", "sinusoidal_table", 6, [
        task("positional_encoding", 9, d_model=8, max_len=12, lead=[3, 4]),
        task("positional_encoding", 10, d_model=7, max_len=5, lead=[1, 4])],
        "the sinusoidal table's values at every position and column, for an even and an odd "
        "d_model", keys=("table",)),
    check("positional_encoding", "positional_encoding_backward", 4, [
        task("positional_encoding", 11, d_model=6, max_len=9, lead=[3, 4])],
        "the gradient of the input through the positional encoding (its dropout a stand-in "
        "here)",
        keys=("dx",)),

    check("layernorm", "layernorm_gradients", 6, [
        task("layernorm", 12, d_model=5, lead=[3, 4], shift=1.0),
        task("layernorm", 13, d_model=5, lead=[4])],
        "the gradients of the input, gamma and beta, for inputs with two leading axes and "
        "with one, off-centre inputs included"),
    check("layernorm", "layernorm_accumulates", 4, [
        task("layernorm", 14, d_model=6, lead=[3, 2], prefill=True)],
        "gradients already held in grads (prefilled here) are kept"),

    check("softmax", "softmax_gradients", 4, [
        task("softmax", 15, shape=[3, 4, 5])],
        "the gradient of the input along the last axis"),
    check("softmax", "softmax_other_axis", 3, [
        task("softmax", 16, shape=[3, 4, 6], axis=1),
        task("softmax", 17, shape=[4, 3, 5], axis=0)],
        "the gradient along `axis` when it is not the last axis"),
    check("softmax", "softmax_fully_masked_row", 3, [
        task("softmax", 18, shape=[3, 4, 5], mask=MASK)],
        "a fully masked row: its gradient is finite, never NaN"),

    check("gelu", "gelu_gradients", 6, [
        task("gelu", 19, shape=[3, 4, 7])],
        "the gradient of the input of GELU's tanh form over a range of inputs"),
    check("gelu", "gelu_large_inputs", 4, [
        task("gelu", 20, shape=[3, 7], scale=6.0)],
        "the same for large |x|, where tanh saturates: finite values"),

    check("dropout", "dropout_backward", 4, [
        task("dropout", 21, p=0.3, shape=[3, 4, 8], mask_seed=11)],
        "the gradient of the input through dropout in training mode, with the mask of the "
        "forward pass",
        keys=("out", "dx")),
    check("dropout", "dropout_reapply", 2, [
        task("dropout", 22, p=0.4, shape=[3, 5], mask_seed=12)],
        "reapply(x): the last forward pass's mask applied again, no new draw", keys=("reapplied",)),
    check("dropout", "dropout_scale_and_eval", 4, [
        task("dropout", 23, p=0.75, shape=[5, 6], mask_seed=13),
        task("dropout", 24, p=0.4, shape=[3, 5], mask_seed=14, training=False)],
        "the gradient at a large drop probability, and in eval mode"),

    check("feedforward", "feedforward_backward", 6, [
        task("feedforward", 25, d_model=5, d_ff=7, lead=[3, 4])],
        "the gradient of the input through the whole block (its children are stand-ins here: "
        "each child's own backward must be called)"),
    check("feedforward", "feedforward_gelu", 4, [
        task("feedforward", 26, d_model=6, d_ff=8, lead=[3], activation="gelu")],
        "the same with a GELU activation"),
]
