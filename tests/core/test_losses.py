"""CrossEntropyLoss: hand-computed values, fused gradient, ignore_index, smoothing, PyTorch."""

import math

import numpy as np
import pytest

from numpy_transformer.errors import InputError

from numpy_transformer.backend import xp
from numpy_transformer.gradcheck import assert_gradients_close
from numpy_transformer.losses import CrossEntropyLoss
from numpy_transformer.module import Module


def dev(a):
    """A test's NumPy input on the active device (anything else passed through)."""
    return xp.asarray(a) if isinstance(a, np.ndarray) else a


class LossAsModule(Module):
    """The loss as a Module of the logits alone, for the finite-difference checker."""

    def __init__(self, loss, targets):
        super().__init__()
        self.loss, self.targets = loss, targets

    def forward(self, logits):
        return xp.asarray(self.loss.forward(logits, self.targets))      # () scalar

    def backward(self, dout):
        return self.loss.backward(float(dout))


def test_hand_computed_values():
    logits = np.array([[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]])
    targets = np.array([2, 0])
    # Row 0: -log(e^3 / (e^1 + e^2 + e^3)) = log(1 + e^-1 + e^-2); row 1: uniform, log 3.
    row0, row1 = math.log(1 + math.exp(-1) + math.exp(-2)), math.log(3)
    loss = CrossEntropyLoss().forward(dev(logits), dev(targets))
    assert isinstance(loss, xp.ndarray) and loss.shape == () and loss.dtype == logits.dtype
    assert float(loss) == pytest.approx((row0 + row1) / 2, abs=1e-15)

    # Smoothing eps = 0.1: loss = (1 - eps) * nll + (eps / V) * sum_j -log p_j.
    lse0 = math.log(math.exp(1) + math.exp(2) + math.exp(3))
    smooth0 = sum(lse0 - v for v in (1.0, 2.0, 3.0))          # sum_j -log p_j, row 0
    smooth1 = 3 * math.log(3)
    expected = (0.9 * (row0 + row1) + 0.1 / 3 * (smooth0 + smooth1)) / 2
    loss = CrossEntropyLoss(label_smoothing=0.1).forward(dev(logits), dev(targets))
    assert float(loss) == pytest.approx(expected, abs=1e-15)


def test_hand_computed_gradient():
    logits = np.array([[0.0, 0.0], [0.0, math.log(3.0)]])        # p = (1/2, 1/2), (1/4, 3/4)
    loss = CrossEntropyLoss()
    loss.forward(dev(logits), dev(np.array([0, 1])))
    # (p - onehot) / N with N = 2.
    expected = np.array([[-0.5, 0.5], [0.25, -0.25]]) / 2
    np.testing.assert_allclose(loss.backward(), expected, atol=1e-15)


@pytest.mark.parametrize("ignore_index, eps", [(None, 0.0), (0, 0.0), (None, 0.2), (-1, 0.1)])
def test_gradient_matches_finite_differences(float64, ignore_index, eps):
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(2, 3, 5)) * 2.0                   # (B, T, V)
    targets = rng.integers(0, 5, size=(2, 3))
    if ignore_index is not None:
        targets[0, 1] = targets[1, 2] = ignore_index
    module = LossAsModule(CrossEntropyLoss(ignore_index=ignore_index, label_smoothing=eps),
                          dev(targets))
    assert_gradients_close(module, dev(logits), rtol=1e-7)


def test_ignore_index_drops_tokens():
    rng = np.random.default_rng(2)
    logits = dev(rng.normal(size=(4, 6)))
    targets = dev(np.array([3, 0, 5, 0]))
    loss = CrossEntropyLoss(ignore_index=0, label_smoothing=0.1)
    value = loss.forward(logits, targets)
    grad = loss.backward()
    assert loss.num_tokens == 2
    subset = CrossEntropyLoss(label_smoothing=0.1)
    assert float(value) == pytest.approx(float(subset.forward(logits[[0, 2]], targets[[0, 2]])),
                                         abs=1e-14)
    np.testing.assert_allclose(grad[[0, 2]], subset.backward(), atol=1e-15)
    assert np.all(grad[[1, 3]] == 0)


