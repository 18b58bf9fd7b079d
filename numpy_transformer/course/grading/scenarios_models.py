"""Scenarios of the attention parts and of the encoder and decoder stacks (table: harness.py).

Each runs the part's own code; with `standins` (the grader's switch,
scenarios_layers.py) every sub-layer of another part becomes a stand-in
(standins.py): the attention kernel gets a stand-in softmax backward and
dropout; multi-head and latent attention get stand-in projections (and
multi-head attention a stand-in kernel and dropout); the blocks get stand-in
attention, feed-forward, LayerNorm and dropout modules. The stand-ins are installed the
same way in the teacher's run, so only the part's own wiring is compared.
Without (the local check) the part runs with the package's own children.
Harness code: NumPy only.
"""

import numpy as np

from .steps import (forward_backward, graded, known_slips, load, restore, rng, set_parameters,
                    swap_everywhere)


@graded
def attention(pkg, source, standins, shape_q, keys, mask=None, dropout=False,
              standin_softmax=True):
    """scaled_dot_product_attention_backward with a stand-in softmax backward (and dropout);
    the package's own one with standin_softmax=False (the reference's other expected
    arrays, for a softmax backward written inline) or without stand-ins."""
    module = load(pkg, "layers.attention")
    B, H, Tq, Dh = shape_q
    q = source.normal("q", shape_q)
    k, v = source.normal("k", (B, H, keys, Dh)), source.normal("v", (B, H, keys, Dh))
    if mask is not None:
        mask = source.given("mask", np.asarray(mask, dtype=bool))
    drop, found, undo = None, {}, []
    if dropout:
        drop = (load(pkg, "layers.dropout").Dropout(0.3, rng=rng(3)) if standins is None
                else standins.drop(0.3))
    try:
        if standins is not None and standin_softmax:
            swap_everywhere(pkg, ["layers.softmax", "layers.attention"], "softmax_backward",
                            standins.softmax_backward, undo)
        out, weights = module.scaled_dot_product_attention(q, k, v, mask, drop)
        dout = source.normal("dout", np.shape(out))
        dq, dk, dv = module.scaled_dot_product_attention_backward(dout, q, k, v, weights, drop)
    finally:
        restore(undo)
    found.update(known_slips(
        "attention", q=q, k=k, v=v, dout=dout, weights=weights, drop=drop,
        softmax_backward=(standins.softmax_backward if standins is not None and standin_softmax
                          else load(pkg, "layers.softmax").softmax_backward),
        reference={"dx.0": dq, "dx.1": dk, "dx.2": dv}))
    if dropout and standins is not None:
        found["dropout.draws"] = np.array(float(drop.draws))
    return {**found, "out": out, "weights": weights, "dx.0": dq, "dx.1": dk, "dx.2": dv}


def attention_inputs(source, batch, queries, keys, d_model, self_attention):
    q = source.normal("q", (batch, queries, d_model))
    if self_attention:
        return q, q, q
    return q, source.normal("k", (batch, keys, d_model)), source.normal("v", (batch, keys, d_model))


@graded
def multihead_attention(pkg, source, standins, d_model, heads, batch, queries, keys,
                        self_attention=False, prefill=False, dropout=False):
    """MultiHeadAttention, in training; `dropout`: on the attention weights (p = 0.3, seeded),
    else off. With stand-in projections, a stand-in attention kernel and a stand-in dropout
    (off where `dropout` is False), which the stand-in kernel uses as the real one uses its
    dropout: a backward that does not hand the layer's dropout to the kernel's backward shows."""
    p = 0.3 if dropout else 0.0
    layer = load(pkg, "layers.attention").MultiHeadAttention(d_model, heads, dropout=p,
                                                             rng=rng(3))
    if standins is None:
        set_parameters(layer, source)
    else:
        for name in ("w_q", "w_k", "w_v", "w_o"):
            setattr(layer, name, standins.map(name, d_model, d_model))
        layer.dropout = standins.drop(p)
    inputs = attention_inputs(source, batch, queries, keys, d_model, self_attention)
    undo = []
    try:
        kernels = {} if standins is None else {
            "scaled_dot_product_attention": standins.kernel,
            "scaled_dot_product_attention_backward": standins.kernel_backward}
        for name, value in kernels.items():
            swap_everywhere(pkg, ["layers.attention", "layers.latent_attention"], name, value,
                            undo)
        found = forward_backward(layer, source, inputs, count=3, prefill=prefill)
        module = load(pkg, "layers.attention")
        before = {k[6:]: a for k, a in source.arrays.items() if k.startswith("grad0.")}
        return {**found, **known_slips(
            "multihead_attention", layer=layer, dout=source.arrays["dout"],
            before=before, split_heads=module.split_heads, merge_heads=module.merge_heads,
            kernel_backward=(module.scaled_dot_product_attention_backward if standins is None
                             else standins.kernel_backward), reference=found)}
    finally:
        restore(undo)


