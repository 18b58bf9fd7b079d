"""The diagnosis names mistakes by kind (issue 49, item 4), on arrays made here, not on any
set of mistakes: each kind is a relation between the student's array and the expected one,
or a kind of error, that holds whatever the part.

- a broadcast error between a shape and the same shape less one axis: a reduction that
  lost its axis;
- a value that is no array (None, a string marker) in an arithmetic error: a module's OFF
  path not handled;
- a shape error inside a child's backward: the children's backwards out of order;
- the expected values in other places: a reshape where a transpose belongs;
- a factor that is one number per row: a per-row scale, named as a power of the input
  rows' standard deviation when it is one;
- an extra term equal to a value of the forward (an input, a table): a forward value added
  into a gradient;
- a difference only at the positions a mask leaves out (ignore_index's targets);
- a factor that is minus a named one, the model's sizes (d_model, heads, d_k) as factors;
- a sequence of optimizer steps right at the first and wrong later: state not carried;
- a gradient of the width of a child's output: that child's backward skipped.
No message states a formula (copies/formulas.py).
"""

import numpy as np
import pytest

from numpy_transformer.course.copies.formulas import formula_hits, grader_text
from numpy_transformer.course.grading import diagnose as dg
from numpy_transformer.course.grading import judgement, steps


def no_formula(text):
    assert not formula_hits(grader_text(text)), text


def test_a_broadcast_error_against_the_same_shape_less_one_axis_is_a_reduction_losing_it():
    said = steps.mismatch("operands could not be broadcast together with shapes (3,4,5) (3,4) ",
                          "", None)
    assert "lost its axis" in said and "keep the reduced axis" in said
    assert "lost its axis" not in steps.mismatch(
        "operands could not be broadcast together with shapes (3,4,5) (3,5,4) ", "", None)
    no_formula(said)


def test_an_arithmetic_error_on_a_marker_names_the_off_path():
    error = TypeError("ufunc 'multiply' did not contain a loop with signature matching types "
                      "(dtype('float64'), dtype('<U3')) -> None")
    assert "off path" in steps.off_path(error) and "p = 0" in steps.off_path(error)
    assert steps.off_path(TypeError("unsupported operand type(s) for *: 'NoneType' and "
                                    "'float'"))
    assert steps.off_path(ValueError("shapes do not match")) == ""
    no_formula(steps.off_path(error))


def test_values_in_other_places_are_named_a_rearrangement():
    rng = np.random.default_rng(0)
    want = rng.normal(size=(2, 3, 4, 5))
    have = want.transpose(0, 2, 1, 3).reshape(want.shape)     # a reshape for a transpose
    said = dg.diagnose("the gradient", "dx.0", want, have, {})
    assert "rearranged" in said and "transpose" in said
    no_formula(said)


def test_a_factor_per_row_is_named_and_the_standard_deviation_found():
    rng = np.random.default_rng(1)
    x, want = rng.normal(size=(3, 4, 6)) * 2, rng.normal(size=(3, 4, 6))
    std = np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)
    said = dg.diagnose("the gradient", "dx.0", want, want * std ** 2, {"x": x})
    assert "one factor per row" in said and "squared standard deviation" in said
    said = dg.diagnose("the gradient", "dx.0", want, want * rng.normal(size=(3, 4, 1)), {})
    assert "one factor per row" in said and "standard deviation of that row" not in said
    no_formula(said)


def test_a_forward_value_added_into_a_gradient_is_named():
    rng = np.random.default_rng(2)
    table, want = rng.normal(size=(9, 6)), rng.normal(size=(2, 4, 6))
    inputs = {"value.table": table}
    said = dg.diagnose("the gradient", "dx.0", want, want + table[:4], inputs)
    assert "extra term" in said and "table" in said
    said = dg.diagnose("the gradient", "dx.0", want, want - table[:4], inputs)
    assert "minus the forward's table" in said
    no_formula(said)


