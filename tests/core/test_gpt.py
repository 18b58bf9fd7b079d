"""The decoder-only GPT: whole-model gradient checks, causality, configuration, checkpoints."""

import numpy as np
import pytest

from numpy_transformer import load_checkpoint, save_checkpoint
from numpy_transformer.backend import to_numpy
from numpy_transformer.errors import InputError, InputTypeError
from numpy_transformer.gradcheck import assert_gradients_close, perturb
from numpy_transformer.losses import CrossEntropyLoss
from numpy_transformer.models import GPT, GPTConfig
from numpy_transformer.optim import Adam

from doors import raises_naming


def tiny_config(**overrides):
    fields = dict(vocab_size=11, d_model=8, num_heads=2, d_ff=12, num_layers=2, dropout=0.0,
                  max_len=16)
    return GPTConfig(**{**fields, **overrides})


# Every variant's whole-model gradient check is a shared case: gradcheck_cases.py MODEL_CASES,
# run by tests/core/test_gradcheck.py.

def test_untied_with_dropout_gradients(float64, rng):
    model = perturb(GPT(tiny_config(tie_embeddings=False, dropout=0.1, num_layers=1)), rng)
    names = [name for name, _, _ in model.named_parameters()]
    assert "output_projection.weight" in names and "norm.gamma" in names
    assert_gradients_close(model, rng.integers(1, 11, (2, 4)), rtol=1e-6)


def test_tied_embedding_is_shared():
    model = GPT(tiny_config())
    names = [name for name, _, _ in model.named_parameters()]
    assert "embed.weight" in names and "output_projection.weight" not in names
    assert model.output_projection.params["weight"] is model.embed.params["weight"]
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
    model = perturb(GPT(config), rng)
    path = save_checkpoint(tmp_path / "gpt.npz", model, step=3)
    ckpt = load_checkpoint(str(path))
    assert isinstance(ckpt.model, GPT) and ckpt.model.config == config
    assert ckpt.metadata == {"step": 3}
    ids = rng.integers(1, 11, (2, 5))
    np.testing.assert_array_equal(ckpt.model.eval().forward(ids), model.eval().forward(ids))


def test_config_to_dict_rebuilds():
    config = tiny_config(attention="mla", latent_dim=2)
    assert GPTConfig(**config.to_dict()) == config


@pytest.mark.parametrize("overrides,error,words", [
    (dict(d_model=10, num_heads=4), InputError, ("d_model", "num_heads=4", "d_model=10")),
    (dict(dropout=1.0), InputError, ("dropout", "[0, 1)", "1.0")),
    (dict(attention="flash"), InputError, ("attention", "'flash'")),
    (dict(latent_dim=0), InputError, ("latent_dim", "None", "0")),
    (dict(latent_dim=9), InputError, ("latent_dim", "d_model=8", "9")),
    (dict(num_layers=0), InputError, ("num_layers", "0")),
    (dict(num_layers=2.5), InputTypeError, ("num_layers", "2.5")),
    (dict(vocab_size=0), InputError, ("vocab_size", "0")),
    (dict(norm_first="no"), InputTypeError, ("norm_first", "'no'")),
    (dict(tie_embeddings=0), InputTypeError, ("tie_embeddings", "0")),
    (dict(pad_id=11), InputError, ("pad_id", "[0, 11)", "11")),
    (dict(seed=1.5), InputTypeError, ("seed", "1.5")),
])
def test_bad_config_raises(overrides, error, words):
    with raises_naming(error, *words):
        tiny_config(**overrides)


def test_backward_before_forward_names_the_model():
    model = GPT(tiny_config())
    with raises_naming(InputError, "GPT.backward", "forward"):
        model.backward(np.ones((2, 5, 11), dtype=np.float32))


def test_bad_inputs_raise(rng):
    model = GPT(tiny_config())
    with raises_naming(ValueError, "ids", "[0, 11)"):   # values: host ids only
        model(to_numpy(rng.integers(1, 11, (2, 5))) + 11)        # (check_ids)
    with pytest.raises(TypeError, match="ids"):
        model(rng.normal(size=(2, 5)))
    with raises_naming(ValueError, "ids", "max_len=16", "T=17"):
        model(rng.integers(1, 11, (2, 17)))
    with pytest.raises(ValueError, match="ids: expected 2 dimensions"):
        model(rng.integers(1, 11, (5,)))
