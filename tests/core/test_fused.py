"""The fused drop-ins (layers/fused/): each equals its plain form, counts as one launch on the
device simulator, and (with CuPy on a GPU) its kernel agrees with the plain form.

Each case builds two identical modules from one seed and runs the same calls on both: once
with the fused forms on (the default), once inside `fused.disabled()` (the plain code). On
NumPy both are the plain code (the CPU path does not change); on the simulator the fused
side runs the plain form inside `counted_as_one`; on CuPy it runs the kernels.
"""

import contextlib

import numpy as np
import pytest

from numpy_transformer.backend import default_dtype, get_backend, set_backend, to_numpy, xp
from numpy_transformer.layers import fused
from numpy_transformer.layers.activations import GELU, ReLU
from numpy_transformer.layers.attention import scaled_dot_product_attention
from numpy_transformer.layers.dropout import Dropout
from numpy_transformer.layers.embedding import Embedding
from numpy_transformer.layers.feedforward import FeedForward
from numpy_transformer.layers.linear import Linear, TiedLinear
from numpy_transformer.layers.normalization import LayerNorm
from numpy_transformer.layers.residual import SublayerConnection
from numpy_transformer.layers.softmax import softmax, softmax_backward
from numpy_transformer.losses import CrossEntropyLoss
from numpy_transformer.testing import device_simulator

TOLERANCE = {"float64": 1e-12, "float32": 2e-5}


def host(value):
    """Every array of `value` (tuples, lists, dicts walked) as NumPy arrays."""
    if isinstance(value, (tuple, list)):
        return [host(v) for v in value]
    if isinstance(value, dict):
        return {k: host(v) for k, v in value.items()}
    return to_numpy(value) if hasattr(value, "shape") else value


def draw(rng, shape, scale=1.0):
    return xp.asarray(scale * rng.normal(size=shape), dtype=xp.dtype(DTYPE[0]))


DTYPE = ["float64"]


def both(case, seed=0):
    """case(rng) on the fused forms and on the plain ones, from the same seed: (fused, plain)."""
    out = []
    for context in (contextlib.nullcontext, fused.disabled):
        with context():
            out.append(host(case(np.random.default_rng(seed))))
    return out


def assert_same(a, b, dtype):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_same(a[k], b[k], dtype)
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y, dtype)
    elif a is None or isinstance(a, (bool, int, str)):
        assert a == b
    else:
        scale = max(1.0, float(np.max(np.abs(b))) if np.size(b) else 1.0)
        np.testing.assert_allclose(a, b, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype] * scale)


@pytest.fixture(params=["numpy", "simulator"])
def backend(request):
    saved = get_backend()
    set_backend(request.param)
    yield request.param
    set_backend(saved)


@pytest.fixture(params=["float64", "float32"])
def dtype(request):
    DTYPE[0] = request.param
    with default_dtype(request.param):
        yield request.param


# ---------------------------------------------------------------- the cases

def layernorm_case(shape):
    def case(rng):
        norm = LayerNorm(shape[-1])
        norm.params["gamma"] += draw(rng, shape[-1:])
        norm.params["beta"] += draw(rng, shape[-1:])
        x, dy = draw(rng, shape, 3.0), draw(rng, shape)
        y = norm.forward(x)
        dx = norm.backward(dy)
        dx2 = norm.backward(dy)                       # grads add up: twice the first
        return y, dx, dx2, norm.grads
    return case


def residual_case(shape, norm_first):
    def case(rng):
        sub = SublayerConnection(shape[-1], norm_first=norm_first)
        sub.norm.params["gamma"] += draw(rng, shape[-1:])
        x, f, dy = draw(rng, shape), draw(rng, shape), draw(rng, shape)
        y = sub.exit(x, f)
        return y, sub.exit_backward(dy), sub.norm.grads
    return case


def softmax_case(shape, mask_shape, fully_masked=False, divisor=None):
    def case(rng):
        x, dp = draw(rng, shape, 4.0), draw(rng, shape)
        mask = None
        if mask_shape is not None:
            keep = rng.random(mask_shape) > 0.3
            if fully_masked:
                keep[..., 0, :] = False                # a query row with no key allowed
            mask = xp.asarray(keep)
        if divisor is None:
            p = softmax(x, -1, mask)
        else:                                          # attention: the scale in the kernel
            B, H, Tq, Tk = shape
            q, k, v = draw(rng, (B, H, Tq, 5)), draw(rng, (B, H, Tk, 5)), draw(rng, (B, H, Tk, 5))
            _, p = scaled_dot_product_attention(q, k, v, mask)
        return p, softmax_backward(dp, p, -1)
    return case


