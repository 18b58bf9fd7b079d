"""Multi-head latent attention (MLA): gradients, values, errors, PyTorch."""

import math

import numpy as np
import pytest

from numpy_transformer.backend import default_dtype
from numpy_transformer.gradcheck import assert_gradients_close
from numpy_transformer.layers.latent_attention import MultiHeadLatentAttention
from numpy_transformer.masks import make_causal_mask, make_padding_mask

B, H, DH, TQ, TK, L = 2, 3, 4, 5, 6, 7     # every axis its own size, so a swapped axis fails
D = H * DH
CHECK = dict(eps=1e-3, rtol=1e-7)           # why eps = 1e-3: see tests/test_attention.py


def make_mla(rng, latent_dim=L, bias=True, **kwargs):
    """An MLA with random (not zero) biases, so they hide no bug."""
    mla = MultiHeadLatentAttention(D, H, latent_dim, bias=bias, rng=rng, **kwargs)
    for name, param, _ in mla.named_parameters():
        if name.endswith("bias"):
            param += rng.normal(size=param.shape)
    return mla


def inputs(rng, b=B, tq=TQ, tk=TK):
    return rng.normal(size=(b, tq, D)), rng.normal(size=(b, tk, D))


def padding_mask(b=B, tk=TK):
    lengths = [tk, tk - 2][:b]
    ids = np.array([[1] * n + [0] * (tk - n) for n in lengths])
    return make_padding_mask(ids, pad_id=0)                      # (B, 1, 1, Tk)


def fully_masked_row_mask():
    mask = np.ones((B, 1, TQ, TK), dtype=bool)
    mask[0, 0, 3, :] = False                                     # query 3 of row 0 sees nothing
    mask[1, 0, :, :2] = False
    return mask


def reference_forward(mla, q, k, mask=None):
    """Straightforward MLA: explicit latent, then one head and one batch row at a time."""
    p = {name: param for name, param, _ in mla.named_parameters()}
    lin = lambda x, n: x @ p[f"{n}.weight"] + p.get(f"{n}.bias", 0.0)
    c = lin(k, "w_kv_compress")
    Q, K, V = lin(q, "w_q"), lin(c, "w_k_decompress"), lin(c, "w_v_decompress")
    (b, tq, d), tk, dh = Q.shape, K.shape[1], DH
    allowed = np.broadcast_to(True if mask is None else mask, (b, H, tq, tk))
    context, weights = np.zeros((b, tq, d)), np.zeros((b, H, tq, tk))
    for i in range(b):
        for h in range(H):
            cols = slice(h * dh, (h + 1) * dh)
            scores = Q[i, :, cols] @ K[i, :, cols].T / math.sqrt(dh)
            for t in range(tq):
                keep = allowed[i, h, t]
                if keep.any():
                    e = np.exp(scores[t, keep] - scores[t, keep].max())
                    weights[i, h, t, keep] = e / e.sum()
            context[i, :, cols] = weights[i, h] @ V[i, :, cols]
    return lin(context, "w_o"), weights


GRAD_CASES = {
    "no mask": dict(),
    "padding mask": dict(mask=padding_mask()),
    "causal mask": dict(tk=TQ, mask=make_causal_mask(TQ)),
    "fully masked query row": dict(mask=fully_masked_row_mask()),
    "batch 1": dict(b=1, mask=padding_mask(b=1)),
    "length 1": dict(tq=1, tk=1),
    "dropout": dict(dropout=0.3, mask=padding_mask()),
    "no bias (default)": dict(bias=False, mask=padding_mask()),
    "latent_dim 1": dict(latent_dim=1),
}


