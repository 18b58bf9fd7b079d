"""The key figures of the lessons, as PNG files (`python -m numpy_transformer figures`).

    python -m numpy_transformer figures                         # into figures/, under a minute
    python -m numpy_transformer figures --out /tmp/f --quick    # smaller versions, a few seconds

    positional_encoding.png        the sinusoidal table PE (T, D)                    (lesson 1)
    masks.png                      padding, causal and decoder masks                 (lesson 2)
    gradient_norms_depth.png       gradient norm per block, post-norm vs pre-norm    (lesson 4)
    kv_cache_bytes.png             KV-cache bytes vs length, MHA vs MLA, base model  (lesson 5)
    noam_schedule.png              the paper's warm-up schedule                      (lesson 7)
    attention_cross.png            attention of a briefly trained `reverse` model:   (lesson 9)
    attention_encoder_self.png       one held-out example, last encoder and
    attention_decoder_self.png       decoder blocks, one map per head

Everything is computed here from a seed (no checkpoint or data file is read),
and drawn with plotting.py's functions where it has one, on matplotlib Figure
objects (no display needed).
"""

import os

import numpy as np

from ...training.plotting import save_figure, new_figure, plot_attention, plot_positional_encoding

FIGURES = ("positional_encoding.png", "masks.png", "gradient_norms_depth.png",
           "kv_cache_bytes.png", "noam_schedule.png", "attention_encoder_self.png",
           "attention_decoder_self.png", "attention_cross.png")

# Full-size and --quick settings of the figures that cost time.
FULL = dict(depth=24, depth_seeds=3, schedule_steps=20000, kv_points=64,
            reverse=dict(steps=600, d_model=64, heads=4, d_ff=256, layers=2, batch_size=64))
QUICK = dict(depth=6, depth_seeds=1, schedule_steps=2000, kv_points=8,
             reverse=dict(steps=30, d_model=32, heads=2, d_ff=64, layers=1, batch_size=32))


def write_figures(out="figures", *, quick=False, seed=0, log=print):
    """Draw every figure into folder `out`; returns the list of PNG paths written."""
    s = QUICK if quick else FULL
    path = lambda name: os.path.join(out, f"{name}.png")    # noqa: E731
    paths = [plot_positional_encoding(128, max_len=100, path=path("positional_encoding")),
             plot_masks(path=path("masks"))]
    curves = {nf: np.mean([block_gradient_norms(nf, s["depth"], seed + k)
                           for k in range(s["depth_seeds"])], axis=0) for nf in (False, True)}
    paths.append(plot_gradient_norms(curves, path=path("gradient_norms_depth")))
    paths.append(plot_kv_cache_bytes(points=s["kv_points"], path=path("kv_cache_bytes")))
    paths.append(plot_noam_schedules(steps=s["schedule_steps"], path=path("noam_schedule")))
    if log is not None:
        log(f"training a reverse model for {s['reverse']['steps']} steps for its attention maps")
    model, tok, example = train_reverse(seed=seed, **s["reverse"])
    from ...training.plotting import ATTENTION_AXES, ATTENTION_TITLES, attention_maps
    maps = attention_maps(model, example[0], example[1], tok, tok)
    for name, (weights, queries, keys) in maps.items():
        rows, columns = ATTENTION_AXES[name]
        title = f"reverse, {s['reverse']['steps']} steps: {ATTENTION_TITLES[name]}"
        paths.append(plot_attention(weights, queries, keys, title, rows=rows, columns=columns,
                                    path=path(f"attention_{name}")))
    return paths


# Lesson 2: masks.

def plot_masks(ids=((5, 7, 2, 9, 3, 4), (4, 8, 6, 3, 0, 0)), pad_id=0, path=None):
    """Padding, causal and decoder masks of the second (padded) row of `ids`, as images."""
    from ...backend import to_numpy
    from ...masks import make_causal_mask, make_decoder_mask, make_padding_mask
    ids = np.asarray(ids)                                                   # (B, T)
    B, T = ids.shape
    masks = {"padding mask": make_padding_mask(ids, pad_id),                # (B, 1, 1, T)
             "causal mask": make_causal_mask(T),                            # (1, 1, T, T)
             "decoder mask = padding & causal": make_decoder_mask(ids, pad_id)}   # (B, 1, T, T)
    fig = new_figure(figsize=(11, 3.8))
    axes = fig.subplots(1, 3, gridspec_kw={"wspace": 0.45})
    labels = [str(int(i)) if i != pad_id else "<pad>" for i in ids[-1]]
    for ax, (name, mask) in zip(axes, masks.items()):
        full = np.broadcast_to(to_numpy(mask), (B, 1, T, T))[-1, 0]         # (T, T)
        ax.imshow(full, cmap="Greys_r", vmin=0, vmax=1)
        ax.set_xticks(range(T), labels, rotation=90, fontsize=8)
        ax.set_yticks(range(T), labels, fontsize=8)
        ax.set(title=name, xlabel="key", ylabel="query")
    fig.suptitle(f"tokens {' '.join(labels)}: white = may attend, black = masked")
    return save_figure(fig, path) if path else fig


# Lesson 4: gradients through depth.

def block_gradient_norms(norm_first, num_layers, seed=0, d_model=32, num_heads=4, d_ff=128,
                         batch_size=8, seq_len=16):
    """Norm of each block's parameter gradient (num_layers,) after one backward of a random
    upstream gradient through a freshly initialised encoder (as build_transformer draws it)."""
    from ...backend import to_numpy, xp
    from ...models import BlockConfig, Encoder, xavier_uniform_
    rng = np.random.default_rng(seed)
    block = BlockConfig(d_model=d_model, num_heads=num_heads, d_ff=d_ff, norm_first=norm_first)
    enc = Encoder(block, num_layers, rng=rng)
    xavier_uniform_(enc, rng)
    x = xp.asarray(rng.normal(size=(batch_size, seq_len, d_model)), dtype=xp.float32)
    out = enc.forward(x)                                                    # (B, S, D)
    enc.zero_grad()
    enc.backward(xp.asarray(rng.normal(size=out.shape), dtype=xp.float32))
    return np.array([np.sqrt(sum(float(np.sum(to_numpy(g).astype(np.float64) ** 2))
                                 for _, _, g in block.named_parameters()))
                     for block in enc.layers])


