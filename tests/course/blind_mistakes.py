"""A blind set of student mistakes, written without reading the diagnosis or its sets.

Written for a blind measurement of how often the grader's and `check`'s feedback name
the cause of a mistake (tests/course/test_blind_feedback.py). The author read only the
reference graded regions (selftest/right_bodies.py) and the swap-and-grade machinery of
test_one_judgement.py / test_feedback_causes.py; NOT diagnose.py, known_slips*.py,
selftest/mistakes.py, selftest/fresh_mistakes.py or selftest/mistake_causes.py.

Each entry: (name, part, function qualname, old, new, cause)

    old -> new  one edit of the function's canonical right body (both canonicalised by
                the test when the canonical `old` occurs there, else taken as written, for
                fragments like `axis=axis` that parse to something else; `old` must occur
                exactly once); new "" deletes the line
    cause       the words a helpful message must hold, fixed BEFORE any message was seen:
                a tuple of groups, each group a tuple of synonyms (lower case, matched as
                substrings of the lower-cased message); the cause is named when every
                group has at least one of its synonyms in the failed checks' messages
"""

from collections import namedtuple

Blind = namedtuple("Blind", "name part function old new cause")

BLIND = [
    # ---- linear -----------------------------------------------------------------
    Blind("lin_weight_grad_dy_first", "linear", "Linear.backward",
          "x2.T @ dy2", "dy2.T @ x2",
          (("transpose",),)),
    Blind("lin_bias_mean_over_rows", "linear", "Linear.backward",
          "fast.sum(dy2, axis=0)", "fast.mean(dy2, axis=0)",
          (("bias",), ("mean", "average", "1/n"))),
    Blind("lin_weight_grad_overwritten", "linear", "Linear.backward",
          "self.grads['weight'] += x2.T @ dy2", "self.grads['weight'] = x2.T @ dy2",
          (("accumul", "overwr", "+=", "instead of add"),)),
    Blind("lin_dx_left_flat", "linear", "Linear.backward",
          "(dy2 @ self.params['weight'].T).reshape(x.shape)", "dy2 @ self.params['weight'].T",
          (("shape",),)),
    Blind("tied_dx_with_transpose", "linear", "TiedLinear.backward",
          "dy2 @ self.params['weight']", "dy2 @ self.params['weight'].T",
          (("transpose",),)),

    # ---- layernorm --------------------------------------------------------------
    Blind("ln_variance_term_dropped", "layernorm", "LayerNorm.backward",
          "dx -= xhat * mean_g_xhat", "",
          (("variance", "standard deviation", "std", "xhat", "normalized"),)),
    Blind("ln_mean_term_dropped", "layernorm", "LayerNorm.backward",
          "dx = g - mean_g", "dx = g",
          (("mean",),)),
    Blind("ln_gamma_grad_without_xhat", "layernorm", "LayerNorm.backward",
          "(dy * xhat).reshape", "dy.reshape",
          (("gamma",), ("xhat", "normalized", "normalised"))),
    Blind("ln_forgot_inverse_std", "layernorm", "LayerNorm.backward",
          "dx *= r", "",
          (("std", "standard deviation", "sigma", "variance"),)),
    Blind("ln_gamma_not_multiplied_in", "layernorm", "LayerNorm.backward",
          "g = dy * self.params['gamma']", "g = dy",
          (("gamma",),)),

    # ---- softmax ----------------------------------------------------------------
    Blind("sm_missing_p_factor", "softmax", "softmax_backward",
          "p * (dp - fast.sum(dp * p, axis=axis, keepdims=True))",
          "dp - fast.sum(dp * p, axis=axis, keepdims=True)",
          (("probabilit", "softmax output", "times p", "multiplied by p", "the output"),)),
    Blind("sm_sum_over_axis_0", "softmax", "softmax_backward",
          "axis=axis", "axis=0",
          (("axis",),)),
    Blind("sm_sign_of_sum_term", "softmax", "softmax_backward",
          "dp - fast.sum", "dp + fast.sum",
          (("sign",),)),

    # ---- gelu -------------------------------------------------------------------
    Blind("gelu_tanh_derivative_not_squared", "gelu", "GELU.backward",
          "(1.0 - t * t)", "(1.0 - t)",
          (("tanh",),)),
    Blind("gelu_dy_not_multiplied", "gelu", "GELU.backward",
          "dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du_dx)",
          "0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du_dx",
          (("incoming", "upstream", "dy"),)),

    # ---- dropout ----------------------------------------------------------------
    Blind("drop_backward_unscaled_mask", "dropout", "Dropout.backward",
          "dy * mask", "dy * (mask != 0)",
          (("1-p", "1 - p", "scal"),)),
    Blind("drop_backward_scaled_twice", "dropout", "Dropout.backward",
          "dy * mask", "dy * mask / (1 - self.p)",
          (("twice", "1-p", "1 - p", "scal"),)),
    Blind("drop_reapply_ignores_mask", "dropout", "Dropout.reapply",
          "x if mask is OFF else x * mask", "x",
          (("mask",),)),

    # ---- attention --------------------------------------------------------------
    Blind("attn_scale_forgotten", "attention", "scaled_dot_product_attention_backward",
          "dscores *= scale", "",
          (("scale", "sqrt"),)),
    Blind("attn_dq_scaled_twice", "attention", "scaled_dot_product_attention_backward",
          "dq = dscores @ k", "dq = dscores @ k * scale",
          (("scale", "sqrt"),)),
    Blind("attn_dk_not_transposed", "attention", "scaled_dot_product_attention_backward",
          "dk = dscores.swapaxes(-1, -2) @ q", "dk = dscores @ q",
          (("transpose", "swap"),)),
    Blind("attn_dv_uses_undropped_weights", "attention",
          "scaled_dot_product_attention_backward",
          "dv = dropped.swapaxes(-1, -2) @ dout", "dv = attn.swapaxes(-1, -2) @ dout",
          (("dropout",),)),
    Blind("attn_dropout_backward_skipped", "attention",
          "scaled_dot_product_attention_backward",
          "dattn = dropout.backward(dattn)", "dattn = dattn",
          (("dropout",),)),
    Blind("attn_softmax_jacobian_as_elementwise", "attention",
          "scaled_dot_product_attention_backward",
          "softmax_backward(dattn, attn)", "dattn * attn",
          (("softmax",),)),

    # ---- multihead_attention ----------------------------------------------------
    Blind("mha_key_value_grads_swapped", "multihead_attention",
          "MultiHeadAttentionBase.backward",
          "merge_heads(dqh), merge_heads(dkh), merge_heads(dvh)",
          "merge_heads(dqh), merge_heads(dvh), merge_heads(dkh)",
          (("key",), ("value",))),
    Blind("mha_output_projection_skipped", "multihead_attention",
          "MultiHeadAttentionBase.backward",
          "split_heads(self.w_o.backward(dout), self.num_heads)",
          "split_heads(dout, self.num_heads)",
          (("output projection", "w_o"),)),
    Blind("mha_project_dk_into_value", "multihead_attention",
          "MultiHeadAttention.project_backward",
          "self.w_k.backward(dK), self.w_v.backward(dV)",
          "self.w_k.backward(dV), self.w_v.backward(dK)",
          (("key",), ("value",))),

    # ---- mla --------------------------------------------------------------------
    Blind("mla_value_path_overwrites_key_path", "mla",
          "MultiHeadLatentAttention.project_backward",
          "dc += self.w_v_decompress.backward(dV)", "dc = self.w_v_decompress.backward(dV)",
          (("key",),)),
    Blind("mla_latent_grad_returned_twice", "mla",
          "MultiHeadLatentAttention.project_backward",
          "xp.zeros_like(dk)", "dk",
          (("twice", "double"),)),

    # ---- feedforward ------------------------------------------------------------
    Blind("ff_dropout_backward_skipped", "feedforward", "FeedForward.backward",
          "dh = self.dropout.backward(dh)", "",
          (("dropout",),)),
    Blind("ff_activation_backward_skipped", "feedforward", "FeedForward.backward",
          "dh = self.activation.backward(dh)", "",
          (("activation", "gelu", "relu"),)),

    # ---- embedding --------------------------------------------------------------
    Blind("emb_multiplier_forgotten", "embedding", "Embedding.backward",
          "dy * self.multiplier", "dy",
          (("multiplier", "sqrt", "scale"),)),
    Blind("emb_fancy_index_add_loses_repeats", "embedding", "Embedding.backward",
          "fast.add_at(self.grads['weight'], ids, dy * self.multiplier)",
          "self.grads['weight'][ids] += dy * self.multiplier",
          (("repeat", "duplicate", "add_at", "more than once", "twice"),)),

    # ---- positional_encoding ----------------------------------------------------
    Blind("pe_sin_cos_swapped", "positional_encoding", "sinusoidal_table",
          "pe[:, 0::2] = xp.sin(angles)\npe[:, 1::2] = xp.cos(angles[:, :d_model // 2])",
          "pe[:, 0::2] = xp.cos(angles)\npe[:, 1::2] = xp.sin(angles[:, :d_model // 2])",
          (("sin",), ("cos",))),
    Blind("pe_exponent_i_not_2i", "positional_encoding", "sinusoidal_table",
          "xp.arange(0, d_model, 2, dtype=xp.float64)",
          "xp.arange(0, d_model // 2, dtype=xp.float64)",
          (("2i", "frequenc", "exponent"),)),
    Blind("pe_backward_skips_dropout", "positional_encoding", "PositionalEncoding.backward",
          "self.dropout.backward(dy)", "dy",
          (("dropout",),)),

    # ---- cross_entropy ----------------------------------------------------------
    Blind("ce_not_divided_by_tokens", "cross_entropy", "CrossEntropyLoss.backward",
          "float(dloss) / max(self.num_tokens, 1)", "float(dloss)",
          (("mean", "average", "number of tokens", "1/n", "tokens"),)),
    Blind("ce_ignored_rows_counted", "cross_entropy", "CrossEntropyLoss.backward",
          "valid.astype(p.dtype)", "np.ones(valid.shape, dtype=p.dtype)",
          (("ignore", "padding", "mask", "valid"),)),
    Blind("ce_smoothing_left_out_of_target", "cross_entropy", "CrossEntropyLoss.backward",
          "dx[rows, t] -= 1 - eps", "dx[rows, t] -= 1",
          (("smoothing",),)),
    Blind("ce_dloss_not_multiplied", "cross_entropy", "CrossEntropyLoss.backward",
          "float(dloss) / max(self.num_tokens, 1)", "1.0 / max(self.num_tokens, 1)",
          (("dloss", "incoming", "upstream"),)),

    # ---- adam -------------------------------------------------------------------
    Blind("adam_no_first_moment_correction", "adam", "Adam._update",
          "m_hat = m / (1 - b1 ** t)", "m_hat = m",
          (("bias correct", "bias-correct", "correction"),)),
    Blind("adam_second_moment_not_squared", "adam", "Adam._update",
          "(1 - b2) * g * g", "(1 - b2) * g",
          (("square",),)),
    Blind("adam_eps_inside_sqrt", "adam", "Adam._update",
          "xp.sqrt(v_hat) + self.eps", "xp.sqrt(v_hat + self.eps)",
          (("eps",), ("sqrt", "square root"))),
    Blind("adam_l2_term_sign_flipped", "adam", "Adam._update",
          "g = g + wd * p", "g = g - wd * p",
          (("sign",), ("decay", "wd", "l2"))),

    # ---- adamw ------------------------------------------------------------------
    Blind("adamw_decay_without_lr", "adamw", "AdamW.decay",
          "p *= 1 - self.lr * weight_decay", "p *= 1 - weight_decay",
          (("learning rate", "lr"),)),
    Blind("adamw_decay_sign_flipped", "adamw", "AdamW.decay",
          "p *= 1 - self.lr * weight_decay", "p *= 1 + self.lr * weight_decay",
          (("sign",),)),

    # ---- encoder_stack ----------------------------------------------------------
    Blind("enc_ff_residual_path_dropped", "encoder_stack", "EncoderBlock.backward",
          "dx = dx + self.sublayers[1].enter_backward(dh)",
          "dx = self.sublayers[1].enter_backward(dh)",
          (("residual", "skip"),)),
    Blind("enc_self_attention_query_only", "encoder_stack", "EncoderBlock.backward",
          "dh = dq + dk + dv", "dh = dq",
          (("key",), ("value",))),
    Blind("enc_layers_in_forward_order", "encoder_stack", "Encoder.backward",
          "reversed(self.layers)", "self.layers",
          (("order", "revers"),)),

    # ---- decoder_stack ----------------------------------------------------------
    Blind("dec_memory_grad_takes_query_too", "decoder_stack", "DecoderBlock.backward",
          "dmemory = dk + dv", "dmemory = dq + dk + dv",
          (("query",),)),
    Blind("dec_cross_query_grad_not_added", "decoder_stack", "DecoderBlock.backward",
          "dx = dx + self.sublayers[1].enter_backward(dq)", "",
          (("query",),)),
    Blind("dec_stack_memory_grad_overwritten", "decoder_stack", "Decoder.backward",
          "dmemory = dmem if dmemory is None else dmemory + dmem", "dmemory = dmem",
          (("accumul", "sum", "every layer", "each layer", "all layers", "overwr"),)),
]
