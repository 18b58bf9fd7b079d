"""Checks of the attention parts and of the encoder and decoder stacks.

Each part's own code runs with stand-ins for the sub-layers of other parts
(standins.py, scenarios_models.py), so a mistake costs points in its own part
only: the kernel with a stand-in softmax backward and dropout; multi-head and
latent attention with stand-in projections (multi-head attention with a stand-in
kernel and dropout too, on in one task); the blocks with stand-in attention,
feed-forward, LayerNorm and dropout. A correct answer agrees with the
reference to rounding (~1e-15, pass at 1e-12). Every axis has its own size.
"""

from ..parts import check, task

PADDING = [[[[True] * 5]], [[[True, True, True, False, False]]],
           [[[True, False, True, True, False]]]]                           # (3, 1, 1, 5)
NO_KEY = [[[[True, True, True, False, False]] * 4],
          [[[True] * 5, [True] * 5, [False] * 5, [True] * 5]],
          [[[False, True, True, True, True]] * 4]]                        # (3, 1, 4, 5)


def stack_task(decoder, seed, **args):
    sizes = dict(d_model=6, batch=3, length=4)
    if decoder:
        sizes["memory_length"] = 5
    return task("decoder" if decoder else "encoder", seed, **sizes, **args)




def either(spec):
    """An attention task whose arrays may also match the package's own softmax backward
    (one written inline: the stand-in cannot replace it), not only the stand-in's."""
    return {**spec, "either": {"standin_softmax": False}}


CHECKS = [
    check("attention", "attention_gradients", 5, [
        either(task("attention", 30, shape_q=[3, 2, 4, 6], keys=5)),
        either(task("attention", 31, shape_q=[3, 2, 4, 6], keys=5, mask=PADDING))],
        "the gradients of q, k and v, with and without a padding mask (softmax_backward is "
        "graded apart: a stand-in here, so it must be called)"),
    check("attention", "attention_fully_masked_row", 3, [
        either(task("attention", 32, shape_q=[3, 1, 4, 6], keys=5, mask=NO_KEY))],
        "a query with no key allowed: its gradients are finite, never NaN"),
    check("attention", "attention_dropout", 2, [
        either(task("attention", 33, shape_q=[3, 2, 4, 7], keys=5, dropout=True))],
        "the gradients of q, k and v with dropout on the attention weights (a stand-in dropout)"),

    check("multihead_attention", "mha_cross_attention", 4, [
        task("multihead_attention", 34, d_model=8, heads=2, batch=3, queries=5, keys=7)],
        "cross-attention: the gradients of the query, key and value inputs and of every "
        "projection (the kernel and the projections are stand-ins here: their own backward "
        "must be called)"),
    check("multihead_attention", "mha_self_attention", 3, [
        task("multihead_attention", 35, d_model=6, heads=3, batch=4, queries=5, keys=5,
             self_attention=True)],
        "self-attention, one tensor passed as query, key and value: three gradients, one per "
        "argument"),
    check("multihead_attention", "mha_heads_and_accumulation", 3, [
        task("multihead_attention", 36, d_model=8, heads=4, batch=3, queries=2, keys=5,
             prefill=True, dropout=True)],
        "more heads, dropout on the attention weights, gradients already held kept, each "
        "child's backward called once"),

    check("mla", "mla_project_backward", 6, [
        task("mla_project", 37, d_model=8, heads=2, latent=6, batch=3, queries=5, keys=4)],
        "project_backward's gradients of the query, key and value inputs (the projections "
        "are stand-ins here)"),
    check("mla", "mla_other_sizes", 4, [
        task("mla_project", 38, d_model=6, heads=3, latent=2, batch=1, queries=4, keys=5)],
        "the same with other sizes"),

    check("encoder_stack", "encoder_block", 4, [
        stack_task(False, 40, layers=1, norm_first=False, block_only=True),
        stack_task(False, 41, layers=1, norm_first=True, block_only=True)],
        "one encoder block's input gradient, post-norm and pre-norm (attention, feed-forward, "
        "norms and dropouts are stand-ins here)"),
    check("encoder_stack", "encoder_pre_norm", 3, [
        stack_task(False, 42, layers=2, norm_first=True)],
        "a pre-norm stack with its final LayerNorm: the input gradient"),
    check("encoder_stack", "encoder_post_norm", 3, [
        stack_task(False, 43, layers=3, norm_first=False)],
        "a post-norm stack of several blocks: the input gradient"),

    check("decoder_stack", "decoder_block", 4, [
        stack_task(True, 44, layers=1, norm_first=False, block_only=True),
        stack_task(True, 45, layers=1, norm_first=True, block_only=True)],
        "one decoder block's gradients of its input and of the encoder memory, post-norm and "
        "pre-norm (the children are stand-ins here)"),
    check("decoder_stack", "decoder_pre_norm", 3, [
        stack_task(True, 46, layers=2, norm_first=True)],
        "a pre-norm stack with its final LayerNorm: the gradients of the input and of the memory"),
    check("decoder_stack", "decoder_post_norm", 3, [
        stack_task(True, 47, layers=3, norm_first=False)],
        "a post-norm stack of several blocks: the gradients of the input and of the memory"),
]
