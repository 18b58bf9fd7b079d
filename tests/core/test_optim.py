"""Optimizers, clipping and the Scheduler: hand-computed steps, PyTorch parity, state, bad
arguments. The schedules' formulas: tests/core/test_schedules.py."""

import math
import tracemalloc

import numpy as np
import pytest

from numpy_transformer.backend import default_dtype, get_backend, get_default_dtype, to_numpy, xp
from numpy_transformer.layers.linear import Linear
from numpy_transformer.module import Module
from numpy_transformer.optim import (SGD, Adam, AdamW, ConstantSchedule, NoamSchedule,
                                     Scheduler, WarmupCosineSchedule, clip_grad_norm)

from doors import raises_naming


class Tiny(Module):
    """A Linear child plus a parameter of its own: three tensors of different shapes."""

    def __init__(self, rng):
        super().__init__()
        self.proj = Linear(3, 4, rng=rng)
        self.proj.params["bias"] += xp.asarray(rng.normal(size=4))
        self.params = {"scale": xp.asarray(rng.normal(size=(2, 5)), dtype=get_default_dtype())}
        self.grads = {"scale": xp.zeros_like(self.params["scale"])}


def fill_grads(model, rng, scale=1.0):
    for _, _, grad in model.named_parameters():
        grad[...] = xp.asarray(rng.normal(size=grad.shape) * scale)


def snapshot(model):
    """Copies of the parameters, on the device the parameters live on."""
    return {name: p.copy() for name, p, _ in model.named_parameters()}


def test_first_adam_step_moves_by_lr_sign(float64, rng):
    model, lr, eps = Tiny(rng), 1e-2, 1e-8
    fill_grads(model, rng)
    before = snapshot(model)
    Adam(model, lr=lr, eps=eps).step()
    for name, p, g in model.named_parameters():
        # m_hat = g and v_hat = g^2 after bias correction, so the step is lr g / (|g| + eps).
        np.testing.assert_allclose(p, before[name] - lr * g / (np.abs(g) + eps), rtol=0, atol=1e-15)
        np.testing.assert_allclose(np.abs(p - before[name]), lr, rtol=1e-6)


def test_first_adamw_and_sgd_steps_by_hand(float64, rng):
    model = Tiny(rng)
    fill_grads(model, rng)
    before = snapshot(model)
    AdamW(model, lr=1e-2, weight_decay=0.1).step()
    for name, p, g in model.named_parameters():
        expected = before[name] * (1 - 1e-2 * 0.1) - 1e-2 * g / (np.abs(g) + 1e-8)
        np.testing.assert_allclose(p, expected, rtol=0, atol=1e-15)
    before = snapshot(model)
    SGD(model, lr=0.5, weight_decay=0.1).step()
    for name, p, g in model.named_parameters():
        np.testing.assert_allclose(p, before[name] - 0.5 * (g + 0.1 * before[name]), atol=1e-15)


def test_updates_in_place_and_tied_array_once(float64, rng):
    model = Tiny(rng)
    other = Linear(3, 4, rng=rng)
    other.params["weight"] = model.proj.params["weight"]        # tie param and grad arrays
    other.grads["weight"] = model.proj.grads["weight"]
    model.extra = other
    arrays = {name: p for name, p, _ in model.named_parameters()}
    assert "extra.weight" not in arrays and "extra.bias" in arrays
    fill_grads(model, rng)
    before = snapshot(model)
    optimizer = Adam(model, lr=1e-3)
    for _ in range(2):
        optimizer.step()
    for name, p, _ in model.named_parameters():
        assert p is arrays[name]
    assert other.params["weight"] is model.proj.params["weight"]
    # Two steps with the same gradient move each coordinate by about 2 lr, not 4 lr.
    np.testing.assert_allclose(np.abs(model.proj.params["weight"] - before["proj.weight"]),
                               2e-3, rtol=1e-5)
    optimizer.zero_grad()                                        # delegates to the model
    assert all(np.all(g == 0) for _, _, g in model.named_parameters())


