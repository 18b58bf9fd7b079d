"""Scenarios of the layer and training parts (harness.py: what a scenario is, and their table).

Each returns the forward output "out", the input gradients "dx.i", the parameter
gradients "grad.<name>" (and "inplace": no gradient array was replaced) of
one forward and backward on the teacher's arrays. Harness code: NumPy only.
"""

import numpy as np

from . import local_scenarios as local
from . import standins
from .steps import forward_backward, map_standin, restore, set_parameters, stand, swap


def linear(pkg, source, d_in, d_out, lead, bias=True, prefill=False):
    layer = pkg.module("layers.linear").Linear(d_in, d_out, bias=bias)
    set_parameters(layer, source)
    x = source.normal("x", (*lead, d_in))
    return forward_backward(layer, source, (x,), count=1, prefill=prefill)


def tied_linear(pkg, source, vocab, d_model, lead):
    """A TiedLinear sharing an Embedding's matrix; the shared gradient already holds what
    the embedding's own backward added (prefilled), so it must be ADDED to."""
    embedding = pkg.module("layers.embedding").Embedding(vocab, d_model)
    tied = pkg.module("layers.linear").TiedLinear(embedding)
    set_parameters(tied, source)
    x = source.normal("x", (*lead, d_model))
    found = forward_backward(tied, source, (x,), count=1, prefill=True)
    found["shared"] = np.array(tied.grads["weight"] is embedding.grads["weight"])
    return found


def embedding(pkg, source, vocab, d_model, ids, scale=True, prefill=False):
    layer = pkg.module("layers.embedding").Embedding(vocab, d_model, scale=scale)
    set_parameters(layer, source)
    token_ids = source.given("ids", np.asarray(ids)).astype(np.int64)
    return forward_backward(layer, source, (token_ids,), prefill=prefill)


def layernorm(pkg, source, d_model, lead, shift=0.0, prefill=False):
    layer = pkg.module("layers.normalization").LayerNorm(d_model)
    set_parameters(layer, source)
    x = source.normal("x", (*lead, d_model), scale=2.0) + shift
    return forward_backward(layer, source, (x,), count=1, prefill=prefill)


def softmax(pkg, source, shape, axis=-1, mask=None):
    """softmax_backward(dp, p, axis) on p = softmax(x, axis, mask) (the forward is given)."""
    module = pkg.module("layers.softmax")
    x = source.normal("x", shape, scale=3.0)
    if mask is not None:
        mask = source.given("mask", np.asarray(mask, dtype=bool))
    p = module.softmax(x, axis=axis, mask=mask)
    dp = source.normal("dp", np.shape(p))
    return {"out": p, "dx.0": module.softmax_backward(dp, p, axis=axis)}


def gelu(pkg, source, shape, scale=2.0):
    layer = pkg.module("layers.activations").GELU()
    return forward_backward(layer, source, (source.normal("x", shape, scale),), count=1)


def dropout(pkg, source, p, shape, mask_seed, training=True):
    """Dropout(p) with a seeded mask: backward, and reapply of another array."""
    layer = pkg.module("layers.dropout").Dropout(p, rng=np.random.default_rng(mask_seed))
    layer.train(training)
    found = forward_backward(layer, source, (source.normal("x", shape),), count=1)
    found["reapplied"] = layer.reapply(source.normal("x2", shape))
    return found


def positional_encoding(pkg, source, d_model, max_len, lead):
    """The sinusoidal table, and PositionalEncoding's backward around a stand-in dropout."""
    module = pkg.module("layers.positional")
    table = module.sinusoidal_table(max_len, d_model)
    layer = module.PositionalEncoding(d_model, max_len, dropout=0.0)
    T = lead[-1]
    layer.dropout = stand(pkg)["Scale"](source.normal("standin.dropout", (T, d_model)))
    found = forward_backward(layer, source, (source.normal("x", (*lead, d_model)),), count=1)
    return {"table": table, **found}


def feedforward(pkg, source, d_model, d_ff, lead, activation="relu"):
    """FeedForward.backward with stand-ins for both Linears, the activation and the dropout."""
    layer = pkg.module("layers.feedforward").FeedForward(d_model, d_ff, activation=activation)
    kit = stand(pkg)
    layer.linear_1 = map_standin(pkg, source, "linear_1", d_model, d_ff)
    layer.activation = kit["Elementwise"]()
    layer.dropout = kit["Scale"](source.normal("standin.dropout", (d_ff,)))
    layer.linear_2 = map_standin(pkg, source, "linear_2", d_ff, d_model)
    x = source.normal("x", (*lead, d_model))
    return forward_backward(layer, source, (x,), count=1)


def cross_entropy(pkg, source, targets, vocab, dloss=1.0, ignore_index=None, smoothing=0.0,
                  uniform=False):
    loss = pkg.module("losses").CrossEntropyLoss(ignore_index=ignore_index,
                                                label_smoothing=smoothing)
    t = source.given("targets", np.asarray(targets)).astype(np.int64)
    shape = (*t.shape, vocab)
    logits = np.zeros(shape) if uniform else source.normal("logits", shape, scale=2.0)
    value = loss.forward(logits, t)
    return {"out": np.array(float(value)), "dx.0": loss.backward(dloss)}


def adam(pkg, source, steps, hyper, shapes, optimizer="Adam"):
    """`steps` Adam updates with drawn gradients of several scales; returns every update.
    optimizer="AdamW": whole AdamW steps, its decay a stand-in (standins.decay: the decay
    is graded in the adamw part), so what is left is Adam's update without L2 decay."""
    return local.adam(pkg, source, steps, hyper, shapes, optimizer, decay=standins.decay)


def adamw_decay(pkg, source, lrs, weight_decay, shape):
    """AdamW.decay(p) on one parameter, once per learning rate (a schedule changes lr)."""
    model = local.one_parameter_model(pkg, source, {"w": shape})
    optimizer = pkg.module("optim.adam").AdamW(model, lr=lrs[0], weight_decay=weight_decay)
    p, found, undo = model.params["w"], {}, []
    try:
        for i, lr in enumerate(lrs):
            before = p.copy()
            swap(optimizer, "lr", lr, undo)
            optimizer.decay(p)
            found[f"change.{i}"] = model.params["w"] - before
    finally:
        restore(undo)
    found["inplace"] = np.array(model.params["w"] is p)
    return found