def test_all_ignored_gives_zero_loss_and_gradient():
    logits = dev(np.random.default_rng(3).normal(size=(2, 3, 4)))
    loss = CrossEntropyLoss(ignore_index=-100)
    assert loss.forward(logits, xp.full((2, 3), -100)) == 0.0
    assert loss.num_tokens == 0
    grad = loss.backward()
    assert grad.shape == logits.shape and np.all(grad == 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_huge_logits_stay_finite(dtype):
    logits = xp.asarray([[1e4, -1e4, 0.0], [-1e4, -1e4, 1e4]], dtype=dtype)
    loss = CrossEntropyLoss(label_smoothing=0.1)
    value = float(loss.forward(logits, xp.asarray([1, 2])))
    grad = loss.backward()
    assert math.isfinite(value) and np.all(np.isfinite(grad))
    # Row 0 puts all mass on class 0 but the target is 1: -log p_1 = 2e4.
    assert value == pytest.approx((0.9 * 2e4 + 0.1 / 3 * (2e4 + 1e4 + 2e4 + 2e4)) / 2, rel=1e-6)


def test_float32_stays_float32_and_backward_scales():
    rng = np.random.default_rng(4)
    logits = dev(rng.normal(size=(3, 7)).astype(np.float32))
    loss = CrossEntropyLoss(label_smoothing=0.1)
    loss.forward(logits, xp.asarray([1, 2, 6]))
    grad = loss.backward(np.float64(2.0))
    assert grad.dtype == np.float32 and grad.shape == logits.shape
    loss.forward(logits, xp.asarray([1, 2, 6]))
    np.testing.assert_allclose(grad, 2 * loss.backward(), rtol=1e-6)
    assert logits.dtype == np.float32 and np.all(np.isfinite(logits))   # input untouched


def test_backward_needs_a_forward():
    loss = CrossEntropyLoss()
    message = r"^CrossEntropyLoss.backward: backward called before forward"
    with pytest.raises(InputError, match=message):
        loss.backward()
    loss.forward(xp.zeros((2, 3)), xp.asarray([0, 1]))
    loss.backward()
    with pytest.raises(InputError, match=message):
        loss.backward()


@pytest.mark.parametrize("make, error, fragment", [
    (lambda: CrossEntropyLoss(label_smoothing=1.0), ValueError, "label_smoothing"),
    (lambda: CrossEntropyLoss(label_smoothing=-0.1), ValueError, "label_smoothing"),
    (lambda: CrossEntropyLoss(ignore_index=1.5), TypeError, "ignore_index"),
])
def test_bad_constructor_arguments(make, error, fragment):
    with pytest.raises(error, match=fragment):
        make()


@pytest.mark.parametrize("logits, targets, error, fragment", [
    (np.zeros((2, 3), dtype=np.int64), np.array([0, 1]), TypeError, "logits"),
    (np.zeros(3), np.array(0), ValueError, "logits"),
    (np.zeros((2, 3)), np.array([0.0, 1.0]), TypeError, "targets"),
    (np.zeros((2, 3)), np.array([0, 1, 2]), ValueError, r"targets: expected shape \(2,\)"),
    (np.zeros((2, 3)), np.array([0, 3]), ValueError, r"\[0, 3\).*got id 3"),
    (np.zeros((2, 3)), np.array([-1, 0]), ValueError, "got id -1"),
    ("logits", np.array([0]), TypeError, "logits"),
])
def test_bad_inputs(logits, targets, error, fragment):
    with pytest.raises(error, match=fragment):
        CrossEntropyLoss()(dev(logits), dev(targets))


def test_ignored_ids_may_be_out_of_range():
    loss = CrossEntropyLoss(ignore_index=-100)
    loss(xp.zeros((2, 3)), xp.asarray([-100, 2]))
    assert loss.num_tokens == 1
    with pytest.raises(ValueError, match="ignore_index=-100"):
        loss(xp.zeros((2, 3)), xp.asarray([-7, 2]))


@pytest.mark.torch
@pytest.mark.parametrize("ignore_index, eps", [(None, 0.0), (0, 0.0), (0, 0.1), (-100, 0.25)])
def test_matches_pytorch(ignore_index, eps):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    logits = rng.normal(size=(3, 4, 6)) * 3.0                   # (B, T, V)
    targets = rng.integers(0, 6, size=(3, 4))
    if ignore_index is not None:
        targets[0, :2] = targets[2, 3] = ignore_index
    loss = CrossEntropyLoss(ignore_index=ignore_index, label_smoothing=eps)
    value = float(loss.forward(dev(logits), dev(targets)))
    grad = loss.backward()

    x = torch.tensor(logits, dtype=torch.float64, requires_grad=True)
    ref = torch.nn.functional.cross_entropy(
        x.reshape(-1, 6), torch.tensor(targets.reshape(-1)),
        ignore_index=-100 if ignore_index is None else ignore_index, label_smoothing=eps)
    ref.backward()
    assert abs(value - ref.item()) <= 1e-12
    np.testing.assert_allclose(grad, x.grad.numpy(), rtol=0, atol=1e-12)
