"""The whole Transformer: gradient checks, odd shapes, configuration and input errors."""

import numpy as np
import pytest

from numpy_transformer.backend import to_numpy
from numpy_transformer.errors import InputError, InputTypeError
from numpy_transformer.gradcheck import assert_gradients_close, perturb
from numpy_transformer.models import (BlockConfig, Decoder, Encoder, Transformer, TransformerConfig,
                                      build_transformer)

from doors import raises_naming


def tiny_config(**overrides):
    fields = dict(src_vocab_size=13, tgt_vocab_size=11, d_model=8, num_heads=2, d_ff=12,
                  num_encoder_layers=2, num_decoder_layers=2, dropout=0.0, max_len=16)
    return TransformerConfig(**{**fields, **overrides})


def ids_with_padding(rng, B, T, V):
    ids = rng.integers(1, V, (B, T))
    ids[-1, T // 2 + 1:] = 0                     # the last sequence is padded
    return ids


# Every variant's whole-model gradient check is a shared case: gradcheck_cases.py MODEL_CASES,
# run by tests/core/test_gradcheck.py.

@pytest.mark.slow
def test_tied_embeddings_gradients(float64, rng):
    model = perturb(build_transformer(tiny_config(tie_embeddings=True, dropout=0.1)), rng)
    names = [name for name, _, _ in model.named_parameters()]
    assert "tgt_embed.weight" in names and "output_projection.weight" not in names
    assert model.output_projection.params["weight"] is model.tgt_embed.params["weight"]
    src, tgt = ids_with_padding(rng, 2, 5, 13), ids_with_padding(rng, 2, 3, 11)
    assert_gradients_close(model, src, tgt, rtol=1e-6)


def test_dropout_is_frozen_by_gradcheck_and_off_in_eval(float64, rng):
    model = build_transformer(tiny_config(dropout=0.2, num_encoder_layers=1,
                                          num_decoder_layers=1))
    src, tgt = rng.integers(1, 13, (2, 5)), rng.integers(1, 11, (2, 4))
    assert_gradients_close(model, src, tgt, rtol=1e-6, max_coords=20)
    model.eval()
    np.testing.assert_array_equal(model.forward(src, tgt), model.forward(src, tgt))
    model.train()
    assert not np.array_equal(model.forward(src, tgt), model.forward(src, tgt))


@pytest.mark.parametrize("B,S,T", [(1, 7, 3), (3, 1, 1), (1, 1, 6)])
def test_odd_shapes_run_forward_and_backward(rng, B, S, T):
    model = build_transformer(tiny_config(src_vocab_size=17, tgt_vocab_size=5))
    logits = model.forward(rng.integers(0, 17, (B, S)), rng.integers(1, 5, (B, T)))
    assert logits.shape == (B, T, 5) and logits.dtype == np.float32
    model.zero_grad()
    assert model.backward(np.ones_like(logits)) is None
    for name, _, grad in model.named_parameters():
        assert np.all(np.isfinite(grad)), name
    assert np.any(model.src_embed.grads["weight"] != 0)


def test_fully_padded_source_gives_finite_outputs(rng):
    model = build_transformer(tiny_config())
    src = np.zeros((2, 4), dtype=np.int64)        # nothing to attend to
    logits = model.forward(src, rng.integers(1, 11, (2, 3)))
    model.backward(np.ones_like(logits))
    assert np.all(np.isfinite(logits))
    assert all(np.all(np.isfinite(g)) for _, _, g in model.named_parameters())


def test_decoder_memory_gradient_sums_over_layers(float64, rng):
    """d memory from the Decoder is the sum of every block's cross-attention gradient:
    compare it with finite differences of the decoder as a function of memory."""
    decoder = perturb(Decoder(BlockConfig(d_model=8, num_heads=2, d_ff=12), 3, rng=rng), rng)
    x, memory = rng.normal(size=(2, 3, 8)), rng.normal(size=(2, 5, 8))
    dout = rng.normal(size=(2, 3, 8))
    decoder.forward(x, memory)
    dx, dmemory = decoder.backward(dout)
    assert dx.shape == (2, 3, 8) and dmemory.shape == (2, 5, 8)

    def loss(i, shift):
        m = memory.copy()
        m[i] += shift
        return float(np.sum(decoder.forward(x, m) * dout))

    eps = 1e-4
    for i in [(0, 0, 0), (1, 2, 3), (1, 4, 7)]:
        numeric = (8 * (loss(i, eps) - loss(i, -eps)) - (loss(i, 2 * eps) - loss(i, -2 * eps)))
        numeric /= 12 * eps
        assert abs(numeric - dmemory[i]) <= 1e-8 * max(1.0, abs(numeric))


def test_encoder_pre_norm_has_final_norm(rng):
    for norm_first in (True, False):
        block = BlockConfig(d_model=8, num_heads=2, d_ff=12, norm_first=norm_first)
        assert (Encoder(block, 2, rng=rng).norm is not None) == norm_first


def test_same_seed_same_weights_and_xavier_range():
    a, b = build_transformer(tiny_config(seed=3)), build_transformer(tiny_config(seed=3))
    for (name, p, _), (_, q, _) in zip(a.named_parameters(), b.named_parameters()):
        np.testing.assert_array_equal(p, q, err_msg=name)
    w = a.encoder.layers[0].feed_forward.linear_1.params["weight"]
    assert np.abs(w).max() <= np.sqrt(6.0 / (8 + 12))


@pytest.mark.slow
def test_paper_base_parameter_count():
    """Base model, shared 37000-token vocabulary, tied target embedding/projection."""
    config = TransformerConfig(37000, 37000, tie_embeddings=True)
    D, F, V, N = 512, 2048, 37000, 6
    attn = 4 * (D * D + D)
    ffn = D * F + F + F * D + D
    norm = 2 * D
    expected = (2 * V * D + N * (attn + ffn + 2 * norm) + N * (2 * attn + ffn + 3 * norm)
                + V)                               # + the projection's bias
    assert build_transformer(config).num_parameters() == expected


BAD_CONFIGS = [   # (fields, exception, the words the message names: parameter, values)
    (dict(d_model=10, num_heads=4), InputError, ("d_model", "num_heads=4", "d_model=10")),
    (dict(dropout=1.0), InputError, ("dropout", "[0, 1)", "1.0")),
    (dict(dropout=-0.1), InputError, ("dropout", "[0, 1)", "-0.1")),
    (dict(dropout="0.1"), InputTypeError, ("dropout", "[0, 1)", "'0.1'")),
    (dict(attention="flash"), InputError, ("attention", "('mha', 'mla')", "'flash'")),
    (dict(latent_dim=0), InputError, ("latent_dim", "None", "0")),
    (dict(latent_dim=9), InputError, ("latent_dim", "d_model=8", "9")),
    (dict(latent_dim=2.0), InputTypeError, ("latent_dim", "2.0")),
    (dict(num_encoder_layers=0), InputError, ("num_encoder_layers", "0")),
    (dict(num_decoder_layers=True), InputTypeError, ("num_decoder_layers", "True")),
    (dict(src_vocab_size=0), InputError, ("src_vocab_size", "0")),
    (dict(d_ff=12.0), InputTypeError, ("d_ff", "12.0")),
    (dict(max_len=-1), InputError, ("max_len", "-1")),
    (dict(norm_first="no"), InputTypeError, ("norm_first", "'no'")),
    (dict(norm_first=1), InputTypeError, ("norm_first", "1")),
    (dict(tie_embeddings="yes"), InputTypeError, ("tie_embeddings", "'yes'")),
    (dict(pad_id=99), InputError, ("pad_id", "[0, 11)", "99")),
    (dict(pad_id=-1), InputError, ("pad_id", "-1")),
    (dict(pad_id=False), InputTypeError, ("pad_id", "False")),
    (dict(seed=-1), InputError, ("seed", "-1")),
    (dict(seed=None), InputTypeError, ("seed", "None")),
]


@pytest.mark.parametrize("overrides,error,words", BAD_CONFIGS,
                         ids=[",".join(f"{k}={v!r}" for k, v in c[0].items()) for c in BAD_CONFIGS])
def test_bad_config_raises(overrides, error, words):
    with raises_naming(error, *words):
        tiny_config(**overrides)


def test_backward_before_forward_names_the_model(rng):
    model = build_transformer(tiny_config())
    with raises_naming(InputError, "Transformer.backward", "forward"):
        model.backward(np.ones((2, 4, 11), dtype=np.float32))
    logits = model.forward(rng.integers(1, 13, (2, 5)), rng.integers(1, 11, (2, 4)))
    with raises_naming(InputError, "dlogits", "(2, 4, 11)", "(2, 3, 11)"):
        model.backward(np.ones((2, 3, 11), dtype=np.float32))
    model.backward(np.ones_like(logits))


def test_ids_checked_once_per_call(rng, monkeypatch):
    import numpy_transformer.layers.embedding as embedding
    import numpy_transformer.models.transformer as transformer
    calls = []
    for module in (transformer, embedding):
        monkeypatch.setattr(module, "check_ids", lambda ids, name, *a, real=module.check_ids,
                            **k: (calls.append(name), real(ids, name, *a, **k))[1])
    model = build_transformer(tiny_config())
    model(rng.integers(1, 13, (2, 5)), rng.integers(1, 11, (2, 4)))
    assert calls == ["src", "tgt_in"]


def test_bad_inputs_raise(rng):
    model = build_transformer(tiny_config())
    src, tgt = rng.integers(1, 13, (2, 5)), rng.integers(1, 11, (2, 4))
    with pytest.raises(ValueError, match="src"):        # values are checked in host ids only
        model(to_numpy(src) + 13, tgt)
    with pytest.raises(ValueError, match="tgt"):
        model(src, tgt[:1])
    with pytest.raises(TypeError, match="src"):
        model(src.astype(np.float32), tgt)
    with pytest.raises(ValueError, match="max_len|16"):
        model(rng.integers(1, 13, (2, 17)), tgt)
    assert isinstance(model, Transformer)
