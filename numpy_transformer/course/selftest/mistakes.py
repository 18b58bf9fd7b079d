"""A catalogue of typical backward-pass mistakes, to test the grader itself.

Each mistake is a wrong body for one function of a part: `apply(root)` puts it
between the solution markers (`# BEGIN SOLUTION part` ... `# END SOLUTION`) of
that function in the copy under `root`, indented to fit, whatever the reference
text there says (its comments and its column padding included). Applied to a
solution copy, every mistake must cost points in its part, and only there: a
mistake the grader cannot catch is a bug in the grader, and one that costs
points elsewhere breaks the promise that each part is graded on its own (the
tests grade every mistake: tests/course/test_assignment.py, test_assignment_grader.py).

Where a function has several mistakes, each is written as one change (`wrong`)
of its right body, read from the core's source (right_bodies.py): `old` and `new`
are compared and written as parsed code (`canonical`), so the core's layout and
comments do not matter, and a mistake whose code the core no longer holds stops
the catalogue with its name. The catalogue stays in the teacher's package (it
quotes the solutions).

Each mistake also says the words its part's message must hold for its cause to
count as named (`cause`, from mistake_causes.py): the diagnosis (diagnose.py,
known_slips.py) names the cause of every one of the 62 (issue 37 asked for 80%),
the wrong math (a term of a sum left out, another GELU form's derivative, a bias
correction left out, the optimizer's state not kept, the blocks in the forward
order, a transpose missing before a merge, the weights after dropout where the
ones before belong) and the shape errors (NEW_KINDS) as well as the bookkeeping.
"""

from dataclasses import dataclass, replace
from pathlib import Path

from ..copies.make import package_regions
from ..copies.markers import write_region_bodies
from .mistake_causes import CAUSES
from .right_bodies import RIGHT, canonical


@dataclass(frozen=True)
class Mistake:
    name: str
    part: str
    function: str       # qualname of the function whose region of `part` it replaces
    description: str
    body: str           # the region's new body (indented to fit when applied)
    cause: tuple = ()   # words its part's message must hold: the cause named (CAUSES)

    def region(self, package):
        """The solution region of `part` in `function` under `package` (a numpy_transformer/);
        RuntimeError unless there is exactly one."""
        found = [r for r in package_regions(package)
                 if r.part == self.part and r.qualname == self.function]
        if len(found) != 1:
            raise RuntimeError(f"mistake {self.name}: {len(found)} regions of part "
                               f"{self.part} in {self.function}, expected one")
        return found[0]

    def apply(self, root):
        """Put the mistake into the copy in `root` (which holds numpy_transformer/)."""
        package = Path(root) / "numpy_transformer"
        write_region_bodies(package, [self.region(package)], [self.body])


def wrong(name, part, function, description, old, new):
    """The mistake `name`: the right body of `function` (right_bodies.py) with the code `old`
    (found there exactly once) changed into `new`, both read as parsed code (canonical)."""
    right, old, new = RIGHT[function], canonical(old), canonical(new)
    if right.count(old) != 1:
        raise ValueError(f"mistake {name}: {old!r} occurs {right.count(old)} times in the "
                         f"right body of {function}, expected once")
    return Mistake(name, part, function, description, right.replace(old, new))


