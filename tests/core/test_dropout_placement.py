"""Where dropout acts: `dropout` on sublayer outputs and embeddings, and by default also on
the attention weights and the feed-forward hidden layer; `attention_dropout` and
`activation_dropout` set those two apart (fairseq's Transformer: 0 and 0)."""

import numpy as np
import pytest

from numpy_transformer.errors import InputError
from numpy_transformer.models import GPT, GPTConfig, Transformer, TransformerConfig

from doors import raises_naming

SMALL = dict(d_model=8, num_heads=2, d_ff=12, num_encoder_layers=2, num_decoder_layers=2)


def rates(model):
    """{kind: the set of dropout probabilities of that kind} over every block of `model`."""
    blocks = ([*model.encoder.layers, *model.decoder.layers] if isinstance(model, Transformer)
              else model.layers)
    positions = ([model.src_pos, model.tgt_pos] if isinstance(model, Transformer)
                 else [model.pos])
    attentions = [a for b in blocks for a in (b.self_attn, getattr(b, "cross_attn", None)) if a]
    return {"attention": {a.dropout.p for a in attentions},
            "activation": {b.feed_forward.dropout.p for b in blocks},
            "residual": {s.dropout.p for b in blocks for s in b.sublayers},
            "embedding": {p.dropout.p for p in positions}}


def test_one_rate_everywhere_by_default():
    assert rates(Transformer(TransformerConfig(20, 20, **SMALL, dropout=0.3))) == {
        "attention": {0.3}, "activation": {0.3}, "residual": {0.3}, "embedding": {0.3}}
    assert rates(GPT(GPTConfig(20, d_model=8, num_heads=2, d_ff=12, dropout=0.2))) == {
        "attention": {0.2}, "activation": {0.2}, "residual": {0.2}, "embedding": {0.2}}


def test_attention_and_activation_dropout_set_only_their_own_layers():
    config = TransformerConfig(20, 20, **SMALL, dropout=0.3, attention_dropout=0.0,
                               activation_dropout=0.1)
    assert rates(Transformer(config)) == {"attention": {0.0}, "activation": {0.1},
                                          "residual": {0.3}, "embedding": {0.3}}
    gpt = GPT(GPTConfig(20, d_model=8, num_heads=2, d_ff=12, dropout=0.2, attention_dropout=0.05))
    assert rates(gpt) == {"attention": {0.05}, "activation": {0.2}, "residual": {0.2},
                          "embedding": {0.2}}


def test_a_configuration_saved_before_the_two_fields_loads_as_one_rate():
    old = TransformerConfig(20, 20, **SMALL, dropout=0.3).to_dict()
    del old["attention_dropout"], old["activation_dropout"]
    config = TransformerConfig(**old)
    assert (config.attention_dropout, config.activation_dropout) == (None, None)
    assert rates(Transformer(config))["attention"] == {0.3}


def test_the_rates_change_no_weight_and_no_output_in_eval_mode():
    """dropout=0.3 with the other two at 0 against dropout=0 everywhere, the same seed: the
    same weights, so the same outputs once dropout is off (eval mode)."""
    src = np.array([[3, 4, 5, 6]]); tgt = np.array([[1, 7, 8]])
    on = Transformer(TransformerConfig(20, 20, **SMALL, dropout=0.3, attention_dropout=0.0,
                                       activation_dropout=0.0, seed=1)).eval()
    off = Transformer(TransformerConfig(20, 20, **SMALL, dropout=0.0, seed=1)).eval()
    np.testing.assert_array_equal(on.forward(src, tgt), off.forward(src, tgt))


@pytest.mark.parametrize("field", ["attention_dropout", "activation_dropout"])
@pytest.mark.parametrize("value", [1.0, -0.1])
def test_bad_rates_name_the_field(field, value):
    with raises_naming(InputError, field, "[0, 1)", str(value)):
        TransformerConfig(20, 20, **SMALL, **{field: value})
    with raises_naming(InputError, field, "[0, 1)", str(value)):
        GPTConfig(20, d_model=8, num_heads=2, **{field: value})
