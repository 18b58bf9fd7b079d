"""Multi-head latent attention (MLA): gradients, values, errors, PyTorch."""

import numpy as np
import pytest
import attention_helpers
from attention_helpers import (B, CHECK, D, GRAD_CASES, H, TK, TQ, assert_case_gradients,
                               check_gradients_double, check_weights, fully_masked_row_mask, host,
                               linear, masks, padding_mask, parameters, reference_output,
                               split_case, torch_heads, torch_linear, torch_params,
                               with_random_vectors)

from numpy_transformer.backend import default_dtype, xp
from numpy_transformer.gradcheck import assert_gradients_close
from numpy_transformer.layers.latent_attention import MultiHeadLatentAttention
from numpy_transformer.masks import make_causal_mask

from doors import raises_naming

L = 7                                       # the latent size: its own size, too
# Latent attention has more curvature than MHA (keys and values through a rank-L
# bottleneck): eps = 3e-4 keeps the truncation error ~1e-9 (at 1e-3 it can reach 1e-7).
CHECK = dict(CHECK, eps=3e-4)
GRAD_CASES = {**GRAD_CASES, "latent_dim 1": dict(latent_dim=1)}


def make_mla(rng, latent_dim=L, bias=True, **kwargs):
    mla = MultiHeadLatentAttention(D, H, latent_dim, bias=bias, rng=rng, **kwargs)
    return with_random_vectors(mla, rng)


def inputs(rng, b=B, tq=TQ, tk=TK):
    """q (b, tq, D) and k (b, tk, D): MLA reads its keys and values both from k."""
    return attention_helpers.inputs(rng, b, tq, tk)[:2]


def reference_forward(mla, q, k, mask=None):
    """Straightforward MLA: explicit latent, then reference_heads, then W_o."""
    p = parameters(mla)
    c = linear(p, "w_kv_compress", k)
    Q, K, V = linear(p, "w_q", q), linear(p, "w_k_decompress", c), linear(p, "w_v_decompress", c)
    return reference_output(p, Q, K, V, mask, mla.num_heads)


@pytest.mark.parametrize("case", GRAD_CASES)
def test_mla_gradients(float64, rng, case):
    kw, sizes, mask = split_case(GRAD_CASES[case])
    assert_case_gradients(make_mla(rng, **kw), rng, sizes, mask, kv_from_k=True, check=CHECK)


def test_mla_self_attention_gradients(float64, rng):
    mla = make_mla(rng, dropout=0.2)
    x = rng.normal(size=(B, TQ, D))
    y = mla.forward(x, x, x, make_causal_mask(TQ))
    dq, dk, dv = mla.backward(np.ones_like(y))
    assert dq.shape == dk.shape == x.shape and np.all(dv == 0.0)
    assert_gradients_close(mla, x, x, x, forward_kwargs={"mask": make_causal_mask(TQ)},
                           **CHECK)


@pytest.mark.parametrize("mask_name", ["none", "padding", "causal", "fully masked row"])
def test_mla_forward_matches_reference(float64, rng, mask_name):
    mask, tk = masks()[mask_name]
    mla = make_mla(rng)
    q, k = inputs(rng, tk=tk)
    y = mla.forward(q, k, k, mask)
    y_ref, weights_ref = reference_forward(mla, q, k, mask)
    np.testing.assert_allclose(y, y_ref, rtol=1e-12, atol=1e-12)
    check_weights(mla, weights_ref, mask)


def test_fully_masked_row_gives_zero_weights_and_bias_output(float64, rng):
    mla = make_mla(rng)
    q, k = inputs(rng)
    y = mla.forward(q, k, k, fully_masked_row_mask())
    assert np.all(mla.attn_weights[1, :, 2] == 0.0)           # query 2 of row 1 sees nothing
    np.testing.assert_allclose(y[1, 2], mla.w_o.params["bias"], rtol=1e-14, atol=1e-14)
    grads = mla.backward(rng.normal(size=y.shape))
    assert all(np.all(np.isfinite(g)) for g in grads)
    assert all(np.all(np.isfinite(g)) for _, _, g in mla.named_parameters())


