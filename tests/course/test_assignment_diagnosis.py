"""The grader tells derivation from numerics, names a mistake without the answer, and
accepts the correct forms of attention backward (issue 30, items 3 to 5).

- A finite-difference GELU backward (rel err 1.7e-11) scores 0: "numerically close".
- The catalogue's mistakes whose message names their cause (DIAGNOSED: 20 of 49 when
  written, 41%) keep doing so.
- A file that does not parse gives one message to every part that imports it
  ("layers/softmax.py does not import: SyntaxError at line N"); the others keep full marks.
- The softmax backward written inline, or called under another name or through a module
  alias, gets full marks in attention (the stand-in is swapped by identity; the inline
  form is compared with the reference's own softmax backward).
"""

import shutil

import numpy as np
import pytest

from numpy_transformer.course.assignment.diagnose import diagnose
from numpy_transformer.course.assignment.grade import grade
from numpy_transformer.course.assignment.make import package_regions
from numpy_transformer.course.assignment.markers import write_region_bodies
from numpy_transformer.course.assignment.mistakes import MISTAKES
from numpy_transformer.course.assignment.registry import TOLERANCE
from numpy_transformer.course.assignment.right_bodies import RIGHT

DIAGNOSED = {     # mistake -> what its part's message must say (its cause)
    "linear_overwrites": "assigned (=) instead of accumulated",
    "tied_linear_overwrites": "assigned (=) instead of accumulated",
    "cross_entropy_divides_twice": "exactly 1/N",
    "attention_key_scale_forgotten": "exactly sqrt(d)",
    "attention_divides_by_batch": "did you average over the batch?",
    "gelu_finite_difference": "is this a finite-difference gradient?",
    "attention_fresh_dropout_mask": "dropout drew a new mask",
    "dropout_reapply_ignores_mask": "a mask not applied?",
    "embedding_forgets_multiplier": "exactly 1/sqrt(d)",
    "cross_entropy_ignored_rows_not_zeroed": "a mask not applied?",
    "embedding_overwrites": "assigned (=) instead of accumulated",
    "cross_entropy_ignores_dloss": "exactly 1/dloss",
    "linear_bias_batch_axis_only": "a sum over too few axes?",
    "layernorm_gamma_batch_axis_only": "a sum over too few axes?",
    "dropout_without_scale": "exactly (1 - p)",
    "dropout_scales_twice": "exactly 1/(1 - p)",
    "adamw_decay_rebinds": "rebound to a new array instead of written in place",
    "decoder_block_memory_keys_only": "lacks exactly one term of its sum, the value part",
    "decoder_memory_last_layer_only": "lacks exactly one term of its sum, the memory gradient",
    "decoder_memory_overwritten": "is one term of its sum only, the memory gradient of block",
}
ATTENTION = "scaled_dot_product_attention_backward"
VARIANTS = {
    "inline": RIGHT[ATTENTION].replace(
        "softmax_backward(dattn, attn)",
        "attn * (dattn - (dattn * attn).sum(axis=-1, keepdims=True))"),
    "module_alias": "import importlib\nsm = importlib.import_module('.softmax', __package__)\n"
                    + RIGHT[ATTENTION].replace("softmax_backward(", "sm.softmax_backward("),
    "renamed": "from .softmax import softmax_backward as sb\n"
               + RIGHT[ATTENTION].replace("softmax_backward(", "sb("),
}


def fresh(copy, tmp_path, name):
    return shutil.copytree(copy, tmp_path / name, ignore=shutil.ignore_patterns("notebooks"))


def test_the_share_of_diagnosed_mistakes(solution_copy, tmp_path):
    assert len(DIAGNOSED) / len(MISTAKES) >= 0.4
    for name, phrase in DIAGNOSED.items():
        mistake = next(m for m in MISTAKES if m.name == name)
        copy = fresh(solution_copy, tmp_path, name)
        mistake.apply(copy)
        [result] = grade(copy, parts=[mistake.part]).parts
        messages = " ".join(c.message for c in result.checks)
        assert result.points < result.max_points and phrase in messages, (name, messages)


def test_a_finite_difference_backward_scores_nothing(solution_copy, tmp_path):
    copy = fresh(solution_copy, tmp_path, "fd")
    next(m for m in MISTAKES if m.name == "gelu_finite_difference").apply(copy)
    [result] = grade(copy, parts=["gelu"]).parts
    assert result.points == 0
    assert all(TOLERANCE < c.max_rel_error <= 1e-6 and "finite-difference" in c.message
               for c in result.checks), result


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_correct_variants_of_attention_backward_get_full_marks(variant, solution_copy,
                                                               tmp_path):
    copy = fresh(solution_copy, tmp_path, variant)
    package = copy / "numpy_transformer"
    regions = [r for r in package_regions(package) if r.qualname == ATTENTION]
    write_region_bodies(package, regions, [VARIANTS[variant]])
    [result] = grade(copy, parts=["attention"]).parts
    assert result.points == result.max_points, result


def test_diagnose_says_what_it_sees_never_the_formula():
    rng = np.random.default_rng(0)
    want = rng.normal(size=(4, 3, 5))
    assert "exactly 1/B" in diagnose("dk", "dx.1", want, want / 4)
    assert "exactly -1" in diagnose("dk", "dx.1", want, -want)
    square = rng.normal(size=(3, 3))
    assert "transpose" in diagnose("dW", "grad.w", square, square.T)
    assert "too few axes" in diagnose("db", "grad.b", want.sum(axis=(0, 1)), want.sum(axis=0))
    before = rng.normal(size=(3, 5))
    assert "assigned" in diagnose("dW", "grad.w", want[0], want[0] - before, {"grad0.w": before})
    assert "constant factor of 3.3" in diagnose("dx", "dx.0", want, 3.3 * want)
    assert diagnose("dx", "dx.0", want, rng.normal(size=want.shape)) == ""


def test_a_file_that_does_not_parse_gets_one_clear_message(solution_copy, tmp_path):
    copy = fresh(solution_copy, tmp_path, "syntax")
    file = copy / "numpy_transformer" / "layers" / "softmax.py"
    lines = file.read_text(encoding="utf-8").split("\n")
    line = next(i for i, text in enumerate(lines) if text.startswith("def softmax_backward("))
    lines[line] = lines[line].replace("(", "((", 1)
    file.write_text("\n".join(lines), encoding="utf-8")
    report = grade(copy)
    message = f"layers/softmax.py does not import: SyntaxError at line {line + 1}"
    broken = [r for r in report.parts if r.points < r.max_points]
    assert {"softmax", "attention", "encoder_stack"} <= {r.part for r in broken}
    for result in broken:             # the others (nothing imports softmax.py): full marks
        assert result.points == 0 and result.message == message, result
        assert all(c.message == message for c in result.checks), result