def test_float32_parameters_stay_float32(rng):
    model = Tiny(rng)                                            # default dtype: float32
    fill_grads(model, rng)
    for opt in (Adam(model, weight_decay=0.1), AdamW(model), SGD(model, momentum=0.9)):
        opt.step()
        assert all(p.dtype == np.float32 for _, p, _ in model.named_parameters())
        assert all(a.dtype == np.float32 for bufs in opt.state.values() for a in bufs.values())


@pytest.mark.parametrize("make", [lambda m: Adam(m, weight_decay=0.1, fast=True),
                                  lambda m: AdamW(m, fast=True),
                                  lambda m: SGD(m, momentum=0.9, nesterov=True, weight_decay=0.1)])
def test_fast_step_allocates_no_parameter_sized_arrays(float64, make):
    """The fast forms (the Trainer's) update in scratch buffers; the plain Adam makes
    temporaries, as the textbook lines do."""
    model = Linear(500, 400, rng=np.random.default_rng(0))      # weight: 1.6 MB
    fill_grads(model, np.random.default_rng(1))
    optimizer = make(model)
    optimizer.step()
    if get_backend() == "cupy":         # device memory: tracemalloc sees only the host's
        import cupy
        pool = cupy.get_default_memory_pool()
        pool.free_all_blocks()          # no cached block to reuse: any new array counts
        pool.set_limit(size=pool.used_bytes() + 100_000)
        try:
            optimizer.step()            # cupy.cuda.memory.OutOfMemoryError past the limit
            clip_grad_norm(model, max_norm=1e-3)    # (on an H200 CuPy's linalg.norm did)
        finally:
            pool.set_limit(size=0)      # no limit
        return
    tracemalloc.start()
    optimizer.step()
    clip_grad_norm(model, max_norm=1e-3)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 100_000, f"a step allocated {peak} bytes"


def run_torch(torch, make_torch_opt, init, grads_per_step):
    tensors = {name: torch.tensor(to_numpy(value), dtype=torch.float64)
               for name, value in init.items()}
    opt = make_torch_opt(list(tensors.values()))
    for grads in grads_per_step:
        for name, t in tensors.items():
            t.grad = torch.tensor(to_numpy(grads[name]), dtype=torch.float64)
        opt.step()
    return {name: t.numpy() for name, t in tensors.items()}


