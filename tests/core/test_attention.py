"""Scaled dot-product and multi-head attention: gradients, values, masks, errors, PyTorch."""

import numpy as np
import pytest
from attention_helpers import (B, CHECK, D, DH, GRAD_CASES, H, TK, TQ, assert_case_gradients,
                               check_gradients_double, check_weights, fully_masked_row_mask, host,
                               inputs, linear, masks, padding_mask, parameters, reference_output,
                               split_case, torch_heads, torch_linear, torch_params,
                               with_random_vectors)

from numpy_transformer.backend import default_dtype, xp
from numpy_transformer.gradcheck import assert_gradients_close
from numpy_transformer.layers.attention import (
    MultiHeadAttention, MultiHeadAttentionBase, merge_heads, scaled_dot_product_attention,
    scaled_dot_product_attention_backward, split_heads)
from numpy_transformer.masks import make_causal_mask
from numpy_transformer.module import Module

from doors import raises_naming


def make_mha(rng, **kwargs):
    return with_random_vectors(MultiHeadAttention(D, H, rng=rng, **kwargs), rng)


def reference_forward(mha, q, k, v, mask=None):
    """Straightforward MHA: projections, then reference_heads, then W_o."""
    p = parameters(mha)
    Q, K, V = linear(p, "w_q", q), linear(p, "w_k", k), linear(p, "w_v", v)
    return reference_output(p, Q, K, V, mask, mha.num_heads)


@pytest.mark.parametrize("case", GRAD_CASES)
def test_mha_gradients(float64, rng, case):
    kw, sizes, mask = split_case(GRAD_CASES[case])
    assert_case_gradients(make_mha(rng, **kw), rng, sizes, mask)


def test_mha_self_attention_gradients(float64, rng):
    mha = make_mha(rng, dropout=0.2)
    x = rng.normal(size=(B, TQ, D))
    y = mha.forward(x, x, x, make_causal_mask(TQ))
    grads = mha.backward(np.ones_like(y))
    assert len(grads) == 3 and all(g.shape == x.shape for g in grads)
    # x passed three times: the checker compares with the sum of the three gradients.
    # The checker's own eps (1e-4): at CHECK's 1e-3 the truncation error of the difference
    # reaches 1.1e-7 on w_q's bias for some dropout masks (the simulator's, for one).
    assert_gradients_close(mha, x, x, x, forward_kwargs={"mask": make_causal_mask(TQ)},
                           **{**CHECK, "eps": 1e-4})


def test_fully_masked_row_gives_zero_weights_and_bias_output(float64, rng):
    mha = make_mha(rng)
    q, k, v = inputs(rng)
    mask = fully_masked_row_mask()
    y = mha.forward(q, k, v, mask)
    assert np.all(mha.attn_weights[1, :, 2] == 0.0)
    np.testing.assert_allclose(y[1, 2], mha.w_o.params["bias"], rtol=1e-14, atol=1e-14)
    dq, dk, dv = mha.backward(rng.normal(size=y.shape))
    assert all(np.all(np.isfinite(g)) for g in (dq, dk, dv))
    assert np.all(dq[1, 2] == 0.0)
    assert all(np.all(np.isfinite(g)) for _, _, g in mha.named_parameters())


@pytest.mark.parametrize("mask_name", ["none", "padding", "causal", "fully masked row"])
def test_mha_forward_matches_reference(float64, rng, mask_name):
    mask, tk = masks()[mask_name]
    mha = make_mha(rng)
    q, k, v = inputs(rng, tk=tk)
    y = mha.forward(q, k, v, mask)
    y_ref, weights_ref = reference_forward(mha, q, k, v, mask)
    np.testing.assert_allclose(y, y_ref, rtol=1e-12, atol=1e-12)
    check_weights(mha, weights_ref, mask)


