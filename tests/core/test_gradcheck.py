"""gradcheck: passes correct layers, catches wrong ones, reports a table, validates input;
and every shared gradient-check case (gradcheck_cases.py) of every layer and model passes."""

import numpy as np
import pytest

from numpy_transformer.gradcheck import assert_gradients_close, gradcheck, perturb
from numpy_transformer.gradcheck_cases import CASES, cases_of
from numpy_transformer.layers.dropout import Dropout
from numpy_transformer.layers.linear import Linear
from numpy_transformer.module import Module

from doors import raises_naming


class ForgetsBias(Linear):
    """Wrong on purpose: never adds the bias gradient."""

    def backward(self, dy):
        x, W = self.saved, self.params["weight"]
        self.grads["weight"] += x.reshape(-1, self.in_features).T @ dy.reshape(-1, self.out_features)
        return dy @ W.T


class NoTranspose(Linear):
    """Wrong on purpose: dx = dy W instead of dy W^T (square W, so shapes still fit)."""

    def backward(self, dy):
        super().backward(dy)
        return dy @ self.params["weight"]


class Product(Module):
    """f(a, b) = a * b, to check that an array passed twice gets both gradients."""

    def forward(self, a, b):
        self.saved = (a, b)
        return a * b

    def backward(self, dy):
        a, b = self.saved
        return dy * b, dy * a


def make_linear(cls, rng):
    layer = cls(4, 4, rng=rng)
    layer.params["bias"] += rng.normal(size=4)
    return layer


def test_correct_layer_passes_with_table(float64, rng):
    report = gradcheck(make_linear(Linear, rng), rng.normal(size=(2, 3, 4)))
    assert report.passed and report.max_rel_error < 1e-7
    text = str(report)
    assert "Linear" in text and "max rel err" in text
    for row in ("input x", "weight", "bias"):
        assert row in text
    assert "FAIL" not in text
    assert [r.checked for r in report.rows] == [24, 16, 4]


def test_catches_forgotten_bias_gradient(float64, rng):
    report = gradcheck(make_linear(ForgetsBias, rng), rng.normal(size=(2, 3, 4)))
    assert not report.passed
    rows = {r.name: r for r in report.rows}
    assert rows["input x"].passed and rows["weight"].passed and not rows["bias"].passed
    assert "FAIL" in str(report)
    with raises_naming(AssertionError, "bias", "FAIL"):
        assert_gradients_close(make_linear(ForgetsBias, rng), rng.normal(size=(2, 3, 4)))


def test_catches_wrong_transpose(float64, rng):
    report = gradcheck(make_linear(NoTranspose, rng), rng.normal(size=(2, 3, 4)))
    rows = {r.name: r for r in report.rows}
    assert not rows["input x"].passed and rows["weight"].passed
    assert rows["input x"].max_rel_error > 1e-3


def test_max_coords_samples(float64, rng):
    layer = Linear(6, 5, rng=rng)
    report = gradcheck(layer, rng.normal(size=(2, 3, 6)), max_coords=7)
    assert [r.checked for r in report.rows] == [7, 7, 5]       # bias has only 5 coordinates
    assert report.passed


def test_input_passed_twice_gets_summed_gradient(float64, rng):
    x = rng.normal(size=(2, 3))
    report = assert_gradients_close(Product(), x, x)
    assert [r.name for r in report.rows] == ["input a=b"]


def test_dropout_replayed_during_check_only(float64, rng):
    x = rng.normal(size=(3, 4))
    drop = Dropout(0.5, rng=np.random.default_rng(5))
    assert_gradients_close(drop, x)           # every forward of the check: one mask
    twin = Dropout(0.5, rng=np.random.default_rng(5))
    twin.forward(x)                           # after the check, the generator has moved on
    np.testing.assert_array_equal(drop.forward(x), twin.forward(x))   # by one mask


def test_refuses_float32(rng):
    layer = Linear(4, 3, rng=rng)                          # default float32
    with pytest.raises(TypeError, match="float64"):
        gradcheck(layer, rng.normal(size=(2, 4)))


def test_refuses_float32_inputs(float64, rng):
    with pytest.raises(TypeError, match="input 0 is float32"):
        gradcheck(Linear(4, 3, rng=rng), rng.normal(size=(2, 4)).astype(np.float32))


def test_wrong_dout_shape(float64, rng):
    with raises_naming(ValueError, "dout", "(2, 3)", "(3, 2)"):
        gradcheck(Linear(4, 3, rng=rng), rng.normal(size=(2, 4)), dout=np.zeros((3, 2)))


# The whole Transformer's cases take 13-21 s each on 2 busy cores: one stays in the default
# run (its parts' cases all do), the others run in the slow pass.
FAST_MODEL = "Transformer (post-norm, mla)"


@pytest.mark.parametrize("case", [
    pytest.param(case, marks=pytest.mark.slow) if case.name.startswith("Transformer (")
    and case.name != FAST_MODEL else case for case in CASES], ids=[case.name for case in CASES])
def test_every_shared_case_passes(float64, case):
    """The one list of cases that the `gradcheck` command also runs."""
    report = case.run()
    assert report.passed, str(report)
    assert report.max_rel_error <= case.rtol


def test_every_grader_group_has_cases():
    groups = {case.group for case in CASES} - {""}
    assert all(cases_of(group) for group in groups)
    with pytest.raises(KeyError, match="no gradient-check case"):
        cases_of("nonexistent")


def test_perturb_changes_only_vectors(float64, rng):
    layer = Linear(4, 3, rng=rng)
    weight = layer.params["weight"].copy()
    assert perturb(layer, rng) is layer
    np.testing.assert_array_equal(layer.params["weight"], weight)
    assert np.all(layer.params["bias"] != 0)
