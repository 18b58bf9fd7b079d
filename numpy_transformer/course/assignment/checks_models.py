"""Checks of the attention parts and of the encoder and decoder stacks.

Each part's own code runs with stand-ins for the sub-layers of other parts
(standins.py, scenarios_models.py), so a mistake costs points in its own part
only: the kernel with a stand-in softmax backward and dropout; multi-head and
latent attention with stand-in projections; the blocks with stand-in attention,
feed-forward, LayerNorm and dropout. A correct answer agrees with the
reference to rounding (~1e-15, pass at 1e-12). Every axis has its own size.
"""

from .registry import check, task

PADDING = [[[[True] * 5]], [[[True, True, True, False, False]]]]          # (2, 1, 1, 5)
NO_KEY = [[[[True, True, True, False, False]] * 4],
          [[[True] * 5, [True] * 5, [False] * 5, [True] * 5]]]           # (2, 1, 4, 5)


def stack_task(decoder, seed, **args):
    sizes = dict(d_model=4, batch=2, length=3)
    if decoder:
        sizes["memory_length"] = 5
    return task("decoder" if decoder else "encoder", seed, **sizes, **args)




def either(spec):
    """An attention task whose arrays may also match the package's own softmax backward
    (one written inline: the stand-in cannot replace it), not only the stand-in's."""
    return {**spec, "either": {"standin_softmax": False}}


CHECKS = [
    check("attention", "attention_gradients", 5, [
        either(task("attention", 30, shape_q=[2, 3, 4, 6], keys=5)),
        either(task("attention", 31, shape_q=[2, 3, 4, 6], keys=5, mask=PADDING))],
        "dv = A^T dO, dA = dO v^T, then softmax_backward, then dq = dS k / sqrt(Dh), "
        "dk = dS^T q / sqrt(Dh); call softmax_backward (graded apart: a stand-in here)"),
    check("attention", "attention_fully_masked_row", 3, [
        either(task("attention", 32, shape_q=[2, 1, 4, 6], keys=5, mask=NO_KEY))],
        "a query with no key allowed has all-zero weights: finite, zero gradients"),
    check("attention", "attention_dropout", 2, [
        either(task("attention", 33, shape_q=[2, 2, 3, 4], keys=5, dropout=True))],
        "with dropout, dv uses dropout(A) (reapply) and dA goes through dropout.backward"),

    check("multihead_attention", "mha_cross_attention", 4, [
        task("multihead_attention", 34, d_model=6, heads=2, batch=2, queries=3, keys=4)],
        "w_o backward, split heads, attention backward, merge heads, then w_q, w_k, w_v "
        "each on its own gradient; call the kernel's and the projections' backward (stand-ins "
        "here)"),
    check("multihead_attention", "mha_self_attention", 3, [
        task("multihead_attention", 35, d_model=6, heads=3, batch=2, queries=4, keys=4,
             self_attention=True)],
        "q = k = v: still three gradients, one per input"),
    check("multihead_attention", "mha_heads_and_accumulation", 3, [
        task("multihead_attention", 36, d_model=8, heads=4, batch=3, queries=2, keys=5,
             prefill=True)],
        "heads merged with the transpose back to (B, T, H*Dh); each child's backward once"),

    check("mla", "mla_project_backward", 6, [
        task("mla_project", 37, d_model=8, heads=2, latent=3, batch=2, queries=3, keys=4)],
        "dc = dK through w_k_decompress PLUS dV through w_v_decompress; dk = dc through "
        "w_kv_compress; dq through w_q; dv = 0 (the projections are stand-ins here)"),
    check("mla", "mla_other_sizes", 4, [
        task("mla_project", 38, d_model=6, heads=3, latent=2, batch=1, queries=2, keys=5)],
        "the same with other sizes"),

    check("encoder_stack", "encoder_block", 4, [
        stack_task(False, 40, layers=1, norm_first=False, block_only=True),
        stack_task(False, 41, layers=1, norm_first=True, block_only=True)],
        "the sublayers in reverse order; self-attention read h three times: dq + dk + dv "
        "(attention, feed-forward, norms and dropouts are stand-ins here)"),
    check("encoder_stack", "encoder_pre_norm", 3, [
        stack_task(False, 42, layers=2, norm_first=True)],
        "the final LayerNorm's backward first, then the blocks in reverse"),
    check("encoder_stack", "encoder_post_norm", 3, [
        stack_task(False, 43, layers=3, norm_first=False)],
        "the blocks in reverse order, each once"),

    check("decoder_stack", "decoder_block", 4, [
        stack_task(True, 44, layers=1, norm_first=False, block_only=True),
        stack_task(True, 45, layers=1, norm_first=True, block_only=True)],
        "feed-forward, cross-attention (dmemory = dk + dv), self-attention (dq + dk + dv); "
        "the children are stand-ins here"),
    check("decoder_stack", "decoder_pre_norm", 3, [
        stack_task(True, 46, layers=2, norm_first=True)],
        "final LayerNorm first; every block read memory: dmemory is the SUM over blocks"),
    check("decoder_stack", "decoder_post_norm", 3, [
        stack_task(True, 47, layers=3, norm_first=False)],
        "the blocks in reverse; dmemory summed over all 3 blocks"),
]