def test_key_bias_gets_no_gradient(float64, rng):
    # b_k adds q . b_k to every score of a query's row, and softmax ignores a
    # constant added to a whole row: the key bias can never change the output.
    mha = make_mha(rng)
    mha.forward(*inputs(rng), padding_mask())
    mha.backward(rng.normal(size=(B, TQ, D)))
    np.testing.assert_allclose(mha.w_k.grads["bias"], 0.0, atol=1e-13)


class SDPA(Module):
    """The functional core wrapped as a module, so the checker can test it alone."""

    def forward(self, q, k, v, mask=None):
        self.saved = (q, k, v)
        out, self.attn = scaled_dot_product_attention(q, k, v, mask)
        return out

    def backward(self, dout):
        return scaled_dot_product_attention_backward(dout, *self.saved, self.attn)


@pytest.mark.parametrize("mask", [None, fully_masked_row_mask()], ids=["none", "masked"])
def test_scaled_dot_product_attention_gradients(rng, mask):
    q, k, v = (rng.normal(size=(B, H, t, DH)) for t in (TQ, TK, TK))
    assert_gradients_close(SDPA(), q, k, v, forward_kwargs={"mask": mask}, **CHECK)


def test_split_and_merge_heads(rng):
    x = rng.normal(size=(B, TQ, D))
    heads = split_heads(x, H)                                    # (B, H, T, Dh)
    assert heads.shape == (B, H, TQ, DH)
    np.testing.assert_array_equal(heads[:, 1], x[:, :, DH:2 * DH])
    np.testing.assert_array_equal(merge_heads(heads), x)


def test_two_backward_calls_double_the_gradients(float64, rng):
    q, k, v = inputs(rng)
    check_gradients_double(make_mha(rng), (q, k, v, padding_mask()), rng.normal(size=q.shape))


def test_float32_stays_float32(rng):
    with default_dtype("float32"):
        mha = MultiHeadAttention(D, H, dropout=0.1, rng=rng)
    q, k, v = (x.astype(np.float32) for x in inputs(rng))
    y = mha.forward(q, k, v, padding_mask())
    assert y.dtype == np.float32 and mha.attn_weights.dtype == np.float32
    grads = mha.backward(np.ones_like(y))
    assert all(g.dtype == np.float32 for g in grads)
    assert all(g.dtype == np.float32 for _, _, g in mha.named_parameters())


def test_one_seed_gives_one_model():
    a = MultiHeadAttention(D, H, rng=np.random.default_rng(7)).state_dict()
    b = MultiHeadAttention(D, H, rng=np.random.default_rng(7)).state_dict()
    assert a.keys() == b.keys() and all(np.array_equal(a[n], b[n]) for n in a)


