"""The proof table: a gradient-check case for every layer and model, beside the checker.

One list for all who check gradients: the tests (tests/core/test_gradcheck.py runs
every case) and the `gradcheck` command (tools/gradcheck_report.py prints a report
of every case; run in a student's copy, whose package this then is, it reports
stubbed parts as not implemented). The assignment grader does not use finite
differences: it compares a student's arrays with the reference's
(course/grading/scenarios_*.py). A case builds its module and inputs with
random vector parameters (`perturb`) so that zero biases and unit gains hide no
bug, and every axis its own size so that a swapped axis fails.

Tolerances: float64 central differences (`gradcheck`, fourth order). Layers
pass at 1e-7 and reach ~1e-9. Attention uses eps = 1e-3: at 1e-4 its stacked
rounding leaves ~3e-11 of noise on coordinates whose true gradient is 0
(w_k.bias: lesson 3 asks why it is 0), at 1e-3 a correct
backward still agrees to ~1e-9. Latent attention has more curvature (a rank-3
bottleneck): eps = 3e-4. Stacks and models are checked on sampled coordinates.
"""

from dataclasses import dataclass

import numpy as np

from .backend import xp
from .gradcheck import gradcheck, perturb
from .layers import (GELU, Dropout, Embedding, FeedForward, LayerNorm, Linear, LogSoftmax,
                     MultiHeadAttention, MultiHeadLatentAttention, PositionalEncoding, ReLU,
                     Softmax, SublayerConnection, TiedLinear)
from .layers.attention import (scaled_dot_product_attention,
                               scaled_dot_product_attention_backward)
from .masks import make_causal_mask
from .models import (GPT, BlockConfig, Decoder, Encoder, GPTConfig, TransformerConfig,
                     build_transformer)
from .module import Module


@dataclass(frozen=True)
class Case:
    name: str             # what is checked, e.g. "Linear(4, 5) on x (2, 3, 4)"
    group: str            # a name for a set of cases (cases_of), "" for none
    build: object         # build(rng) -> (module, inputs, forward_kwargs)
    seed: int = 0
    eps: float = 1e-4
    rtol: float = 1e-7
    max_coords: int = None

    def run(self):
        """The gradcheck report of this case (build it under default_dtype("float64"))."""
        rng = np.random.default_rng(self.seed)
        module, inputs, kwargs = self.build(rng)
        return gradcheck(module, *inputs, forward_kwargs=kwargs, eps=self.eps, rtol=self.rtol,
                         max_coords=self.max_coords, seed=self.seed, title=self.name)


def rand(rng, *shape, scale=1.0):
    return xp.asarray(scale * rng.normal(size=shape))


def padding(B, Tk, first_padded):
    """(B, 1, 1, Tk) mask: the last row keeps keys < first_padded only."""
    mask = xp.ones((B, 1, 1, Tk), dtype=bool)
    mask[-1, ..., first_padded:] = False
    return mask


def attention_module(dropout=None):
    """scaled_dot_product_attention and its backward as a Module of (q, k, v)."""
    class ScaledDotProductAttention(Module):
        def __init__(self):
            super().__init__()
            self.dropout, self.saved = dropout, None

        def forward(self, q, k, v, mask=None):
            out, attn = scaled_dot_product_attention(q, k, v, mask, self.dropout)
            self.saved = (q, k, v, attn)
            return out

        def backward(self, dout):
            return scaled_dot_product_attention_backward(dout, *self.saved_for_backward(),
                                                         self.dropout)

    return ScaledDotProductAttention()


def residual_half(rng, norm_first, half, D=8):
    """One half of a SublayerConnection as a module: `exit` (forward(x, f), backward giving
    the gradients of x and f) or `enter` (forward(x), backward giving that of x). Each half
    is checked alone: how a block joins them around its sublayer is the blocks' backward, an
    assignment part, which this file (carried by a student copy) does not spell out."""

    class Half(SublayerConnection):
        def __init__(self):
            super().__init__(D, 0.1, norm_first, rng=rng)

        def forward(self, *inputs):
            return getattr(self, half)(*inputs)

        def backward(self, dout):
            return getattr(self, f"{half}_backward")(dout)

    count = 2 if half == "exit" else 1                          # exit(x, f), enter(x)
    return perturb(Half(), rng), tuple(rand(rng, 2, 3, D) for _ in range(count)), {}


