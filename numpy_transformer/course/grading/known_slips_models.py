"""Known slips of the composite parts (known_slips.py says what a slip is; teacher side only).

Each variant re-runs the part's backward on the reference's own modules with one slip: a
child's backward skipped, the blocks in the forward order, the heads merged without their
transpose, the attention's dropout not handed to the kernel's backward, the weights after
dropout where the ones before belong, a block's residual path dropped, the key or the value
part of an attention's input left out. The children are whatever the run built (stand-ins
in the grader's run, the package's own at `assignment make`): a variant calls their forward
and backward only, and reads nothing a stand-in alone records. The variant starts from the
gradients the module held before the backward under test and leaves the module as it found
it (`rerun`); only the arrays that the slip changes are returned, as "<output>|<cause>".
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
    """The kernel with its softmax's backward skipped; with dropout: its backward skipped or
    applied twice, the value gradient or the softmax's backward given the other weights
    (before / after dropout)."""
    scale, found = 1.0 / np.sqrt(q.shape[-1]), {}

    def variant(dropped_for_dv=True, through=1, after=False, softmax=True):
        dropped = weights if drop is None else drop.reapply(weights)
        dv = (dropped if dropped_for_dv else weights).swapaxes(-1, -2) @ dout
        dattn = dout @ v.swapaxes(-1, -2)
        for _ in range(through if drop is not None else 0):
            dattn = drop.backward(dattn)
        local = softmax if callable(softmax) else softmax_backward
        dscores = (local(dattn, dropped if after else weights) if softmax
                   else dattn) * scale
        return {"dx.0": dscores @ k, "dx.1": dscores.swapaxes(-1, -2) @ q, "dx.2": dv}
    found.update(changed("the softmax's backward is skipped (the weights' gradient is used "
                         "as the scores' gradient)", variant(softmax=False), reference))
    for cause, local in (
            ("the softmax's backward takes the Jacobian's diagonal only, elementwise (each "
             "weight of a row depends on every score of that row)", lambda d, w: d * w),
            ("the softmax's backward takes the Jacobian's diagonal only (each weight of a row "
             "depends on every score of that row)", lambda d, w: d * w * (1 - w))):
        found.update(changed(cause, variant(softmax=local), reference))
    if drop is None:
        return found
    variants = {"the weights' dropout is not undone on their gradient (its backward is "
                "skipped)": dict(through=0),
                "the value gradient uses the weights before dropout where the ones after "
                "dropout belong": dict(dropped_for_dv=False),
                "the softmax's backward gets the weights after dropout where the ones before "
                "dropout belong": dict(after=True),
                "the weights' dropout backward is applied twice on their gradient":
                    dict(through=2)}
    for cause, slip in variants.items():
        found.update(changed(cause, variant(**slip), reference))
    return found


def multihead_attention(layer, dout, before, split_heads, merge_heads, kernel_backward,
                        reference):
    """Key and value gradients through each other's projection; heads merged by a reshape
    without the transpose (the query's gradient, or all three); the attention's dropout not
    handed to the kernel's backward (where it is on)."""
    def run(swap="", unmerged=(), unsplit=False, dropout=True):
        qh, kh, vh = layer.saved_for_backward()
        projected = layer.w_o.backward(dout)
        dheads = (projected.reshape(dout.shape[0], layer.num_heads, dout.shape[1], -1)
                  if unsplit else split_heads(projected, layer.num_heads))
        grads = (kernel_backward(dheads, qh, kh, vh, layer.attn_weights, layer.dropout)
                 if dropout else kernel_backward(dheads, qh, kh, vh, layer.attn_weights))
        dQ, dK, dV = (g.reshape(g.shape[0], g.shape[2], -1) if i in unmerged
                      else merge_heads(g) for i, g in enumerate(grads))
        if swap == "kv":
            dK, dV = dV, dK
        elif swap == "qk":
            dQ, dK = dK, dQ
        return layer.w_q.backward(dQ), layer.w_k.backward(dK), layer.w_v.backward(dV)
    merge = ("the heads are merged by a reshape alone: the head axis is not moved back next "
             "to the positions first (a transpose is missing before the merge)")
    def unprojected():
        qh, kh, vh = layer.saved_for_backward()
        dheads = split_heads(dout, layer.num_heads)
        grads = kernel_backward(dheads, qh, kh, vh, layer.attn_weights, layer.dropout)
        dQ, dK, dV = (merge_heads(g) for g in grads)
        return layer.w_q.backward(dQ), layer.w_k.backward(dK), layer.w_v.backward(dV)
    found = changed("the key and value gradients go through each other's projection",
                    rerun(layer, before, lambda: run(swap="kv")), reference)
    if dout.shape[1] == layer.saved_for_backward()[1].shape[2]:    # as many keys as queries
        found.update(changed("the query and key gradients go through each other's "
                             "projection", rerun(layer, before, lambda: run(swap="qk")),
                             reference))
    found.update(changed("the output projection's backward (w_o) is skipped: the incoming "
                         "gradient is split into heads as it came",
                         rerun(layer, before, unprojected), reference))
    found.update(changed("the incoming gradient is split into heads by a reshape alone: "
                         "the head axis is not moved in front of the positions (a transpose "
                         "is missing after the split)",
                         rerun(layer, before, lambda: run(unsplit=True)), reference))
    found.update(changed(merge + ", in the query's gradient",
                         rerun(layer, before, lambda: run(unmerged=(0,))), reference))
    found.update(changed(merge, rerun(layer, before, lambda: run(unmerged=(0, 1, 2))),
                         reference))
    found.update(changed("the attention's dropout is not handed to the kernel's backward (its "
                         "mask is not applied to the weights' gradient)",
                         rerun(layer, before, lambda: run(dropout=False)), reference))
    return found


def mla_project(layer, dQ, dK, dV, reference):
    """The latent's gradient with one of its two paths only (= where += was meant)."""
    def run(keep):
        from_k, from_v = layer.w_k_decompress.backward(dK), layer.w_v_decompress.backward(dV)
        return layer.w_kv_compress.backward(from_v if keep == "value" else from_k)
    found = {}
    for keep, label in (("key", "the part through the key path"),
                        ("value", "the part through the value path")):
        path = rerun(layer, {}, lambda: run(keep))
        found[label] = path["dx.0"]             # a term of input 2's gradient (the latent's)
    for keep, cause in (("value", "the latent's gradient keeps the value path only (the key "
                                  "path is overwritten, = where += was meant)"),
                        ("key", "the latent's gradient keeps the key path only (the value "
                                "path is left out)")):
        variant = rerun(layer, {}, lambda: run(keep))
        variant = {("dx.1" if name == "dx.0" else name): a for name, a in variant.items()
                   if name == "dx.0" or name.startswith("grad.w_kv_compress.")}
        found.update(changed(cause, variant, reference))
    if "dx.1" in reference and "dx.2" in reference:     # v is k: the latent's gradient twice
        found.update(changed("the latent's gradient is returned twice, for the value input "
                             "too (the value input is the key input, which carries it all)",
                             {"dx.2": reference["dx.1"]}, reference))
    query = rerun(layer, {}, lambda: (dQ,))         # the query's projection skipped
    found.update(changed("the query projection's backward (w_q) is skipped: dQ is passed on "
                         "as it came", {name: a for name, a in query.items()
                                        if name == "dx.0" or name.startswith("grad.w_q.")},
                         reference))
    return found


def feedforward(layer, dout, reference):
    """Each child's backward skipped, or applied twice (the linears' only where their
    sizes allow it)."""
    children = ("linear_2", "dropout", "activation", "linear_1")
    words = {"linear_2": "the second linear's", "dropout": "the dropout's",
             "activation": "the activation's", "linear_1": "the first linear's"}

    def run(child, times):
        dh = dout
        for name in children:
            for _ in range(times if name == child else 1):
                dh = getattr(layer, name).backward(dh)
        return dh
    found = {}
    for child in children:
        for times, how in ((0, "is skipped"), (2, "is applied twice")):
            try:
                variant = rerun(layer, {}, lambda: run(child, times))
            except (ValueError, TypeError):       # sizes that do not allow it
                continue
            found.update(changed(f"{words[child]} backward {how}", variant, reference))
    return found


PARTS = {"q": "query", "k": "key", "v": "value"}


def block_backward(block, dout, decoder, residual=None, self_parts="qkv", memory_parts="kv",
                   skip_feed_forward=False, cross_query=True):
    """An encoder or decoder block's backward with one slip: the residual path of sublayer
    `residual` dropped, the self-attention's (the memory's) gradient summed over
    `self_parts` (`memory_parts`) of query, key and value only, the feed-forward skipped."""
    last = len(block.sublayers) - 1
    dx, df = block.sublayers[last].exit_backward(dout)
    dh = df if skip_feed_forward else block.feed_forward.backward(df)
    back = block.sublayers[last].enter_backward(dh)
    dx = back if residual == last else dx + back
    dmemory = None
    if decoder:
        dx, dc = block.sublayers[1].exit_backward(dx)
        dq, dk, dv = block.cross_attn.backward(dc)
        dmemory = sum(g for key, g in zip("qkv", (dq, dk, dv)) if key in memory_parts)
        back = block.sublayers[1].enter_backward(dq) if cross_query else 0.0 * dx
        dx = back if residual == 1 else dx + back
    dx, da = block.sublayers[0].exit_backward(dx)
    grads = block.self_attn.backward(da)
    back = block.sublayers[0].enter_backward(
        sum(g for key, g in zip("qkv", grads) if key in self_parts))
    dx = back if residual == 0 else dx + back
    return (dx, dmemory) if decoder else dx


CROSS_QUERY = ("the cross-attention's query gradient is not added to the block's input "
               "gradient (the decoder's stream is the cross-attention's query)")


def block_slips(block, dout, decoder, reference):
    """{"<output>|<cause>": array} of one block's slips (its children stand-ins)."""
    names = (("the self-attention", "the cross-attention", "the feed-forward") if decoder
             else ("the self-attention", "the feed-forward"))
    slips = {"the self-attention's gradient keeps the query's part only (the block's input "
             "was read as query, key and value)": dict(self_parts="q")}
    if not decoder:
        slips["the feed-forward's backward is skipped"] = dict(skip_feed_forward=True)
    else:
        slips[CROSS_QUERY] = dict(cross_query=False)
    for i, name in enumerate(names):
        slips[f"the residual path's gradient around {name} is dropped (the sublayer's input "
              "gets only the gradient through the sublayer)"] = dict(residual=i)
    for left in "kv":
        slips[f"the self-attention's gradient leaves out the {PARTS[left]} part (the "
              "block's input is its query, key and value)"] = dict(
                  self_parts="qkv".replace(left, ""))
        if decoder:
            slips[f"the {PARTS[left]} part of the memory gradient is left out (the memory "
                  "is the cross-attention's key and its value)"] = dict(
                      memory_parts="kv".replace(left, ""))
    found = {}
    for cause, slip in slips.items():
        found.update(changed(cause, rerun(block, {}, lambda: block_backward(
            block, dout, decoder, **slip)), reference))
    found.update(changed("the sublayers' backwards run in the forward order (the last "
                         "sublayer's, the feed-forward's, must come first)",
                         rerun(block, {}, lambda: forward_order(block, dout, decoder)),
                         reference))
    return found


def forward_order(block, dout, decoder):
    """A block's backward with its sublayers taken in the forward's order (self-attention
    first), each otherwise right."""
    dx, da = block.sublayers[0].exit_backward(dout)
    dx = dx + block.sublayers[0].enter_backward(sum(block.self_attn.backward(da)))
    dmemory = None
    if decoder:
        dx, dc = block.sublayers[1].exit_backward(dx)
        dq, dk, dv = block.cross_attn.backward(dc)
        dmemory = dk + dv
        dx = dx + block.sublayers[1].enter_backward(dq)
    last = len(block.sublayers) - 1
    dx, df = block.sublayers[last].exit_backward(dx)
    dx = dx + block.sublayers[last].enter_backward(block.feed_forward.backward(df))
    return (dx, dmemory) if decoder else dx


def memory_terms(model, dout, block_only):
    """The terms of the memory gradient (sum terms, "<label>"): its key part and its value
    part (each block's cross-attention gradient of the memory as its key, as its value),
    and in a stack each block's share, from re-runs of the backward (any children)."""
    blocks = [model] if block_only else list(model.layers)

    def run(parts, memory):
        d = dout if block_only or model.norm is None else model.norm.backward(dout)
        for block in reversed(blocks):
            d, dm = block_backward(block, d, True, memory_parts=parts)
            memory.insert(0, dm)
        return d
    shares = {}
    for parts in ("k", "v", "kv"):
        memory = []
        rerun(model, {}, lambda: run(parts, memory))
        shares[parts] = memory
    terms = {"the key part of the memory gradient": sum(shares["k"]),
             "the value part of the memory gradient": sum(shares["v"])}
    if len(blocks) > 1:
        terms.update({f"the memory gradient of block {i + 1}": dm
                      for i, dm in enumerate(shares["kv"])})
    return terms


def stack(model, dout, decoder, block_only, reference):
    """Encoder / decoder slips: the memory gradient's terms (decoder), a block's
    self-attention passing back the query's part only, a block's feed-forward skipped
    (encoder), the final norm skipped, the blocks in the forward order."""
    terms = memory_terms(model, dout, block_only) if decoder else {}
    if block_only:
        return {**terms, **block_slips(model, dout, decoder, reference)}

    def run(skip_norm=False, forward=False, norm_last=False, skip=None):
        d = dout if skip_norm or norm_last or model.norm is None else model.norm.backward(dout)
        memory = []
        for i, layer in (list(enumerate(model.layers)) if forward
                         else list(enumerate(model.layers))[::-1]):
            if i == skip:
                continue
            d = layer.backward(d)
            if decoder:
                d, dm = d
                memory.append(dm)
        d = model.norm.backward(d) if norm_last else d
        return (d, sum(memory)) if decoder else d
    found = {**terms, **changed("the blocks' backward runs in the forward order (the last "
                                "block's must come first)",
                                rerun(model, {}, lambda: run(forward=True)), reference)}
    if decoder:                                 # a block's slip, in every block of the stack
        def every_block():
            d = dout if model.norm is None else model.norm.backward(dout)
            memory = []
            for layer in reversed(model.layers):
                d, dm = block_backward(layer, d, True, cross_query=False)
                memory.append(dm)
            return d, sum(memory)
        found.update(changed(CROSS_QUERY, rerun(model, {}, every_block), reference))
    if model.norm is not None:
        found.update(changed("the final LayerNorm's backward is skipped",
                             rerun(model, {}, lambda: run(skip_norm=True)), reference))
        found.update(changed("the final LayerNorm's backward runs after the blocks' (out of "
                             "order: the norm is the last step of the forward)",
                             rerun(model, {}, lambda: run(norm_last=True)), reference))
    if len(model.layers) > 1:
        for i in range(len(model.layers)):
            found.update(changed(f"block {i + 1}'s backward is skipped (the gradient passes "
                                 "that block as it came)",
                                 rerun(model, {}, lambda: run(skip=i)), reference))
    return found


MODELS = {"attention": attention, "multihead_attention": multihead_attention,
          "mla_project": mla_project, "feedforward": feedforward, "encoder": stack,
          "decoder": stack}
