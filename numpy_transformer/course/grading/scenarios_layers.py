"""Scenarios of the layer and training parts (harness.py: what a scenario is, and their table).

Each builds its part's module of the package named `pkg`, runs one forward and
the backward under test on arrays from `source` and returns the forward output
"out", the input gradients "dx.i", the parameter gradients "grad.<name>" (and
"inplace": no gradient array was replaced).

`standins` is the switch. The grader passes a StandIns (standins.py): a composite
part's children become stand-ins, so a mistake in a child costs points in the
child's own part only. The local check (`assignment check`, in a student copy,
which holds no stand-ins) passes None: the part runs with the package's own
children, their parameters drawn too. Harness code: NumPy only.
"""

import numpy as np

from .steps import (forward_backward, graded, known_slips, load, restore, rng, set_parameters,
                    swap)


@graded
def linear(pkg, source, standins, d_in, d_out, lead, bias=True, prefill=False):
    layer = load(pkg, "layers.linear").Linear(d_in, d_out, bias=bias)
    set_parameters(layer, source)
    x = source.normal("x", (*lead, d_in))
    return forward_backward(layer, source, (x,), count=1, prefill=prefill)


@graded
def tied_linear(pkg, source, standins, vocab, d_model, lead):
    """A TiedLinear sharing an Embedding's matrix; the shared gradient already holds what
    the embedding's own backward added (prefilled), so it must be ADDED to."""
    embedding = load(pkg, "layers.embedding").Embedding(vocab, d_model)
    tied = load(pkg, "layers.linear").TiedLinear(embedding)
    set_parameters(tied, source)
    x = source.normal("x", (*lead, d_model))
    found = forward_backward(tied, source, (x,), count=1, prefill=True)
    found["shared"] = np.array(tied.grads["weight"] is embedding.grads["weight"])
    return found


@graded
def embedding(pkg, source, standins, vocab, d_model, ids, scale=True, prefill=False):
    layer = load(pkg, "layers.embedding").Embedding(vocab, d_model, scale=scale)
    set_parameters(layer, source)
    token_ids = source.given("ids", np.asarray(ids)).astype(np.int64)
    found = forward_backward(layer, source, (token_ids,), prefill=prefill)
    before = source.arrays.get("grad0.weight", np.zeros((vocab, d_model)))
    return {**found, **known_slips("embedding", layer=layer, ids=token_ids,
                                   dout=source.arrays["dout"], before=before)}


@graded
def layernorm(pkg, source, standins, d_model, lead, shift=0.0, prefill=False):
    layer = load(pkg, "layers.normalization").LayerNorm(d_model)
    set_parameters(layer, source)
    x = source.normal("x", (*lead, d_model), scale=2.0) + shift
    found = forward_backward(layer, source, (x,), count=1, prefill=prefill)
    return {**found, **known_slips("layernorm", layer=layer, x=x,
                                   dout=source.arrays["dout"])}


@graded
def softmax(pkg, source, standins, shape, axis=-1, mask=None):
    """softmax_backward(dp, p, axis) on p = softmax(x, axis, mask) (the forward is given)."""
    module = load(pkg, "layers.softmax")
    x = source.normal("x", shape, scale=3.0)
    if mask is not None:
        mask = source.given("mask", np.asarray(mask, dtype=bool))
    p = module.softmax(x, axis=axis, mask=mask)
    dp = source.normal("dp", np.shape(p))
    return {"out": p, "dx.0": module.softmax_backward(dp, p, axis=axis),
            **known_slips("softmax", p=p, dp=dp, axis=axis)}


@graded
def gelu(pkg, source, standins, shape, scale=2.0):
    layer = load(pkg, "layers.activations").GELU()
    x = source.normal("x", shape, scale)
    found = forward_backward(layer, source, (x,), count=1)
    return {**found, **known_slips("gelu", x=x, dout=source.arrays["dout"])}


@graded
def dropout(pkg, source, standins, p, shape, mask_seed, training=True):
    """Dropout(p) with a seeded mask: backward, and reapply of another array."""
    layer = load(pkg, "layers.dropout").Dropout(p, rng=rng(mask_seed))
    layer.train(training)
    found = forward_backward(layer, source, (source.normal("x", shape),), count=1)
    found["reapplied"] = layer.reapply(source.normal("x2", shape))
    return found


@graded
def positional_encoding(pkg, source, standins, d_model, max_len, lead):
    """The sinusoidal table, and PositionalEncoding's backward around its dropout (a
    stand-in, or the package's own with p = 0.3)."""
    module = load(pkg, "layers.positional")
    table = module.sinusoidal_table(max_len, d_model)
    layer = module.PositionalEncoding(d_model, max_len, dropout=0.3, rng=rng(1))
    if standins is not None:
        layer.dropout = standins.scale("dropout", (lead[-1], d_model))
    found = forward_backward(layer, source, (source.normal("x", (*lead, d_model)),), count=1)
    return {"table": table, **found, **known_slips("positional_encoding",
                                                   max_len=max_len, d_model=d_model)}


