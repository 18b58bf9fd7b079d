"""The words that name each catalogue mistake's cause (mistakes.py), for the measure.

A mistake's cause counts as named when its part's messages in a student's report
(the failed checks' names and messages) hold every one of its words:
tests/course/test_assignment_diagnosis.py measures the share over the catalogue
(issue 37: at least 80%) for two grading secrets. A mistake missing here names no
cause. The words are what a student reads: no formula (the copy's leak test reads
the messages too).
"""

SUM_TERM = "lacks exactly one term of its sum, "
UNCHANGED = "passed on unchanged"
OTHER_GELU = ("another GELU form", "close to, but not, the tanh form's derivative")
CAUSES = {
    "linear_overwrites": ("assigned (=) instead of accumulated",),
    "tied_linear_overwrites": ("assigned (=) instead of accumulated",),
    "layernorm_missing_term": (SUM_TERM + "the part that flows through the variance",),
    "softmax_elementwise": ("only the diagonal of the softmax's Jacobian is used",),
    "softmax_nan_masked_row": ("softmax_fully_masked_row", "not finite"),
    "feedforward_skips_dropout": ("the dropout's backward is skipped",),
    "embedding_overwrites": ("assigned (=) instead of accumulated",),
    "embedding_repeated_ids": ("a repeated token id keeps only one of its rows",),
    "cross_entropy_divides_twice": ("the average over the counted tokens is taken twice",),
    "cross_entropy_smoothing_v_minus_1": ("the smoothing is spread over one class too few",),
    "cross_entropy_ignores_dloss": ("exactly 1/dloss",),
    "adam_no_bias_correction": ("the bias correction is left out",),
    "adam_first_moment_only_corrected": ("only the first moment is bias-corrected",),
    "attention_key_scale_forgotten": ("exactly sqrt(d) with d = ",),
    "attention_divides_by_batch": ("exactly 1/B with B = 3 (the batch, the first axis) times",),
    "attention_skips_dropout": ("the weights' dropout is not undone on their gradient",),
    "mha_swaps_key_value": ("the key and value gradients go through each other's projection",),
    "mha_reshape_without_transpose": ("a transpose is missing before the merge",),
    "mla_latent_gradient_overwritten": ("the latent's gradient keeps the value path only",),
    "encoder_block_query_gradient_only": ("the self-attention's gradient keeps the query's "
                                          "part only",),
    "encoder_final_norm_skipped": ("the final LayerNorm's backward is skipped",),
    "decoder_memory_last_layer_only": (SUM_TERM + "the memory gradient of block",),
    "decoder_block_memory_keys_only": ("the value part of the memory gradient",),
    "linear_bias_batch_axis_only": ("of layers/linear.py", "a sum over too few axes?"),
    "layernorm_gamma_batch_axis_only": ("of layers/normalization.py",
                                        "a sum over too few axes?"),
    "layernorm_missing_mean_term": (SUM_TERM + "the part that flows through the mean",),
    "softmax_ignores_axis": ("the sum runs over the last axis instead of the softmax's axis",),
    "gelu_missing_cubic_term": ("the derivative of the inner cubic term is left out",),
    "gelu_finite_difference": ("is this a finite-difference gradient?",),
    "attention_fresh_dropout_mask": ("dropout drew a new mask after forward",),
    "gelu_tanh_derivative": ("the derivative of tanh is wrong",),
    "dropout_without_scale": ("exactly (1-p) with p = ",),
    "dropout_scales_twice": ("exactly 1/(1-p) with p = ",),
    "dropout_reapply_ignores_mask": ("a mask not applied?",),
    "positional_sin_cos_swapped": ("sine and cosine are swapped",),
    "positional_exponent_i": ("the frequencies fall off half as fast as they should",),
    "positional_backward_skips_dropout": ("the incoming gradient, " + UNCHANGED,),
    "attention_value_gradient_ignores_dropout": ("the value gradient uses the weights before "
                                                 "dropout",),
    "mla_returns_dv": ("the array dV it was given, " + UNCHANGED,),
    "feedforward_skips_activation": ("the activation's backward is skipped",),
    "embedding_forgets_multiplier": ("exactly 1/sqrt(d) with d = ",),
    "cross_entropy_counts_ignored_rows": ("the ignored rows are counted in the average",),
    "cross_entropy_ignored_rows_not_zeroed": ("a mask not applied?",),
    "adam_ignores_l2_decay": ("the L2 weight decay is left out of the gradient",),
    "adamw_also_l2_decay": ("the weight decay is also added to the gradient",),
    "adamw_decay_rebinds": ("rebound to a new array instead of written in place",),
    "adamw_decay_without_lr": ("the learning rate is left out of the decay",),
    "encoder_block_skips_feed_forward": ("the feed-forward's backward is skipped",),
    "decoder_memory_overwritten": ("is one term of its sum only, the memory gradient of block",),
    "layernorm_missing_both_terms": ("both parts, the one through the mean and the one through "
                                     "the variance, are left out",),
    "softmax_missing_diagonal": (SUM_TERM + "the diagonal part of the Jacobian",),
    "gelu_sigmoid_form": OTHER_GELU + ("the sigmoid approximation",),
    "gelu_erf_form": OTHER_GELU + ("the exact one",),
    "adam_second_moment_only_corrected": ("only the second moment is bias-corrected",),
    "adam_state_not_updated": ("the moments are not kept from one step to the next",),
    "encoder_blocks_in_forward_order": ("the blocks' backward runs in the forward order",),
    "decoder_blocks_in_forward_order": ("the blocks' backward runs in the forward order",),
    "attention_softmax_gets_dropped_weights": ("the softmax's backward gets the weights after "
                                               "dropout",),
    "linear_weight_unflattened": ("of layers/linear.py", "do not match in a matrix product "
                                  "while computing self.grads['weight']"),
    "layernorm_mean_without_keepdims": ("of layers/normalization.py", "do not match while "
                                        "computing dx"),
    "softmax_sum_without_keepdims": ("of layers/softmax.py", "do not match while computing "
                                     "the returned value"),
    "attention_value_gradient_untransposed": ("of layers/attention.py", "do not match in a "
                                              "matrix product while computing dv"),
}
