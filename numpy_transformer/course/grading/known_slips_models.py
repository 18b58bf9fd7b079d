"""Known slips of the composite parts (known_slips.py says what a slip is; teacher side only).

Each variant re-runs the part's backward on the reference's own modules (their children
stand-ins, as graded) with one slip: a child's backward skipped, the blocks in the
forward order, the heads merged without their transpose, the weights after dropout
where the ones before belong. The variant starts from the gradients the module held
before the backward under test and leaves the module as it found it (`rerun`); only the
arrays that the slip changes are returned, as "<output>|<cause>".
"""

import numpy as np

def rerun(module, before, run):
    """{"dx.i", "grad.<name>": array} that `run()` (a variant backward, returning the input
    gradient(s)) gives on `module` with its gradients starting at `before` ({name: array});
    the module's gradients are restored after."""
    kept = {name: g.copy() for name, _, g in module.named_parameters()}
    for name, _, g in module.named_parameters():
        g[...] = before.get(name, 0.0)
    try:
        returned = run()
        returned = returned if isinstance(returned, tuple) else (returned,)
        found = {f"dx.{i}": np.array(a) for i, a in enumerate(returned)}
        found.update({f"grad.{name}": g.copy() for name, _, g in module.named_parameters()})
    finally:
        for name, _, g in module.named_parameters():
            g[...] = kept[name]
    return found


def changed(cause, found, reference):
    """{"<output>|<cause>": array} of the arrays of `found` that differ from `reference`'s."""
    differ = lambda a, b: np.shape(a) != np.shape(b) or not np.allclose(a, b, rtol=1e-12,
                                                                         atol=1e-300)
    return {f"{name}|{cause}": a for name, a in found.items()
            if name in reference and differ(a, reference[name])}


def attention(q, k, v, dout, weights, drop, softmax_backward, reference):
    """The kernel with dropout: its backward skipped, the value gradient or the softmax's
    backward given the other weights (before / after dropout)."""
    if drop is None:
        return {}
    scale, found = 1.0 / np.sqrt(q.shape[-1]), {}
    variants = {"the weights' dropout is not undone on their gradient (its backward is "
                "skipped)": (True, False, False),
                "the value gradient uses the weights before dropout where the ones after "
                "dropout belong": (False, True, False),
                "the softmax's backward gets the weights after dropout where the ones before "
                "dropout belong": (True, True, True)}
    for cause, (dropped_for_dv, through, after) in variants.items():
        dropped = drop.reapply(weights)
        dv = (dropped if dropped_for_dv else weights).swapaxes(-1, -2) @ dout
        dattn = dout @ v.swapaxes(-1, -2)
        dattn = drop.backward(dattn) if through else dattn
        dscores = softmax_backward(dattn, dropped if after else weights) * scale
        variant = {"dx.0": dscores @ k, "dx.1": dscores.swapaxes(-1, -2) @ q, "dx.2": dv}
        found.update(changed(cause, variant, reference))
    return found


def multihead_attention(layer, dout, before, split_heads, merge_heads, kernel_backward,
                        reference):
    """Key and value gradients through each other's projection; heads merged by a reshape
    without the transpose (the query's gradient, or all three)."""
    def run(swap=False, unmerged=()):
        qh, kh, vh = layer.saved_for_backward()
        dheads = split_heads(layer.w_o.backward(dout), layer.num_heads)
        grads = kernel_backward(dheads, qh, kh, vh, layer.attn_weights, layer.dropout)
        dQ, dK, dV = (g.reshape(g.shape[0], g.shape[2], -1) if i in unmerged
                      else merge_heads(g) for i, g in enumerate(grads))
        if swap:
            dK, dV = dV, dK
        return layer.w_q.backward(dQ), layer.w_k.backward(dK), layer.w_v.backward(dV)
    merge = ("the heads are merged by a reshape alone: the head axis is not moved back next "
             "to the positions first (a transpose is missing before the merge)")
    found = changed("the key and value gradients go through each other's projection",
                    rerun(layer, before, lambda: run(swap=True)), reference)
    found.update(changed(merge + ", in the query's gradient",
                         rerun(layer, before, lambda: run(unmerged=(0,))), reference))
    found.update(changed(merge, rerun(layer, before, lambda: run(unmerged=(0, 1, 2))),
                         reference))
    return found