BAD_INPUTS = {
    "q rank": (lambda q, k, v: (q[0], k, v, None), ValueError, ("q", "3")),
    "k last dim": (lambda q, k, v: (q, k[..., :-1], v, None), ValueError,
                   ("k", "12", "d_model")),
    "v batch": (lambda q, k, v: (q, k, v[:1], None), ValueError, ("v", "2")),
    "k batch": (lambda q, k, v: (q, k[:1], v[:1], None), ValueError, ("k", "2")),
    "v length": (lambda q, k, v: (q, k, v[:, :-1], None), ValueError, ("v", "6")),
    "integer q": (lambda q, k, v: (q.astype(int), k, v, None), TypeError,
                  ("q", "int64")),
    "mixed dtypes": (lambda q, k, v: (q, k.astype(np.float32), v, None), TypeError,
                     ("k", "float64", "float32")),
    "float mask": (lambda q, k, v: (q, k, v, xp.ones((B, 1, 1, TK))), TypeError,
                   ("mask", "float64")),
    "mask shape": (lambda q, k, v: (q, k, v, xp.ones((B, 1, 1, TK + 1), bool)), ValueError,
                   ("mask", "(2, 3, 5, 6)")),
    "mask rank": (lambda q, k, v: (q, k, v, xp.ones((TQ, TK), bool)), ValueError,
                  ("mask", "(5, 6)")),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_inputs_raise_clear_errors(float64, rng, case):
    make_args, error, words = BAD_INPUTS[case]
    mha = make_mha(rng)
    with raises_naming(error, *words):
        mha(*make_args(*inputs(rng)))


def test_bad_construction_raises():
    with raises_naming(ValueError, "d_model", "num_heads=5", "d_model=12"):
        MultiHeadAttention(12, 5)
    with raises_naming(ValueError, "num_heads", "0"):
        MultiHeadAttention(12, 0)
    with raises_naming(ValueError, "dropout", "[0, 1)", "1.0"):
        MultiHeadAttention(12, 3, dropout=1.0)


@pytest.mark.parametrize("attention", ["mha", "mla"])
def test_inputs_are_checked_once_at_the_entry(rng, monkeypatch, attention):
    """Called on its own, attention checks q, k, v and the mask once (its Linears' forward
    trusts them); inside a model, which checked its own inputs, its forward checks nothing
    again, and the model names a bad mask itself."""
    from numpy_transformer.models import GPT, GPTConfig, TransformerConfig, build_transformer
    calls, check = [], MultiHeadAttentionBase.check_inputs
    monkeypatch.setattr(MultiHeadAttentionBase, "check_inputs",
                        lambda self, *args: calls.append(1) or check(self, *args))
    mha = make_mha(rng)
    mha(*inputs(rng))
    assert calls == [1]
    sizes = dict(d_model=8, num_heads=2, d_ff=12, max_len=8, attention=attention)
    model = build_transformer(TransformerConfig(11, 11, num_encoder_layers=1,
                                                num_decoder_layers=1, **sizes))
    lm = GPT(GPTConfig(11, num_layers=1, **sizes))
    src = xp.asarray(rng.integers(1, 11, (2, 5)))
    calls.clear()
    model(src, src[:, :4])
    lm(src)
    assert calls == []
    with raises_naming(ValueError, "tgt_mask", "(2, 2, 4, 4)"):
        model(src, src[:, :4], tgt_mask=xp.ones((1, 1, 4, 5), bool))
    with raises_naming(ValueError, "mask", "(2, 2, 5, 5)"):
        lm(src, xp.ones((2, 1, 1, 4), bool))


def torch_mha(mha, q, k, v, mask, dout):
    """The same MHA in PyTorch autograd, from our weights; returns y and the gradients."""
    import torch
    t = torch_params(mha)
    xs = {id(x): torch.tensor(host(x), requires_grad=True) for x in (q, k, v)}  # q is k is v
    Q, K, V = (torch_linear(t, n, xs[id(x)]) for x, n in ((q, "w_q"), (k, "w_k"), (v, "w_v")))
    y = torch_linear(t, "w_o", torch_heads(Q, K, V, mask))
    (y * torch.from_numpy(host(dout))).sum().backward()
    grads = {name: tp.grad.numpy() for name, tp in t.items()}
    return y.detach().numpy(), [xs[id(x)].grad.numpy() for x in (q, k, v)], grads


@pytest.mark.torch
@pytest.mark.parametrize("case", ["padding", "causal self-attention", "fully masked row",
                                  "no bias"])
def test_mha_matches_pytorch(float64, rng, case):
    pytest.importorskip("torch")
    mha = make_mha(rng, bias=case != "no bias")
    q, k, v = inputs(rng)
    mask = fully_masked_row_mask() if case == "fully masked row" else padding_mask()
    if case == "causal self-attention":
        q = k = v = q
        mask = make_causal_mask(TQ)
    dout = rng.normal(size=q.shape)
    y = mha.forward(q, k, v, mask)
    dq, dk, dv = mha.backward(dout)
    if q is k:
        dq, dk, dv = dq + dk + dv, dq + dk + dv, dq + dk + dv
    y_t, input_grads_t, param_grads_t = torch_mha(mha, q, k, v, mask, dout)
    close = lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    close(y, y_t)
    for ours, theirs in zip((dq, dk, dv), input_grads_t):
        close(ours, theirs)
    for name, _, g in mha.named_parameters():
        close(g, param_grads_t[name])