ATTENTION = "scaled_dot_product_attention_backward"
NEW_KINDS = [       # the kinds issue 37 asked for: wrong math, and errors of shape
    wrong("layernorm_missing_both_terms", "layernorm", "LayerNorm.backward",
          "LayerNorm: both terms that depend on the mean and the variance are missing",
          "dx = g - mean_g\ndx -= xhat * mean_g_xhat", "dx = g"),
    Mistake("softmax_missing_diagonal", "softmax", "softmax_backward",
            "softmax backward keeps the coupling term only, the Jacobian's diagonal is missing",
            "return -p * fast.sum(dp * p, axis=axis, keepdims=True)"),
    wrong("gelu_sigmoid_form", "gelu", "GELU.backward",
          "GELU: the derivative of the sigmoid form x sigma(1.702 x), not of the tanh form",
          "du_dx = self.C * (1.0 + 3.0 * self.A * x**2)\n"
          "return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du_dx)",
          "s = 1.0 / (1.0 + xp.exp(-1.702 * x))\nreturn dy * (s + 1.702 * x * s * (1.0 - s))"),
    wrong("gelu_erf_form", "gelu", "GELU.backward",
          "GELU: the derivative of the exact (erf) form, not of the tanh form",
          "du_dx = self.C * (1.0 + 3.0 * self.A * x**2)\n"
          "return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du_dx)",
          "cdf = 0.5 * (1.0 + xp.vectorize(math.erf)(x / math.sqrt(2.0)))\n"
          "return dy * (cdf + x * xp.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi))"),
    wrong("adam_second_moment_only_corrected", "adam", "Adam._update",
          "Adam: only the second moment is bias-corrected", "m / (1 - b1**t)", "m"),
    wrong("adam_state_not_updated", "adam", "Adam._update",
          "Adam: the moments rebound (m = ...) instead of written into the state (m[...] = ...)",
          "m[...] = b1 * m + (1 - b1) * g\nv[...] = b2 * v + (1 - b2) * g * g",
          "m = b1 * m + (1 - b1) * g\nv = b2 * v + (1 - b2) * g * g"),
    Mistake("encoder_blocks_in_forward_order", "encoder_stack", "Encoder.backward",
            "encoder: the blocks' backward run in the forward order, not in reverse",
            "if self.norm is not None:\n    dout = self.norm.backward(dout)\n"
            "for layer in self.layers:\n    dout = layer.backward(dout)\nreturn dout"),
    wrong("decoder_blocks_in_forward_order", "decoder_stack", "Decoder.backward",
          "decoder: the blocks' backward run in the forward order, not in reverse",
          "for layer in reversed(self.layers):", "for layer in self.layers:"),
    wrong("attention_softmax_gets_dropped_weights", "attention", ATTENTION,
          "attention: the softmax backward gets the weights after dropout, not before",
          "softmax_backward(dattn, attn)", "softmax_backward(dattn, dropped)"),
    wrong("linear_weight_unflattened", "linear", "Linear.backward",
          "Linear: dW from the unflattened (B, T, D) arrays (a shape error)",
          'self.grads["weight"] += x2.T @ dy2', 'self.grads["weight"] += x.T @ dy'),
    wrong("layernorm_mean_without_keepdims", "layernorm", "LayerNorm.backward",
          "LayerNorm: the mean of g taken without keepdims (a shape error)",
          "mean_g = fast.mean(g, axis=-1, keepdims=True)", "mean_g = fast.mean(g, axis=-1)"),
    Mistake("softmax_sum_without_keepdims", "softmax", "softmax_backward",
            "softmax backward: the row sum taken without keepdims (a shape error)",
            "return p * (dp - fast.sum(dp * p, axis=axis))"),
    wrong("attention_value_gradient_untransposed", "attention", ATTENTION,
          "attention: dv from the weights without their transpose (a shape error)",
          "dv = dropped.swapaxes(-1, -2) @ dout", "dv = dropped @ dout"),
]

