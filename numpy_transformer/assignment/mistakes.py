"""A catalogue of typical backward-pass mistakes, to test the grader itself.

Each mistake is a patch of the reference solution: in `path` (inside the
package), the text `old` (found exactly once, inside a solution region of
`part`) becomes `new`. Applied to a solution copy, every mistake must cost
points in its part, and only there: a mistake the grader cannot catch is a bug
in the grader. This file is left out of student copies (it quotes the solutions).
"""

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Mistake:
    name: str
    part: str
    description: str
    path: str       # relative to numpy_transformer/
    old: str
    new: str

    def apply(self, root):
        """Patch the copy in `root` (which holds numpy_transformer/); ValueError if `old` is
        not found exactly once."""
        file = Path(root) / "numpy_transformer" / self.path
        text = file.read_text(encoding="utf-8")
        if text.count(self.old) != 1:
            raise RuntimeError(f"mistake {self.name}: its text occurs {text.count(self.old)} "
                             f"times in {self.path}, expected once")
        file.write_text(text.replace(self.old, self.new), encoding="utf-8")


MISTAKES = [
    Mistake("linear_overwrites", "linear",
            "Linear: parameter gradients overwritten (=) instead of accumulated (+=)",
            "layers/linear.py",
            'self.grads["weight"] += x2.T @ dy2            # (D_in, D_out)',
            'self.grads["weight"] = x2.T @ dy2             # (D_in, D_out)'),
    Mistake("tied_linear_overwrites", "linear",
            "TiedLinear: the shared gradient overwritten, dropping the embedding's part",
            "layers/linear.py",
            'self.grads["weight"] += dy2.T @ x2            # (D_out, D_in) = dW^T',
            'self.grads["weight"][...] = dy2.T @ x2        # (D_out, D_in) = dW^T'),
    Mistake("layernorm_missing_term", "layernorm",
            "LayerNorm: the xhat * mean(g * xhat) term of the input gradient is missing",
            "layers/normalization.py",
            "        dx -= xhat * mean_g_xhat\n", ""),
    Mistake("softmax_elementwise", "softmax",
            "softmax backward uses the output elementwise, p (1 - p) dp, not the "
            "Jacobian-vector product", "layers/softmax.py",
            "return p * (dp - fast.sum(dp * p, axis=axis, keepdims=True))",
            "return dp * p * (1 - p)"),
    Mistake("softmax_nan_masked_row", "softmax",
            "softmax backward divides by the row sum of p: NaN on a fully masked row",
            "layers/softmax.py",
            "return p * (dp - fast.sum(dp * p, axis=axis, keepdims=True))",
            "return p * (dp - fast.sum(dp * p, axis=axis, keepdims=True)"
            " / p.sum(axis=axis, keepdims=True))"),
    Mistake("feedforward_skips_dropout", "feedforward",
            "FeedForward: the dropout backward is skipped (the kept mask is not applied)",
            "layers/feedforward.py",
            "        dh = self.dropout.backward(dh)               # (B, T, F)\n", ""),
    Mistake("embedding_overwrites", "embedding",
            "Embedding: parameter gradients overwritten (=) instead of accumulated (+=), "
            "which breaks tied embeddings",
            "layers/embedding.py",
            'self.grads["weight"][sorted_ids[starts]] += sums',
            'self.grads["weight"][sorted_ids[starts]] = sums'),
    Mistake("embedding_repeated_ids", "embedding",
            "Embedding: a plain fancy-index += keeps one row of a repeated token id",
            "layers/embedding.py",
            'self.grads["weight"][sorted_ids[starts]] += sums  # (U, D) rows of (V, D)',
            'self.grads["weight"][flat] += dy2 * self.multiplier'),
    Mistake("cross_entropy_divides_twice", "cross_entropy",
            "cross-entropy: the gradient divided by the token count twice",
            "losses.py",
            "(float(dloss) / max(self.num_tokens, 1))",
            "(float(dloss) / max(self.num_tokens, 1) ** 2)"),
    Mistake("cross_entropy_smoothing_v_minus_1", "cross_entropy",
            "cross-entropy: label smoothing spread over V - 1 classes instead of V",
            "losses.py",
            "dx -= eps / V                                       # p - eps / V",
            "dx -= eps / (V - 1)"),
    Mistake("cross_entropy_ignores_dloss", "cross_entropy",
            "cross-entropy: the upstream dloss is ignored",
            "losses.py",
            "(float(dloss) / max(self.num_tokens, 1))",
            "(1.0 / max(self.num_tokens, 1))"),
    Mistake("adam_no_bias_correction", "adam",
            "Adam without bias correction",
            "optim/adam.py",
            "        c = math.sqrt(1 - b2**t)\n        step = self.lr * c / (1 - b1**t)\n",
            "        c = 1.0\n        step = self.lr\n"),
    Mistake("adam_first_moment_only_corrected", "adam",
            "Adam: only the first moment is bias-corrected",
            "optim/adam.py",
            "        c = math.sqrt(1 - b2**t)\n", "        c = 1.0\n"),
    Mistake("attention_key_scale_forgotten", "attention",
            "attention: the 1/sqrt(d_k) scale is forgotten in the key gradient",
            "layers/attention.py",
            "    dscores *= scale                                # now the gradient of q k^T\n"
            "    dq = dscores @ k                                # (B, H, Tq, Dh)\n",
            "    dq = dscores @ k * scale\n"),
    Mistake("attention_divides_by_batch", "attention",
            "attention: the query and key gradients divided by the batch size",
            "layers/attention.py",
            "    dq = dscores @ k                                # (B, H, Tq, Dh)\n"
            "    dk = dscores.swapaxes(-1, -2) @ q               # (B, H, Tk, Dh)\n",
            "    dq = dscores @ k / q.shape[0]\n"
            "    dk = dscores.swapaxes(-1, -2) @ q / q.shape[0]\n"),
    Mistake("attention_skips_dropout", "attention",
            "attention: the weights' dropout is not undone in backward",
            "layers/attention.py",
            "    if dropout is not None:\n"
            "        dattn = dropout.backward(dattn)             # (B, H, Tq, Tk)\n", ""),
    Mistake("mha_swaps_key_value", "multihead_attention",
            "multi-head attention: the key and value gradients go through each other's Linear",
            "layers/attention.py",
            "self.w_k.backward(dK), self.w_v.backward(dV)",
            "self.w_k.backward(dV), self.w_v.backward(dK)"),
    Mistake("mha_reshape_without_transpose", "multihead_attention",
            "multi-head attention: heads merged by a reshape without the transpose",
            "layers/attention.py",
            "        return self.project_backward(merge_heads(dqh), merge_heads(dkh), "
            "merge_heads(dvh))\n",
            "        B, H, T, Dh = dqh.shape\n        return self.project_backward("
            "dqh.reshape(B, T, H * Dh), merge_heads(dkh), merge_heads(dvh))\n"),
    Mistake("mla_latent_gradient_overwritten", "mla",
            "latent attention: the latent's gradient keeps the value path only (= not +=)",
            "layers/latent_attention.py",
            "        dc += self.w_v_decompress.backward(dV)",
            "        dc = self.w_v_decompress.backward(dV)"),
    Mistake("encoder_block_query_gradient_only", "encoder_stack",
            "encoder block: self-attention passes back dq only, not dq + dk + dv",
            "models/encoder.py",
            "return self.sublayers[0].backward(d, self_attention_backward(self.self_attn))",
            "return self.sublayers[0].backward(d, lambda dy: self.self_attn.backward(dy)[0])"),
    Mistake("encoder_final_norm_skipped", "encoder_stack",
            "encoder: the pre-norm stack's final LayerNorm is skipped in backward",
            "models/encoder.py",
            "        if self.norm is not None:\n"
            "            dout = self.norm.backward(dout)\n", ""),
    Mistake("decoder_memory_last_layer_only", "decoder_stack",
            "decoder: passes back the memory gradient of its last layer only",
            "models/decoder.py",
            "dmemory = dmem if dmemory is None else dmemory + dmem",
            "dmemory = dmem if dmemory is None else dmemory"),
    Mistake("decoder_block_memory_keys_only", "decoder_stack",
            "decoder block: the memory gradient keeps the keys' part only (dk, not dk + dv)",
            "models/decoder.py",
            "return dq, dk + dv ", "return dq, dk "),
]
