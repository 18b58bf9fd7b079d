"""The catalogue's right bodies of the functions that have several mistakes (mistakes.py).

Each is the reference's math for the lines between the solution markers of one
function, with fewer comments and, where that is shorter, another order of the
same operations (the same values to rounding). A mistake is one change of it
(mistakes.changed); tests/course/test_assignment.py checks that every body here scores
full marks, so that each mistake costs points for its change alone.
"""

RIGHT = {
    "Linear.backward": """
x = self.saved_for_backward()
x2 = x.reshape(-1, self.in_features)
dy2 = dy.reshape(-1, self.out_features)
if self.transposed:
    self.grads["weight"] += dy2.T @ x2
else:
    self.grads["weight"] += x2.T @ dy2
if "bias" in self.params:
    self.grads["bias"] += fast.sum(dy2, axis=0)
return (dy2 @ self.matrix().T).reshape(x.shape)""",
    "LayerNorm.backward": """
xhat, r = self.saved_for_backward()
D = self.d_model
self.grads["gamma"] += fast.sum((dy * xhat).reshape(-1, D), axis=0)
self.grads["beta"] += fast.sum(dy.reshape(-1, D), axis=0)
g = dy * self.params["gamma"]
mean_g = fast.mean(g, axis=-1, keepdims=True)
mean_g_xhat = fast.mean(g * xhat, axis=-1, keepdims=True)
return (g - mean_g - xhat * mean_g_xhat) * r""",
    "GELU.backward": """
x, t = self.saved_for_backward()
du_dx = self.C * (1.0 + 3.0 * self.A * x**2)
return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du_dx)""",
    "Dropout.backward": """
mask = self.saved_for_backward()
return dy if mask is OFF else dy * mask""",
    "sinusoidal_table": """
position = xp.arange(max_len, dtype=xp.float64)[:, None]
div_term = xp.exp(xp.arange(0, d_model, 2, dtype=xp.float64) * -(math.log(10000.0) / d_model))
angles = position * div_term
pe = xp.empty((max_len, d_model), dtype=xp.float64)
pe[:, 0::2] = xp.sin(angles)
pe[:, 1::2] = xp.cos(angles[:, : d_model // 2])
return pe.astype(get_default_dtype())""",
    "scaled_dot_product_attention_backward": """
scale = 1.0 / math.sqrt(q.shape[-1])
dropped = attn if dropout is None else dropout.reapply(attn)
dv = dropped.swapaxes(-1, -2) @ dout
dattn = dout @ v.swapaxes(-1, -2)
if dropout is not None:
    dattn = dropout.backward(dattn)
dscores = softmax_backward(dattn, attn) * scale
dq = dscores @ k
dk = dscores.swapaxes(-1, -2) @ q
return dq, dk, dv""",
    "MultiHeadAttentionBase.backward": """
qh, kh, vh = self.saved_for_backward()
dheads = split_heads(self.w_o.backward(dout), self.num_heads)
dqh, dkh, dvh = scaled_dot_product_attention_backward(
    dheads, qh, kh, vh, self.attn_weights, self.dropout)
return self.project_backward(merge_heads(dqh), merge_heads(dkh), merge_heads(dvh))""",
    "MultiHeadLatentAttention.project_backward": """
dc = self.w_k_decompress.backward(dK)
dc += self.w_v_decompress.backward(dV)
dk = self.w_kv_compress.backward(dc)
return self.w_q.backward(dQ), dk, xp.zeros_like(dk)""",
    "FeedForward.backward": """
dh = self.linear_2.backward(dy)
dh = self.dropout.backward(dh)
dh = self.activation.backward(dh)
return self.linear_1.backward(dh)""",
    "Embedding.backward": """
ids = self.saved_for_backward()
fast.add_at(self.grads["weight"], ids, dy * self.multiplier)
return None""",
    "CrossEntropyLoss.backward": """
V, eps = shape[-1], self.label_smoothing
scale = valid.astype(p.dtype) * (float(dloss) / max(self.num_tokens, 1))
dx = p
if eps:
    dx -= eps / V
dx[rows, t] -= 1 - eps
dx *= scale[:, None]
return dx.reshape(shape)""",
    "Adam._update": """
if wd and not self.decoupled:
    g = g + wd * p
m[...] = b1 * m + (1 - b1) * g
v[...] = b2 * v + (1 - b2) * g * g
m_hat = m / (1 - b1**t)
v_hat = v / (1 - b2**t)
p -= self.lr * m_hat / (xp.sqrt(v_hat) + self.eps)""",
    "EncoderBlock.backward": """
dx, df = self.sublayers[1].exit_backward(dout)
dh = self.feed_forward.backward(df)
dx = dx + self.sublayers[1].enter_backward(dh)
dx, da = self.sublayers[0].exit_backward(dx)
dq, dk, dv = self.self_attn.backward(da)
dh = dq + dk + dv
return dx + self.sublayers[0].enter_backward(dh)""",
    "DecoderBlock.backward": """
dx, df = self.sublayers[2].exit_backward(dout)
dh = self.feed_forward.backward(df)
dx = dx + self.sublayers[2].enter_backward(dh)
dx, dc = self.sublayers[1].exit_backward(dx)
dq, dk, dv = self.cross_attn.backward(dc)
dmemory = dk + dv
dx = dx + self.sublayers[1].enter_backward(dq)
dx, da = self.sublayers[0].exit_backward(dx)
dq, dk, dv = self.self_attn.backward(da)
dh = dq + dk + dv
return dx + self.sublayers[0].enter_backward(dh), dmemory""",
    "Decoder.backward": """
if self.norm is not None:
    dout = self.norm.backward(dout)
dmemories = []
for layer in reversed(self.layers):
    dout, dmem = layer.backward(dout)
    dmemories.append(dmem)
return dout, sum(dmemories)""",
}
