"""The decoder-only GPT: whole-model gradient checks, causality, configuration, checkpoints."""

import numpy as np
import pytest

from numpy_transformer import load_checkpoint, save_checkpoint
from numpy_transformer.gradcheck import assert_gradients_close
from numpy_transformer.losses import CrossEntropyLoss
from numpy_transformer.models import GPT, GPTConfig
from numpy_transformer.optim import Adam
from numpy_transformer.selfcheck import _perturb


def tiny_config(**overrides):
    fields = dict(vocab_size=11, d_model=8, num_heads=2, d_ff=12, num_layers=2, dropout=0.0,
                  max_len=16)
    return GPTConfig(**{**fields, **overrides})


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
@pytest.mark.parametrize("attention", ["mha", "mla"])
def test_whole_model_gradients(float64, rng, norm_first, attention):
    model = _perturb(GPT(tiny_config(norm_first=norm_first, attention=attention,
                                     latent_dim=3)), rng)
    ids = rng.integers(1, 11, (2, 5))
    report = assert_gradients_close(model, ids, rtol=1e-6)
    assert len(report.rows) == len(list(model.named_parameters()))


def test_untied_with_dropout_gradients(float64, rng):
    model = _perturb(GPT(tiny_config(tie_embeddings=False, dropout=0.1, num_layers=1)), rng)
    names = [name for name, _, _ in model.named_parameters()]
    assert "generator.weight" in names and "norm.gamma" in names
    assert_gradients_close(model, rng.integers(1, 11, (2, 4)), rtol=1e-6)


def test_tied_embedding_is_shared():
    model = GPT(tiny_config())
    names = [name for name, _, _ in model.named_parameters()]
    assert "embed.weight" in names and "generator.weight" not in names
    assert model.generator.params["weight"] is model.embed.params["weight"]
    assert names.count("embed.weight") == 1


def test_causal_later_tokens_do_not_change_earlier_logits(rng):
    model = GPT(tiny_config(attention="mla")).eval()
    ids = rng.integers(1, 11, (2, 6))
    changed = ids.copy()
    changed[:, 4:] = (changed[:, 4:] % 10) + 1
    a, b = model.forward(ids), model.forward(changed)
    assert a.shape == (2, 6, 11) and a.dtype == np.float32
    np.testing.assert_array_equal(a[:, :4], b[:, :4])
    assert not np.allclose(a[:, 4:], b[:, 4:])


def test_post_norm_has_no_final_norm():
    assert GPT(tiny_config(norm_first=False)).norm is None
    assert GPT(tiny_config(norm_first=True)).norm is not None


def test_overfits_one_batch():
    model = GPT(tiny_config(d_model=16, d_ff=32, dropout=0.0, seed=1))
    ids = np.random.default_rng(0).integers(3, 11, (4, 8))
    loss_fn, optimizer = CrossEntropyLoss(), Adam(model, lr=1e-2)
    for _ in range(60):
        model.zero_grad()
        loss = loss_fn.forward(model.forward(ids[:, :-1]), ids[:, 1:])
        model.backward(loss_fn.backward())
        optimizer.step()
    assert loss < 0.2


def test_checkpoint_round_trip(tmp_path, rng):
    config = tiny_config(attention="mla", latent_dim=4, tie_embeddings=False, seed=5)
    model = _perturb(GPT(config), rng)
    path = save_checkpoint(tmp_path / "gpt.npz", model, step=3)
    ckpt = load_checkpoint(str(path))
    assert isinstance(ckpt.model, GPT) and ckpt.model.config == config
    assert ckpt.metadata == {"step": 3}
    ids = rng.integers(1, 11, (2, 5))
    np.testing.assert_array_equal(ckpt.model.eval().forward(ids), model.eval().forward(ids))


def test_config_to_dict_rebuilds():
    config = tiny_config(attention="mla", latent_dim=2)
    assert GPTConfig(**config.to_dict()) == config


@pytest.mark.parametrize("overrides,match", [
    (dict(d_model=10, num_heads=4), "d_model=10 is not divisible by num_heads=4"),
    (dict(dropout=1.0), "dropout"),
    (dict(attention="flash"), "attention"),
    (dict(latent_dim=0), "latent_dim"),
    (dict(num_layers=0), "num_layers"),
    (dict(vocab_size=0), "vocab_size"),
])
def test_bad_config_raises(overrides, match):
    with pytest.raises(ValueError, match=match):
        tiny_config(**overrides)


def test_bad_inputs_raise(rng):
    model = GPT(tiny_config())
    with pytest.raises(ValueError, match="ids: expected token ids in"):
        model.forward(rng.integers(1, 11, (2, 5)) + 11)
    with pytest.raises(TypeError, match="ids"):
        model.forward(rng.normal(size=(2, 5)))
    with pytest.raises(ValueError, match=r"ids: expected sequence length T <= max_len=16"):
        model.forward(rng.integers(1, 11, (2, 17)))
    with pytest.raises(ValueError, match="ids: expected 2 dimensions"):
        model.forward(rng.integers(1, 11, (5,)))