def loss_case(shape, smoothing, ignore, all_ignored=False):
    def case(rng):
        V = shape[-1]
        logits = draw(rng, shape, 3.0)
        targets = rng.integers(0, V, shape[:-1])
        if ignore is not None:
            targets[..., : max(1, shape[-2] // 2)] = ignore       # ignored rows
            if all_ignored:
                targets[...] = ignore
        ce = CrossEntropyLoss(ignore_index=ignore, label_smoothing=smoothing)
        loss = ce.forward(logits, xp.asarray(targets))
        return loss, ce.num_tokens, ce.backward(0.5)
    return case


def feedforward_case(activation, shape):
    def case(rng):
        ffn = FeedForward(shape[-1], 6, activation=activation, rng=rng)
        ffn.linear_1.params["bias"] += draw(rng, (6,))
        x, dy = draw(rng, shape), draw(rng, shape)
        y = ffn.forward(x)
        dx = ffn.backward(dy)
        return y, dx, {n: g for n, _, g in ffn.named_parameters()}
    return case


def activation_case(cls, shape):
    def case(rng):
        act = cls()
        x, dy = draw(rng, shape, 2.0), draw(rng, shape)
        return act.forward(x), act.backward(dy)
    return case


def dropout_case(p, shape):
    def case(rng):
        drop = Dropout(p, rng=np.random.default_rng(7))
        x, dy = draw(rng, shape), draw(rng, shape)
        y = drop.forward(x)
        return y, drop.backward(dy), drop.reapply(x)
    return case


def linear_case(shape, tied=False):
    def case(rng):
        if tied:
            emb = Embedding(7, shape[-1], rng=rng)
            layer = TiedLinear(emb)
            layer.params["bias"] += draw(rng, (7,))
            dy = draw(rng, shape[:-1] + (7,))
        else:
            layer = Linear(shape[-1], 5, rng=rng)
            layer.params["bias"] += draw(rng, (5,))
            dy = draw(rng, shape[:-1] + (5,))
        x = draw(rng, shape)
        y = layer.forward(x)
        dx = layer.backward(dy)
        layer.backward(dy)                            # grads add up
        return y, dx, layer.grads
    return case


def embedding_case(shape):
    def case(rng):
        emb = Embedding(6, 4, rng=rng)
        ids = xp.asarray(rng.integers(0, 6, shape))   # repeated ids
        emb.forward(ids)
        emb.backward(draw(rng, shape + (4,)))
        return emb.grads
    return case


CASES = {
    "layernorm": layernorm_case((2, 3, 8)),
    "layernorm-batch1-length1": layernorm_case((1, 1, 8)),
    "residual-post-norm": residual_case((2, 3, 8), False),
    "residual-pre-norm": residual_case((2, 3, 8), True),
    "softmax": softmax_case((2, 3, 4, 5), None),
    "softmax-padding-mask": softmax_case((2, 3, 4, 5), (2, 1, 1, 5)),
    "softmax-fully-masked-rows": softmax_case((2, 3, 4, 5), (2, 1, 4, 5), fully_masked=True),
    "softmax-2d": softmax_case((3, 7), (3, 7)),
    "softmax-length1": softmax_case((1, 1, 1, 1), None),
    "attention-scaled": softmax_case((2, 3, 4, 6), (2, 1, 4, 6), fully_masked=True, divisor=True),
    "cross-entropy": loss_case((2, 3, 11), 0.0, None),
    "cross-entropy-smoothing-ignore": loss_case((2, 4, 11), 0.1, 0),
    "cross-entropy-all-ignored": loss_case((2, 4, 11), 0.1, 0, all_ignored=True),
    "cross-entropy-batch1-length1": loss_case((1, 1, 11), 0.1, None),
    "feedforward-relu": feedforward_case("relu", (2, 3, 4)),
    "feedforward-gelu": feedforward_case("gelu", (2, 3, 4)),
    "relu": activation_case(ReLU, (2, 3, 4)),
    "gelu": activation_case(GELU, (2, 3, 4)),
    "dropout": dropout_case(0.3, (2, 3, 4)),
    "dropout-p0": dropout_case(0.0, (2, 3, 4)),
    "linear": linear_case((2, 3, 4)),
    "linear-batch1-length1": linear_case((1, 1, 4)),
    "tied-linear": linear_case((2, 3, 4), tied=True),
    "embedding-add-at": embedding_case((3, 5)),
}


@pytest.mark.parametrize("name", CASES)
def test_each_drop_in_equals_its_plain_form(name, backend, dtype):
    fused_out, plain_out = both(CASES[name])
    assert_same(fused_out, plain_out, dtype)


def test_the_fused_forms_run_only_on_a_device(backend):
    assert fused.on(fused) is (backend == "simulator")
    with fused.disabled():
        assert not fused.on(fused)
    assert fused.on(None) is False                 # a form a student copy left out
    fused.set_enabled(False)
    try:
        assert not fused.on(fused)
    finally:
        fused.set_enabled(True)


@pytest.fixture
def simulator():
    saved = get_backend()
    set_backend("simulator")
    yield
    set_backend(saved)


def launches_of(function, *args):
    with device_simulator.count_launches() as launches:
        function(*args)
    return launches


def test_the_simulator_counts_each_drop_in_as_its_kernels(simulator):
    rng = np.random.default_rng(0)
    from numpy_transformer.layers.fused import activation, loss, norm
    from numpy_transformer.layers.fused import softmax as fused_softmax
    x = xp.asarray(rng.normal(size=(2, 3, 8)))
    ln = LayerNorm(8)
    assert launches_of(norm.forward, ln, x, x).by_name == {"fused:layernorm_forward": 1}
    assert launches_of(norm.backward, ln, x).by_name == {"fused:layernorm_backward": 1}
    s = xp.asarray(rng.normal(size=(2, 3, 4, 4)))
    mask = xp.asarray(rng.random((2, 1, 1, 4)) > 0.5)
    assert launches_of(fused_softmax.forward, s, mask, 2.0).total == 1
    p = fused_softmax.forward(s, mask)
    assert launches_of(fused_softmax.backward, s, p).total == 1
    assert launches_of(activation.forward, GELU(), x, x[0, 0]).total == 1
    gelu = GELU()
    gelu.forward(x)
    assert launches_of(activation.gelu_backward, gelu, x).total == 1
    ce = CrossEntropyLoss(ignore_index=0, label_smoothing=0.1)
    t = xp.asarray(rng.integers(0, 8, (2, 3)))
    assert launches_of(loss.forward, ce, x, t, 5).total == 3       # the kernel, a sum, / N
    assert launches_of(loss.backward, ce, 1.0).total == 1
    layer = Linear(8, 5)
    layer.forward(x)
    counted = launches_of(layer.backward, xp.asarray(rng.normal(size=(2, 3, 5))))
    assert counted.by_name == {"fused:gemm_accumulate": 2, "fused:gemm": 1}   # dW, db; dx


def test_the_loss_backward_follows_its_forward(simulator):
    """The switch flipped between the loss's forward and backward: the backward is the form
    that matches the forward's saved state (the fused forward keeps no row indices)."""
    rng = np.random.default_rng(2)
    x, t = xp.asarray(rng.normal(size=(2, 3, 7))), xp.asarray(rng.integers(0, 7, (2, 3)))
    got = []
    for forward_on in (True, False):
        ce = CrossEntropyLoss(label_smoothing=0.1)
        with contextlib.nullcontext() if forward_on else fused.disabled():
            ce.forward(x, t)
        with fused.disabled() if forward_on else contextlib.nullcontext():
            got.append(to_numpy(ce.backward(1.0)))
    np.testing.assert_allclose(got[0], got[1], rtol=1e-12)


def test_fully_masked_rows_are_zero_not_nan(simulator):
    s = xp.asarray(np.random.default_rng(1).normal(size=(1, 1, 2, 3)))
    mask = xp.asarray(np.array([[True, False, True], [False, False, False]]))
    p = to_numpy(softmax(s, -1, mask))
    assert np.all(np.isfinite(p)) and np.all(p[0, 0, 1] == 0)
    np.testing.assert_allclose(p[0, 0, 0].sum(), 1.0)


class TestCuPyKernels:
    """The CuPy kernels against the plain form, on a GPU (skipped without CuPy)."""

    @pytest.fixture(autouse=True)
    def cupy_backend(self):
        pytest.importorskip("cupy")
        saved = get_backend()
        set_backend("cupy")
        yield
        set_backend(saved)

    @pytest.mark.parametrize("name", CASES)
    @pytest.mark.parametrize("precision", ["float64", "float32"])
    def test_kernel_equals_plain_form(self, name, precision):
        DTYPE[0] = precision
        with default_dtype(precision):
            fused_out, plain_out = both(CASES[name])
        assert_same(fused_out, plain_out, precision)


BLOCK = 32      # threads a block on the CPU (the device's 256 cost more threads; the kernels read
                # blockDim, and rows longer than a block take the same strided loops)


@pytest.fixture(scope="module")
def kernel_folder(tmp_path_factory):
    """One folder for the compiled kernels of this module's tests (each compiled once)."""
    import kernel_emulator
    folder = tmp_path_factory.mktemp("kernels")
    if not kernel_emulator.available(folder):
        pytest.skip("no g++ with C++20 (std::barrier) here")
    return folder


class TestKernelsOnTheCPU:
    """The CUDA kernels compiled for the CPU (tests/core/kernel_emulator.py: threads and a
    barrier play a block) against the plain forms: their arithmetic and indexing, before a
    GPU runs them. Skipped where g++ cannot compile C++20."""

    @pytest.fixture(autouse=True, params=[("double", np.float64, 1e-12),
                                          ("float", np.float32, 3e-5)], ids=["float64", "float32"])
    def setting(self, request, kernel_folder):
        import kernel_emulator
        folder = kernel_folder
        saved = get_backend()
        set_backend("numpy")
        self.ctype, self.dtype, self.tol = request.param
        self.folder, self.emulator = folder, kernel_emulator
        self.rng = np.random.default_rng(0)
        with default_dtype(self.dtype):
            yield
        set_backend(saved)

    def close(self, got, want):
        scale = max(1.0, float(np.max(np.abs(want))))
        np.testing.assert_allclose(got, want, rtol=self.tol, atol=self.tol * scale)

    def rows(self):
        from numpy_transformer.layers.fused import ROW_HELPERS
        from numpy_transformer.layers.fused import loss, norm
        from numpy_transformer.layers.fused import softmax as fused_softmax
        sources = (norm.FORWARD, norm.BACKWARD, fused_softmax.FORWARD, fused_softmax.BACKWARD,
                   loss.FORWARD)
        return self.emulator.row_kernels(ROW_HELPERS, sources, self.ctype, self.folder)

    def draw(self, *shape, scale=1.0):
        return (scale * self.rng.normal(size=shape)).astype(self.dtype)

    @pytest.mark.parametrize("D", [8, 300])           # fewer and more columns than threads
    def test_layernorm(self, D):
        call, R, dt = self.rows(), BLOCK, self.dtype
        ln = LayerNorm(D)
        ln.params["gamma"] += self.draw(D)
        ln.params["beta"] += self.draw(D)
        a, b, dy = self.draw(2, 3, D, scale=3.0), self.draw(2, 3, D), self.draw(2, 3, D)
        y, xhat, r = np.empty_like(a), np.empty_like(a), np.empty((2, 3, 1), dt)
        call("nt_layernorm_forward", 6, R, a, b, 1, ln.params["gamma"], ln.params["beta"],
             ln.eps, D, y, xhat, r)
        self.close(y, ln.forward(a + b))
        self.close(xhat, ln.saved[0])
        self.close(r, ln.saved[1])
        for g in ln.grads.values():
            g += self.draw(D)                                # the kernel adds to what is there
        before = {k: v.copy() for k, v in ln.grads.items()}
        dx_plain = ln.backward(dy)
        plain_grads = {k: v.copy() for k, v in ln.grads.items()}
        for k in ln.grads:
            ln.grads[k][...] = before[k]
        dx = np.empty_like(dy)
        call("nt_layernorm_backward", 6 + -(-D // R), R, dy, xhat, r, ln.params["gamma"], 6, D,
             dx, ln.grads["gamma"], ln.grads["beta"])
        self.close(dx, dx_plain)
        for k in ln.grads:
            self.close(ln.grads[k], plain_grads[k])

    @pytest.mark.parametrize("shape, mask_shape", [((2, 3, 4, 5), (2, 1, 1, 5)),
                                                   ((2, 3, 4, 300), (2, 1, 4, 300)),
                                                   ((1, 1, 1, 1), None)])
    def test_masked_softmax(self, shape, mask_shape):
        call, R = self.rows(), BLOCK
        x, dp = self.draw(*shape, scale=4.0), self.draw(*shape)
        mask, strides, m = None, (0, 0, 0, 0), np.zeros(1, bool)
        if mask_shape is not None:
            mask = self.rng.random(mask_shape) > 0.3
            mask[0] = False                                  # rows with no key allowed
            m = np.ascontiguousarray(mask)
            strides = np.broadcast_to(m, shape).strides
        p_plain = softmax(x / self.dtype(2.5), -1, mask)
        p, dx = np.empty_like(x), np.empty_like(x)
        B, H, Tq, Tk = shape
        call("nt_softmax_forward", B * H * Tq, R, x, m, int(mask is not None), *strides, H, Tq, Tk,
             2.5, p)
        self.close(p, p_plain)
        call("nt_softmax_backward", B * H * Tq, R, dp, p_plain, Tk, dx)
        self.close(dx, softmax_backward(dp, p_plain, -1))

    @pytest.mark.parametrize("N, V, eps, ignore", [(6, 11, 0.1, 0), (6, 700, 0.0, None),
                                                   (1, 3, 0.1, None), (4, 5, 0.1, "all")])
    def test_cross_entropy(self, N, V, eps, ignore):
        from numpy_transformer.layers.fused.loss import BACKWARD
        call, R, dt = self.rows(), BLOCK, self.dtype
        x = self.draw(N, V, scale=3.0)
        t = self.rng.integers(0, V, N).astype(np.int64)
        if ignore is not None:
            t[: N // 2 if ignore == 0 else N] = 0            # ignored rows (every row: "all")
        ce = CrossEntropyLoss(ignore_index=None if ignore is None else 0, label_smoothing=eps)
        loss_plain = ce.forward(x, t)
        p_plain, t_plain, valid_plain, _, _ = ce.saved
        p, per_token = np.empty_like(x), np.empty(N, dt)
        valid, t_out = np.empty(N, bool), np.empty(N, np.int64)
        call("nt_cross_entropy_forward", N, R, x, t, 0, int(ignore is not None), V, dt(1 - eps),
             dt(eps / V), p, per_token, valid, t_out)
        self.close(p, p_plain)
        self.close(per_token.sum() / max(int(valid.sum()), 1), loss_plain)
        assert (valid == valid_plain).all() and (t_out == t_plain).all()
        n, p_in = ce.num_tokens, p.copy()
        dx = np.empty_like(p)
        self.emulator.elementwise(BACKWARD, self.ctype, [p_in, t_out, valid, V, dt(eps / V),
                                  dt(1 - eps), dt(0.5 / max(n, 1)), dx], self.folder)
        self.close(dx, ce.backward(0.5))

    def test_elementwise_kernels(self):
        from numpy_transformer.layers.fused import DROPOUT
        from numpy_transformer.layers.fused.activation import BIAS_GELU, BIAS_RELU, GELU_BACKWARD
        from numpy_transformer.layers.fused.attention import HEADS
        from numpy_transformer.layers.attention import split_heads
        run = lambda spec, *args: self.emulator.elementwise(spec, self.ctype, list(args), self.folder)
        dt = self.dtype
        h, b, dy = self.draw(6, 5), self.draw(5), self.draw(6, 5)
        hb = np.ascontiguousarray(np.broadcast_to(b, h.shape))
        y, keep = np.empty_like(h), np.empty(h.shape, bool)
        run(BIAS_RELU, h, hb, y, keep)
        self.close(y, (h + b) * (h + b > 0))
        assert (keep == (h + b > 0)).all()
        gelu = GELU()
        x, t, y, dx = np.empty_like(h), np.empty_like(h), np.empty_like(h), np.empty_like(h)
        run(BIAS_GELU, h, hb, gelu.C, gelu.A, x, t, y)
        self.close(y, gelu.forward(h + b))
        run(GELU_BACKWARD, dy, x, t, gelu.C, gelu.A, dx)
        self.close(dx, gelu.backward(dy))
        u = self.rng.random(h.shape, dtype=np.float32)
        mask = np.empty_like(h)
        run(DROPOUT, h, u, np.float32(0.3), dt(1.0) / dt(0.7), mask, y)
        self.close(mask, (u >= 0.3).astype(dt) / dt(0.7))
        self.close(y, h * mask)
        B, L, H, Dh = 2, 3, 4, 5
        yq, bq = self.draw(B * L, H * Dh), self.draw(H * Dh)
        for keys in (0, 1):
            want = split_heads((yq + bq).reshape(B, L, H * Dh), H)       # (B, H, L, Dh)
            want = np.ascontiguousarray(want.swapaxes(-1, -2) if keys else want)
            out = np.empty_like(want)
            run(HEADS, yq, bq, 1, L, H, Dh, keys, out)
            self.close(out, want)