def test_shapes_defaults_and_latent_size(rng):
    mla = MultiHeadLatentAttention(D, H, rng=rng)
    assert mla.latent_dim == D // 4 and "bias" not in mla.w_q.params
    assert mla.w_kv_compress.params["weight"].shape == (D, D // 4)
    assert mla.w_k_decompress.params["weight"].shape == (D // 4, D)
    assert mla.w_v_decompress.params["weight"].shape == (D // 4, D)
    names = [name for name, _ in mla.named_children()]
    assert names == ["w_q", "w_kv_compress", "w_k_decompress", "w_v_decompress", "w_o",
                     "dropout"]


def test_two_backward_calls_double_the_gradients(float64, rng):
    q, k = inputs(rng)
    check_gradients_double(make_mla(rng), (q, k, k, padding_mask()), rng.normal(size=q.shape))


def test_float32_stays_float32(rng):
    with default_dtype("float32"):
        mla = MultiHeadLatentAttention(D, H, L, dropout=0.1, bias=True, rng=rng)
    q, k = (x.astype(np.float32) for x in inputs(rng))
    y = mla.forward(q, k, k, padding_mask())
    assert y.dtype == np.float32 and mla.attn_weights.dtype == np.float32
    assert all(g.dtype == np.float32 for g in mla.backward(np.ones_like(y)))
    assert all(g.dtype == np.float32 for _, _, g in mla.named_parameters())


def test_bad_inputs_raise_clear_errors(float64, rng):
    mla = make_mla(rng)
    q, k = inputs(rng)
    with raises_naming(ValueError, "v", "k"):
        mla(q, k, k.copy())
    with raises_naming(ValueError, "k", "12", "d_model"):
        mla(q, k[..., :-1], k[..., :-1])
    with raises_naming(ValueError, "k", "2"):
        mla(q, k[:1], k[:1])
    with raises_naming(TypeError, "mask", "float64"):
        mla(q, k, k, xp.ones((B, 1, 1, TK)))
    with raises_naming(ValueError, "mask", "(2, 1, 6, 6)"):
        mla(q, k, k, xp.ones((B, 1, TK, TK), bool))


def test_bad_construction_raises():
    with raises_naming(ValueError, "latent_dim", "0"):
        MultiHeadLatentAttention(D, H, latent_dim=0)
    with raises_naming(ValueError, "latent_dim", "-3"):
        MultiHeadLatentAttention(D, H, latent_dim=-3)
    with raises_naming(ValueError, "d_model", "num_heads=5", "d_model=12"):
        MultiHeadLatentAttention(12, 5)


def torch_mla(mla, q, k, mask, dout):
    """The same MLA hand-written in PyTorch autograd, from our weights."""
    import torch
    t = torch_params(mla)
    xs = {id(x): torch.tensor(host(x), requires_grad=True) for x in (q, k)}   # q is k: one
    tq, tk = xs[id(q)], xs[id(k)]
    c = torch_linear(t, "w_kv_compress", tk)
    Q, K, V = (torch_linear(t, "w_q", tq), torch_linear(t, "w_k_decompress", c),
               torch_linear(t, "w_v_decompress", c))
    y = torch_linear(t, "w_o", torch_heads(Q, K, V, mask))
    (y * torch.from_numpy(host(dout))).sum().backward()
    return y.detach().numpy(), tq.grad.numpy(), tk.grad.numpy(), {
        name: tp.grad.numpy() for name, tp in t.items()}


@pytest.mark.torch
@pytest.mark.parametrize("case", ["padding", "causal self-attention", "no bias"])
def test_mla_matches_pytorch(float64, rng, case):
    pytest.importorskip("torch")
    mla = make_mla(rng, bias=case != "no bias")
    q, k = inputs(rng)
    mask = padding_mask()
    if case == "causal self-attention":
        q = k = q
        mask = make_causal_mask(TQ)
    dout = rng.normal(size=q.shape)
    y = mla.forward(q, k, k, mask)
    dq, dk, dv = mla.backward(dout)
    if q is k:
        dq = dk = dq + dk + dv
    y_t, dq_t, dk_t, param_grads_t = torch_mla(mla, q, k, mask, dout)
    close = lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    close(y, y_t)
    close(dq, dq_t)
    close(dk, dk_t)
    assert np.all(dv == 0.0)
    for name, _, g in mla.named_parameters():
        close(g, param_grads_t[name])
