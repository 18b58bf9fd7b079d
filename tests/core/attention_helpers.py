"""What the attention and latent-attention tests share: sizes, masks, inputs, the
gradient cases, a loop-by-loop reference attention and its PyTorch twin.

Inputs and masks are made on the active device (xp), as the data pipeline makes them; the
references and PyTorch read NumPy copies (to_numpy)."""

import math

import numpy as np

from numpy_transformer.backend import to_numpy, xp
from numpy_transformer.gradcheck import assert_gradients_close, perturb
from numpy_transformer.masks import make_causal_mask, make_padding_mask

B, H, DH, TQ, TK = 2, 3, 4, 5, 6      # every axis its own size, so a swapped axis fails
D = H * DH
# eps = 1e-3, not the checker's 1e-4: attention stacks enough float64 rounding that
# eps = 1e-4 leaves ~3e-11 of noise, too much for coordinates whose true gradient is
# 0 (w_k.bias: adding the same number to every score of a row leaves softmax unchanged).
# At 1e-3 the O(eps^4) truncation is ~1e-12 and the noise ~3e-12.
CHECK = dict(eps=1e-3, rtol=1e-7)


def host(x):
    """A NumPy copy of a device array or mask (None stays None), for the references."""
    return None if x is None else to_numpy(x)


def with_random_vectors(layer, rng):
    """The layer with random (not zero) biases, so they hide no bug."""
    return perturb(layer, rng, scale=1.0)


def inputs(rng, b=B, tq=TQ, tk=TK):
    """q (b, tq, D), k and v (b, tk, D)."""
    return rng.normal(size=(b, tq, D)), rng.normal(size=(b, tk, D)), rng.normal(size=(b, tk, D))


def padding_mask(b=B, tk=TK):
    """(b, 1, 1, tk): row 0 keeps every key, row 1 all but the last two, row 2 one."""
    lengths = [tk, tk - 2, 1][:b]
    ids = xp.asarray([[1] * n + [0] * (tk - n) for n in lengths])
    return make_padding_mask(ids, pad_id=0)                      # (b, 1, 1, tk)


def fully_masked_row_mask():
    """(B, 1, TQ, TK): query 2 of row 1 sees no key; row 0 sees the first 4 keys."""
    mask = xp.ones((B, 1, TQ, TK), dtype=bool)
    mask[1, 0, 2, :] = False
    mask[0, 0, :, 4:] = False
    return mask


def masks():
    """The masks every forward is compared under: {name: (mask, Tk)}."""
    return {"none": (None, TK), "padding": (padding_mask(), TK),
            "causal": (make_causal_mask(TQ), TQ), "fully masked row": (fully_masked_row_mask(), TK)}


# Gradient cases: constructor keywords, input sizes and the mask.
GRAD_CASES = {
    "no mask": dict(),
    "padding mask": dict(mask=padding_mask()),
    "causal mask": dict(tk=TQ, mask=make_causal_mask(TQ)),
    "fully masked query row": dict(mask=fully_masked_row_mask()),
    "batch 1": dict(b=1, mask=padding_mask(b=1)),
    "length 1": dict(tq=1, tk=1),
    "dropout": dict(dropout=0.3, mask=padding_mask()),
    "no bias": dict(bias=False, mask=padding_mask()),
}


def split_case(case):
    """(constructor keywords, input sizes, mask) of a GRAD_CASES entry."""
    kw = dict(case)
    mask = kw.pop("mask", None)
    sizes = {key: kw.pop(key) for key in ("b", "tq", "tk") if key in kw}
    return kw, sizes, mask


def linear(params, name, x):
    """x W + b with the parameters of the Linear `name` from a {dotted name: array} dict."""
    return host(x) @ params[f"{name}.weight"] + params.get(f"{name}.bias", 0.0)


def reference_heads(Q, K, V, mask, n_heads):
    """Straightforward attention: one head, one batch row and one query at a time.
    Returns (the heads side by side (b, tq, d), the weights (b, H, tq, tk))."""
    (b, tq, d), tk = Q.shape, K.shape[1]
    dh = d // n_heads
    allowed = np.broadcast_to(True if mask is None else host(mask), (b, n_heads, tq, tk))
    context, weights = np.zeros((b, tq, d)), np.zeros((b, n_heads, tq, tk))
    for i in range(b):
        for h in range(n_heads):
            cols = slice(h * dh, (h + 1) * dh)
            scores = Q[i, :, cols] @ K[i, :, cols].T / math.sqrt(dh)
            for t in range(tq):
                keep = allowed[i, h, t]
                if keep.any():
                    e = np.exp(scores[t, keep] - scores[t, keep].max())
                    weights[i, h, t, keep] = e / e.sum()
            context[i, :, cols] = weights[i, h] @ V[i, :, cols]
    return context, weights


def check_weights(layer, weights_ref, mask):
    """The layer's kept weights equal the reference; rows sum to 1, or 0 with nothing allowed."""
    np.testing.assert_allclose(layer.attn_weights, weights_ref, rtol=1e-12, atol=1e-14)
    any_allowed = np.broadcast_to(True if mask is None else mask, weights_ref.shape).any(-1)
    np.testing.assert_allclose(layer.attn_weights.sum(axis=-1),
                               np.where(any_allowed, 1.0, 0.0), atol=1e-12)


def check_gradients_double(layer, args, dout):
    """Two backward calls after one forward: parameter gradients double, inputs' repeat."""
    layer.forward(*args)
    first = layer.backward(dout)
    once = {name: g.copy() for name, _, g in layer.named_parameters()}
    second = layer.backward(dout)
    for name, _, g in layer.named_parameters():
        np.testing.assert_allclose(g, 2 * once[name], rtol=1e-14, atol=1e-14)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def torch_heads(Q, K, V, mask):
    """softmax(Q K^T / sqrt(Dh), mask) V per head, in PyTorch: (b, t, D) tensors in and out."""
    import torch
    heads = lambda x: x.reshape(x.shape[0], x.shape[1], H, DH).transpose(1, 2)
    attn_mask = None if mask is None else torch.from_numpy(host(mask))
    out = torch.nn.functional.scaled_dot_product_attention(heads(Q), heads(K), heads(V),
                                                           attn_mask=attn_mask)
    return out.transpose(1, 2).reshape(Q.shape)


def torch_params(layer):
    import torch
    return {name: torch.tensor(host(p), requires_grad=True)
            for name, p, _ in layer.named_parameters()}


def torch_linear(t, name, x):
    return x @ t[f"{name}.weight"] + (t[f"{name}.bias"] if f"{name}.bias" in t else 0.0)


def parameters(layer):
    """{dotted name: NumPy array} of a layer's parameters, for the straightforward references."""
    return {name: host(param) for name, param, _ in layer.named_parameters()}


def reference_output(params, Q, K, V, mask, n_heads):
    """reference_heads of the projected Q, K, V, then W_o: (output, weights)."""
    context, weights = reference_heads(Q, K, V, mask, n_heads)
    return linear(params, "w_o", context), weights


def assert_case_gradients(layer, rng, sizes, mask, kv_from_k=False, check=CHECK):
    """Gradient check of `layer` on random inputs of `sizes`; with kv_from_k (MLA, which reads
    keys and values from k) k is passed as both k and v: the checker compares dk + dv."""
    q, k, v = inputs(rng, **sizes)
    v = k if kv_from_k else v
    dout = rng.normal(size=q.shape)
    assert_gradients_close(layer, q, k, v, dout=dout, forward_kwargs={"mask": mask}, **check)
