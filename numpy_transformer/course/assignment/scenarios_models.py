"""Scenarios of the attention parts and of the encoder and decoder stacks (table: harness.py).

Each runs the part's own code with every sub-layer of another part replaced by
a stand-in (standins.py): the attention kernel gets a stand-in softmax
backward and dropout; multi-head and latent attention get stand-in projections
(and multi-head attention a stand-in kernel); the blocks get stand-in
attention, feed-forward, LayerNorm and dropout modules. The stand-ins are
installed the same way in the teacher's run, so only the part's own wiring is
compared. Harness code: NumPy only.
"""

import numpy as np

from . import local_scenarios as local
from . import standins
from .steps import forward_backward, map_standin, restore, stand, swap_everywhere


def attention(pkg, source, shape_q, keys, mask=None, dropout=False, standin_softmax=True):
    """scaled_dot_product_attention_backward with a stand-in softmax backward (and dropout);
    the package's own one with standin_softmax=False (the reference's other expected
    arrays, for a softmax backward written inline)."""
    module = pkg.module("layers.attention")
    B, H, Tq, Dh = shape_q
    q = source.normal("q", shape_q)
    k, v = source.normal("k", (B, H, keys, Dh)), source.normal("v", (B, H, keys, Dh))
    if mask is not None:
        mask = source.given("mask", np.asarray(mask, dtype=bool))
    drop, found = None, {}
    if dropout:
        seed = source.integers("standin.dropout_seed", (), 0, 2 ** 31)
        drop = stand(pkg)["Drop"](0.3, int(seed))
    undo = []
    try:
        if standin_softmax:
            swap_everywhere(pkg, ["layers.softmax", "layers.attention"], "softmax_backward",
                            standins.softmax_backward, undo)
        out, weights = module.scaled_dot_product_attention(q, k, v, mask, drop)
        dout = source.normal("dout", np.shape(out))
        dq, dk, dv = module.scaled_dot_product_attention_backward(dout, q, k, v, weights, drop)
    finally:
        restore(undo)
    if dropout:
        found["dropout.draws"] = np.array(float(drop.draws))
    return {**found, "out": out, "weights": weights, "dx.0": dq, "dx.1": dk, "dx.2": dv}


def attention_inputs(source, batch, queries, keys, d_model, self_attention):
    q = source.normal("q", (batch, queries, d_model))
    if self_attention:
        return q, q, q
    return q, source.normal("k", (batch, keys, d_model)), source.normal("v", (batch, keys, d_model))


def multihead_attention(pkg, source, d_model, heads, batch, queries, keys,
                        self_attention=False, prefill=False):
    """MultiHeadAttention with stand-in projections and a stand-in attention kernel."""
    layer = pkg.module("layers.attention").MultiHeadAttention(d_model, heads)
    for name in ("w_q", "w_k", "w_v", "w_o"):
        setattr(layer, name, map_standin(pkg, source, name, d_model, d_model))
    inputs = attention_inputs(source, batch, queries, keys, d_model, self_attention)
    undo = []
    try:
        for name, value in (("scaled_dot_product_attention", standins.attention),
                            ("scaled_dot_product_attention_backward",
                             standins.attention_backward)):
            swap_everywhere(pkg, ["layers.attention", "layers.latent_attention"], name, value,
                            undo)
        return forward_backward(layer, source, inputs, count=3, prefill=prefill)
    finally:
        restore(undo)


def mla_project(pkg, source, d_model, heads, latent, batch, queries, keys):
    """MultiHeadLatentAttention.project_backward with stand-in projections."""
    layer = pkg.module("layers.latent_attention").MultiHeadLatentAttention(
        d_model, heads, latent_dim=latent, bias=True)
    D, L = d_model, latent
    for name, d_in, d_out in (("w_q", D, D), ("w_kv_compress", D, L),
                              ("w_k_decompress", L, D), ("w_v_decompress", L, D)):
        setattr(layer, name, map_standin(pkg, source, name, d_in, d_out))
    return local.project_outputs(layer, source, batch, queries, keys, D)


def block_standins(pkg, source, block, prefix, d_model, attentions):
    """Replace a block's attention(s), feed-forward, and its sublayers' norm and dropout."""
    kit_ = stand(pkg)
    for name in attentions:
        A = source.normal(f"standin.{prefix}{name}.A", (d_model, d_model), d_model ** -0.5)
        setattr(block, name, kit_["Attention"](A, source.normal(f"standin.{prefix}{name}.b",
                                                                (d_model,))))
    block.feed_forward = map_standin(pkg, source, f"{prefix}feed_forward", d_model, d_model)
    for i, sub in enumerate(block.sublayers):
        sub.norm = norm_standin(pkg, source, f"{prefix}sublayers.{i}.norm", d_model)
        sub.dropout = kit_["Scale"](source.normal(f"standin.{prefix}sublayers.{i}.dropout",
                                                  (d_model,)))


def norm_standin(pkg, source, name, d_model):
    return stand(pkg)["Norm"](source.normal(f"standin.{name}.g", (d_model,)),
                              source.normal(f"standin.{name}.b", (d_model,)))


def stack(pkg, source, decoder, layers, d_model, norm_first, block_only):
    """An Encoder or Decoder (or one block of it) with stand-ins for every child."""
    dotted, name = ("models.decoder", "Decoder") if decoder else ("models.encoder", "Encoder")
    attentions = ("self_attn", "cross_attn") if decoder else ("self_attn",)
    module = pkg.module(dotted)
    if block_only:
        block = getattr(module, name + "Block")(d_model, 2, 2 * d_model, norm_first=norm_first)
        block_standins(pkg, source, block, "", d_model, attentions)
        return block
    model = getattr(module, name)(layers, d_model, 2, 2 * d_model, norm_first=norm_first)
    for i, block in enumerate(model.layers):
        block_standins(pkg, source, block, f"layers.{i}.", d_model, attentions)
    if model.norm is not None:
        model.norm = norm_standin(pkg, source, "norm", d_model)
    return model


def encoder(pkg, source, layers, d_model, batch, length, norm_first, block_only=False):
    model = stack(pkg, source, False, layers, d_model, norm_first, block_only)
    x = source.normal("x", (batch, length, d_model))
    return forward_backward(model, source, (x,), count=1)


def decoder(pkg, source, layers, d_model, batch, length, memory_length, norm_first,
            block_only=False):
    model = stack(pkg, source, True, layers, d_model, norm_first, block_only)
    x = source.normal("x", (batch, length, d_model))
    memory = source.normal("memory", (batch, memory_length, d_model))
    found = forward_backward(model, source, (x, memory), count=2)
    return {**found, **memory_terms(model.layers if hasattr(model, "layers") else [model])}


def memory_terms(blocks):
    """The terms of the memory gradient (never compared: named for the diagnosis, parts.py):
    each block's cross-attention key and value gradients, as the stand-ins returned them."""
    parts = [block.cross_attn.returned[1:] for block in blocks]
    terms = {"term.the value part of the memory gradient": sum(dv for _, dv in parts)}
    if len(blocks) > 1:
        terms.update({f"term.the memory gradient of block {i + 1}": dk + dv
                      for i, (dk, dv) in enumerate(parts)})
    return terms
