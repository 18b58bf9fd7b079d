"""Checks of the layer parts: linear, embedding, positional_encoding, layernorm, softmax,
gelu, dropout and feedforward.

Every check compares the student's arrays with the reference's on the same
inputs (registry.py): a correct backward agrees to rounding (~1e-15 relative,
pass at 1e-12); a wrong one is off by 1e-3 or more. Every axis has its own
size, so a swapped or wrongly summed axis shows, and parameter gradients start
from random values where a check says "prefilled", so a gradient written with
= instead of += shows. A check that compares gradients gives nothing for
zeros: a blank answer scores 0.
"""

from .registry import check, task

IDS = [[1, 3, 1, 6, 3], [0, 1, 1, 2, 6]]            # repeated ids in a row and across rows
MASK = [[[True] * 5, [False] * 5, [True] * 5],
        [[True, True, True, False, False]] * 3]       # (2, 3, 5): row (0, 1) fully masked

CHECKS = [
    check("linear", "linear_gradients", 4, [
        task("linear", 1, d_in=4, d_out=5, lead=[2, 3]),
        task("linear", 2, d_in=4, d_out=3, lead=[6], bias=False)],
        "dx = dy W^T, dW = x^T dy and db = the sum of dy over EVERY leading axis (here B and T)"),
    check("linear", "linear_accumulates", 3, [
        task("linear", 3, d_in=3, d_out=4, lead=[2, 5], prefill=True)],
        "grads already held earlier contributions: ADD into them with +=, never overwrite"),
    check("linear", "tied_linear_shares_its_gradient", 3, [
        task("tied_linear", 4, vocab=7, d_model=4, lead=[2, 3])],
        "TiedLinear must ADD dE = dy^T x into the array it shares with the embedding"),

    check("embedding", "embedding_gradients", 4, [
        task("embedding", 5, vocab=7, d_model=4, ids=IDS, scale=True),
        task("embedding", 6, vocab=7, d_model=4, ids=IDS, scale=False)],
        "row v of dW is the SUM of multiplier * dy over every position holding id v"),
    check("embedding", "embedding_repeated_ids", 3, [
        task("embedding", 7, vocab=5, d_model=3, ids=[[2, 2, 2], [2, 2, 2]], scale=False)],
        "a token id that occurs 6 times gets all 6 rows of dy (fancy-index += keeps one)"),
    check("embedding", "embedding_accumulates", 3, [
        task("embedding", 8, vocab=7, d_model=4, ids=IDS, prefill=True)],
        "grads already held earlier contributions (a tied output layer): ADD with +="),

    check("positional_encoding", "sinusoidal_table", 6, [
        task("positional_encoding", 9, d_model=8, max_len=12, lead=[2, 3]),
        task("positional_encoding", 10, d_model=7, max_len=5, lead=[1, 4])],
        "PE(pos, 2i) = sin(pos / 10000^(2i/D)), PE(pos, 2i+1) = cos(the same angle); "
        "an odd D has one more sine column", keys=("table",)),
    check("positional_encoding", "positional_encoding_backward", 4, [
        task("positional_encoding", 11, d_model=6, max_len=9, lead=[2, 4])],
        "PE is a constant: dx is the dropout's backward of dy (a stand-in dropout here)",
        keys=("dx",)),

    check("layernorm", "layernorm_gradients", 6, [
        task("layernorm", 12, d_model=5, lead=[2, 3], shift=1.0),
        task("layernorm", 13, d_model=5, lead=[4])],
        "dx = r (g - mean(g) - xhat mean(g xhat)) with g = dy gamma; dgamma, dbeta summed "
        "over every leading axis"),
    check("layernorm", "layernorm_accumulates", 4, [
        task("layernorm", 14, d_model=6, lead=[3, 2], prefill=True)],
        "grads already held earlier contributions: ADD with +="),

    check("softmax", "softmax_gradients", 4, [
        task("softmax", 15, shape=[2, 3, 5])],
        "dx = p (dp - sum(dp p)) along the softmax axis"),
    check("softmax", "softmax_other_axis", 3, [
        task("softmax", 16, shape=[2, 4, 3], axis=1),
        task("softmax", 17, shape=[4, 2, 3], axis=0)],
        "the sum runs along `axis`, which need not be the last one"),
    check("softmax", "softmax_fully_masked_row", 3, [
        task("softmax", 18, shape=[2, 3, 5], mask=MASK)],
        "a fully masked row has p = 0, so its gradient is 0 (finite, never NaN)"),

    check("gelu", "gelu_gradients", 6, [
        task("gelu", 19, shape=[2, 3, 8])],
        "dy * (0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 A x^2)), t = tanh(c (x + A x^3))"),
    check("gelu", "gelu_large_inputs", 4, [
        task("gelu", 20, shape=[3, 7], scale=6.0)],
        "the same formula for large |x| (tanh saturates; stays finite)"),

    check("dropout", "dropout_backward", 4, [
        task("dropout", 21, p=0.3, shape=[2, 3, 8], mask_seed=11)],
        "dx = dy * m / (1 - p) with forward's kept mask m and the same scale",
        keys=("out", "dx")),
    check("dropout", "dropout_reapply", 2, [
        task("dropout", 22, p=0.5, shape=[3, 4], mask_seed=12)],
        "reapply(x) = x * m / (1 - p): the last forward's mask, no new draw", keys=("reapplied",)),
    check("dropout", "dropout_scale_and_eval", 4, [
        task("dropout", 23, p=0.75, shape=[4, 6], mask_seed=13),
        task("dropout", 24, p=0.4, shape=[2, 5], mask_seed=14, training=False)],
        "the 1 / (1 - p) scale (here 4); in eval mode dropout is the identity: dx = dy"),

    check("feedforward", "feedforward_backward", 6, [
        task("feedforward", 25, d_model=5, d_ff=7, lead=[2, 3])],
        "linear_2, dropout, activation, linear_1: their backward in reverse order (the children "
        "are stand-ins here: call their backward)"),
    check("feedforward", "feedforward_gelu", 4, [
        task("feedforward", 26, d_model=4, d_ff=6, lead=[3], activation="gelu")],
        "the same order with a GELU activation"),
]