CASES = [  # (optimizer, keyword arguments), the same for ours and torch.optim's namesake
    (Adam, dict(lr=1e-2)),
    (Adam, dict(lr=3e-3, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    (AdamW, dict(lr=1e-2)),
    (AdamW, dict(lr=5e-3, betas=(0.5, 0.9), weight_decay=0.3)),
    (SGD, dict(lr=0.1)),
    (SGD, dict(lr=0.1, momentum=0.9)),
    (SGD, dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.01)),
    (SGD, dict(lr=0.05, weight_decay=0.2)),
]


@pytest.mark.torch
@pytest.mark.parametrize("steps", [1, 5])
@pytest.mark.parametrize("ours, kwargs, fast", [(*case, False) for case in CASES]
                         + [(*case, form) for case in CASES if case[0] is not SGD
                            for form in (True, "per-array")])
def test_matches_pytorch(float64, ours, kwargs, fast, steps):
    """fast=True: Adam on the flat buffer (optim/flat.py, optim/fast.py), the Trainer's;
    "per-array": its scratch-buffer form one parameter at a time."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    model = Tiny(rng)
    init = snapshot(model)
    optimizer = ours(model, **kwargs, **({"fast": True} if fast else {}))
    history = []
    for _ in range(steps):
        fill_grads(model, rng)
        history.append({name: g.copy() for name, _, g in model.named_parameters()})
        optimizer.step()
    torch_optimizer = getattr(torch.optim, ours.__name__)
    expected = run_torch(torch, lambda ps: torch_optimizer(ps, **kwargs), init, history)
    for name, p, _ in model.named_parameters():
        np.testing.assert_allclose(p, expected[name], rtol=1e-12, atol=1e-12)


ADAM_CASES = [case for case in CASES if case[0] in (Adam, AdamW)]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("ours, kwargs", ADAM_CASES)
def test_fast_adam_is_the_plain_adam(dtype, ours, kwargs):
    """optim/fast.py's adam_update gives Adam's plain update, step after step, to rounding
    (it folds the bias corrections into two scalars: another order of the same operations),
    with parameter groups: one with L2 or decoupled decay, one without; the flat step
    (fast=True) gives adam_update's very numbers."""
    with default_dtype(dtype):
        models = [Tiny(np.random.default_rng(5)) for _ in range(3)]
    found = []
    for model, fast in zip(models, (False, "per-array", True)):
        groups = [{"params": ["proj.weight", "scale"]},
                  {"params": ["proj.bias"], "weight_decay": 0.0}]
        optimizer = ours(model, **kwargs, param_groups=groups, fast=fast)
        grads = np.random.default_rng(11)
        for _ in range(6):
            fill_grads(model, grads, scale=10.0 ** grads.integers(-3, 3))
            optimizer.step()
        found.append({name: to_numpy(p) for name, p, _ in model.named_parameters()})
    for name in found[0]:
        assert found[1][name].dtype == found[2][name].dtype == dtype
        tol = 1e-13 if dtype == np.float64 else 1e-5
        np.testing.assert_allclose(found[1][name], found[0][name], rtol=tol, atol=tol,
                                   err_msg=name)
        np.testing.assert_array_equal(found[2][name], found[1][name], err_msg=name)


@pytest.mark.parametrize("make", [lambda m: Adam(m, lr=1e-2, weight_decay=0.1),
                                  lambda m: AdamW(m, lr=1e-2, betas=(0.7, 0.95)),
                                  lambda m: SGD(m, lr=0.1, momentum=0.9, nesterov=True)])
def test_state_dict_round_trip_gives_identical_next_step(float64, make):
    rng = np.random.default_rng(8)
    model = Tiny(rng)
    optimizer = make(model)
    for _ in range(3):
        fill_grads(model, rng)
        optimizer.step()
    # As read back from a file: numpy scalars and 0-d arrays, betas as a list.
    state = optimizer.state_dict()
    hyper = {k: (list(v) if isinstance(v, tuple) else np.asarray(v))
             for k, v in state["hyperparameters"].items()}
    state = {"step_count": np.int64(state["step_count"]), "hyperparameters": hyper,
             "state": state["state"]}
    clone = Tiny(np.random.default_rng(99))
    clone.load_state_dict(model.state_dict())
    restored = make(clone)
    restored.lr = 123.0                                          # overwritten by the load
    restored.load_state_dict(state)
    assert restored.step_count == 3 and restored.hyperparameters() == optimizer.hyperparameters()
    fill_grads(model, rng)
    for (_, _, g), (_, _, g2) in zip(model.named_parameters(), clone.named_parameters()):
        g2[...] = g
    optimizer.step()
    restored.step()
    for (name, p, _), (_, p2, _) in zip(model.named_parameters(), clone.named_parameters()):
        np.testing.assert_array_equal(p, p2, err_msg=name)


def test_state_dict_copies_and_load_rejects_mismatches(float64, rng):
    optimizer = Adam(Tiny(rng))
    state = optimizer.state_dict()
    assert set(state["state"]) == {"proj.weight", "proj.bias", "scale"}
    state["state"]["scale"]["exp_avg"] += 1.0                   # a plain NumPy copy
    assert np.all(optimizer.state["scale"]["exp_avg"] == 0)
    missing = {**state, "state": {k: v for k, v in state["state"].items() if k != "scale"}}
    with pytest.raises(ValueError, match=r"missing \['scale'\]"):
        optimizer.load_state_dict(missing)
    bad_shape = optimizer.state_dict()
    bad_shape["state"]["scale"]["exp_avg"] = np.zeros((5, 2))
    with raises_naming(ValueError, "scale", "exp_avg", "(2, 5)", "(5, 2)"):
        optimizer.load_state_dict(bad_shape)
    with pytest.raises(ValueError, match="hyperparameters"):
        optimizer.load_state_dict(SGD(Tiny(rng), momentum=0.9).state_dict())
    with_buffers = SGD(Tiny(rng), momentum=0.9).state_dict()
    with raises_naming(ValueError, "state['scale']", "[]", "['momentum_buffer']"):
        SGD(Tiny(rng)).load_state_dict(with_buffers)
    with pytest.raises(ValueError, match="step_count"):
        optimizer.load_state_dict({"state": {}})
    bad_beta = optimizer.state_dict()
    bad_beta["hyperparameters"]["betas"] = (0.9, 1.0)
    with pytest.raises(ValueError, match=r"betas\[1\]"):
        optimizer.load_state_dict(bad_beta)


@pytest.mark.torch
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_matches_pytorch(float64, max_norm):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(9)
    model = Tiny(rng)
    fill_grads(model, rng, scale=2.0)
    tensors = [torch.zeros(g.shape, dtype=torch.float64) for _, _, g in model.named_parameters()]
    for t, (_, _, g) in zip(tensors, model.named_parameters()):
        t.grad = torch.tensor(to_numpy(g))
    expected = torch.nn.utils.clip_grad_norm_(tensors, max_norm).item()
    assert abs(clip_grad_norm(model, max_norm=max_norm) - expected) <= 1e-12
    for t, (_, _, g) in zip(tensors, model.named_parameters()):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_clip_grad_norm_by_hand(float64, rng):
    model = Tiny(rng)
    fill_grads(model, rng)
    grads = [g.copy() for _, _, g in model.named_parameters()]
    total = math.sqrt(sum(float((g**2).sum()) for g in grads))
    # float(): on a device the norm comes back as a 0-d device array (no wait).
    assert float(clip_grad_norm(model, max_norm=1.0)) == pytest.approx(total, rel=1e-14)
    clipped = math.sqrt(sum(float((g**2).sum()) for _, _, g in model.named_parameters()))
    assert clipped == pytest.approx(1.0 * total / (total + 1e-6), rel=1e-12)
    assert float(clip_grad_norm(model, max_norm=10.0)) == pytest.approx(clipped, rel=1e-14)


def test_clip_grad_norm_takes_an_optimizers_list_of_gradients_as_it_takes_a_module(float64, rng):
    model, twin = Tiny(rng), Tiny(rng)
    fill_grads(model, rng, scale=2.0)
    for (_, _, g), (_, _, h) in zip(model.named_parameters(), twin.named_parameters()):
        h[...] = g
    grads = Adam(twin).grads
    assert len(grads) == 3 and grads[0] is next(twin.named_parameters())[2]  # the live arrays
    assert clip_grad_norm(grads, max_norm=0.5) == clip_grad_norm(model, max_norm=0.5)
    for (_, _, g), (_, _, h) in zip(model.named_parameters(), twin.named_parameters()):
        np.testing.assert_array_equal(to_numpy(g), to_numpy(h))


def test_scheduler_sets_the_rate_of_the_next_update(float64, rng):
    model = Tiny(rng)
    schedule = NoamSchedule(d_model=16, warmup_steps=3)
    optimizer = Adam(model)
    scheduler = Scheduler(optimizer, schedule)
    used = []
    for _ in range(5):
        used.append(optimizer.lr)
        optimizer.step()
        scheduler.step()
    assert used == [schedule(t) for t in range(1, 6)]
    # The position lives in the optimizer's step count: a restored optimizer resumes it.
    fresh = Adam(Tiny(rng))
    fresh.load_state_dict(optimizer.state_dict())
    assert Scheduler(fresh, schedule).step() == schedule(6)


@pytest.mark.parametrize("make, error, fragment", [
    (lambda m: Adam(m, lr=0.0), ValueError, "lr: expected a number > 0, got 0.0"),
    (lambda m: Adam(m, lr="fast"), TypeError, "lr"),
    (lambda m: Adam(m, betas=(1.0, 0.9)), ValueError, r"betas\[0\]: expected a number in \[0, 1\)"),
    (lambda m: Adam(m, betas=(0.9, -0.1)), ValueError, r"betas\[1\]"),
    (lambda m: Adam(m, betas=0.9), TypeError, "betas"),
    (lambda m: Adam(m, eps=0.0), ValueError, "eps: expected a number > 0"),
    (lambda m: AdamW(m, weight_decay=-0.1), ValueError, "weight_decay: expected a number >= 0"),
    (lambda m: SGD(m, lr=float("nan")), ValueError, "lr"),
    (lambda m: SGD(m, momentum=-0.5), ValueError, "momentum"),
    (lambda m: SGD(m, nesterov=True), ValueError, "momentum"),
    (lambda m: SGD(m, weight_decay=-1), ValueError, "weight_decay"),
    (lambda m: Adam(object()), TypeError, "model: expected a Module"),
    (lambda m: Adam(Module()), ValueError, "model: expected a Module with parameters"),
    (lambda m: AdamW(m, param_groups=[{"params": ["scale", "nope"]}]), ValueError, "'nope'"),
    (lambda m: AdamW(m, param_groups=[{"params": ["scale"]}]), ValueError, "2 in none"),
    (lambda m: AdamW(m, param_groups=[{"params": ["scale", "scale"]}]), ValueError, "second"),
    (lambda m: AdamW(m, param_groups=[{"params": [], "lr": 1}]), ValueError, "keys \\['lr'\\]"),
    (lambda m: AdamW(m, param_groups=[{"params": ["scale"], "weight_decay": -1}]), ValueError,
     r"param_groups\[0\]\['weight_decay'\]: expected a number >= 0"),
    (lambda m: AdamW(m, param_groups={"params": []}), TypeError, "param_groups"),
    (lambda m: clip_grad_norm(m, max_norm=0.0), ValueError, "max_norm: expected a number > 0"),
    (lambda m: clip_grad_norm(m.grads["scale"], max_norm=1.0), TypeError,
     "grads: expected a list of gradient arrays or a Module, got (ndarray|DeviceArray)"),
    (lambda m: NoamSchedule(d_model=512, warmup_steps=0), ValueError,
     "warmup_steps: expected an integer >= 1, got 0"),
    (lambda m: NoamSchedule(d_model=0), ValueError, "d_model"),
    (lambda m: NoamSchedule(d_model=512, factor=0), ValueError, "factor"),
    (lambda m: NoamSchedule(d_model=512)(0), ValueError, "step: expected an integer >= 1"),
    (lambda m: NoamSchedule(d_model=512)(1.5), TypeError, "step"),
    (lambda m: WarmupCosineSchedule(peak_lr=1.0, total_steps=5, warmup_steps=5), ValueError,
     "total_steps"),
    (lambda m: WarmupCosineSchedule(peak_lr=1.0, total_steps=5, min_lr=2.0), ValueError, "min_lr"),
    (lambda m: ConstantSchedule(lr=0), ValueError, "lr"),
    (lambda m: Scheduler(SGD(m), schedule=0.1), TypeError, "schedule"),
])
def test_bad_arguments(float64, rng, make, error, fragment):
    with pytest.raises(error, match=fragment):
        make(Tiny(rng))


@pytest.mark.parametrize("value", [1, 0, "True", "flat", None])
def test_fast_is_a_form_and_no_hyperparameter(rng, value):
    model = Tiny(rng)
    with raises_naming(TypeError, "fast", "True, False or 'per-array'", repr(value)):
        Adam(model, fast=value)
    fast, per_array, plain = AdamW(model, fast=True), AdamW(model, fast="per-array"), AdamW(model)
    assert fast.hyperparameters() == plain.hyperparameters()     # checkpoints: the same format
    assert fast.num_scratch == per_array.num_scratch == 2 and plain.num_scratch == 0
    assert fast.flat is not None and per_array.flat is None and plain.flat is None