def qkv(rng, B=2, H=3, Tq=4, Tk=5, Dh=6):
    return rand(rng, B, H, Tq, Dh), rand(rng, B, H, Tk, Dh), rand(rng, B, H, Tk, Dh)


def cross_inputs(rng, D=10):
    """q (2, 3, D), k and v (2, 4, D) and a padding mask."""
    return rand(rng, 2, 3, D), rand(rng, 2, 4, D), rand(rng, 2, 4, D)


def make_mla(rng, dropout=0.0):
    return perturb(MultiHeadLatentAttention(10, 2, latent_dim=3, dropout=dropout, bias=True,
                                            rng=rng), rng)


def stack_case(rng, decoder, norm_first, attention):
    """An Encoder or Decoder of 2 blocks (D=8, H=2, F=12) and its inputs."""
    block = BlockConfig(d_model=8, num_heads=2, d_ff=12, dropout=0.0, norm_first=norm_first,
                        attention=attention)
    x, memory = rand(rng, 2, 3, 8), rand(rng, 2, 4, 8)
    pad = padding(2, 4, 3)
    if decoder:
        return (perturb(Decoder(block, 2, rng=rng), rng), (x, memory),
                {"src_mask": pad, "tgt_mask": make_causal_mask(3)})
    return perturb(Encoder(block, 2, rng=rng), rng), (memory,), {"mask": pad}


def transformer_case(rng, norm_first, attention, shared=False):
    """A whole Transformer (2 + 2 blocks, D=8) on ids with source padding; shared: one
    vocabulary and one matrix for both embeddings and the output projection."""
    B, S, T, V_src, V_tgt = 2, 5, 4, 13, 13 if shared else 11
    src = rng.integers(1, V_src, (B, S))
    src[1, 3:] = 0                                     # padding in the source
    tgt = rng.integers(1, V_tgt, (B, T))
    config = TransformerConfig(V_src, V_tgt, d_model=8, num_heads=2, d_ff=12,
                               num_encoder_layers=2, num_decoder_layers=2, dropout=0.0,
                               max_len=16, norm_first=norm_first, attention=attention,
                               seed=int(rng.integers(1 << 30)),
                               **(dict(tie_embeddings=True, share_embeddings=True)
                                  if shared else {}))
    return perturb(build_transformer(config), rng), (src, tgt), {}


def gpt_case(rng, norm_first, attention):
    """A GPT (2 blocks, D=8, tied embedding) on ids (2, 5)."""
    config = GPTConfig(11, d_model=8, num_heads=2, d_ff=12, num_layers=2, dropout=0.0,
                       max_len=16, norm_first=norm_first, attention=attention, latent_dim=3,
                       seed=int(rng.integers(1 << 30)))
    return perturb(GPT(config), rng), (rng.integers(1, 11, (2, 5)),), {}


def masked_softmax(rng):
    mask = xp.ones((2, 3, 5), dtype=bool)
    mask[0, 1, :] = False                                      # a row with nothing allowed
    mask[1, :, 3:] = False
    return Softmax(), (rand(rng, 2, 3, 5, scale=3.0),), {"mask": mask}


def fully_masked_attention(rng):
    mask = xp.ones((2, 1, 4, 5), dtype=bool)
    mask[1, 0, 2, :] = False                                   # query 2 of row 1 sees nothing
    mask[0, 0, :, 3:] = False
    return attention_module(), qkv(rng), {"mask": mask}


def self_attention(module, rng):
    x = rand(rng, 2, 4, 10)
    return module, (x, x, x), {"mask": make_causal_mask(4)}


