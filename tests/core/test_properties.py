"""Property-based tests: random small shapes and settings for every layer and both attentions.

For each drawn case: output and input-gradient shapes match, everything is finite, and the
float64 gradient check passes on a random sample of coordinates.
"""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from numpy_transformer.backend import default_dtype, xp
from numpy_transformer.gradcheck import gradcheck
from numpy_transformer.layers import (GELU, Dropout, Embedding, FeedForward, LayerNorm, Linear,
                                      MultiHeadAttention, MultiHeadLatentAttention,
                                      PositionalEncoding, ReLU, Softmax)

SETTINGS = settings(max_examples=50, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])   # the same examples every run
sizes = st.integers(1, 4)


def built(seed, make):
    """(make(rng) built in float64, rng), with rng = default_rng(seed) (drawn from after)."""
    rng = np.random.default_rng(seed)
    with default_dtype("float64"):
        return make(rng), rng


def on_device(arrays):
    """The drawn NumPy arrays on the active device; one passed twice (MLA's k as v) stays one."""
    moved = {}
    return tuple(moved.setdefault(id(a), xp.asarray(a)) for a in arrays)


def check(module, inputs, out_shape, kwargs=None, max_coords=8, seed=0):
    inputs = on_device(inputs)
    kwargs = {k: v if v is None else xp.asarray(v) for k, v in (kwargs or {}).items()}
    out = module.forward(*inputs, **(kwargs or {}))
    assert out.shape == out_shape and np.all(np.isfinite(out))
    module.zero_grad()
    grads = module.backward(np.ones_like(out))
    grads = () if grads is None else grads if isinstance(grads, tuple) else (grads,)
    for x, g in zip([x for x in inputs if x.dtype.kind == "f"], grads):
        assert g.shape == x.shape and np.all(np.isfinite(g))
    report = gradcheck(module, *inputs, forward_kwargs=kwargs, max_coords=max_coords, seed=seed)
    assert report.passed, str(report)


@SETTINGS
@given(B=sizes, T=sizes, D=st.integers(1, 6), out=st.integers(1, 5), bias=st.booleans(),
       seed=st.integers(0, 2**16))
def test_linear(B, T, D, out, bias, seed):
    layer, rng = built(seed, lambda rng: Linear(D, out, bias, rng=rng))
    check(layer, (rng.normal(size=(B, T, D)),), (B, T, out), seed=seed)


@SETTINGS
@given(B=sizes, T=sizes, V=st.integers(1, 9), D=st.integers(1, 6), scale=st.booleans(),
       seed=st.integers(0, 2**16))
def test_embedding(B, T, V, D, scale, seed):
    layer, rng = built(seed, lambda rng: Embedding(V, D, scale=scale, rng=rng))
    check(layer, (rng.integers(0, V, (B, T)),), (B, T, D), seed=seed)


@SETTINGS
@given(B=sizes, T=sizes, D=st.integers(1, 7), p=st.sampled_from([0.0, 0.2]),
       seed=st.integers(0, 2**16))
def test_positional_encoding(B, T, D, p, seed):
    layer, rng = built(seed, lambda rng: PositionalEncoding(D, max_len=8, dropout=p, rng=rng))
    check(layer, (rng.normal(size=(B, T, D)),), (B, T, D), seed=seed)


@SETTINGS
@given(B=sizes, T=sizes, D=st.integers(2, 7), seed=st.integers(0, 2**16))
def test_layer_norm(B, T, D, seed):
    layer, rng = built(seed, lambda rng: LayerNorm(D))
    layer.params["gamma"] += xp.asarray(rng.normal(size=D))
    layer.params["beta"] += xp.asarray(rng.normal(size=D))
    check(layer, (rng.normal(size=(B, T, D)),), (B, T, D), seed=seed)


@SETTINGS
@given(B=sizes, T=sizes, D=st.integers(1, 6), which=st.sampled_from(["relu", "gelu", "drop",
                                                                       "softmax"]),
       seed=st.integers(0, 2**16))
def test_elementwise_and_softmax(B, T, D, which, seed):
    rng = np.random.default_rng(seed)
    layer = {"relu": ReLU(), "gelu": GELU(), "drop": Dropout(0.3, rng=rng),
             "softmax": Softmax()}[which]
    check(layer, (3 * rng.normal(size=(B, T, D)),), (B, T, D), seed=seed)


@SETTINGS
@given(B=sizes, T=sizes, D=st.integers(1, 5), F=st.integers(1, 7),
       activation=st.sampled_from(["relu", "gelu"]), seed=st.integers(0, 2**16))
def test_feed_forward(B, T, D, F, activation, seed):
    layer, rng = built(seed, lambda rng: FeedForward(D, F, dropout=0.1, activation=activation,
                                                      rng=rng))
    check(layer, (rng.normal(size=(B, T, D)),), (B, T, D), seed=seed)


def attention_case(rng, B, Tq, Tk, H, Dh, mask_kind):
    D = H * Dh
    q, k = rng.normal(size=(B, Tq, D)), rng.normal(size=(B, Tk, D))
    if mask_kind == "none":
        mask = None
    elif mask_kind == "padding":
        mask = rng.random((B, 1, 1, Tk)) < 0.7          # may mask every key of a row
    else:
        mask = rng.random((B, 1, Tq, Tk)) < 0.5
    return D, q, k, mask


@SETTINGS
@given(B=sizes, Tq=sizes, Tk=sizes, H=st.integers(1, 3), Dh=st.integers(1, 3),
       mask_kind=st.sampled_from(["none", "padding", "random"]), p=st.sampled_from([0.0, 0.25]),
       seed=st.integers(0, 2**16))
def test_multi_head_attention(B, Tq, Tk, H, Dh, mask_kind, p, seed):
    rng = np.random.default_rng(seed)
    D, q, k, mask = attention_case(rng, B, Tq, Tk, H, Dh, mask_kind)
    with default_dtype("float64"):
        layer = MultiHeadAttention(D, H, dropout=p, rng=rng)
    check(layer, (q, k, rng.normal(size=k.shape)), (B, Tq, D), {"mask": mask}, seed=seed)
    assert np.all(np.isfinite(layer.attn_weights))


@SETTINGS
@given(B=sizes, Tq=sizes, Tk=sizes, H=st.integers(1, 3), Dh=st.integers(1, 3),
       L=st.integers(1, 4), mask_kind=st.sampled_from(["none", "padding", "random"]),
       bias=st.booleans(), seed=st.integers(0, 2**16))
def test_multi_head_latent_attention(B, Tq, Tk, H, Dh, L, mask_kind, bias, seed):
    rng = np.random.default_rng(seed)
    D, q, k, mask = attention_case(rng, B, Tq, Tk, H, Dh, mask_kind)
    with default_dtype("float64"):
        layer = MultiHeadLatentAttention(D, H, latent_dim=L, bias=bias, rng=rng)
    check(layer, (q, k, k), (B, Tq, D), {"mask": mask}, seed=seed)