def mla_project(layer, dK, dV, reference):
    """The latent's gradient with one of its two paths only (= where += was meant)."""
    def run(keep):
        from_k, from_v = layer.w_k_decompress.backward(dK), layer.w_v_decompress.backward(dV)
        return layer.w_kv_compress.backward(from_v if keep == "value" else from_k)
    found = {}
    for keep, cause in (("value", "the latent's gradient keeps the value path only (the key "
                                  "path is overwritten, = where += was meant)"),
                        ("key", "the latent's gradient keeps the key path only (the value "
                                "path is left out)")):
        variant = rerun(layer, {}, lambda: run(keep))
        variant = {("dx.1" if name == "dx.0" else name): a for name, a in variant.items()
                   if name == "dx.0" or name.startswith("grad.w_kv_compress.")}
        found.update(changed(cause, variant, reference))
    return found


def feedforward(layer, dout, reference):
    def run(skip):
        dh = layer.linear_2.backward(dout)
        dh = dh if skip == "dropout" else layer.dropout.backward(dh)
        dh = dh if skip == "activation" else layer.activation.backward(dh)
        return layer.linear_1.backward(dh)
    found = changed("the dropout's backward is skipped",
                    rerun(layer, {}, lambda: run("dropout")), reference)
    found.update(changed("the activation's backward is skipped",
                         rerun(layer, {}, lambda: run("activation")), reference))
    return found


def encoder_block(block, dout, query_only=False, skip_feed_forward=False):
    dx, df = block.sublayers[1].exit_backward(dout)
    dh = df if skip_feed_forward else block.feed_forward.backward(df)
    dx = dx + block.sublayers[1].enter_backward(dh)
    dx, da = block.sublayers[0].exit_backward(dx)
    dq, dk, dv = block.self_attn.backward(da)
    return dx + block.sublayers[0].enter_backward(dq if query_only else dq + dk + dv)


def memory_terms(blocks):
    """The terms of the memory gradient (sum terms, "<label>"): each block's cross-attention
    key and value gradients, as the stand-ins returned them in the backward under test."""
    parts = [block.cross_attn.returned[1:] for block in blocks]
    terms = {"the value part of the memory gradient": sum(dv for _, dv in parts)}
    if len(blocks) > 1:
        terms.update({f"the memory gradient of block {i + 1}": dk + dv
                      for i, (dk, dv) in enumerate(parts)})
    return terms


def stack(model, dout, decoder, block_only, reference):
    """Encoder / decoder slips: the memory gradient's terms (decoder), a block's
    self-attention passing back the query's part only, a block's feed-forward skipped
    (encoder), the final norm skipped, the blocks in the forward order."""
    terms = memory_terms([model] if block_only else model.layers) if decoder else {}
    if block_only:
        if decoder:
            return terms
        found = changed("the self-attention's gradient keeps the query's part only (the "
                        "block's input was read as query, key and value)",
                        rerun(model, {}, lambda: encoder_block(model, dout, query_only=True)),
                        reference)
        found.update(changed("the feed-forward's backward is skipped", rerun(
            model, {}, lambda: encoder_block(model, dout, skip_feed_forward=True)), reference))
        return found

    def run(skip_norm=False, forward=False):
        d = dout if skip_norm or model.norm is None else model.norm.backward(dout)
        memory = []
        for layer in (model.layers if forward else reversed(model.layers)):
            d = layer.backward(d)
            if decoder:
                d, dm = d
                memory.append(dm)
        return (d, sum(memory)) if decoder else d
    found = {**terms, **changed("the blocks' backward runs in the forward order (the last "
                                "block's must come first)",
                                rerun(model, {}, lambda: run(forward=True)), reference)}
    if model.norm is not None:
        found.update(changed("the final LayerNorm's backward is skipped",
                             rerun(model, {}, lambda: run(skip_norm=True)), reference))
    return found


MODELS = {"attention": attention, "multihead_attention": multihead_attention,
          "mla_project": mla_project, "feedforward": feedforward, "encoder": stack,
          "decoder": stack}