def test_a_difference_only_at_the_ignored_targets_names_them():
    rng = np.random.default_rng(3)
    targets = np.array([[1, -1, 2], [-1, 0, 3]])
    want = rng.normal(size=(2, 3, 5))
    want[targets == -1] = 0.0
    have = want.copy()
    have[targets == -1] = rng.normal(size=(2, 5))
    said = dg.diagnose("the gradient", "dx.0", want, have, {"targets": targets},
                       {"ignore_index": -1})
    assert "ignored positions" in said and "ignore_index = -1" in said
    no_formula(said)


def test_minus_a_named_factor_and_the_models_sizes_are_named():
    rng = np.random.default_rng(4)
    want = rng.normal(size=(3, 5))
    said = dg.diagnose("the gradient", "dx.0", want, -0.3 * want, {}, {"p": 0.3})
    assert "minus p with p = 0.3" in said
    args = {"d_model": 12, "heads": 4}                # d_k = 3: 1/sqrt(3) no other factor
    said = dg.diagnose("the gradient", "dx.0", want, want / 3 ** 0.5, {}, args)
    assert "1/sqrt(d_k) with d_k = 3" in said
    said = dg.diagnose("the gradient", "dx.0", want, want * 12 ** 0.5, {}, args)
    assert "sqrt(d_model) with d_model = 12" in said
    said = dg.diagnose("the gradient", "dx.0", want, want * 17.3, {}, args)
    assert "matches no size or setting" in said
    no_formula(said)


def test_an_optimizer_right_at_its_first_step_and_wrong_later_is_told_its_state():
    rng = np.random.default_rng(5)
    expected = {f"update.{t}.w": rng.normal(size=(3,)) for t in range(3)}
    got = dict(expected)
    got["update.1.w"] = rng.normal(size=(3,))
    _, problems = judgement.compare(expected, got, (), 1e-12)
    assert len(problems) == 1 and "the first step agrees" in problems[0]
    got["update.0.w"] = rng.normal(size=(3,))
    _, problems = judgement.compare(expected, got, (), 1e-12)
    assert not any("the first step agrees" in p for p in problems)
    no_formula(judgement.LATER)


def test_a_gradient_of_a_childs_output_width_names_that_childs_backward():
    rng = np.random.default_rng(6)
    want, have = rng.normal(size=(3, 4, 8)), rng.normal(size=(3, 4, 6))
    inputs = {"param.w_kv_compress.weight": rng.normal(size=(8, 6))}
    said = dg.diagnose("the gradient of input 2", "dx.1", want, have, inputs)
    assert "w_kv_compress" in said and "skipped" in said
    no_formula(said)


@pytest.mark.parametrize("message", [
    "operands could not be broadcast together with shapes (2,3) (2,3,4) "])
def test_the_reduction_hint_reads_either_order(message):
    assert "lost its axis" in steps.mismatch(message, "", None)


def test_another_outputs_gradient_given_or_added_is_named():
    rng = np.random.default_rng(7)
    want, other = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    said = dg.diagnose("the gradient of input 1", "dx.0", want, other, {"other.dx.1": other})
    assert "exactly the expected gradient of input 2" in said and "swapped" in said
    said = dg.diagnose("the gradient of input 1", "dx.0", want, want + other,
                       {"other.dx.1": other})
    assert "gradient of input 2 added in too" in said
    no_formula(said)


def test_a_factor_per_column_names_the_parameter():
    rng = np.random.default_rng(8)
    want, gamma = rng.normal(size=(3, 4, 5)), rng.normal(size=5)
    said = dg.diagnose("the gradient", "dx.0", want, want * gamma, {"param.gamma": gamma})
    assert "one factor per column, exactly the parameter gamma" in said
    said = dg.diagnose("the gradient", "dx.0", want, want * gamma ** 2, {})
    assert "one factor per column" in said
    no_formula(said)


def test_the_forward_output_where_the_derivative_belongs_is_named():
    rng = np.random.default_rng(9)
    want, out, dout = (rng.normal(size=(3, 4)) for _ in range(3))
    inputs = {"value.out": out, "dout": dout}
    for have in (out, out * dout):
        said = dg.diagnose("the gradient of input 1", "dx.0", want, have, inputs)
        assert "the forward's output" in said and "derivative" in said
    no_formula(said)
