"""Checks at the edges: an input is checked once, where it enters, never again inside.

A layer used on its own checks its input at `forward`; a bigger module that checks
its own input calls `trust_parts()`, and its parts skip their checks. These tests
count the calls of validation.py's check functions, wherever a module imported them.
"""

import collections
import sys
import types

import numpy as np
import pytest

import numpy_transformer  # noqa: F401  (loads the core, whose modules get counted)
from numpy_transformer import validation
from numpy_transformer.backend import to_numpy
from numpy_transformer.errors import InputError
from numpy_transformer.layers import FeedForward, LayerNorm, Linear, PositionalEncoding
from numpy_transformer.layers.residual import SublayerConnection
from numpy_transformer.masks import make_decoder_mask

from doors import raises_naming


@pytest.fixture
def checks(monkeypatch):
    """A Counter {(check function, file of its caller): calls}, filled while the test runs."""
    counts = collections.Counter()
    originals = {getattr(validation, name): name for name in dir(validation)
                 if name.startswith("check_")}

    def counted(function, name):
        def check(*args, **kwargs):
            caller = sys._getframe(1).f_code.co_filename.rsplit("numpy_transformer/", 1)[-1]
            counts[(name, caller)] += 1
            return function(*args, **kwargs)
        return check

    for module in list(sys.modules.values()):
        if not getattr(module, "__name__", "").startswith("numpy_transformer"):
            continue
        for attr, value in list(vars(module).items()):
            if isinstance(value, types.FunctionType) and value in originals:
                monkeypatch.setattr(module, attr, counted(value, originals[value]))
    return counts


def test_trust_parts_marks_every_module_inside_not_itself(rng):
    ff = FeedForward(4, 6, rng=rng)
    assert ff.checks_inputs
    assert not any(m.checks_inputs for name, m in ff.named_modules() if name)
    lonely = Linear(4, 6, rng=rng)
    assert lonely.checks_inputs and lonely.trust_parts() is lonely and lonely.checks_inputs


def test_feedforward_checks_x_once(rng, checks):
    ff = FeedForward(4, 6, rng=rng)
    checks.clear()                                      # the constructor's checks of its sizes
    ff.forward(rng.normal(size=(2, 3, 4)))
    assert checks == {("check_float_array", "layers/feedforward.py"): 1}


def test_sublayer_connection_checks_x_once(rng, checks):
    for norm_first in (False, True):
        sub = SublayerConnection(4, norm_first=norm_first)
        checks.clear()
        sub.forward(rng.normal(size=(2, 3, 4)), lambda h: 2 * h)
        assert checks == {("check_float_array", "layers/residual.py"): 1}


def test_a_layer_on_its_own_checks_its_input(rng, checks):
    x = rng.normal(size=(2, 3, 4))
    layers = Linear(4, 5, rng=rng), LayerNorm(4), PositionalEncoding(4, max_len=8)
    checks.clear()
    for layer in layers:
        layer.forward(x)
    assert set(checks) == {("check_float_array", "layers/linear.py"),
                           ("check_float_array", "layers/normalization.py"),
                           ("check_float_array", "layers/positional.py"),
                           ("check_length", "layers/positional.py")}


def test_a_part_trusts_its_input(rng, checks):
    """Inside a module that checked x, a part computes without looking again."""
    ff = FeedForward(4, 6, rng=rng)
    checks.clear()
    h = ff.linear_1.forward(rng.normal(size=(2, 3, 4)))          # as FeedForward calls it
    assert h.shape == (2, 3, 6) and not checks


def test_bad_input_still_raises_once_at_the_entry(rng):
    ff = FeedForward(4, 6, rng=rng)
    with pytest.raises(InputError, match=r"^x: expected last dimension 4 \(d_model\), "
                                         r"got shape \(2, 3, 5\)$"):
        ff.forward(rng.normal(size=(2, 3, 5)))


def test_decoder_mask_checks_the_ids_once(checks):
    mask = make_decoder_mask(np.array([[5, 6, 0]]), pad_id=0)
    assert mask.shape == (1, 1, 3, 3) and not mask[0, 0, :, 2].any()
    assert not checks                    # the ids' kind and rank: make_padding_mask's own test
    with raises_naming(InputError, "ids", "(B, S)", "(3,)"):
        make_decoder_mask(np.array([5, 6, 0]), pad_id=0)


def test_a_trusting_model_computes_the_same_without_its_layers_checks(rng, checks):
    from numpy_transformer.models import TransformerConfig, build_transformer
    model = build_transformer(TransformerConfig(
        src_vocab_size=11, tgt_vocab_size=11, d_model=8, num_heads=2, d_ff=12,
        num_encoder_layers=1, num_decoder_layers=1, max_len=8, norm_first=True)).eval()
    src, tgt = rng.integers(1, 11, (2, 5)), rng.integers(1, 11, (2, 4))     # device arrays there
    before = to_numpy(model.forward(src, tgt))
    checks.clear()
    after = to_numpy(model.trust_parts().forward(src, tgt))
    np.testing.assert_array_equal(before, after)
    mine = ("linear", "normalization", "residual", "feedforward", "positional", "embedding")
    assert not [where for _, where in checks if where.split("/")[-1][:-3] in mine]
