"""The device simulator is as strict as CuPy, and training stays on the device.

The simulator (numpy_transformer/testing/device_simulator.py) stands in for a GPU on the
CPU; CI runs the whole suite under it (NUMPY_TRANSFORMER_BACKEND=simulator).
Here it is switched on for single tests, to pin down its own behaviour and to
count what a training step sends back to the host.
"""

import numpy as np
import pytest

from numpy_transformer.testing import device_simulator
from numpy_transformer.backend import get_backend, set_backend, to_numpy, xp
from numpy_transformer.data import get_task
from numpy_transformer.models import Transformer, TransformerConfig
from numpy_transformer.training import PairStream, TrainConfig, Trainer

IMPLICIT = "Implicit conversion to a NumPy array is not allowed"
MIXED = "a NumPy array cannot meet a device array"


@pytest.fixture
def device():
    """The simulator as `xp` for one test (and the suite's backend back after it)."""
    saved = get_backend()
    set_backend("simulator")
    device_simulator.stats.reset()
    yield device_simulator
    set_backend(saved)


def test_no_implicit_way_back_to_numpy(device):
    a = xp.asarray(np.arange(6.0).reshape(2, 3))
    assert isinstance(a, xp.ndarray) and a.shape == (2, 3) and a.dtype == np.float64
    for convert in (np.asarray, np.array, lambda d: np.mean(np.ones(3) + d[0])):
        with pytest.raises(TypeError, match=IMPLICIT + "|" + MIXED):
            convert(a)
    assert device.stats.transfers == 0
    np.testing.assert_array_equal(a.get(), np.arange(6.0).reshape(2, 3))
    assert float(a.sum()) == 15.0 and device.stats.transfers == 2
    assert isinstance(to_numpy(a), np.ndarray) and isinstance(xp.asnumpy(a), np.ndarray)


def test_mixing_with_numpy_arrays_is_refused_both_ways(device):
    a, host = xp.ones(3), np.ones(3)
    for mix in (lambda: a + host, lambda: host + a, lambda: host * a, lambda: a @ host,
                lambda: xp.concatenate([a, host]), lambda: xp.maximum(a, host)):
        with pytest.raises(TypeError, match=MIXED):
            mix()
    assert type(a + 1.0) is type(a) and type(np.exp(a)) is type(a)   # scalars, NumPy ufuncs: fine
    assert type(a.sum()) is type(a)                                   # reductions stay 0-d arrays


def test_ufunc_at_fails_and_reduceat_is_add_only(device):
    a = xp.zeros(4)
    with pytest.raises(TypeError, match="at"):
        np.add.at(a, xp.asarray([0, 0]), 1.0)
    with pytest.raises(TypeError, match="at"):
        xp.add.at(a, xp.asarray([0, 0]), 1.0)
    np.testing.assert_array_equal(to_numpy(xp.add.reduceat(xp.arange(4.0), xp.asarray([0, 2]))),
                                  [1.0, 5.0])
    with pytest.raises(AttributeError, match="add only"):
        xp.maximum.reduceat(xp.arange(4.0), xp.asarray([0, 2]))


def test_out_of_range_integer_indices_wrap_as_on_a_gpu(device):
    table = xp.arange(5.0)
    np.testing.assert_array_equal(to_numpy(table[xp.asarray([4, 5, -1])]), [4.0, 0.0, 4.0])


def test_device_generator_is_seeded(device):
    a = xp.random.default_rng(7).random((3,), dtype=np.float32)
    b = xp.random.default_rng(7).random((3,), dtype=np.float32)
    assert a.dtype == np.float32 and bool((a == b).all())


def _trainer(steps, log_every):
    task = get_task("reverse", max_len=6)
    tok = task.tokenizer()
    config = TransformerConfig(src_vocab_size=tok.vocab_size, tgt_vocab_size=tok.vocab_size,
                               d_model=32,
                               num_heads=4, d_ff=64, num_encoder_layers=1, num_decoder_layers=1,
                               dropout=0.1, max_len=16, seed=0)
    stream = PairStream.from_task(task, tok, batch_size=8, seed=0, pool_batches=2)
    return Trainer(Transformer(config), stream,
                   TrainConfig(steps=steps, warmup=2, log_every=log_every, eval_every=0,
                               checkpoint_every=0, clip_norm=1.0, progress=False),
                   log=None)


def test_a_training_step_sends_nothing_back_and_stays_in_float32(device):
    trainer = _trainer(steps=12, log_every=6)
    trainer.train_step()                               # the first step builds what it keeps
    device.stats.reset()
    for _ in range(3):
        loss, *_ = trainer.train_step()
    assert device.stats.transfers == 0, "a training step waited for the device"
    assert type(loss) is xp.ndarray and loss.shape == ()
    made = dict(device.stats.dtypes)
    assert made.get("float32", 0) > 100 and "float64" not in made, made


def test_losses_come_back_once_per_log_line_and_are_checked(device):
    trainer = _trainer(steps=12, log_every=6)
    trainer._loop()
    assert device.stats.transfers == 2, "the losses came back more often than at steps 6, 12"
    trainer.flush()                                    # nothing waits: no transfer
    assert device.stats.transfers == 2
    losses = [row["loss"] for row in trainer.history.train]
    assert len(losses) == 12 and all(isinstance(v, float) and np.isfinite(v) for v in losses)


def test_an_element_is_a_view_as_on_a_gpu(device):
    """CuPy's x[i] is a 0-d view, so `old = x[i]; x[i] = old + h` changes `old` too."""
    x = xp.arange(3.0)
    old = x[1]
    x[1] = old + 1.0
    assert old.shape == () and float(old) == 2.0
