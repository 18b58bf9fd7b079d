"""Adam on one flat buffer (optim/flat.py, optim/fast.py's adam_flat_step; Adam(fast=True),
the Trainer's): the plain update's numbers and PyTorch's, the layers' arrays views of the
buffer, zero_grad and clipping on it, checkpoints in the same format, gradient
accumulation, data parallelism summing the buffer in one all-reduce, and a handful of
kernel launches a step whatever the number of arrays."""

import numpy as np
import pytest

from numpy_transformer.backend import default_dtype, get_backend, set_backend, to_numpy, xp
from numpy_transformer.errors import InputError
from numpy_transformer.models import TransformerConfig, build_transformer
from numpy_transformer.optim import Adam, AdamW, clip_grad_norm, decay_groups
from numpy_transformer.optim import flat

V = 11


def model(layers=1, seed=0, **fields):
    """A small Transformer whose output projection shares the target embedding's matrix."""
    return build_transformer(TransformerConfig(
        V, V, d_model=8, num_heads=2, d_ff=12, num_encoder_layers=layers,
        num_decoder_layers=layers, dropout=0.0, max_len=8, tie_embeddings=True, seed=seed,
        **fields))


def batch(seed=0):
    rng = np.random.default_rng(seed)
    src, tgt = rng.integers(1, V, (2, 5)), rng.integers(1, V, (2, 4))     # B=2, S=5, T=4
    return xp.asarray(src), xp.asarray(tgt)


def backward(m, seed):
    """A forward and a backward with a random dlogits: the gradients ADDED into m's."""
    src, tgt = batch(seed)
    logits = m.forward(src, tgt)
    m.backward(xp.asarray(np.random.default_rng(seed).normal(size=logits.shape),
                          dtype=logits.dtype))


def params(m):
    return {name: to_numpy(p).copy() for name, p, _ in m.named_parameters()}


def fill(m, seed):
    """Random gradients ADDED into m's, of a scale drawn per step (a backward would give
    some parameters a gradient of rounding noise: the key bias's is 0 in exact arithmetic,
    and Adam would take the noise's sign, different in two models equal to rounding)."""
    rng = np.random.default_rng(seed)
    scale = 10.0 ** rng.integers(-3, 3)
    for _, _, grad in m.named_parameters():
        grad += xp.asarray(rng.normal(size=grad.shape) * scale, dtype=grad.dtype)


def steps(m, optimizer, n=5, first_seed=1):
    """n steps of zero_grad, gradients (fill), step; the parameters after."""
    for k in range(n):
        optimizer.zero_grad()
        fill(m, first_seed + k)
        optimizer.step()
    return params(m)


def grouped(kind, m, wd=0.1):
    """AdamW with decay_groups (matrices decayed, vectors not: the exclusions), or Adam with
    L2 decay on the matrices only, groups by name."""
    groups = decay_groups(m, wd, decay_embeddings=False)
    return dict(param_groups=groups, weight_decay=0.05), (AdamW if kind == "adamw" else Adam)


def assert_close(found, expected, dtype):
    for name in expected:
        assert found[name].dtype == dtype, name
        if dtype == np.float64:
            np.testing.assert_allclose(found[name], expected[name], rtol=1e-13, atol=1e-15,
                                       err_msg=name)
        else:
            np.testing.assert_allclose(found[name], expected[name], rtol=2e-6, atol=2e-7,
                                       err_msg=name)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind", ["adam", "adamw"])
@pytest.mark.parametrize("block", ["default", None, 7])
def test_flat_is_the_plain_update(dtype, kind, block):
    """Five steps, groups with exclusions, a tied matrix: float64 to 1e-13, float32 to
    rounding; on the CPU's blocks (the default), the whole buffer at once (a device's
    form) and blocks of 7 elements (every piece boundary inside or across arrays)."""
    with default_dtype(dtype):
        plain_model, flat_model = model(), model()
    kwargs, make = grouped(kind, plain_model)
    plain = make(plain_model, lr=1e-2, **kwargs)
    fast = make(flat_model, lr=1e-2, **kwargs, fast=True)
    if block != "default":
        group_of = {n: i for i, g in enumerate(fast.param_groups) for n in g["params"]}
        fast.flat.cut(group_of, fast.num_scratch, block)
    assert_close(steps(flat_model, fast), steps(plain_model, plain), dtype)