def plot_gradient_norms(curves, path=None):
    """curves: {norm_first: per-block gradient norms}; one line each, log scale."""
    fig = new_figure(figsize=(6.4, 4.0))
    ax = fig.subplots()
    for norm_first, norms in curves.items():
        ax.plot(np.arange(1, len(norms) + 1), norms, "o-", ms=3,
                label="pre-norm" if norm_first else "post-norm (the paper)")
    ax.set(yscale="log", xlabel="block (1 = next to the input)",
           ylabel="|parameter gradient| of the block",
           title=f"Gradients through a {len(norms)}-block encoder at initialisation")
    plain_log_ticks(ax, np.concatenate([np.ravel(n) for n in curves.values()]))
    ax.grid(alpha=0.3)
    ax.legend()
    return save_figure(fig, path) if path else fig


def plain_log_ticks(ax, values):
    """A log y axis read as plain numbers: ticks at 1, 2, 5 x 10^k ('200', '1,000'), none
    written as '2 x 10^2', the axis from the tick at or below the smallest value to the one
    at or above the largest, so that both ends are labelled."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter
    low, high = float(np.min(values)), float(np.max(values))
    decades = range(int(np.floor(np.log10(low))), int(np.ceil(np.log10(high))) + 1)
    nice = [m * 10.0**k for k in decades for m in (1, 2, 5)]
    bottom, top = max(t for t in nice if t <= low), min(t for t in nice if t >= high)
    ticks = [t for t in nice if bottom <= t <= top]
    ax.set_ylim(ticks[0], ticks[-1])
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


# Lesson 5: KV-cache size.

def plot_kv_cache_bytes(batch_size=64, max_len=4096, points=64, path=None):
    """KV-cache GiB vs length (T = S) of the paper's base model, MHA vs MLA (L = D/4), float32."""
    from ...kv_cache import kv_cache_bytes
    from ...models import TransformerConfig
    base = TransformerConfig(src_vocab_size=37000, tgt_vocab_size=37000)
    lengths = np.linspace(max_len / points, max_len, points).astype(int)
    fig = new_figure(figsize=(6.4, 4.0))
    ax = fig.subplots()
    for kind, label in (("mha", f"MHA: K and V, 2D = {2 * base.d_model} numbers"),
                        ("mla", f"MLA: latent c, L = {base.d_model // 4} numbers")):
        ax.plot(lengths, [kv_cache_bytes(base, batch_size, int(t))[kind] / 2**30
                          for t in lengths], label=label + " per position and layer")
    ax.set(xlabel="sequence length T (= source length S)", ylabel="GiB",
           title=f"KV cache of the base model (D = {base.d_model}, "
           f"N = {base.num_decoder_layers}), batch {batch_size}, float32")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save_figure(fig, path) if path else fig


# Lesson 7: the warm-up schedule.

def plot_noam_schedules(settings=((512, 4000), (512, 8000), (256, 4000)), steps=20000,
                        path=None):
    """NoamSchedule(D, warmup) for each (D, warmup) in `settings`, its peak marked."""
    from ...optim import NoamSchedule
    step = np.unique(np.linspace(1, steps, 500).astype(int))
    fig = new_figure(figsize=(6.4, 3.6))
    ax = fig.subplots()
    for d_model, warmup in settings:
        schedule = NoamSchedule(d_model=d_model, warmup_steps=warmup)
        ax.plot(step, [schedule(int(t)) for t in step], label=f"D = {d_model}, warmup = {warmup}")
        if warmup <= steps:
            ax.plot(warmup, schedule.peak_lr, "ko", ms=4)
    ax.set(xlabel="step", ylabel="learning rate",
           title="lr = D^-0.5 min(step^-0.5, step warmup^-1.5)")
    ax.ticklabel_format(axis="y", style="sci", scilimits=(0, 0))
    ax.grid(alpha=0.3)
    ax.legend()
    return save_figure(fig, path) if path else fig


# Lesson 9: attention of a trained model.

def train_reverse(steps, d_model, heads, d_ff, layers, batch_size, seed=0):
    """A Transformer trained briefly on `reverse`; returns (model, tokenizer, example), the
    example (src_ids, tgt_ids) being the longest of 50 held-out pairs."""
    from ...data import encode_pairs, get_task
    from ...models import TransformerConfig, build_transformer
    from ...training import PairStream, TrainConfig, Trainer
    task = get_task("reverse")
    tok = task.tokenizer()
    model = build_transformer(TransformerConfig(
        tok.vocab_size, tok.vocab_size, d_model=d_model, num_heads=heads, d_ff=d_ff,
        num_encoder_layers=layers, num_decoder_layers=layers, dropout=0.0, max_len=64,
        norm_first=True, seed=seed))
    stream = PairStream.from_task(task, tok, batch_size, seed)
    config = TrainConfig(steps=steps, lr=3e-3, warmup=max(1, min(100, steps // 5)),
                         eval_every=0, checkpoint_every=0, progress=False)
    Trainer(model, stream, config, log=None).fit()
    held_out = encode_pairs(task.sample(np.random.default_rng([seed, 1]), 50, split="test"), tok)
    return model, tok, max(held_out, key=lambda pair: len(pair[0]))