ATTENTION = dict(eps=1e-3)
LATENT = dict(eps=3e-4)
STACK = dict(eps=3e-4, max_coords=12)
MODEL = dict(rtol=1e-6, max_coords=60)

LAYER_CASES = [
    Case("Linear(4, 5) on x (2, 3, 4)", "linear", seed=1, build=lambda rng: (
        perturb(Linear(4, 5, rng=rng), rng), (rand(rng, 2, 3, 4),), {})),
    Case("Linear(4, 3, bias=False) on x (6, 4)", "linear", seed=2, build=lambda rng: (
        Linear(4, 3, bias=False, rng=rng), (rand(rng, 6, 4),), {})),
    Case("TiedLinear(Embedding(7, 4)) on x (2, 3, 4)", "tied_linear", seed=3,
         build=lambda rng: (perturb(TiedLinear(Embedding(7, 4, rng=rng)), rng),
                            (rand(rng, 2, 3, 4),), {})),
    *[Case(f"Embedding(7, 4, scale={scale}), ids with repeats", "embedding", seed=4,
           build=lambda rng, scale=scale: (
               Embedding(7, 4, scale=scale, rng=rng),
               (xp.asarray([[1, 3, 1, 6, 3], [0, 1, 1, 2, 6]]),), {}))
      for scale in (True, False)],
    Case("PositionalEncoding(8, dropout 0.1) on x (2, 3, 8)", "", seed=5,
         build=lambda rng: (PositionalEncoding(8, 16, dropout=0.1, rng=rng),
                            (rand(rng, 2, 3, 8),), {})),
    Case("LayerNorm(5) on x (2, 3, 5)", "layernorm", seed=7, build=lambda rng: (
        perturb(LayerNorm(5), rng), (rand(rng, 2, 3, 5, scale=2.0) + 1.0,), {})),
    Case("LayerNorm(5) on x (4, 5)", "layernorm", seed=8, build=lambda rng: (
        perturb(LayerNorm(5), rng), (rand(rng, 4, 5),), {})),
    Case("ReLU on x (2, 3, 8)", "", seed=9, build=lambda rng: (
        ReLU(), (rand(rng, 2, 3, 8),), {})),
    Case("GELU on x (2, 3, 8)", "", seed=10, build=lambda rng: (
        GELU(), (rand(rng, 2, 3, 8),), {})),
    Case("Dropout(0.3) on x (2, 3, 8), mask frozen", "", seed=11, build=lambda rng: (
        Dropout(0.3, rng=rng), (rand(rng, 2, 3, 8),), {})),
    Case("softmax over the last axis of x (2, 3, 5)", "softmax", seed=12,
         build=lambda rng: (Softmax(), (rand(rng, 2, 3, 5, scale=3.0),), {})),
    Case("softmax over axis 1 of x (2, 4, 3)", "softmax", seed=13,
         build=lambda rng: (Softmax(axis=1), (rand(rng, 2, 4, 3, scale=3.0),), {})),
    Case("masked softmax with a fully masked row", "softmax_masked", seed=14,
         build=masked_softmax),
    Case("LogSoftmax on x (2, 3, 5)", "", seed=15, build=lambda rng: (
        LogSoftmax(), (rand(rng, 2, 3, 5, scale=3.0),), {})),
    Case("FeedForward(5, 7, relu, dropout 0.2 with its mask frozen)", "feedforward_relu",
         seed=16, build=lambda rng: (perturb(FeedForward(5, 7, dropout=0.2, rng=rng), rng),
                                     (rand(rng, 2, 3, 5),), {})),
    Case("FeedForward(5, 7, gelu)", "feedforward_gelu", seed=17, build=lambda rng: (
        perturb(FeedForward(5, 7, activation="gelu", rng=rng), rng),
        (rand(rng, 2, 3, 5),), {})),
    *[Case(f"SublayerConnection ({kind}-norm): {half}", "", seed=18,
           build=lambda rng, pre=kind == "pre", half=half: residual_half(rng, pre, half))
      for kind, half in (("post", "exit"), ("pre", "enter"), ("pre", "exit"))],  # post's enter is x
    Case("attention, q (2, 3, 4, 6), k and v (2, 3, 5, 6)", "attention", seed=30, **ATTENTION,
         build=lambda rng: (attention_module(), qkv(rng), {})),
    Case("attention with a padding mask", "attention", seed=31, **ATTENTION,
         build=lambda rng: (attention_module(), qkv(rng), {"mask": padding(2, 5, 3)})),
    Case("attention with a fully masked query row", "attention_masked", seed=32, **ATTENTION,
         build=fully_masked_attention),
    Case("attention with dropout 0.3 on the weights (mask frozen)", "attention_dropout",
         seed=33, **ATTENTION, build=lambda rng: (
             attention_module(Dropout(0.3, rng=rng)), qkv(rng), {})),
    Case("MultiHeadAttention(10, 2), q (2, 3, 10), different k and v (2, 4, 10), padding mask",
         "mha_cross", seed=34, **ATTENTION, build=lambda rng: (
             perturb(MultiHeadAttention(10, 2, rng=rng), rng), cross_inputs(rng),
             {"mask": padding(2, 4, 2)})),
    Case("causal self-attention (q = k = v), attention dropout 0.2", "mha_self", seed=35,
         **ATTENTION, build=lambda rng: self_attention(
             perturb(MultiHeadAttention(10, 2, dropout=0.2, rng=rng), rng), rng)),
    Case("MultiHeadLatentAttention(10, 2, latent_dim=3), q (2, 3, 10), memory (2, 4, 10), "
         "padding mask", "mla_cross", seed=36, **LATENT, build=lambda rng: (
             lambda q, mem: (make_mla(rng), (q, mem, mem), {"mask": padding(2, 4, 2)})
         )(rand(rng, 2, 3, 10), rand(rng, 2, 4, 10))),
    Case("causal latent self-attention, attention dropout 0.2", "mla_self", seed=37, **LATENT,
         build=lambda rng: self_attention(make_mla(rng, dropout=0.2), rng)),
]

