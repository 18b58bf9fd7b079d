"""Figures: every PNG is written (non-empty) into a folder; plots return Figures without a path;
the loss axis says it is logarithmic and labels enough ticks to read a final value off it."""

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from numpy_transformer.data import CharTokenizer                      # noqa: E402
from numpy_transformer.models import TransformerConfig, build_transformer   # noqa: E402
from numpy_transformer.training.plotting import (attention_maps, plot_attention,    # noqa: E402
                                                 plot_loss, plot_positional_encoding,
                                                 save_figures)
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


def loss_history(train, held_out):
    """A History whose training losses are `train` and held-out losses `held_out` (spread)."""
    history = History()
    for step, loss in enumerate(train, 1):
        history.log_step(step, loss, 1e-3, 1000.0)
    for i, loss in enumerate(held_out, 1):
        history.log_eval(i * len(train) // len(held_out), {"loss": loss})
    return history


def y_labels(fig):
    """(major, minor) tick labels drawn on the loss axis, within its limits."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    FigureCanvasAgg(fig).draw()
    ax = fig.axes[0]
    low, high = ax.get_ylim()
    return [{t.get_text() for t in ticks if t.get_text() and low <= t.get_position()[1] <= high}
            for ticks in (ax.yaxis.get_majorticklabels(), ax.yaxis.get_minorticklabels())]


def test_loss_axis_is_labelled_log_and_a_final_value_can_be_read_off():
    """The reverse run's shape: smoothed training loss 4 -> 0.64, held-out 0.42 -> 0.10 (about
    1.7 decades): 0.64 lies between the labels 0.6 and 0.8, 0.10 on the label 0.1."""
    train = list(np.geomspace(4.0, 0.64, 200))
    fig = plot_loss(loss_history(train, [0.42, 0.24, 0.12, 0.10]), label_smoothing=0.1)
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and ax.get_ylabel() == "loss (nats per token, log scale)"
    major, minor = y_labels(fig)
    assert {"0.1", "0.2", "0.3", "0.5", "1", "2", "3"} <= major, major
    assert {"0.15", "0.4", "0.6", "0.8", "1.5"} <= minor and "0.7" not in minor, minor


def test_a_narrow_loss_axis_labels_more_ticks_and_a_wide_one_fewer():
    """Multi30k's shape (9 -> 2.4, held-out 1.67): 1.67 between the labels 1.6 and 2;
    across 4 decades only 1, 2, 3, 5 x 10^k are labelled, so no two labels collide."""
    narrow = plot_loss(loss_history(list(np.geomspace(9.0, 2.4, 200)), [2.3, 1.8, 1.67]),
                       unit="character")
    major, minor = y_labels(narrow)
    assert {"2", "3", "5"} <= major and {"1.6", "2.5", "4", "6", "7", "8"} <= minor, minor
    assert narrow.axes[0].get_ylabel() == "loss (nats per character, log scale)"
    major, minor = y_labels(plot_loss(loss_history(list(np.geomspace(4.0, 4e-4, 200)), [])))
    assert {"0.001", "0.01", "0.1", "1"} <= major and not minor, minor


def test_a_loss_that_reaches_zero_is_drawn_on_a_linear_axis_and_says_so():
    fig = plot_loss(loss_history([2.0, 1.0, 0.0], []))
    assert fig.axes[0].get_yscale() == "linear"
    assert fig.axes[0].get_ylabel() == "loss (nats per token)"