@pytest.mark.torch
@pytest.mark.parametrize("kind", ["adam", "adamw"])
def test_flat_matches_pytorch(float64, kind):
    torch = pytest.importorskip("torch")
    m = model()
    init = params(m)
    kwargs, make = grouped(kind, m)
    optimizer = make(m, lr=5e-3, betas=(0.8, 0.95), **kwargs, fast=True)
    history = []
    for k in range(4):
        optimizer.zero_grad()
        fill(m, 10 + k)
        history.append({name: to_numpy(g).copy() for name, _, g in m.named_parameters()})
        optimizer.step()
    tensors = {n: torch.tensor(v) for n, v in init.items()}
    groups = [{"params": [tensors[n] for n in g["params"]],
               "weight_decay": g.get("weight_decay", 0.05)} for g in kwargs["param_groups"]]
    reference = getattr(torch.optim, make.__name__)(groups, lr=5e-3, betas=(0.8, 0.95))
    for grads in history:
        for name, t in tensors.items():
            t.grad = torch.tensor(grads[name])
        reference.step()
    for name, p in params(m).items():
        np.testing.assert_allclose(p, tensors[name].numpy(), rtol=1e-12, atol=1e-12,
                                   err_msg=name)


def test_the_layers_arrays_are_views_of_the_buffer_and_see_each_step(float64):
    m, twin = model(), model()
    w1 = m.encoder.layers[0].feed_forward.linear_1
    taken = w1.params["weight"]                 # taken before: no longer the model's after
    optimizer = Adam(m, lr=1e-2, fast=True)
    buffer = optimizer.flat.layout.buffers[0]
    assert len(optimizer.flat.layout.buffers) == 1 and buffer.param.size == m.num_parameters()
    assert w1.params["weight"] is not taken
    start, _ = buffer.where["encoder.layers.0.feed_forward.linear_1.weight"]
    buffer.param[start] = 5.0                                      # the buffer IS the layer's
    buffer.grad[start] = 2.0
    assert float(w1.params["weight"][0, 0]) == 5.0 and float(w1.grads["weight"][0, 0]) == 2.0
    buffer.param[start] = taken[0, 0]
    optimizer.zero_grad()
    assert m.output_projection.params["weight"] is m.tgt_embed.params["weight"]    # still tied
    assert m.output_projection.grads["weight"] is m.tgt_embed.grads["weight"]
    assert params(m).keys() == params(twin).keys()                 # names, shapes, values
    for name, value in params(twin).items():
        np.testing.assert_array_equal(params(m)[name], value)
    backward(m, 1)
    optimizer.step()
    np.testing.assert_array_equal(to_numpy(taken), to_numpy(twin.encoder.layers[0].feed_forward
                                                            .linear_1.params["weight"]))
    twin.load_state_dict(params(m))                                # the updated values ...
    src, tgt = batch(3)
    np.testing.assert_array_equal(m.forward(src, tgt), twin.forward(src, tgt))  # ... are used


def test_zero_grad_and_clip_on_the_buffer_equal_the_arrays_one_by_one(float64):
    m, twin = model(), model()
    fast, per_array = Adam(m, fast=True), Adam(twin, fast="per-array")
    assert len(fast.grads) == 1 and fast.grads[0] is fast.flat.layout.buffers[0].grad
    assert len(per_array.grads) == len(list(twin.named_parameters()))
    for max_norm in (1e-3, 1e3):                                   # clipped, then not
        for one in (m, twin):
            backward(one, 5)
        assert float(clip_grad_norm(fast.grads, max_norm)) == pytest.approx(
            float(clip_grad_norm(per_array.grads, max_norm)), rel=1e-14)
        for (name, _, g), (_, _, h) in zip(m.named_parameters(), twin.named_parameters()):
            np.testing.assert_allclose(g, h, rtol=1e-14, err_msg=name)
        fast.zero_grad()
        per_array.zero_grad()
        assert not np.any(to_numpy(fast.grads[0]))
        assert all(not np.any(to_numpy(g)) for _, _, g in m.named_parameters())


