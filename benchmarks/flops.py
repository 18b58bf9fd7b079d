"""The matrix products of one training step: which shapes, how many FLOPs, how fast.

A training step of the Transformer is dominated by matrix products. We list every
product of the forward pass as a `Matmul` (batch, m, k, n): `batch` independent
products of an (m, k) matrix by a (k, n) matrix, 2 m k n FLOPs each (one multiply
and one add per term). Everything else (softmax, LayerNorm, the loss, Adam) is a
few FLOPs per element and is left out: the count is the matmul work.

The backward pass of each forward product Y = X W (X (m, k), W (k, n)) is two
products of the same size, one per input:

    dX = dY W^T    (m, n) @ (n, k)
    dW = X^T dY    (k, m) @ (m, n)

(for attention both inputs are activations, dQ = dS K and dK = dS^T Q, same
sizes). Every input needs its gradient: even the first projections' inputs
lead back to the embeddings. So backward = 2 x forward and one step = 3 x forward.

Shapes use docs/design.md's letters: B batch, S source length, T target length,
D d_model, H heads, Dh = D / H, F d_ff, V vocabulary, L latent dim (MLA).
"""

import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Matmul:
    """`count` x `batch` products (m, k) @ (k, n) under one name."""

    name: str
    batch: int
    m: int
    k: int
    n: int
    count: int = 1          # how many times per step (e.g. once per layer)

    @property
    def flops(self):
        return 2 * self.batch * self.m * self.k * self.n * self.count


def _linear(name, tokens, d_in, d_out, count):
    """y = x W over all `tokens` rows: (tokens, d_in) @ (d_in, d_out)."""
    return Matmul(name, 1, tokens, d_in, d_out, count)


def _attention(name, config, B, Tq, Tk, tokens_q, tokens_k, count):
    """The projections and the two batched products of one (multi-head or latent) attention."""
    D, H = config.d_model, config.num_heads
    Dh = D // H
    if config.attention == "mla":
        L = config.latent_dim or max(1, D // 4)
        proj = [_linear(f"{name}.w_q", tokens_q, D, D, count),
                _linear(f"{name}.w_kv_compress", tokens_k, D, L, count),
                _linear(f"{name}.w_k_decompress", tokens_k, L, D, count),
                _linear(f"{name}.w_v_decompress", tokens_k, L, D, count)]
    else:
        proj = [_linear(f"{name}.w_q", tokens_q, D, D, count),
                _linear(f"{name}.w_k", tokens_k, D, D, count),
                _linear(f"{name}.w_v", tokens_k, D, D, count)]
    return proj + [
        Matmul(f"{name}.scores", B * H, Tq, Dh, Tk, count),      # Q K^T   (Tq, Dh) @ (Dh, Tk)
        Matmul(f"{name}.mix_values", B * H, Tq, Tk, Dh, count),  # A V     (Tq, Tk) @ (Tk, Dh)
        _linear(f"{name}.w_o", tokens_q, D, D, count),
    ]


def forward_matmuls(config, batch_size, src_len, tgt_len):
    """Every matrix product of one forward pass of `config` on a (B, S) -> (B, T) batch."""
    c, B, S, T = config, batch_size, src_len, tgt_len
    D, F, V = c.d_model, c.d_ff, c.tgt_vocab_size
    Ns, Nt = B * S, B * T                          # source and target tokens
    ne, nd = c.num_encoder_layers, c.num_decoder_layers
    return [
        *_attention("encoder.self_attn", c, B, S, S, Ns, Ns, ne),
        _linear("encoder.ffn.linear_1", Ns, D, F, ne),
        _linear("encoder.ffn.linear_2", Ns, F, D, ne),
        *_attention("decoder.self_attn", c, B, T, T, Nt, Nt, nd),
        *_attention("decoder.cross_attn", c, B, T, S, Nt, Ns, nd),
        _linear("decoder.ffn.linear_1", Nt, D, F, nd),
        _linear("decoder.ffn.linear_2", Nt, F, D, nd),
        _linear("output_projection", Nt, D, V, 1),
    ]


def backward_matmuls(forward):
    """The two gradient products of each forward product (see the module docstring)."""
    out = []
    for mm in forward:
        out.append(Matmul(f"{mm.name}.d_input", mm.batch, mm.m, mm.n, mm.k, mm.count))
        out.append(Matmul(f"{mm.name}.d_weight", mm.batch, mm.k, mm.m, mm.n, mm.count))
    return out


def step_matmuls(config, batch_size, src_len, tgt_len):
    """(forward products, backward products) of one training step."""
    fwd = forward_matmuls(config, batch_size, src_len, tgt_len)
    return fwd, backward_matmuls(fwd)


def count_step_flops(config, batch_size, src_len, tgt_len):
    """{"forward": FLOPs, "backward": FLOPs, "total": FLOPs} of the matmuls of one step."""
    fwd, bwd = step_matmuls(config, batch_size, src_len, tgt_len)
    f, b = sum(mm.flops for mm in fwd), sum(mm.flops for mm in bwd)
    return {"forward": f, "backward": b, "total": f + b}


def _unique_shapes(matmuls):
    """{(batch, m, k, n): number of times per step}."""
    shapes = {}
    for mm in matmuls:
        key = (mm.batch, mm.m, mm.k, mm.n)
        shapes[key] = shapes.get(key, 0) + mm.count
    return shapes


def time_matmuls(matmuls, dtype="float32", library="numpy", repeats=5, min_time=0.02):
    """Time each distinct shape in `matmuls` with numpy or torch; returns a dict:

        seconds    the matmul-bound limit: sum over shapes of (best time per call x calls)
        flops      the FLOPs of those products
        gflops     flops / seconds: this machine's matmul speed on the model's shapes
        shapes     [(batch, m, k, n, calls, best seconds per call)]

    The best of `repeats` runs (each long enough, at least `min_time`) is taken: the
    limit is what the matmuls alone would cost with nothing else in the way.
    """
    if library == "torch":
        import torch
        tdtype = getattr(torch, str(dtype))
        gen = torch.Generator().manual_seed(0)

        def make(*shape):
            return torch.randn(*shape, generator=gen, dtype=tdtype)
        matmul = torch.matmul
    else:
        import numpy as np
        rng = np.random.default_rng(0)

        def make(*shape):
            return rng.standard_normal(shape, dtype=dtype)
        matmul = np.matmul

    rows, total = [], 0.0
    for (batch, m, k, n), calls in _unique_shapes(matmuls).items():
        a = make(batch, m, k) if batch > 1 else make(m, k)
        b = make(batch, k, n) if batch > 1 else make(k, n)
        matmul(a, b)                                   # warm-up
        inner = 1
        while True:                                    # calls per timing, to reach min_time
            t0 = time.perf_counter()
            for _ in range(inner):
                matmul(a, b)
            if time.perf_counter() - t0 >= min_time or inner >= 1 << 14:
                break
            inner *= 4
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            for _ in range(inner):
                matmul(a, b)
            best = min(best, (time.perf_counter() - t0) / inner)
        rows.append((batch, m, k, n, calls, best))
        total += best * calls
    flops = sum(mm.flops for mm in matmuls)
    return {"seconds": total, "flops": flops, "gflops": flops / total / 1e9, "shapes": rows}
