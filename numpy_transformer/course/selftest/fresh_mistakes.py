"""A second, held-out set of student mistakes, to measure whether feedback names the cause.

Written for issue 49 (item 4) without reading the catalogue (mistakes.py), so that the
diagnosis (diagnose.py, known_slips*.py) is measured on mistakes it was not tuned on
first: each is one edit of a right body (right_bodies.py), made and applied by the
catalogue's own machinery (`wrong`), with the words the feedback must hold for its
cause to count as named (`cause`). tests/course/test_feedback_causes.py grades each
in the grader and in the student's `assignment check` and asserts the shares.

It lives beside the catalogue, in the teacher's package (selftest/ is one of the rooms
a student copy leaves out): like the catalogue, it quotes the solutions.

The causes say what a student should read, in words and named sizes ("1/N with N = 12
rows"), never a formula.
"""

from dataclasses import replace

from .mistakes import wrong

ATTENTION = "scaled_dot_product_attention_backward"
ROWS_FACTOR = "1/N with N = "
SKIPPED = "skipped"


def fresh(name, part, function, old, new, *cause):
    """One held-out mistake: `old` changed into `new` in `function`'s right body."""
    return replace(wrong(name, part, function, name.replace("_", " "), old, new),
                   cause=tuple(cause))


FRESH = [
    # linear: averaging where a sum belongs, and an accumulation dropped
    fresh("linear_bias_averaged", "linear", "Linear.backward",
          "self.grads['bias'] += fast.sum(dy2, axis=0)",
          "self.grads['bias'] += dy2.mean(axis=0)", ROWS_FACTOR, "rows"),
    fresh("linear_bias_assigned", "linear", "Linear.backward",
          "self.grads['bias'] += fast.sum(dy2, axis=0)",
          "self.grads['bias'] = fast.sum(dy2, axis=0)", "assigned (=) instead of accumulated"),
    fresh("tied_weight_averaged", "linear", "TiedLinear.backward",
          "self.grads['weight'] += dy2.T @ x2",
          "self.grads['weight'] += dy2.T @ x2 / x2.shape[0]", ROWS_FACTOR),
    fresh("linear_input_gradient_averaged", "linear", "Linear.backward",
          "return (dy2 @ self.params['weight'].T).reshape(x.shape)",
          "return (dy2 @ self.params['weight'].T / len(dy2)).reshape(x.shape)", ROWS_FACTOR),
    # layernorm: a sum averaged, a scale forgotten, a sign flipped
    fresh("layernorm_beta_averaged", "layernorm", "LayerNorm.backward",
          "self.grads['beta'] += fast.sum(dy.reshape(-1, D), axis=0)",
          "self.grads['beta'] += dy.reshape(-1, D).mean(axis=0)", ROWS_FACTOR),
    fresh("layernorm_gamma_not_applied", "layernorm", "LayerNorm.backward",
          "g = dy * self.params['gamma']", "g = dy", "not scaled by gamma"),
    fresh("layernorm_mean_term_sign", "layernorm", "LayerNorm.backward",
          "dx = g - mean_g", "dx = g + mean_g",
          "the part that flows through the mean", "sign"),
    fresh("layernorm_inverse_std_forgotten", "layernorm", "LayerNorm.backward",
          "dx *= r", "dx *= 1.0", "standard deviation"),
    # softmax: the coupling term's sign, an average where a sum belongs
    fresh("softmax_coupling_sign", "softmax", "softmax_backward",
          "p * (dp - fast.sum(dp * p, axis=axis, keepdims=True))",
          "p * (dp + fast.sum(dp * p, axis=axis, keepdims=True))",
          "the part that couples the entries", "sign"),
    fresh("softmax_coupling_averaged", "softmax", "softmax_backward",
          "p * (dp - fast.sum(dp * p, axis=axis, keepdims=True))",
          "p * (dp - (dp * p).mean(axis=axis, keepdims=True))",
          "the part that couples the entries", "1/d with d = "),
    # gelu: a half dropped, the chain rule's last step forgotten
    fresh("gelu_first_term_doubled", "gelu", "GELU.backward",
          "0.5 * (1.0 + t)", "(1.0 + t)", "the product rule's first term", "twice"),
    fresh("gelu_incoming_gradient_forgotten", "gelu", "GELU.backward",
          "return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du_dx)",
          "return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du_dx",
          "the incoming gradient is not multiplied in"),
    # dropout: the scale lost, the scale applied twice, reapply without its mask
    fresh("dropout_mask_without_scale", "dropout", "Dropout.backward",
          "dy * mask", "dy * (mask != 0)", "(1-p) with p = "),
    fresh("dropout_mask_applied_twice", "dropout", "Dropout.backward",
          "dy * mask", "dy * mask * mask", "1/(1-p) with p = "),
    fresh("dropout_reapply_passes_through", "dropout", "Dropout.reapply",
          "x if mask is OFF else x * mask", "x", "passed on unchanged"),
    # attention: the scale twice, the softmax's backward skipped, dropout undone twice
    fresh("attention_scale_applied_twice", "attention", ATTENTION,
          "dscores *= scale", "dscores *= scale * scale", "1/sqrt(d) with d = "),
    fresh("attention_scale_forgotten", "attention", ATTENTION,
          "dscores *= scale", "dscores *= 1.0", "sqrt(d) with d = "),
    fresh("attention_softmax_backward_skipped", "attention", ATTENTION,
          "dscores = softmax_backward(dattn, attn)", "dscores = dattn.copy()",
          "the softmax's backward is skipped"),
    fresh("attention_dropout_undone_twice", "attention", ATTENTION,
          "dattn = dropout.backward(dattn)", "dattn = dropout.backward(dropout.backward(dattn))",
          "dropout", "twice"),
    # multi-head attention: the output projection's backward skipped, the query's and
    # key's projections swapped
    fresh("mha_output_projection_skipped", "multihead_attention",
          "MultiHeadAttentionBase.backward",
          "split_heads(self.w_o.backward(dout), self.num_heads)",
          "split_heads(dout, self.num_heads)", "w_o", SKIPPED),
    fresh("mha_query_key_swapped", "multihead_attention", "MultiHeadAttention.project_backward",
          "(self.w_q.backward(dQ), self.w_k.backward(dK), self.w_v.backward(dV))",
          "(self.w_q.backward(dK), self.w_k.backward(dQ), self.w_v.backward(dV))",
          "the query and key gradients go through each other's projection"),
    # mla: a path of the latent's gradient left out, a projection's backward skipped
    fresh("mla_value_path_left_out", "mla", "MultiHeadLatentAttention.project_backward",
          "dc += self.w_v_decompress.backward(dV)", "pass", "the value path is left out"),
    fresh("mla_query_projection_skipped", "mla", "MultiHeadLatentAttention.project_backward",
          "self.w_q.backward(dQ)", "dQ", "w_q", SKIPPED),
    # feedforward: the activation's backward applied twice
    fresh("feedforward_activation_twice", "feedforward", "FeedForward.backward",
          "dh = self.activation.backward(dh)",
          "dh = self.activation.backward(self.activation.backward(dh))",
          "the activation's backward is applied twice"),
    # embedding: the multiplier applied twice
    fresh("embedding_multiplier_twice", "embedding", "Embedding.backward",
          "dy * self.multiplier", "dy * self.multiplier * self.multiplier",
          "sqrt(d) with d = "),
    # positional encoding: the frequencies' exponent with the wrong sign, sines only
    fresh("positional_frequencies_grow", "positional_encoding", "sinusoidal_table",
          "xp.arange(0, d_model, 2, dtype=xp.float64) * -(math.log(10000.0) / d_model)",
          "xp.arange(0, d_model, 2, dtype=xp.float64) * (math.log(10000.0) / d_model)",
          "the frequencies grow"),
    fresh("positional_sines_only", "positional_encoding", "sinusoidal_table",
          "pe[:, 1::2] = xp.cos(angles[:, :d_model // 2])",
          "pe[:, 1::2] = xp.sin(angles[:, :d_model // 2])", "odd columns"),
    # cross-entropy: the target's weight without the smoothing, its sign, the vocabulary
    fresh("cross_entropy_target_ignores_smoothing", "cross_entropy",
          "CrossEntropyLoss.backward", "dx[rows, t] -= 1 - eps", "dx[rows, t] -= 1",
          "the target class", "smoothing"),
    fresh("cross_entropy_target_sign", "cross_entropy", "CrossEntropyLoss.backward",
          "dx[rows, t] -= 1 - eps", "dx[rows, t] += 1 - eps", "the target class", "sign"),
    fresh("cross_entropy_averaged_over_vocabulary", "cross_entropy",
          "CrossEntropyLoss.backward", "dx *= scale[:, None]", "dx *= scale[:, None] / V",
          "1/d with d = ", "(the last axis)"),
    # adam: the step count off by one, the learning rate left out, L2's sign
    fresh("adam_step_count_off_by_one", "adam", "Adam._update",
          "m_hat = m / (1 - b1 ** t)\nv_hat = v / (1 - b2 ** t)",
          "m_hat = m / (1 - b1 ** (t + 1))\nv_hat = v / (1 - b2 ** (t + 1))",
          "the step count"),
    fresh("adam_learning_rate_left_out", "adam", "Adam._update",
          "p -= self.lr * m_hat / (xp.sqrt(v_hat) + self.eps)",
          "p -= m_hat / (xp.sqrt(v_hat) + self.eps)", "the learning rate"),
    fresh("adam_l2_sign", "adam", "Adam._update",
          "g = g + wd * p", "g = g - wd * p", "the L2 weight decay", "sign"),
    # adamw: the decay's sign
    fresh("adamw_decay_grows", "adamw", "AdamW.decay",
          "p *= 1 - self.lr * weight_decay", "p *= 1 + self.lr * weight_decay",
          "-1 (the opposite sign)"),
    # encoder: a residual forgotten, the value part left out, only the last block
    fresh("encoder_feed_forward_residual_forgotten", "encoder_stack", "EncoderBlock.backward",
          "dx = dx + self.sublayers[1].enter_backward(dh)",
          "dx = self.sublayers[1].enter_backward(dh)", "residual"),
    fresh("encoder_value_part_left_out", "encoder_stack", "EncoderBlock.backward",
          "dh = dq + dk + dv", "dh = dq + dk", "the value part"),
    fresh("encoder_last_block_only", "encoder_stack", "Encoder.backward",
          "for layer in reversed(self.layers):\n    dout = layer.backward(dout)",
          "dout = self.layers[-1].backward(dout)", "layers.0", SKIPPED),
    # decoder: the memory gradient's key part left out, a residual forgotten, the
    # self-attention's key part left out, the final norm's result dropped
    fresh("decoder_memory_key_part_left_out", "decoder_stack", "DecoderBlock.backward",
          "dmemory = dk + dv", "dmemory = dv", "the key part of the memory gradient"),
    fresh("decoder_cross_attention_residual_forgotten", "decoder_stack",
          "DecoderBlock.backward",
          "dx = dx + self.sublayers[1].enter_backward(dq)",
          "dx = self.sublayers[1].enter_backward(dq)", "residual"),
    fresh("decoder_self_attention_key_part_left_out", "decoder_stack", "DecoderBlock.backward",
          "dh = dq + dk + dv", "dh = dq + dv", "the key part"),
    fresh("decoder_final_norm_result_dropped", "decoder_stack", "Decoder.backward",
          "dout = self.norm.backward(dout)", "self.norm.backward(dout)",
          "the final LayerNorm's backward"),
]
