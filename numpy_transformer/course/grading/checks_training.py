"""Checks of the training parts: cross_entropy (the fused loss backward), adam and adamw.

Compared with the reference on the same inputs (parts.py): a correct answer
agrees to rounding (~1e-15 relative, pass at 1e-12). Adam's updates are
compared step by step, with gradients spread over six orders of magnitude so
that a missing bias correction or a wrong eps shows; AdamW's decay alone
(its region) is checked with two learning rates, as a schedule changes lr; whole
AdamW steps (with a stand-in decay) check that Adam's update adds no L2 term there.
"""

from ..parts import check, task

TARGETS = [[3, 0, 1, 2], [4, 2, 0, 1], [1, 3, 4, 0]]  # id 0 ignored when ignore_index=0: N = 9
HYPER = dict(lr=0.05, betas=[0.8, 0.95], eps=1e-6)
SHAPES = {"w": [3, 7], "b": [5]}

CHECKS = [
    check("cross_entropy", "cross_entropy_gradients", 4, [
        task("cross_entropy", 50, targets=TARGETS, vocab=5),
        task("cross_entropy", 51, targets=TARGETS, vocab=5, ignore_index=0)],
        "the gradient of the logits, without ignored targets and with some (ignore_index)"),
    check("cross_entropy", "cross_entropy_label_smoothing", 3, [
        task("cross_entropy", 52, targets=TARGETS, vocab=5, ignore_index=0, smoothing=0.2),
        task("cross_entropy", 53, targets=TARGETS, vocab=5, ignore_index=0, smoothing=0.2,
             uniform=True)],
        "the gradient of the logits with label smoothing, some targets ignored"),
    check("cross_entropy", "cross_entropy_dloss_and_all_ignored", 3, [
        task("cross_entropy", 54, targets=TARGETS, vocab=6, ignore_index=0, dloss=2.5),
        task("cross_entropy", 55, targets=[[0] * 4] * 3, vocab=5, ignore_index=0)],
        "backward(dloss) with a dloss other than 1, and a batch whose every target is ignored"),

    check("adam", "adam_updates", 4, [
        task("adam", 56, steps=3, hyper=dict(HYPER, weight_decay=0.0), shapes=SHAPES)],
        "several updates without weight decay, the parameters changed in place"),
    check("adam", "adam_l2_weight_decay", 3, [
        task("adam", 57, steps=3, hyper=dict(HYPER, weight_decay=0.1), shapes=SHAPES),
        task("adam", 61, steps=3, hyper=dict(HYPER, weight_decay=0.1), shapes=SHAPES,
             optimizer="AdamW")],
        "Adam's L2 weight decay, and whole AdamW steps (AdamW's own decay a stand-in here)"),
    check("adam", "adam_first_step", 3, [
        task("adam", 58, steps=1, hyper=dict(lr=1e-2, eps=1e-12), shapes={"w": [4, 5]})],
        "the very first update, with gradients of very different sizes"),

    check("adamw", "adamw_decay", 6, [
        task("adamw_decay", 59, lrs=[0.05, 0.01], weight_decay=0.1, shape=[3, 5])],
        "the decay alone, in place, with the learning rate changed between steps (as a "
        "schedule does)"),
    check("adamw", "adamw_decay_other_values", 4, [
        task("adamw_decay", 60, lrs=[1e-3, 0.2, 0.02], weight_decay=0.3, shape=[5])],
        "the same with other values of lr and weight_decay"),
]
