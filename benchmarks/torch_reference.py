"""The same Transformer written with plain PyTorch ops, built from numpy_transformer's weights.

Not `torch.nn.Transformer`: its parameter layout, masks and norms differ. This
file mirrors numpy_transformer's model line by line, so that one set of weights
gives the same logits, loss and gradients in both:

    x      = Embed(ids) * sqrt(D) + PE[:T]          (dropout after, as ours)
    block  = post-norm LayerNorm(x + f(x))  or  pre-norm x + f(LayerNorm(x))
    f      = attention (MHA: w_q, w_k, w_v, w_o; MLA: w_q, w_kv_compress,
             w_k_decompress, w_v_decompress, w_o) or FFN linear_2(relu(linear_1(x)))
    logits = h W_gen + b  (or h E^T + b with tied embeddings)

Parameters are held in a dict keyed by our dotted names (e.g.
`encoder.layers.0.self_attn.w_q.weight`), so gradients compare name by name.
Linear weights keep our (in, out) layout and are applied as `addmm(b, x, W)`,
which is what `nn.Linear` does with the transposed (out, in) matrix: no copy.
Masks are boolean, True = may attend, as ours.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F


def sinusoidal_table(max_len, d_model, dtype):
    """The paper's (max_len, D) positional table, built in float64 like ours, then cast."""
    position = torch.arange(max_len, dtype=torch.float64)[:, None]
    div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64)
                         * -(math.log(10000.0) / d_model))
    angles = position * div_term
    pe = torch.empty(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles[:, : d_model // 2])
    return pe.to(dtype)


class TorchTransformer:
    """numpy_transformer's Transformer in PyTorch. `state` maps our dotted names to arrays
    (`model.state_dict()` or an npz file of it); each becomes a leaf tensor with grad.

    attention_impl: "plain" (matmul, masked_fill, softmax, matmul: the same ops as ours)
    or "sdpa" (torch's fused F.scaled_dot_product_attention, for reference).
    """

    def __init__(self, config, state, dtype=torch.float32, attention_impl="plain"):
        if attention_impl not in ("plain", "sdpa"):
            raise ValueError(f"attention_impl: expected 'plain' or 'sdpa', got {attention_impl!r}")
        self.config, self.dtype, self.attention_impl = config, dtype, attention_impl
        self.params = {}
        for name in list(state.keys()):
            t = torch.from_numpy(np.ascontiguousarray(state[name]))
            self.params[name] = t.to(dtype).requires_grad_(True)
        self.training = True
        self.pe = sinusoidal_table(config.max_len, config.d_model, dtype)   # a constant

    def parameters(self):
        return list(self.params.values())

    def grads(self):
        """{dotted name: numpy array} of the current gradients (zeros where None)."""
        return {name: (p.grad if p.grad is not None else torch.zeros_like(p)).detach().numpy()
                for name, p in self.params.items()}

    def _dropout(self, x):
        p = self.config.dropout
        return F.dropout(x, p, self.training) if p else x

    def linear(self, prefix, x):
        """x (..., D_in) @ W (D_in, D_out) + b, as one addmm over the flattened rows."""
        W, b = self.params[f"{prefix}.weight"], self.params.get(f"{prefix}.bias")
        x2 = x.reshape(-1, x.shape[-1])                                   # (N, D_in)
        y = torch.addmm(b, x2, W) if b is not None else x2 @ W             # (N, D_out)
        return y.view(*x.shape[:-1], W.shape[1])

    def layer_norm(self, prefix, x):
        p = self.params
        return F.layer_norm(x, (x.shape[-1],), p[f"{prefix}.gamma"], p[f"{prefix}.beta"], 1e-5)

    def embed(self, name, ids):
        D = self.config.d_model
        x = F.embedding(ids, self.params[f"{name}.weight"]) * math.sqrt(D)   # (B, T, D)
        return self._dropout(x + self.pe[: ids.shape[1]])

    def attention(self, prefix, q_in, kv_in, mask):
        """Multi-head (or latent) attention of queries q_in (B, Tq, D) over kv_in (B, Tk, D)."""
        c = self.config
        B, Tq, D = q_in.shape
        Tk, H = kv_in.shape[1], c.num_heads
        Q = self.linear(f"{prefix}.w_q", q_in)                             # (B, Tq, D)
        if c.attention == "mla":
            lat = self.linear(f"{prefix}.w_kv_compress", kv_in)            # (B, Tk, L)
            K = self.linear(f"{prefix}.w_k_decompress", lat)               # (B, Tk, D)
            V = self.linear(f"{prefix}.w_v_decompress", lat)               # (B, Tk, D)
        else:
            K = self.linear(f"{prefix}.w_k", kv_in)
            V = self.linear(f"{prefix}.w_v", kv_in)
        q = Q.view(B, Tq, H, D // H).transpose(1, 2)                       # (B, H, Tq, Dh)
        k = K.view(B, Tk, H, D // H).transpose(1, 2)                       # (B, H, Tk, Dh)
        v = V.view(B, Tk, H, D // H).transpose(1, 2)                       # (B, H, Tk, Dh)
        if self.attention_impl == "sdpa":
            p = c.dropout if self.training else 0.0
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        else:
            scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(D // H))  # (B, H, Tq, Tk)
            if mask is not None:
                scores = scores.masked_fill(~mask, float("-inf"))
            o = self._dropout(torch.softmax(scores, dim=-1)) @ v           # (B, H, Tq, Dh)
        o = o.transpose(1, 2).reshape(B, Tq, D)                            # (B, Tq, D)
        return self.linear(f"{prefix}.w_o", o)

    def feed_forward(self, prefix, x):
        h = self._dropout(torch.relu(self.linear(f"{prefix}.linear_1", x)))  # (B, T, F)
        return self.linear(f"{prefix}.linear_2", h)

    def sublayer(self, prefix, x, f):
        """Post-norm LayerNorm(x + drop(f(x))) or pre-norm x + drop(f(LayerNorm(x)))."""
        if self.config.norm_first:
            return x + self._dropout(f(self.layer_norm(f"{prefix}.norm", x)))
        return self.layer_norm(f"{prefix}.norm", x + self._dropout(f(x)))

    def stack(self, name, num_layers, x, *sublayers):
        """`num_layers` blocks of `name`, each the sublayers f(prefix, h) in residual
        connections, then the final LayerNorm when pre-norm."""
        for i in range(num_layers):
            p = f"{name}.layers.{i}"
            for j, f in enumerate(sublayers):
                x = self.sublayer(f"{p}.sublayers.{j}", x, lambda h, f=f, p=p: f(p, h))
        return self.layer_norm(f"{name}.norm", x) if self.config.norm_first else x

    def encode(self, src, src_mask):
        return self.stack(
            "encoder", self.config.num_encoder_layers, self.embed("src_embed", src),
            lambda p, h: self.attention(f"{p}.self_attn", h, h, src_mask),
            lambda p, h: self.feed_forward(f"{p}.feed_forward", h))

    def decode(self, memory, src_mask, tgt, tgt_mask):
        return self.stack(
            "decoder", self.config.num_decoder_layers, self.embed("tgt_embed", tgt),
            lambda p, h: self.attention(f"{p}.self_attn", h, h, tgt_mask),
            lambda p, h: self.attention(f"{p}.cross_attn", h, memory, src_mask),
            lambda p, h: self.feed_forward(f"{p}.feed_forward", h))

    def project(self, h):
        if self.config.tie_embeddings:
            E, b = self.params["tgt_embed.weight"], self.params.get("output_projection.bias")
            return F.linear(h, E, b)                                        # h E^T + b
        return self.linear("output_projection", h)

    def forward(self, src, tgt_in, src_mask=None, tgt_mask=None):
        """Logits (B, T, V); masks built from the pad id when None (as ours)."""
        pad = self.config.pad_id
        if src_mask is None:
            src_mask = (src != pad)[:, None, None, :]                       # (B, 1, 1, S)
        if tgt_mask is None:
            T = tgt_in.shape[1]
            causal = torch.ones(T, T, dtype=torch.bool).tril()
            tgt_mask = (tgt_in != pad)[:, None, None, :] & causal           # (B, 1, T, T)
        memory = self.encode(src, src_mask)
        return self.project(self.decode(memory, src_mask, tgt_in, tgt_mask))


def cross_entropy(logits, targets, ignore_index=None, label_smoothing=0.0):
    """Mean cross-entropy over the counted tokens, as numpy_transformer.losses.CrossEntropyLoss."""
    V = logits.shape[-1]
    return F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1),
                           ignore_index=-100 if ignore_index is None else ignore_index,
                           label_smoothing=label_smoothing)


def make_adam(model, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, **kwargs):
    """torch.optim.Adam over the model's parameters (L2 weight decay, like our Adam)."""
    return torch.optim.Adam(model.parameters(), lr=lr, betas=betas, eps=eps,
                            weight_decay=weight_decay, **kwargs)
