"""Checks of the attention parts and of the encoder and decoder stacks.

The gradient-check cases (their inputs, sizes and finite-difference steps) are
shared with the tests and the `gradcheck` command: gradcheck_cases.py. Attention
is checked with eps = 1e-3 and latent attention with eps = 3e-4; a correct
answer reaches ~1e-9 (pass at 1e-7). Whole stacks are checked on a random
subset of coordinates with eps = 3e-4 and reach ~1e-8. Every axis has its own
size (B=2, H=3, Tq=4, Tk=5, Dh=6 for the attention kernel) so that a swapped
axis or a division by the batch size fails.
"""

from .checks_layers import FD, accumulation_check, case_check

STACK = "max rel err ~1e-8 on sampled coordinates (pass <= 1e-7)"


case_check("attention", 5, FD, "attention", "attention_gradients")
case_check("attention", 3, FD + "; all finite", "attention_masked", "attention_fully_masked_row")
case_check("attention", 2, FD, "attention_dropout", "attention_dropout")
case_check("multihead_attention", 4, FD, "mha_cross", "mha_cross_attention")
case_check("multihead_attention", 3, FD, "mha_self", "mha_self_attention")
accumulation_check("multihead_attention", 3, "mha_cross", "mha_accumulates")
case_check("mla", 5, FD, "mla_cross", "mla_cross_attention")
case_check("mla", 3, FD, "mla_self", "mla_self_attention")
accumulation_check("mla", 2, "mla_cross", "mla_accumulates")
case_check("encoder_stack", 6, STACK, "encoder_pre_norm", "encoder_pre_norm")
case_check("encoder_stack", 4, STACK, "encoder_post_norm", "encoder_post_norm")
case_check("decoder_stack", 6, STACK, "decoder_pre_norm", "decoder_pre_norm")
case_check("decoder_stack", 4, STACK, "decoder_post_norm", "decoder_post_norm")
