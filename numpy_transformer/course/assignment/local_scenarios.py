"""The local check's scenarios: the grader's tasks, run with the package's OWN sub-layers.

A student copy carries this file and local_check.py (no grader, no stand-ins, no
reference code). Each function here takes the same arguments as the grader's
scenario of the same kind (harness.py's SCENARIOS), builds the part's module of
the package `pkg` with its own children (a composite part runs the student's
Linear, softmax, dropout...), feeds it arrays from `src` and returns named arrays:
"out", the input gradients "dx.i", the parameter gradients "grad.<name>",
"inplace" (no gradient array was replaced). `assignment make` runs them on the
reference with a drawing `src` and ships the inputs and outputs as numbers
(expected.npz); `assignment check` runs them on the copy with a replaying one.
"""

import numpy as np


def forward_backward(module, src, inputs, prefill=False, params=True):
    """Parameters from `src`, forward, backward of a drawn dout; the named outputs."""
    named = list(module.named_parameters())
    if params:
        for name, param, _ in named:
            param[...] = src.normal(f"param.{name}", param.shape, 0.5)
    module.zero_grad()
    if prefill:
        for name, _, grad in named:
            grad[...] = src.normal(f"grad0.{name}", grad.shape)
    before = [grad for _, _, grad in named]
    out = module.forward(*inputs)
    returned = module.backward(src.normal("dout", np.shape(out)))
    returned = returned if isinstance(returned, tuple) or returned is None else (returned,)
    after = [grad for _, _, grad in module.named_parameters()]
    found = {"out": out, **{f"grad.{n}": g.copy() for n, _, g in named},
             "inplace": np.array(len(after) == len(before)
                                 and all(a is b for a, b in zip(after, before)))}
    found.update({f"dx.{i}": g for i, g in enumerate(returned or ())})
    return found


def rng(seed):
    return np.random.default_rng(seed)


def linear(pkg, src, d_in, d_out, lead, bias=True, prefill=False):
    layer = pkg.module("layers.linear").Linear(d_in, d_out, bias=bias)
    return forward_backward(layer, src, (src.normal("x", (*lead, d_in)),), prefill)


def tied_linear(pkg, src, vocab, d_model, lead):
    embedding = pkg.module("layers.embedding").Embedding(vocab, d_model)
    tied = pkg.module("layers.linear").TiedLinear(embedding)
    found = forward_backward(tied, src, (src.normal("x", (*lead, d_model)),), prefill=True)
    found["shared"] = np.array(tied.grads["weight"] is embedding.grads["weight"])
    return found


def embedding(pkg, src, vocab, d_model, ids, scale=True, prefill=False):
    layer = pkg.module("layers.embedding").Embedding(vocab, d_model, scale=scale)
    return forward_backward(layer, src, (np.asarray(ids, dtype=np.int64),), prefill)


def layernorm(pkg, src, d_model, lead, shift=0.0, prefill=False):
    layer = pkg.module("layers.normalization").LayerNorm(d_model)
    x = src.normal("x", (*lead, d_model), 2.0) + shift
    return forward_backward(layer, src, (x,), prefill)


def softmax(pkg, src, shape, axis=-1, mask=None):
    module = pkg.module("layers.softmax")
    mask = None if mask is None else np.asarray(mask, dtype=bool)
    p = module.softmax(src.normal("x", shape, 3.0), axis=axis, mask=mask)
    return {"out": p, "dx.0": module.softmax_backward(src.normal("dp", np.shape(p)), p,
                                                      axis=axis)}


def gelu(pkg, src, shape, scale=2.0):
    layer = pkg.module("layers.activations").GELU()
    return forward_backward(layer, src, (src.normal("x", shape, scale),))


def dropout(pkg, src, p, shape, mask_seed, training=True):
    layer = pkg.module("layers.dropout").Dropout(p, rng=rng(mask_seed))
    layer.train(training)
    found = forward_backward(layer, src, (src.normal("x", shape),))
    found["reapplied"] = layer.reapply(src.normal("x2", shape))
    return found