@graded
def mla_project(pkg, source, standins, d_model, heads, latent, batch, queries, keys):
    """MultiHeadLatentAttention.project_backward; with stand-in projections."""
    layer = load(pkg, "layers.latent_attention").MultiHeadLatentAttention(
        d_model, heads, latent_dim=latent, bias=True)
    D, L = d_model, latent
    if standins is None:
        set_parameters(layer, source)
    else:
        for name, d_in, d_out in (("w_q", D, D), ("w_kv_compress", D, L),
                                  ("w_k_decompress", L, D), ("w_v_decompress", L, D)):
            setattr(layer, name, standins.map(name, d_in, d_out))
    q, k = source.normal("q", (batch, queries, D)), source.normal("k", (batch, keys, D))
    layer.zero_grad()
    Q, K, V = layer.project(q, k, k)
    dQ, dK, dV = (source.normal(f"d{n}", np.shape(a)) for n, a in (("Q", Q), ("K", K), ("V", V)))
    returned = layer.project_backward(dQ, dK, dV)
    if not isinstance(returned, tuple) or len(returned) != 3:
        raise TypeError("project_backward must return the tuple (dq, dk, dv)")
    found = {"Q": Q, "K": K, "V": V, **{f"dx.{i}": g for i, g in enumerate(returned)},
             **{f"grad.{n}": g.copy() for n, _, g in layer.named_parameters()}}
    return {**found, **known_slips("mla_project", layer=layer, dQ=dQ, dK=dK, dV=dV,
                                   reference=found)}


def block_standins(standins, block, prefix, d_model, attentions):
    """Replace a block's attention(s), feed-forward, and its sublayers' norm and dropout."""
    for name in attentions:
        setattr(block, name, standins.attention(f"{prefix}{name}", d_model))
    block.feed_forward = standins.map(f"{prefix}feed_forward", d_model, d_model)
    for i, sub in enumerate(block.sublayers):
        sub.norm = standins.norm(f"{prefix}sublayers.{i}.norm", d_model)
        sub.dropout = standins.scale(f"{prefix}sublayers.{i}.dropout", (d_model,))


def stack(pkg, source, standins, decoder, layers, d_model, norm_first, block_only):
    """An Encoder or Decoder (or one block of it): H = 2, F = 2 D, dropout 0.2 (seeded);
    with stand-ins for every child."""
    dotted, name = ("models.decoder", "Decoder") if decoder else ("models.encoder", "Encoder")
    attentions = ("self_attn", "cross_attn") if decoder else ("self_attn",)
    module = load(pkg, dotted)
    block = load(pkg, "models.config").BlockConfig(d_model=d_model, num_heads=2,
                                                   d_ff=2 * d_model, dropout=0.2,
                                                   norm_first=norm_first)
    if block_only:
        model = getattr(module, name + "Block")(block, rng=rng(4))
    else:
        model = getattr(module, name)(block, layers, rng=rng(4))
    if standins is None:
        set_parameters(model, source)
        return model
    blocks = [("", model)] if block_only else [(f"layers.{i}.", b)
                                               for i, b in enumerate(model.layers)]
    for prefix, block in blocks:
        block_standins(standins, block, prefix, d_model, attentions)
    if not block_only and model.norm is not None:
        model.norm = standins.norm("norm", d_model)
    return model


@graded
def encoder(pkg, source, standins, layers, d_model, batch, length, norm_first,
            block_only=False):
    model = stack(pkg, source, standins, False, layers, d_model, norm_first, block_only)
    x = source.normal("x", (batch, length, d_model))
    found = forward_backward(model, source, (x,), count=1)
    return {**found, **known_slips("encoder", model=model, dout=source.arrays["dout"],
                                   decoder=False, block_only=block_only, reference=found)}


@graded
def decoder(pkg, source, standins, layers, d_model, batch, length, memory_length, norm_first,
            block_only=False):
    model = stack(pkg, source, standins, True, layers, d_model, norm_first, block_only)
    x = source.normal("x", (batch, length, d_model))
    memory = source.normal("memory", (batch, memory_length, d_model))
    found = forward_backward(model, source, (x, memory), count=2)
    return {**found, **known_slips("decoder", model=model, decoder=True,
                                   dout=source.arrays["dout"], block_only=block_only,
                                   reference=found)}