def test_a_flat_float32_norm_is_the_arrays_norm_to_rounding():
    """On the CPU the buffer's sum of squares is a float32 dot product per CHUNK added in
    float64: one dot over millions of elements would lose three digits."""
    values = np.random.default_rng(0).normal(size=3 * 2**17 + 5).astype(np.float32)
    exact = float(np.sqrt(np.sum(values.astype(np.float64) ** 2)))
    assert float(clip_grad_norm([xp.asarray(values)], 1e9)) == pytest.approx(exact, rel=1e-6)


def test_gradients_accumulate_in_the_buffer(float64):
    """Two backward passes before a step (gradient accumulation) add into the flat gradient,
    and the step equals the plain one on the same sum."""
    plain_model, flat_model = model(), model()
    plain, fast = AdamW(plain_model, lr=1e-2), AdamW(flat_model, lr=1e-2, fast=True)
    for m, optimizer in ((plain_model, plain), (flat_model, fast)):
        optimizer.zero_grad()
        backward(m, 1)
        backward(m, 2)
    for (name, _, g), (_, _, h) in zip(flat_model.named_parameters(),
                                       plain_model.named_parameters()):
        np.testing.assert_array_equal(g, h, err_msg=name)
    plain.step()
    fast.step()
    assert_close(params(flat_model), params(plain_model), np.float64)


@pytest.mark.parametrize("first, second", [("per-array", True), (True, "per-array"),
                                           (False, True)])
def test_a_state_saved_by_one_form_resumes_in_the_other(float64, tmp_path, first, second):
    """The optimizer's state is saved by parameter name whatever the form: a checkpoint
    written by one form loads into the other and the next steps are the same."""
    from numpy_transformer import load_checkpoint, save_checkpoint
    m, reference = model(), model()
    optimizer = AdamW(m, lr=1e-2, param_groups=decay_groups(m, 0.1), fast=first)
    kept = AdamW(reference, lr=1e-2, param_groups=decay_groups(reference, 0.1), fast=first)
    steps(m, optimizer, 3)
    steps(reference, kept, 3)
    ckpt = load_checkpoint(save_checkpoint(tmp_path / "a.npz", m, optimizer, step=3))
    resumed = ckpt.model
    other = AdamW(resumed, lr=1e-2, param_groups=decay_groups(resumed, 0.1), fast=second)
    other.load_state_dict(ckpt.optimizer_state)
    assert other.step_count == 3
    assert_close(steps(resumed, other, 2, first_seed=7), steps(reference, kept, 2, first_seed=7),
                 np.float64)
    saved = other.state_dict()["state"]
    assert saved.keys() == kept.state_dict()["state"].keys()


def test_a_second_flat_optimizer_shares_the_buffer_and_a_replaced_array_is_an_error(float64):
    m = model()
    first = AdamW(m, lr=1e-2, fast=True)
    second = Adam(m, lr=1e-2, param_groups=decay_groups(m, 0.1), fast=True)   # other groups
    assert second.flat.layout is first.flat.layout                # no re-homing: one buffer
    assert len(second.flat.pieces[0]) >= 2 or get_backend() != "numpy"
    steps(m, first, 1)
    steps(m, second, 1)
    fresh = Adam(model(), fast=True)
    fresh.model.src_embed.params["weight"] = fresh.model.src_embed.params["weight"].copy()
    with pytest.raises(InputError, match="no longer the flat buffers"):
        fresh.step()