@pytest.mark.parametrize("case", GRAD_CASES)
def test_mla_gradients(float64, rng, case):
    kw = dict(GRAD_CASES[case])
    mask = kw.pop("mask", None)
    sizes = {key: kw.pop(key) for key in ("b", "tq", "tk") if key in kw}
    mla = make_mla(rng, **kw)
    q, k = inputs(rng, **sizes)
    dout = rng.normal(size=q.shape)
    # k passed as both k and v: the checker compares with dk + dv (and dv is 0).
    assert_gradients_close(mla, q, k, k, dout=dout, forward_kwargs={"mask": mask}, **CHECK)


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
    tk = TQ if mask_name == "causal" else TK
    mask = {"none": None, "padding": padding_mask(), "causal": make_causal_mask(TQ),
            "fully masked row": fully_masked_row_mask()}[mask_name]
    mla = make_mla(rng)
    q, k = inputs(rng, tk=tk)
    y = mla.forward(q, k, k, mask)
    y_ref, weights_ref = reference_forward(mla, q, k, mask)
    np.testing.assert_allclose(y, y_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(mla.attn_weights, weights_ref, rtol=1e-12, atol=1e-14)
    any_allowed = np.broadcast_to(True if mask is None else mask, weights_ref.shape).any(-1)
    np.testing.assert_allclose(mla.attn_weights.sum(axis=-1), np.where(any_allowed, 1.0, 0.0),
                               atol=1e-12)


def test_fully_masked_row_gives_zero_weights_and_bias_output(float64, rng):
    mla = make_mla(rng)
    q, k = inputs(rng)
    y = mla.forward(q, k, k, fully_masked_row_mask())
    assert np.all(mla.attn_weights[0, :, 3] == 0.0)
    np.testing.assert_allclose(y[0, 3], mla.w_o.params["bias"], rtol=1e-14, atol=1e-14)
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
    mla = make_mla(rng)
    q, k = inputs(rng)
    dout = rng.normal(size=q.shape)
    mla.forward(q, k, k, padding_mask())
    first = mla.backward(dout)
    once = {name: g.copy() for name, _, g in mla.named_parameters()}
    second = mla.backward(dout)
    for name, _, g in mla.named_parameters():
        np.testing.assert_allclose(g, 2 * once[name], rtol=1e-14, atol=1e-14)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


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
    with pytest.raises(ValueError, match=r"v: expected the very same array object as k"):
        mla.forward(q, k, k.copy())
    with pytest.raises(ValueError, match=r"k: expected last dimension 12 \(d_model\)"):
        mla.forward(q, k[..., :-1], k[..., :-1])
    with pytest.raises(ValueError, match=r"k: expected batch size 2"):
        mla.forward(q, k[:1], k[:1])
    with pytest.raises(TypeError, match=r"mask: expected a boolean array"):
        mla.forward(q, k, k, np.ones((B, 1, 1, TK)))
    with pytest.raises(ValueError, match=r"mask: expected a shape broadcastable"):
        mla.forward(q, k, k, np.ones((B, 1, TK, TK), bool))


def test_bad_construction_raises():
    with pytest.raises(ValueError, match=r"latent_dim: expected a positive integer, got 0"):
        MultiHeadLatentAttention(D, H, latent_dim=0)
    with pytest.raises(ValueError, match=r"latent_dim: expected a positive integer, got -3"):
        MultiHeadLatentAttention(D, H, latent_dim=-3)
    with pytest.raises(ValueError, match=r"d_model: expected a multiple of num_heads=5"):
        MultiHeadLatentAttention(12, 5)


def torch_mla(mla, q, k, mask, dout):
    """The same MLA hand-written in PyTorch autograd, from our weights."""
    import torch
    t = {name: torch.tensor(p, requires_grad=True) for name, p, _ in mla.named_parameters()}
    xs = {id(x): torch.tensor(x, requires_grad=True) for x in (q, k)}   # q is k: one tensor
    tq, tk = xs[id(q)], xs[id(k)]
    lin = lambda x, n: x @ t[f"{n}.weight"] + (t[f"{n}.bias"] if f"{n}.bias" in t else 0.0)
    heads = lambda x: x.reshape(x.shape[0], x.shape[1], H, DH).transpose(1, 2)
    c = lin(tk, "w_kv_compress")
    Q = heads(lin(tq, "w_q"))
    K, V = heads(lin(c, "w_k_decompress")), heads(lin(c, "w_v_decompress"))
    scores = Q @ K.transpose(-1, -2) / math.sqrt(DH)
    if mask is not None:
        scores = scores.masked_fill(~torch.from_numpy(np.asarray(mask)), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    y = lin((weights @ V).transpose(1, 2).reshape(q.shape), "w_o")
    (y * torch.from_numpy(dout)).sum().backward()
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
