"""Figures of a training run, saved as PNG: loss and learning-rate curves, attention
maps and the positional-encoding table.

    from numpy_transformer.training.plotting import save_figures
    paths = save_figures("figures", history, model=model, example=(src_ids, out_ids),
                         src_tokenizer=tok, tgt_tokenizer=tok, prefix="reverse_")

Figures are drawn on `matplotlib.figure.Figure` objects, never through pyplot,
so nothing needs a display (it works on a headless server, in CI and in
Jupyter, where a returned Figure shows itself). matplotlib is optional:
install it with `pip install -e ".[train]"`.
"""

import math
import os

from ..backend import to_numpy
from ..system.files import atomic_write

_INSTALL = 'plotting needs matplotlib: install it with `pip install -e ".[train]"` ' \
           "(or `pip install matplotlib`)"


def new_figure(**kwargs):
    """A matplotlib Figure (no pyplot, no display needed); ImportError with a hint if missing."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError(_INSTALL) from None
    return Figure(**kwargs)


def save_figure(fig, path):
    """Write `fig` to `path` (its format from the extension, else PNG) atomically: never half
    a file, never through a FIFO, a device or a symbolic link (system/files.py)."""
    extension = os.path.splitext(str(path))[1][1:].lower()
    with atomic_write(path, "wb", suffix=f".{extension or 'png'}") as f:
        fig.savefig(f, format=extension or "png", dpi=110, bbox_inches="tight")
    return path


# Minor ticks of a log axis by how many decades it spans: (at most, subs, those labelled).
# Labelled minor ticks let a value be read off: 1.67 between 1.6 and 2 (grid line at 1.8),
# 0.64 between 0.6 and 0.8 (grid line at 0.7); beyond about 2 decades labels would collide.
LOG_MINOR_TICKS = ((1.25, (1.2, 1.4, 1.6, 1.8, 2.5, 4, 6, 7, 8, 9),
                    (1.2, 1.4, 1.6, 2.5, 4, 6, 7, 8)),
                   (2.1, (1.5, 4, 6, 7, 8, 9), (1.5, 4, 6, 8)),
                   (float("inf"), (1.5, 4, 6, 7, 8, 9), ()))


def _mantissa(value):
    """m of value = m x 10^k, 1 <= m < 10, to two decimals (0.64 -> 6.4)."""
    return round(value / 10 ** math.floor(math.log10(value) + 1e-9), 2)


def _readable_log_ticks(ax):
    """Plain numbers on the log y axis of `ax`, dense enough to read a value off it.

    Major ticks at 1, 2, 3, 5 x 10^k, labelled 0.5, 1, 2 (not 5x10^-1); minor ticks between
    them, some labelled in a smaller font, as many as the axis's span allows (LOG_MINOR_TICKS).
    """
    from matplotlib.ticker import FuncFormatter, LogLocator
    low, high = ax.get_ylim()
    decades = math.log10(high / low)
    subs, labelled = next((s, lab) for most, s, lab in LOG_MINOR_TICKS if decades <= most)
    axis = ax.yaxis
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 3.0, 5.0), numticks=20))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_locator(LogLocator(base=10, subs=subs, numticks=20))
    axis.set_minor_formatter(FuncFormatter(
        lambda v, _: f"{v:g}" if v > 0 and _mantissa(v) in labelled else ""))
    ax.tick_params(axis="y", which="minor", labelsize=7.5)


def plot_loss(history, path=None, *, title="Loss", unit="token", label_smoothing=0.0):
    """Training loss per step (and its running mean) with the held-out loss at each evaluation.

    The held-out loss is the plain cross-entropy; with label smoothing eps the training
    loss is the smoothed one, which cannot go below the entropy of the smoothed target
    (the legend says so)."""
    fig = new_figure(figsize=(6.4, 4.0))
    ax = fig.subplots()
    steps = [r["step"] for r in history.train]
    losses = [r["loss"] for r in history.train]
    kind = f"train, label-smoothed (eps = {label_smoothing:g})" if label_smoothing else "train"
    ax.plot(steps, losses, color="tab:blue", alpha=0.3, linewidth=0.8, label=f"{kind}, per step")
    window = max(1, len(losses) // 50)
    smooth = [sum(losses[max(0, i - window + 1):i + 1]) / len(losses[max(0, i - window + 1):i + 1])
              for i in range(len(losses))]
    ax.plot(steps, smooth, color="tab:blue", label=f"{kind}, mean of {window} steps")
    evals = [r for r in history.eval if r.get("loss") is not None]
    if evals:
        ax.plot([r["step"] for r in evals], [r["loss"] for r in evals], "o-", ms=3,
                color="tab:orange", label="held-out (plain cross-entropy)")
    log = bool(losses) and min(losses) > 0
    ax.set(xlabel="training step", title=title,
           ylabel=f"loss (nats per {unit}{', log scale' if log else ''})")
    if log:
        ax.set_yscale("log")
        _readable_log_ticks(ax)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return save_figure(fig, path) if path else fig


def plot_learning_rate(history, path=None, *, title="Learning-rate schedule"):
    """The learning rate of every step (warm-up, then decay)."""
    fig = new_figure(figsize=(6.4, 3.2))
    ax = fig.subplots()
    ax.plot([r["step"] for r in history.train], [r["lr"] for r in history.train])
    ax.set(xlabel="training step", ylabel="learning rate", title=title)
    ax.ticklabel_format(axis="y", style="sci", scilimits=(0, 0))
    ax.grid(alpha=0.3)
    return save_figure(fig, path) if path else fig


def plot_attention(weights, query_labels, key_labels, title, path=None, *,
                   rows="query", columns="key"):
    """One heat-map per head of attention weights (H, Tq, Tk): row = query, column = key.

    Each row sums to 1 (a softmax over the keys); `rows` and `columns` name the axes."""
    weights = to_numpy(weights)
    H, Tq, Tk = weights.shape
    cols = min(H, 4 if Tk <= 12 else 2)
    nrows = (H + cols - 1) // cols
    width, height = 0.24 * Tk + 1.3, 0.24 * Tq + 1.1        # inches per panel, labels included
    fig = new_figure(figsize=(cols * width + 1.2, nrows * height + 0.7), layout="constrained")
    axes = fig.subplots(nrows, cols, squeeze=False)
    for h, ax in enumerate(axes.flat):
        if h >= H:
            ax.set_axis_off()
            continue
        image = ax.imshow(weights[h], vmin=0.0, vmax=1.0, cmap="viridis")
        ax.set_title(f"head {h}", fontsize=9)
        ax.set_xticks(range(Tk), key_labels, rotation=90, fontsize=7)
        ax.set_yticks(range(Tq), query_labels, fontsize=7)
        ax.set_xlabel(columns, fontsize=8)
        if h % cols == 0:
            ax.set_ylabel(rows, fontsize=8)
    fig.colorbar(image, ax=axes, shrink=0.8, label="attention weight (each row sums to 1)")
    fig.suptitle(title)
    return save_figure(fig, path) if path else fig


def plot_positional_encoding(d_model, max_len=64, path=None):
    """The sinusoidal table PE (max_len, D): each row is the vector added at one position."""
    from ..layers.positional import sinusoidal_table
    fig = new_figure(figsize=(6.4, 4.0))
    ax = fig.subplots()
    image = ax.imshow(to_numpy(sinusoidal_table(max_len, d_model)), aspect="auto",
                      cmap="RdBu", vmin=-1, vmax=1)
    ax.set(xlabel="dimension i", ylabel="position", title="Sinusoidal positional encoding")
    fig.colorbar(image, ax=ax, label="PE value")
    return save_figure(fig, path) if path else fig


def _labels(tokenizer, ids):
    symbols = tokenizer.symbols
    return [repr(symbols[i])[1:-1] if symbols[i] == " " else symbols[i] for i in ids]


def attention_maps(model, src_ids, tgt_ids, src_tokenizer, tgt_tokenizer):
    """Attention weights of one example in the last encoder and decoder blocks.

    Runs the model (eval mode) on source `src_ids` and decoder input <bos> +
    `tgt_ids`; returns {name: (weights (H, Tq, Tk), query labels, key labels)}
    for "encoder_self", "decoder_self" and "cross" attention. An output as long
    as the model's max_len (decoding stopped there, without <eos>) is cut to
    max_len - 1 tokens: with <bos> that is the longest input the decoder takes.
    """
    from ..backend import xp
    from ..data.tokenizers import BOS_ID
    tgt_ids = list(tgt_ids)[:model.config.max_len - 1]
    src = xp.asarray([list(src_ids)], dtype=xp.int64)                  # (1, S)
    tgt_in = xp.asarray([[BOS_ID] + list(tgt_ids)], dtype=xp.int64)   # (1, T)
    was_training = model.training
    model.eval()
    model.forward(src, tgt_in)
    model.train(was_training)
    s = _labels(src_tokenizer, list(src_ids))
    t = _labels(tgt_tokenizer, [BOS_ID] + list(tgt_ids))
    enc, dec = model.encoder.layers[-1], model.decoder.layers[-1]
    return {"encoder_self": (enc.self_attn.attn_weights[0], s, s),
            "decoder_self": (dec.self_attn.attn_weights[0], t, t),
            "cross": (dec.cross_attn.attn_weights[0], t, s)}


ATTENTION_TITLES = {"encoder_self": "last encoder block, self-attention",
                    "decoder_self": "last decoder block, masked self-attention",
                    "cross": "last decoder block, cross-attention"}
# (rows, columns) of each map: queries are rows, keys are columns.
ATTENTION_AXES = {"encoder_self": ("source token (query)", "source token (key)"),
                  "decoder_self": ("decoder input (query)", "decoder input (key)"),
                  "cross": ("decoder input (query): <bos> + output so far",
                            "source token (key)")}


def save_figures(folder, history, *, model=None, example=None, src_tokenizer=None,
                 tgt_tokenizer=None, prefix="", name=None, unit="token", label_smoothing=0.0,
                 positional=True):
    """Write every figure of a run into `folder`; returns the list of PNG paths.

    history: a History (loss and lr curves). model + example (src_ids, tgt_ids)
    + tokenizers: attention maps (encoder-decoder models only). model: the
    positional-encoding table at its d_model (unless positional=False). name: the
    run, named in every title; unit: what the loss is per ("token", "character").
    """
    path = lambda figure: os.path.join(folder, f"{prefix}{figure}.png")    # noqa: E731
    named = lambda what: f"{name}: {what}" if name else what[0].upper() + what[1:]   # noqa: E731
    paths = []
    if history.train:
        paths += [plot_loss(history, path("loss"), title=named("loss"), unit=unit,
                            label_smoothing=label_smoothing),
                  plot_learning_rate(history, path("lr"), title=named("learning rate"))]
    if model is not None and example is not None and hasattr(model, "encoder"):
        maps = attention_maps(model, example[0], example[1], src_tokenizer, tgt_tokenizer)
        for kind, (weights, q, k) in maps.items():
            rows, columns = ATTENTION_AXES[kind]
            paths.append(plot_attention(weights, q, k, named(ATTENTION_TITLES[kind]),
                                        path(f"attention_{kind}"), rows=rows, columns=columns))
    if model is not None and positional:
        paths.append(plot_positional_encoding(model.config.d_model, path=path("positional")))
    return paths