MISTAKES = [
    wrong("linear_overwrites", "linear", "Linear.backward",
          "Linear: parameter gradients overwritten (=) instead of accumulated (+=)",
          'self.grads["weight"] += x2.T', 'self.grads["weight"] = x2.T'),
    wrong("tied_linear_overwrites", "linear", "TiedLinear.backward",
          "TiedLinear: the shared gradient overwritten, dropping the embedding's part",
          'self.grads["weight"] += dy2.T', 'self.grads["weight"][...] = dy2.T'),
    wrong("layernorm_missing_term", "layernorm", "LayerNorm.backward",
          "LayerNorm: the xhat * mean(g * xhat) term of the input gradient is missing",
          "dx -= xhat * mean_g_xhat", ""),
    Mistake("softmax_elementwise", "softmax", "softmax_backward",
            "softmax backward uses the output elementwise, p (1 - p) dp, not the "
            "Jacobian-vector product", "return dp * p * (1 - p)"),
    Mistake("softmax_nan_masked_row", "softmax", "softmax_backward",
            "softmax backward divides by the row sum of p: NaN on a fully masked row",
            "return p * (dp - fast.sum(dp * p, axis=axis, keepdims=True)"
            " / p.sum(axis=axis, keepdims=True))"),
    wrong("feedforward_skips_dropout", "feedforward", "FeedForward.backward",
          "FeedForward: the dropout backward is skipped (the kept mask is not applied)",
          "dh = self.dropout.backward(dh)\n", ""),
    wrong("embedding_overwrites", "embedding", "Embedding.backward",
          "Embedding: parameter gradients overwritten (=) instead of accumulated (+=), "
          "which breaks tied embeddings", "ids = self.saved_for_backward()\n",
          'ids = self.saved_for_backward()\nself.grads["weight"][...] = 0\n'),
    wrong("embedding_repeated_ids", "embedding", "Embedding.backward",
          "Embedding: a plain fancy-index += keeps one row of a repeated token id",
          'fast.add_at(self.grads["weight"], ids, dy * self.multiplier)',
          'self.grads["weight"][ids] += dy * self.multiplier'),
    wrong("cross_entropy_divides_twice", "cross_entropy", "CrossEntropyLoss.backward",
          "cross-entropy: the gradient divided by the token count twice",
          "max(self.num_tokens, 1))", "max(self.num_tokens, 1) ** 2)"),
    wrong("cross_entropy_smoothing_v_minus_1", "cross_entropy", "CrossEntropyLoss.backward",
          "cross-entropy: label smoothing spread over V - 1 classes instead of V",
          "dx -= eps / V", "dx -= eps / (V - 1)"),
    wrong("cross_entropy_ignores_dloss", "cross_entropy", "CrossEntropyLoss.backward",
          "cross-entropy: the upstream dloss is ignored", "float(dloss)", "1.0"),
    wrong("adam_no_bias_correction", "adam", "Adam._update", "Adam without bias correction",
          "m_hat = m / (1 - b1**t)\nv_hat = v / (1 - b2**t)", "m_hat = m\nv_hat = v"),
    wrong("adam_first_moment_only_corrected", "adam", "Adam._update",
          "Adam: only the first moment is bias-corrected", "v / (1 - b2**t)", "v"),
    wrong("attention_key_scale_forgotten", "attention", "scaled_dot_product_attention_backward",
          "attention: the 1/sqrt(d_k) scale is forgotten in the key gradient",
          "dscores *= scale\ndq = dscores @ k", "dq = dscores @ k * scale"),
    wrong("attention_divides_by_batch", "attention", "scaled_dot_product_attention_backward",
          "attention: the query and key gradients divided by the batch size",
          "dq = dscores @ k\ndk = dscores.swapaxes(-1, -2) @ q",
          "dq = dscores @ k / q.shape[0]\ndk = dscores.swapaxes(-1, -2) @ q / q.shape[0]"),
    wrong("attention_skips_dropout", "attention", "scaled_dot_product_attention_backward",
          "attention: the weights' dropout is not undone in backward",
          "if dropout is not None:\n    dattn = dropout.backward(dattn)\n", ""),
    Mistake("mha_swaps_key_value", "multihead_attention", "MultiHeadAttention.project_backward",
            "multi-head attention: the key and value gradients go through each other's Linear",
            "return self.w_q.backward(dQ), self.w_k.backward(dV), self.w_v.backward(dK)"),
    wrong("mha_reshape_without_transpose", "multihead_attention",
          "MultiHeadAttentionBase.backward",
          "multi-head attention: heads merged by a reshape without the transpose",
          "return self.project_backward(merge_heads(dqh),",
          "B, H, T, Dh = dqh.shape\nreturn self.project_backward(dqh.reshape(B, T, H * Dh),"),
    wrong("mla_latent_gradient_overwritten", "mla", "MultiHeadLatentAttention.project_backward",
          "latent attention: the latent's gradient keeps the value path only (= not +=)",
          "dc += self.w_v", "dc = self.w_v"),
    wrong("encoder_block_query_gradient_only", "encoder_stack", "EncoderBlock.backward",
          "encoder block: self-attention passes back dq only, not dq + dk + dv",
          "dh = dq + dk + dv", "dh = dq"),
    Mistake("encoder_final_norm_skipped", "encoder_stack", "Encoder.backward",
            "encoder: the pre-norm stack's final LayerNorm is skipped in backward",
            "for layer in reversed(self.layers):\n    dout = layer.backward(dout)\nreturn dout"),
    wrong("decoder_memory_last_layer_only", "decoder_stack", "Decoder.backward",
          "decoder: passes back the memory gradient of its last layer only",
          "dmemory = dmem if dmemory is None else dmemory + dmem",
          "dmemory = dmem if dmemory is None else dmemory"),
    wrong("decoder_block_memory_keys_only", "decoder_stack", "DecoderBlock.backward",
          "decoder block: the memory gradient keeps the keys' part only (dk, not dk + dv)",
          "dmemory = dk + dv", "dmemory = dk"),
    wrong("linear_bias_batch_axis_only", "linear", "Linear.backward",
          "Linear: the bias gradient summed over the batch axis only (not over B and T)",
          "fast.sum(dy2, axis=0)", "fast.sum(dy, axis=0)"),
    wrong("layernorm_gamma_batch_axis_only", "layernorm", "LayerNorm.backward",
          "LayerNorm: dgamma summed over the batch axis only (not over every leading axis)",
          "fast.sum((dy * xhat).reshape(-1, D), axis=0)", "fast.sum(dy * xhat, axis=0)"),
    wrong("layernorm_missing_mean_term", "layernorm", "LayerNorm.backward",
          "LayerNorm: the mean(g) term of the input gradient is missing",
          "dx = g - mean_g", "dx = g"),
    Mistake("softmax_ignores_axis", "softmax", "softmax_backward",
            "softmax backward sums over the last axis whatever `axis` says",
            "return p * (dp - fast.sum(dp * p, axis=-1, keepdims=True))"),
    wrong("gelu_missing_cubic_term", "gelu", "GELU.backward",
          "GELU: du/dx taken as c, forgetting the derivative of the cubic term",
          "du_dx = self.C * (1.0 + 3.0 * self.A * x**2)", "du_dx = self.C"),
    Mistake("gelu_finite_difference", "gelu", "GELU.backward",
            "GELU: the derivative taken by central finite differences of the forward "
            "(numerically close, not derived)",
            "x, t = self.saved_for_backward()\nh = 1e-5\n"
            "f = lambda z: 0.5 * z * (1.0 + xp.tanh(self.C * (z + self.A * z**3)))\n"
            "return dy * (f(x + h) - f(x - h)) / (2 * h)"),
    wrong("attention_fresh_dropout_mask", "attention", "scaled_dot_product_attention_backward",
          "attention: backward draws a fresh dropout mask (dropout.forward) instead of "
          "reapplying the kept one", "dropout.reapply(attn)", "dropout.forward(attn)"),
    wrong("gelu_tanh_derivative", "gelu", "GELU.backward",
          "GELU: the derivative of tanh taken as 1 - t instead of 1 - t^2",
          "(1.0 - t * t)", "(1.0 - t)"),
    wrong("dropout_without_scale", "dropout", "Dropout.backward",
          "dropout backward applies the 0/1 mask without its 1 / (1 - p) scale",
          "dy * mask", "dy * (mask != 0)"),
    wrong("dropout_scales_twice", "dropout", "Dropout.backward",
          "dropout backward divides by (1 - p) again (the saved mask is already scaled)",
          "dy * mask", "dy * mask / (1 - self.p)"),
    Mistake("dropout_reapply_ignores_mask", "dropout", "Dropout.reapply",
            "dropout reapply returns x unchanged instead of applying the kept mask", "return x"),
    wrong("positional_sin_cos_swapped", "positional_encoding", "sinusoidal_table",
          "positional table: cos in the even columns and sin in the odd ones",
          "xp.sin(angles)\npe[:, 1::2] = xp.cos(", "xp.cos(angles)\npe[:, 1::2] = xp.sin("),
    wrong("positional_exponent_i", "positional_encoding", "sinusoidal_table",
          "positional table: the angle uses 10000^(i/D) instead of 10000^(2i/D)",
          "xp.arange(0, d_model, 2,", "xp.arange(0, (d_model + 1) // 2,"),
    Mistake("positional_backward_skips_dropout", "positional_encoding",
            "PositionalEncoding.backward",
            "positional encoding backward returns dy, skipping the dropout's backward",
            "return dy"),
    wrong("attention_value_gradient_ignores_dropout", "attention",
          "scaled_dot_product_attention_backward",
          "attention: dv computed from the weights before dropout (A, not dropout(A))",
          "dv = dropped.swapaxes", "dv = attn.swapaxes"),
    wrong("mla_returns_dv", "mla", "MultiHeadLatentAttention.project_backward",
          "latent attention: returns dV as the value gradient (v is k: it must be zeros)",
          "dk, xp.zeros_like(dk))", "dk, dV)"),
    wrong("feedforward_skips_activation", "feedforward", "FeedForward.backward",
          "FeedForward: the activation's backward is skipped",
          "dh = self.activation.backward(dh)\n", ""),
    wrong("embedding_forgets_multiplier", "embedding", "Embedding.backward",
          "Embedding: the sqrt(D) factor of forward is left out of the gradient",
          "dy * self.multiplier", "dy"),
    wrong("cross_entropy_counts_ignored_rows", "cross_entropy", "CrossEntropyLoss.backward",
          "cross-entropy: ignored rows counted in the denominator (divides by all N rows)",
          "max(self.num_tokens, 1)", "max(valid.size, 1)"),
    wrong("cross_entropy_ignored_rows_not_zeroed", "cross_entropy", "CrossEntropyLoss.backward",
          "cross-entropy: ignored rows keep p - q instead of a zero gradient",
          "valid.astype(p.dtype)", "xp.ones(valid.shape, dtype=p.dtype)"),
    wrong("adam_ignores_l2_decay", "adam", "Adam._update",
          "Adam: the L2 weight decay (g + wd p) is left out",
          "g = g + wd * p", "g = g"),
    wrong("adamw_also_l2_decay", "adam", "Adam._update",
          "AdamW also adds the L2 term into the gradient (decay both decoupled and coupled)",
          "wd and not self.decoupled", "wd"),
    Mistake("adamw_decay_rebinds", "adamw", "AdamW.decay",
            "AdamW: the decay rebinds p (p = p * ...) instead of shrinking it in place",
            "p = p * (1 - self.lr * weight_decay)"),
    Mistake("adamw_decay_without_lr", "adamw", "AdamW.decay",
            "AdamW: the decay factor is 1 - wd, without the learning rate",
            "p *= 1 - weight_decay"),
    wrong("encoder_block_skips_feed_forward", "encoder_stack", "EncoderBlock.backward",
          "encoder block: the feed-forward sublayer's backward is replaced by the identity",
          "dh = self.feed_forward.backward(df)", "dh = df"),
    wrong("decoder_memory_overwritten", "decoder_stack", "Decoder.backward",
          "decoder: dmemory overwritten by each block instead of summed across the blocks",
          "dmemory = dmem if dmemory is None else dmemory + dmem", "dmemory = dmem"),
] + NEW_KINDS


MISTAKES = [replace(m, cause=CAUSES.get(m.name, ())) for m in MISTAKES]
