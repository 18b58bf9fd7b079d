"""Gradient-check every layer and model on small random inputs, in float64.

Used by `python -m numpy_transformer gradcheck`, by the tests and by the
gradient-checking lesson. Each case builds a fresh module (with non-default
parameters, so that zero biases or unit gains hide nothing) and its inputs.
"""

import time

import numpy as np

from .backend import default_dtype
from .gradcheck import gradcheck


def _perturb(module, rng, scale=0.3):
    """Add noise to every vector parameter (biases, LayerNorm gain/shift)."""
    for _, param, _ in module.named_parameters():
        if param.ndim == 1:
            param += scale * rng.normal(size=param.shape)
    return module


def layer_cases(rng):
    """[(name, module, inputs, forward_kwargs)] covering every layer kind."""
    from .layers import (GELU, Dropout, Embedding, FeedForward, LayerNorm, Linear, LogSoftmax,
                         MultiHeadAttention, MultiHeadLatentAttention, PositionalEncoding, ReLU,
                         Softmax, SublayerConnection)
    from .masks import make_causal_mask

    B, T, S, D, H, F = 2, 3, 4, 8, 2, 12
    x = rng.normal(size=(B, T, D))
    mem = rng.normal(size=(B, S, D))
    pad = np.ones((B, 1, 1, S), dtype=bool)
    pad[1, ..., 2:] = False

    class Residual(SublayerConnection):
        """A SublayerConnection around a FeedForward, as a one-input module."""

        def __init__(self, norm_first):
            super().__init__(D, 0.1, norm_first, rng=rng)
            self.ff = FeedForward(D, F, rng=rng)

        def forward(self, x):
            return super().forward(x, self.ff.forward)

        def backward(self, dout):
            return super().backward(dout, self.ff.backward)

    return [
        ("Linear", _perturb(Linear(D, 5, rng=rng), rng), (x,), {}),
        ("Embedding", Embedding(11, D, rng=rng), (rng.integers(0, 11, (B, T)),), {}),
        ("PositionalEncoding", PositionalEncoding(D, 16, dropout=0.1, rng=rng), (x,), {}),
        ("LayerNorm", _perturb(LayerNorm(D), rng), (x,), {}),
        ("ReLU", ReLU(), (x,), {}),
        ("GELU", GELU(), (x,), {}),
        ("Dropout", Dropout(0.3, rng=rng), (x,), {}),
        ("Softmax", Softmax(), (3 * x,), {}),
        ("LogSoftmax", LogSoftmax(), (3 * x,), {}),
        ("FeedForward (relu)", _perturb(FeedForward(D, F, rng=rng), rng), (x,), {}),
        ("FeedForward (gelu)", _perturb(FeedForward(D, F, activation="gelu", rng=rng), rng),
         (x,), {}),
        ("SublayerConnection (post-norm)", _perturb(Residual(False), rng), (x,), {}),
        ("SublayerConnection (pre-norm)", _perturb(Residual(True), rng), (x,), {}),
        ("MultiHeadAttention (causal self)", _perturb(MultiHeadAttention(D, H, rng=rng), rng),
         (x, x, x), {"mask": make_causal_mask(T)}),
        ("MultiHeadAttention (cross, padding)", _perturb(MultiHeadAttention(D, H, rng=rng), rng),
         (x, mem, mem), {"mask": pad}),
        ("MultiHeadLatentAttention (cross)",
         _perturb(MultiHeadLatentAttention(D, H, latent_dim=3, bias=True, rng=rng), rng),
         (x, mem, mem), {"mask": pad}),
    ]


def model_cases(rng):
    """[(name, model, inputs, forward_kwargs)]: the whole Transformer in all four variants,
    and the decoder-only GPT."""
    from .models import GPT, GPTConfig, TransformerConfig, build_transformer

    B, S, T, V_src, V_tgt = 2, 5, 4, 13, 11
    src = rng.integers(1, V_src, (B, S))
    src[1, 3:] = 0                                     # padding in the source
    tgt = rng.integers(1, V_tgt, (B, T))
    cases = []
    for norm_first in (False, True):
        for attention in ("mha", "mla"):
            config = TransformerConfig(V_src, V_tgt, d_model=8, num_heads=2, d_ff=12,
                                       num_encoder_layers=2, num_decoder_layers=2,
                                       dropout=0.0, max_len=16, norm_first=norm_first,
                                       attention=attention, seed=int(rng.integers(1 << 30)))
            model = _perturb(build_transformer(config), rng)
            name = f"Transformer ({'pre' if norm_first else 'post'}-norm, {attention})"
            cases.append((name, model, (src, tgt), {}))
    gpt = GPT(GPTConfig(V_tgt, d_model=8, num_heads=2, d_ff=12, num_layers=2, dropout=0.0,
                        max_len=16, seed=int(rng.integers(1 << 30))))
    cases.append(("GPT (pre-norm, mha)", _perturb(gpt, rng), (tgt,), {}))
    return cases


def run_report(models=True, seed=0, max_coords=60, out=print):
    """Print a gradient-check report for every layer (and model); return True if all pass."""
    rng = np.random.default_rng(seed)
    all_passed = True
    with default_dtype("float64"):
        cases = layer_cases(rng) + (model_cases(rng) if models else [])
        for name, module, inputs, kwargs in cases:
            start = time.perf_counter()
            is_model = name.startswith(("Transformer", "GPT"))
            report = gradcheck(module, *inputs, forward_kwargs=kwargs, title=name,
                               rtol=1e-6 if is_model else 1e-7,
                               max_coords=max_coords if is_model else None)
            all_passed &= report.passed
            status = "ok  " if report.passed else "FAIL"
            out(f"{status} {name:<40} max rel err {report.max_rel_error:9.2e}  "
                f"({sum(r.checked for r in report.rows)} coords, "
                f"{time.perf_counter() - start:.1f} s)")
            if not report.passed:
                out(str(report))
    out("all gradients agree with finite differences" if all_passed else "SOME CHECKS FAILED")
    return all_passed