def positional_encoding(pkg, src, d_model, max_len, lead):
    """The table, and the backward through the package's own Dropout (p = 0.3, seeded)."""
    module = pkg.module("layers.positional")
    layer = module.PositionalEncoding(d_model, max_len, dropout=0.3, rng=rng(1))
    found = forward_backward(layer, src, (src.normal("x", (*lead, d_model)),))
    return {"table": module.sinusoidal_table(max_len, d_model), **found}


def feedforward(pkg, src, d_model, d_ff, lead, activation="relu"):
    layer = pkg.module("layers.feedforward").FeedForward(d_model, d_ff, dropout=0.3,
                                                         activation=activation, rng=rng(2))
    return forward_backward(layer, src, (src.normal("x", (*lead, d_model)),))


def cross_entropy(pkg, src, targets, vocab, dloss=1.0, ignore_index=None, smoothing=0.0,
                  uniform=False):
    loss = pkg.module("losses").CrossEntropyLoss(ignore_index=ignore_index,
                                                label_smoothing=smoothing)
    t = np.asarray(targets, dtype=np.int64)
    shape = (*t.shape, vocab)
    logits = np.zeros(shape) if uniform else src.normal("logits", shape, 2.0)
    value = loss.forward(logits, t)
    return {"out": np.array(float(value)), "dx.0": loss.backward(dloss)}


def one_parameter_model(pkg, src, shapes):
    model = pkg.module("module").Module()
    model.params = {name: src.normal(f"param.{name}", shape) for name, shape in shapes.items()}
    model.grads = {name: np.zeros(shape) for name, shape in shapes.items()}
    return model


def adam(pkg, src, steps, hyper, shapes, optimizer="Adam", decay=None):
    """`steps` whole updates with drawn gradients of several scales; every update returned.
    AdamW: with the package's own decay, or `decay` (the grader's stand-in)."""
    model = one_parameter_model(pkg, src, shapes)
    arrays = dict(model.params)
    optimizer = getattr(pkg.module("optim.adam"), optimizer)(model, **hyper)
    if decay is not None and hasattr(optimizer, "decay"):
        optimizer.decay = decay
    found = {}
    for step in range(steps):
        for name, shape in shapes.items():
            scales = 10.0 ** src.integers(f"scale.{step}.{name}", shape, -3, 3)
            model.grads[name][...] = src.normal(f"g.{step}.{name}", shape) * scales
        before = {name: p.copy() for name, p in model.params.items()}
        optimizer.step()
        found.update({f"update.{step}.{name}": model.params[name] - before[name]
                      for name in shapes})
    found["inplace"] = np.array(all(model.params[n] is a for n, a in arrays.items()))
    return found


def adamw_decay(pkg, src, lrs, weight_decay, shape):
    model = one_parameter_model(pkg, src, {"w": shape})
    optimizer = pkg.module("optim.adam").AdamW(model, lr=lrs[0], weight_decay=weight_decay)
    p, found = model.params["w"], {}
    for i, lr in enumerate(lrs):
        before = p.copy()
        optimizer.lr = lr
        optimizer.decay(p)
        found[f"change.{i}"] = model.params["w"] - before
    found["inplace"] = np.array(model.params["w"] is p)
    return found


def attention(pkg, src, shape_q, keys, mask=None, dropout=False, **_):
    """The kernel with the package's own softmax backward (and Dropout(0.3), seeded)."""
    module = pkg.module("layers.attention")
    B, H, _, Dh = shape_q
    q = src.normal("q", shape_q)
    k, v = src.normal("k", (B, H, keys, Dh)), src.normal("v", (B, H, keys, Dh))
    mask = None if mask is None else np.asarray(mask, dtype=bool)
    drop = pkg.module("layers.dropout").Dropout(0.3, rng=rng(3)) if dropout else None
    out, weights = module.scaled_dot_product_attention(q, k, v, mask, drop)
    dout = src.normal("dout", np.shape(out))
    dq, dk, dv = module.scaled_dot_product_attention_backward(dout, q, k, v, weights, drop)
    return {"out": out, "weights": weights, "dx.0": dq, "dx.1": dk, "dx.2": dv}