def test_the_trainer_runs_adam_on_the_flat_buffer(float64):
    from numpy_transformer.training import TrainConfig, Trainer
    m = model()
    optimizer = Trainer(m, None, TrainConfig(weight_decay=0.1), log=None).optimizer
    assert optimizer.flat is not None and flat.gradient_buffer(m) is optimizer.grads[0]


class CountingComm:
    """A ThreadComm that records the size of every array it all-reduces."""

    def __init__(self, comm, sizes):
        self.comm, self.sizes = comm, sizes
        self.IN_PLACE, self.SUM = comm.IN_PLACE, comm.SUM

    def __getattr__(self, name):
        return getattr(self.comm, name)

    def Allreduce(self, sendbuf, recvbuf, op):
        self.sizes.append((recvbuf.size, recvbuf))
        return self.comm.Allreduce(sendbuf, recvbuf, op)


@pytest.mark.skipif(get_backend() != "numpy", reason="data parallelism: NumPy only")
def test_data_parallel_sums_the_whole_flat_gradient_in_one_all_reduce(float64):
    """Two ranks: each step all-reduces the optimizer's gradient buffer itself (no copy),
    then the N + 1 numbers of the loss and the stop requests; the result equals one process."""
    from numpy_transformer.training import TrainConfig, Trainer
    from numpy_transformer.training.distributed import DataParallelTrainer
    from numpy_transformer.training.thread_ranks import run_ranks
    from test_mpi import build

    config = TrainConfig(steps=3, lr=3e-3, warmup=2, clip_norm=0.1, eval_every=0,
                         checkpoint_every=0, log_every=0, progress=False, batch_size=16)

    def run(comm=None):
        m, stream = build("seq2seq")
        if comm is None:
            Trainer(m, stream, config, log=None).fit()
            return m.state_dict(), []
        sizes = []
        trainer = DataParallelTrainer(m, stream, config, comm=CountingComm(comm, sizes))
        trainer.fit()
        gradient = trainer.optimizer.grads[0]
        assert [size for size, _ in sizes] == [m.num_parameters(), 1 + 2] * 3
        assert all(array is gradient for _, array in sizes[::2])
        return m.state_dict(), sizes

    alone, _ = run()
    for weights, _ in run_ranks(run, 2):
        for name, value in alone.items():
            np.testing.assert_allclose(weights[name], value, rtol=1e-12, atol=1e-12,
                                       err_msg=name)


def test_a_flat_step_is_a_handful_of_launches_whatever_the_number_of_arrays():
    """On the device simulator: Adam's step, zero_grad and the clip of 1 or 3 layers (40 or
    more parameter arrays) queue the same few kernels: one per operation of the update."""
    from numpy_transformer.testing import device_simulator
    saved = get_backend()
    set_backend("simulator")
    try:
        counts = []
        for layers in (1, 3):
            m = model(layers)
            optimizer = AdamW(m, lr=1e-3, param_groups=decay_groups(m, 0.1), fast=True)
            backward(m, 1)
            optimizer.step()
            with device_simulator.count_launches() as launches:
                clip_grad_norm(optimizer.grads, 1.0)
                optimizer.step()
                optimizer.zero_grad()
            counts.append(launches.total)
            assert len(list(m.named_parameters())) >= 40
    finally:
        set_backend(saved)
    assert counts[0] == counts[1] <= 25, counts


def test_without_the_fast_file_every_form_is_the_plain_update(float64, monkeypatch):
    """A student copy that stubs part adam leaves optim/fast.py out: Adam then runs its plain
    `_update` (the student's) whatever `fast` says, and re-homes nothing."""
    from numpy_transformer.optim import adam
    monkeypatch.setattr(adam, "fast_forms", None)
    for form in (True, "per-array"):
        m = model()
        before = m.src_embed.params["weight"]
        optimizer = AdamW(m, lr=1e-2, fast=form)
        assert optimizer.flat is None and m.src_embed.params["weight"] is before
        assert optimizer._update.__func__ is AdamW._update