STACK_CASES = [
    Case(f"{'Decoder' if decoder else 'Encoder'} (2 {'pre' if pre else 'post'}-norm "
         f"{attention} blocks){'; input 1 is the memory' if decoder else ''}",
         f"{'decoder' if decoder else 'encoder'}_{'pre' if pre else 'post'}_norm",
         seed=seed, **STACK,
         build=lambda rng, d=decoder, p=pre, a=attention: stack_case(rng, d, p, a))
    for seed, decoder, pre, attention in ((40, False, True, "mha"), (41, False, False, "mla"),
                                          (42, True, True, "mha"), (43, True, False, "mla"))
]

VARIANTS = ((False, "mha"), (False, "mla"), (True, "mha"), (True, "mla"))
MODEL_CASES = [
    *[Case(f"Transformer ({'pre' if pre else 'post'}-norm, {attention})", "", seed=50 + i,
           **MODEL, build=lambda rng, p=pre, a=attention: transformer_case(rng, p, a))
      for i, (pre, attention) in enumerate(VARIANTS)],
    Case("Transformer (pre-norm, mha, one matrix: source and target embeddings and output "
         "projection)", "", seed=54, **MODEL,
         build=lambda rng: transformer_case(rng, True, "mha", shared=True)),
    *[Case(f"GPT ({'pre' if pre else 'post'}-norm, {attention})", "", seed=55 + i,
           **MODEL, build=lambda rng, p=pre, a=attention: gpt_case(rng, p, a))
      for i, (pre, attention) in enumerate(VARIANTS)],
]

CASES = LAYER_CASES + STACK_CASES + MODEL_CASES


def cases_of(group):
    """The cases named `group`."""
    found = [case for case in CASES if case.group == group]
    if not found:
        raise KeyError(f"no gradient-check case in group {group!r}")
    return found
