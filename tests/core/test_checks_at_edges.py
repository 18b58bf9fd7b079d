"""Checks at the edges: an input is checked once, where it enters, never again inside.

One door, as PyTorch's `__call__`: calling a module, `layer(x)`, runs its `check_inputs`,
then its `forward`; a module's parts call each other's `forward`, which checks nothing.
These tests count the calls of validation.py's check functions, wherever a module
imported them.
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
from numpy_transformer.masks import make_decoder_mask
from numpy_transformer.models import BlockConfig, EncoderBlock
from numpy_transformer.module import Module

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


def test_calling_a_module_checks_its_inputs_then_runs_forward():
    class Twice(Module):
        def forward(self, x, scale=1):
            calls.append(("forward", x, scale))
            return 2 * x * scale

        def check_inputs(self, x, scale=1):
            calls.append(("check_inputs", x, scale))

    calls = []
    assert Twice()(3, scale=5) == 30
    assert calls == [("check_inputs", 3, 5), ("forward", 3, 5)]
    assert Module().check_inputs(1, 2, mask=None) is None     # nothing to check by default


def test_feedforward_checks_x_once(rng, checks):
    ff = FeedForward(4, 6, rng=rng)
    checks.clear()                                      # the constructor's checks of its sizes
    ff(rng.normal(size=(2, 3, 4)))
    assert checks == {("check_float_array", "layers/feedforward.py"): 1}


def test_a_block_checks_nothing_inside(rng, checks):
    """A block has no inputs of its own to check: its parts' forward trust x."""
    for norm_first in (False, True):
        block = EncoderBlock(BlockConfig(d_model=4, num_heads=2, d_ff=6, norm_first=norm_first),
                             rng=rng)
        checks.clear()
        block(rng.normal(size=(2, 3, 4)))
        assert not checks


def test_a_layer_on_its_own_checks_its_input(rng, checks):
    x = rng.normal(size=(2, 3, 4))
    layers = Linear(4, 5, rng=rng), LayerNorm(4), PositionalEncoding(4, max_len=8)
    checks.clear()
    for layer in layers:
        layer(x)
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
        ff(rng.normal(size=(2, 3, 5)))


def test_decoder_mask_checks_the_ids_once(checks):
    mask = make_decoder_mask(np.array([[5, 6, 0]]), pad_id=0)
    assert mask.shape == (1, 1, 3, 3) and not mask[0, 0, :, 2].any()
    assert not checks                    # the ids' kind and rank: make_padding_mask's own test
    with raises_naming(InputError, "ids", "(B, S)", "(3,)"):
        make_decoder_mask(np.array([5, 6, 0]), pad_id=0)


def test_a_model_checks_its_inputs_once_and_its_parts_nothing(rng, checks):
    from numpy_transformer.models import TransformerConfig, build_transformer
    model = build_transformer(TransformerConfig(
        src_vocab_size=11, tgt_vocab_size=11, d_model=8, num_heads=2, d_ff=12,
        num_encoder_layers=1, num_decoder_layers=1, max_len=8, norm_first=True)).eval()
    src, tgt = rng.integers(1, 11, (2, 5)), rng.integers(1, 11, (2, 4))     # device arrays there
    checks.clear()
    called = to_numpy(model(src, tgt))
    assert {where for _, where in checks} == {"models/transformer.py"}
    checks.clear()
    np.testing.assert_array_equal(to_numpy(model.forward(src, tgt)), called)
    assert not checks