def multihead_attention(pkg, src, d_model, heads, batch, queries, keys,
                        self_attention=False, prefill=False):
    layer = pkg.module("layers.attention").MultiHeadAttention(d_model, heads)
    q = src.normal("q", (batch, queries, d_model))
    inputs = (q, q, q) if self_attention else (
        q, src.normal("k", (batch, keys, d_model)), src.normal("v", (batch, keys, d_model)))
    return forward_backward(layer, src, inputs, prefill)


def mla_project(pkg, src, d_model, heads, latent, batch, queries, keys):
    layer = pkg.module("layers.latent_attention").MultiHeadLatentAttention(
        d_model, heads, latent_dim=latent, bias=True)
    for name, param, _ in layer.named_parameters():
        param[...] = src.normal(f"param.{name}", param.shape, 0.5)
    return project_outputs(layer, src, batch, queries, keys, d_model)


def project_outputs(layer, src, batch, queries, keys, d_model):
    """Q, K, V of layer.project and the gradients of its project_backward on drawn arrays."""
    q, k = src.normal("q", (batch, queries, d_model)), src.normal("k", (batch, keys, d_model))
    layer.zero_grad()
    Q, K, V = layer.project(q, k, k)
    dQ, dK, dV = (src.normal(f"d{n}", np.shape(a)) for n, a in (("Q", Q), ("K", K), ("V", V)))
    returned = layer.project_backward(dQ, dK, dV)
    if not isinstance(returned, tuple) or len(returned) != 3:
        raise TypeError("project_backward must return the tuple (dq, dk, dv)")
    return {"Q": Q, "K": K, "V": V, **{f"dx.{i}": g for i, g in enumerate(returned)},
            **{f"grad.{n}": g.copy() for n, _, g in layer.named_parameters()}}


def stack(pkg, decoder, layers, d_model, norm_first, block_only):
    dotted, name = ("models.decoder", "Decoder") if decoder else ("models.encoder", "Encoder")
    module = pkg.module(dotted)
    if block_only:
        return getattr(module, name + "Block")(d_model, 2, 2 * d_model, 0.2, norm_first,
                                               rng=rng(4))
    return getattr(module, name)(layers, d_model, 2, 2 * d_model, 0.2, norm_first, rng=rng(4))


def encoder(pkg, src, layers, d_model, batch, length, norm_first, block_only=False):
    model = stack(pkg, False, layers, d_model, norm_first, block_only)
    return forward_backward(model, src, (src.normal("x", (batch, length, d_model)),))


def decoder(pkg, src, layers, d_model, batch, length, memory_length, norm_first,
            block_only=False):
    model = stack(pkg, True, layers, d_model, norm_first, block_only)
    x = src.normal("x", (batch, length, d_model))
    memory = src.normal("memory", (batch, memory_length, d_model))
    return forward_backward(model, src, (x, memory))


SCENARIOS = {name: globals()[name] for name in (
    "linear", "tied_linear", "embedding", "layernorm", "softmax", "gelu", "dropout",
    "positional_encoding", "feedforward", "cross_entropy", "adam", "adamw_decay", "attention",
    "multihead_attention", "mla_project", "encoder", "decoder")}

# A composite part runs these parts' code too: when one of them fails, check it first.
USES = {
    "attention": ("softmax", "dropout"), "multihead_attention": ("linear", "softmax", "attention"),
    "mla": ("linear",), "feedforward": ("linear", "gelu", "dropout"),
    "positional_encoding": ("dropout",), "adam": ("adamw",),
    "encoder_stack": ("linear", "layernorm", "softmax", "dropout", "attention",
                      "multihead_attention", "feedforward"),
}
USES["decoder_stack"] = USES["encoder_stack"]
