"""Figures: every PNG is written (non-empty) into a folder; plots return Figures without a path."""

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from numpy_transformer.data import CharTokenizer                      # noqa: E402
from numpy_transformer.models import TransformerConfig, build_transformer   # noqa: E402
from numpy_transformer.training.plotting import (attention_maps, plot_attention,    # noqa: E402
                                        plot_positional_encoding, save_figures)
from numpy_transformer.training import History                  # noqa: E402


def small_run():
    tok = CharTokenizer("abcde")
    model = build_transformer(TransformerConfig(
        src_vocab_size=tok.vocab_size, tgt_vocab_size=tok.vocab_size, d_model=8, num_heads=2,
        d_ff=16, num_encoder_layers=2, num_decoder_layers=2, dropout=0.1, max_len=16))
    history = History()
    for step in range(1, 21):
        history.log_step(step, 3.0 / step, 1e-3 * min(step, 5) / 5, 1000.0)
    history.log_eval(10, {"loss": 0.5, "exact_match": 0.2})
    history.log_eval(20, {"loss": 0.3, "exact_match": 0.6})
    return tok, model, history


def test_save_figures_writes_every_png(tmp_path):
    tok, model, history = small_run()
    paths = save_figures(tmp_path / "figs", history, model=model,
                         example=(tok.encode("abcd"), tok.encode("dcb")),
                         src_tokenizer=tok, tgt_tokenizer=tok, prefix="demo_")
    names = sorted(p.split("/")[-1] for p in map(str, paths))
    assert names == sorted(f"demo_{n}.png" for n in (
        "loss", "lr", "attention_encoder_self", "attention_decoder_self", "attention_cross",
        "positional"))
    for path in paths:
        with open(path, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert model.training                     # attention maps ran in eval mode, then restored


def test_attention_maps_have_one_map_per_head_with_token_labels():
    tok, model, _ = small_run()
    maps = attention_maps(model, tok.encode("abcd"), tok.encode("dc"), tok, tok)
    weights, rows, cols = maps["cross"]
    assert weights.shape == (2, 3, 4)                 # H, <bos> d c, a b c d
    assert rows == ["<bos>", "d", "c"] and cols == ["a", "b", "c", "d"]
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-5)
    assert maps["decoder_self"][0].shape == (2, 3, 3)
    assert maps["encoder_self"][0].shape == (2, 4, 4)


def test_plots_without_a_path_return_figures():
    from matplotlib.figure import Figure
    fig = plot_attention(np.full((3, 2, 2), 0.5), ["a", "b"], ["c", "d"], "t")
    assert isinstance(fig, Figure)
    assert [a.get_title() for a in fig.axes if a.get_title()] == ["head 0", "head 1", "head 2"]
    assert fig.axes[-1].get_ylabel() == "attention weight (each row sums to 1)"   # colour bar
    assert isinstance(plot_positional_encoding(16, 20), Figure)


def test_figures_of_a_history_without_a_model(tmp_path):
    _, _, history = small_run()
    paths = save_figures(tmp_path, history)
    assert len(paths) == 2 and all((tmp_path / p.split("/")[-1]).stat().st_size > 0
                                   for p in map(str, paths))
