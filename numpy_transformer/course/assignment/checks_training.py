"""Checks of the training parts: cross_entropy (the fused loss backward), adam and adamw.

Compared with the reference on the same inputs (registry.py): a correct answer
agrees to rounding (~1e-15 relative, pass at 1e-12). Adam's updates are
compared step by step, with gradients spread over six orders of magnitude so
that a missing bias correction or a wrong eps shows; AdamW's decay alone
(its region) is checked with two learning rates, as a schedule changes lr; whole
AdamW steps (with a stand-in decay) check that Adam's update adds no L2 term there.
"""

from .registry import check, task

TARGETS = [[3, 0, 1], [4, 2, 0]]                     # id 0 ignored when ignore_index=0: N = 4
HYPER = dict(lr=0.05, betas=[0.8, 0.95], eps=1e-6)
SHAPES = {"w": [3, 4], "b": [5]}

CHECKS = [
    check("cross_entropy", "cross_entropy_gradients", 4, [
        task("cross_entropy", 50, targets=TARGETS, vocab=5),
        task("cross_entropy", 51, targets=TARGETS, vocab=5, ignore_index=0)],
        "dlogits = (p - onehot) / N on counted rows, 0 on ignored rows; N counts only "
        "the rows that are not ignored"),
    check("cross_entropy", "cross_entropy_label_smoothing", 3, [
        task("cross_entropy", 52, targets=TARGETS, vocab=5, ignore_index=0, smoothing=0.2),
        task("cross_entropy", 53, targets=TARGETS, vocab=5, ignore_index=0, smoothing=0.2,
             uniform=True)],
        "q = (1 - eps) onehot + eps / V over all V classes; dlogits = (p - q) / N"),
    check("cross_entropy", "cross_entropy_dloss_and_all_ignored", 3, [
        task("cross_entropy", 54, targets=TARGETS, vocab=6, ignore_index=0, dloss=2.5),
        task("cross_entropy", 55, targets=[[0, 0], [0, 0]], vocab=4, ignore_index=0)],
        "backward(dloss) scales by dloss; with every target ignored the gradient is 0"),

    check("adam", "adam_updates", 4, [
        task("adam", 56, steps=3, hyper=dict(HYPER, weight_decay=0.0), shapes=SHAPES)],
        "m, v, then p -= lr m_hat / (sqrt(v_hat) + eps) with m_hat = m / (1 - b1^t), "
        "v_hat = v / (1 - b2^t); in place"),
    check("adam", "adam_l2_weight_decay", 3, [
        task("adam", 57, steps=3, hyper=dict(HYPER, weight_decay=0.1), shapes=SHAPES),
        task("adam", 61, steps=3, hyper=dict(HYPER, weight_decay=0.1), shapes=SHAPES,
             optimizer="AdamW")],
        "Adam's weight decay joins the gradient (g + wd p) before the moments; AdamW's "
        "does not (whole AdamW steps here, its decay a stand-in: decoupled only)"),
    check("adam", "adam_first_step", 3, [
        task("adam", 58, steps=1, hyper=dict(lr=1e-2, eps=1e-12), shapes={"w": [4, 5]})],
        "with bias correction the first step moves every coordinate by about lr * sign(g)"),

    check("adamw", "adamw_decay", 6, [
        task("adamw_decay", 59, lrs=[0.05, 0.01], weight_decay=0.1, shape=[3, 4])],
        "p <- p (1 - lr wd) in place, with the optimizer's current lr"),
    check("adamw", "adamw_decay_other_values", 4, [
        task("adamw_decay", 60, lrs=[1e-3, 0.2, 0.02], weight_decay=0.5, shape=[5])],
        "the same with other values of lr and weight_decay"),
]