@graded
def feedforward(pkg, source, standins, d_model, d_ff, lead, activation="relu"):
    """FeedForward.backward; with stand-ins for both Linears, the activation and the dropout."""
    layer = load(pkg, "layers.feedforward").FeedForward(d_model, d_ff, dropout=0.3,
                                                        activation=activation, rng=rng(2))
    if standins is None:
        set_parameters(layer, source)
    else:
        layer.linear_1 = standins.map("linear_1", d_model, d_ff)
        layer.activation = standins.elementwise()
        layer.dropout = standins.scale("dropout", (d_ff,))
        layer.linear_2 = standins.map("linear_2", d_ff, d_model)
    x = source.normal("x", (*lead, d_model))
    found = forward_backward(layer, source, (x,), count=1)
    return {**found, **known_slips("feedforward", layer=layer,
                                   dout=source.arrays["dout"], reference=found)}


@graded
def cross_entropy(pkg, source, standins, targets, vocab, dloss=1.0, ignore_index=None,
                  smoothing=0.0, uniform=False):
    loss = load(pkg, "losses").CrossEntropyLoss(ignore_index=ignore_index,
                                               label_smoothing=smoothing)
    t = source.given("targets", np.asarray(targets)).astype(np.int64)
    shape = (*t.shape, vocab)
    logits = np.zeros(shape) if uniform else source.normal("logits", shape, scale=2.0)
    value = loss.forward(logits, t)
    dx = np.array(loss.backward(dloss))
    return {"out": np.array(float(value)), "dx.0": dx, **known_slips(
        "cross_entropy", targets=t, dx=dx, ignore_index=ignore_index,
        smoothing=smoothing, vocab=vocab, dloss=dloss)}


def one_parameter_model(pkg, source, shapes):
    """A bare Module holding drawn parameters of `shapes` ({name: shape}) and zero grads."""
    model = load(pkg, "module").Module()
    model.params = {name: source.normal(f"param.{name}", shape) for name, shape in shapes.items()}
    model.grads = {name: np.zeros(shape) for name, shape in shapes.items()}
    return model


@graded
def adam(pkg, source, standins, steps, hyper, shapes, optimizer="Adam"):
    """`steps` whole updates with drawn gradients of several scales; returns every update.
    optimizer="AdamW": whole AdamW steps, with the package's own decay or a stand-in (the
    decay is graded in the adamw part), so what is left is Adam's update without L2 decay."""
    model = one_parameter_model(pkg, source, shapes)
    arrays = dict(model.params)
    kind = optimizer
    optimizer = getattr(load(pkg, "optim.adam"), kind)(model, **hyper)
    if standins is not None and hasattr(optimizer, "decay"):
        optimizer.decay = standins.decay
    found, drawn = {}, {}
    for step in range(steps):
        for name, shape in shapes.items():
            scales = 10.0 ** source.integers(f"scale.{step}.{name}", shape, -3, 3)
            model.grads[name][...] = source.normal(f"g.{step}.{name}", shape) * scales
            drawn[step, name] = model.grads[name].copy()
        before = {name: p.copy() for name, p in model.params.items()}
        optimizer.step()
        found.update({f"update.{step}.{name}": model.params[name] - before[name]
                      for name in shapes})
    found["inplace"] = np.array(all(model.params[n] is a for n, a in arrays.items()))
    first = {name: source.arrays[f"param.{name}"] for name in shapes}
    return {**found, **known_slips("adam", params=first, grads=drawn, steps=steps,
                                   hyper=hyper, optimizer=kind,
                                   decay=getattr(optimizer, "decay", None))}


@graded
def adamw_decay(pkg, source, standins, lrs, weight_decay, shape):
    """AdamW.decay(p, weight_decay) on one parameter, once per learning rate (a schedule
    changes lr)."""
    model = one_parameter_model(pkg, source, {"w": shape})
    optimizer = load(pkg, "optim.adam").AdamW(model, lr=lrs[0], weight_decay=weight_decay)
    p, found, undo = model.params["w"], {}, []
    try:
        for i, lr in enumerate(lrs):
            before = p.copy()
            swap(optimizer, "lr", lr, undo)
            optimizer.decay(p, weight_decay)
            found[f"change.{i}"] = model.params["w"] - before
    finally:
        restore(undo)
    found["inplace"] = np.array(model.params["w"] is p)
    return {**found, **known_slips("adamw_decay", p=source.arrays["param.w"],
                                   lrs=lrs, weight_decay=weight_decay)}
