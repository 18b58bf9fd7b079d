"""A hole found by a blind set: multi-head attention's backward that leaves the attention's
dropout out of the kernel's backward scored full marks and passed `check`.

Every multihead_attention task ran without attention dropout, and the grader's stand-in
kernel ignored the dropout it was given, so nothing could see it dropped. Now
mha_heads_and_accumulation runs with dropout on the weights, in training (a stand-in
dropout in the grader, the layer's own in `check`), and the stand-in kernel applies the
dropout it is given as the real kernel does: the body below fails both sides, and each
says that the dropout was not handed to the kernel's backward (a known slip, which
reaches `check` through expected.npz).
"""

import numpy as np
import pytest

from numpy_transformer.course.grading import local_check, scoring, standins
from numpy_transformer.course.selftest.right_bodies import RIGHT

from test_one_judgement import swapped

SECRET = 49
PART = "multihead_attention"
QUALNAME = "MultiHeadAttentionBase.backward"
RIGHT_CALL = "self.attn_weights, self.dropout)"


def without_dropout():
    right = RIGHT[QUALNAME]
    assert right.count(RIGHT_CALL) == 1
    return right.replace(RIGHT_CALL, "self.attn_weights)")


@pytest.fixture(scope="module")
def expected(tmp_path_factory):
    """The public check's expected.npz of the part, from the reference before any swap."""
    path = tmp_path_factory.mktemp("mha_dropout") / "expected.npz"
    local_check.write_expected(path, scoring.CHECKS[PART])
    scoring.reference_results(PART, SECRET)
    return path


def test_the_right_body_gets_full_marks_and_passes_check(expected):
    with swapped(QUALNAME, RIGHT[QUALNAME]):
        result = scoring.run_part(PART, secret=SECRET)
        verdict = local_check.check_parts([PART], path=expected)[PART]
    assert result.points == result.max_points, result.message
    assert verdict == ("pass", ""), verdict


def test_the_dropout_left_out_of_the_kernels_backward_fails_both_and_is_named(expected):
    with swapped(QUALNAME, without_dropout()):
        result = scoring.run_part(PART, secret=SECRET)
        verdict, said = local_check.check_parts([PART], path=expected)[PART]
    assert result.points < result.max_points, result.message
    failed = [c for c in result.checks if not c.passed]
    assert [c.name for c in failed] == ["mha_heads_and_accumulation"], result.message
    graded = " ".join(c.message for c in failed)
    assert "dropout is not handed to the kernel's backward" in graded, graded
    assert verdict == "fail", said
    assert "dropout is not handed to the kernel's backward" in said, said


def test_the_points_per_part_are_unchanged():
    assert scoring.max_points(PART) == 10


def test_the_standin_kernel_uses_the_dropout_it_is_given_as_the_real_one_does():
    """Forward: the weights through the dropout's forward (returned before it); backward:
    the value gradient from the weights through the dropout again (reapply), the weights'
    gradient through the dropout's backward. Checked against finite differences with
    the mask fixed."""
    gen = np.random.default_rng(0)
    q, k, v = gen.normal(size=(2, 2, 3, 4)), gen.normal(size=(2, 2, 5, 4)), gen.normal(
        size=(2, 2, 5, 4))
    drop = standins.Drop(0.3, 7)
    out, weights = standins.attention(q, k, v, None, drop)
    assert np.allclose(weights, np.tanh(q @ k.swapaxes(-1, -2) / 2))
    assert np.allclose(out, (weights * drop.mask) @ v + q)
    mask, dout = drop.mask, gen.normal(size=out.shape)
    grads = standins.attention_backward(dout, q, k, v, weights, drop)

    def loss(q, k, v):
        return ((np.tanh(q @ k.swapaxes(-1, -2) / 2) * mask) @ v + q).ravel() @ dout.ravel()
    for i, (name, x) in enumerate((("q", q), ("k", k), ("v", v))):
        numeric = np.zeros_like(x)
        for j in np.ndindex(x.shape):
            plus, minus = x.copy(), x.copy()
            plus[j] += 1e-6
            minus[j] -= 1e-6
            args = [plus if n == name else a for n, a in (("q", q), ("k", k), ("v", v))]
            low = [minus if n == name else a for n, a in (("q", q), ("k", k), ("v", v))]
            numeric[j] = (loss(*args) - loss(*low)) / 2e-6
        assert np.allclose(grads[i], numeric, atol=1e-7), name
    assert drop.draws == 1          # the backward drew no new mask
    plain = standins.attention_backward(dout, q, k, v, weights)
    assert not np.allclose(plain[2], grads[2]) and not np.allclose(plain[0], grads[0])
