"""Checks of the attention parts and of the encoder and decoder stacks.

The gradient-check cases (their inputs, sizes and finite-difference steps) are
shared with the tests and the `gradcheck` command: gradcheck_cases.py. Attention
is checked with eps = 1e-3 and latent attention with eps = 3e-4; a correct
answer reaches ~1e-9 (pass at 1e-7). Whole stacks are checked on a random
subset of coordinates with eps = 3e-4 and reach ~1e-8. Every axis has its own
size (B=2, H=3, Tq=4, Tk=5, Dh=6 for the attention kernel) so that a swapped
axis or a division by the batch size fails.
"""

import numpy as np

from ..gradcheck import perturb
from ..gradcheck_cases import cross_inputs, make_mla, padding, rand
from .checks_layers import EXACT, FD, accumulates, cases_agree
from .registry import check

STACK = "max rel err ~1e-8 on sampled coordinates (pass <= 1e-7)"


@check("attention", 5, FD)
def attention_gradients(pkg):
    return cases_agree(pkg, "attention")


@check("attention", 3, FD + "; all finite")
def attention_fully_masked_row(pkg):
    return cases_agree(pkg, "attention_masked")


@check("attention", 2, FD)
def attention_dropout(pkg):
    return cases_agree(pkg, "attention_dropout")


@check("multihead_attention", 4, FD)
def mha_cross_attention(pkg):
    return cases_agree(pkg, "mha_cross")


@check("multihead_attention", 3, FD)
def mha_self_attention(pkg):
    return cases_agree(pkg, "mha_self")


@check("multihead_attention", 3, EXACT)
def mha_accumulates(pkg):
    rng = np.random.default_rng(35)
    mha = perturb(pkg.MultiHeadAttention(10, 2, rng=rng), rng)
    q, k, v = cross_inputs(pkg, rng)
    pad = padding(pkg, 2, 4, 2)
    return accumulates(pkg, mha, lambda: mha.forward(q, k, v, pad), rand(pkg, rng, 2, 3, 10),
                       "MultiHeadAttention")


@check("mla", 5, FD)
def mla_cross_attention(pkg):
    return cases_agree(pkg, "mla_cross")


@check("mla", 3, FD)
def mla_self_attention(pkg):
    return cases_agree(pkg, "mla_self")


@check("mla", 2, EXACT)
def mla_accumulates(pkg):
    rng = np.random.default_rng(38)
    mla = make_mla(pkg, rng)
    q, mem, _ = cross_inputs(pkg, rng)
    pad = padding(pkg, 2, 4, 2)
    return accumulates(pkg, mla, lambda: mla.forward(q, mem, mem, pad), rand(pkg, rng, 2, 3, 10),
                       "MultiHeadLatentAttention")


@check("encoder_stack", 6, STACK)
def encoder_pre_norm(pkg):
    return cases_agree(pkg, "encoder_pre_norm")


@check("encoder_stack", 4, STACK)
def encoder_post_norm(pkg):
    return cases_agree(pkg, "encoder_post_norm")


@check("decoder_stack", 6, STACK)
def decoder_pre_norm(pkg):
    return cases_agree(pkg, "decoder_pre_norm")


@check("decoder_stack", 4, STACK)
def decoder_post_norm(pkg):
    return cases_agree(pkg, "decoder_post_norm")
