"""`train-lm` and `generate`: a character-level GPT on a text file.

    python -m numpy_transformer train-lm --text tinyshakespeare.txt
    python -m numpy_transformer generate --checkpoint runs/lm/best.npz --prompt "ROMEO:"

The first 90% of the characters train the model, the last 10% measure it:
the mean loss in nats per character and the perplexity exp(loss).
"""

import os
import time
from functools import partial

import numpy as np

from .checks import message
from .cli import (add_common, add_model_options, add_training_options, nonnegative_int,
                  positive_float, positive_int)
from .cli_train import RESUMABLE, _fmt, _raw, resolve_settings, train_config
from .errors import InputError

LM = dict(d_model=128, heads=4, d_ff=512, layers=4, dropout=0.1, norm_first=True,
          attention="mha", block_size=64, steps=2000, batch_size=32, lr=2e-3, warmup=100,
          schedule="cosine", label_smoothing=0.0, clip=1.0, weight_decay=0.0, seed=0,
          eval_every=250, checkpoint_every=250, eval_batches=20)
LM_QUICK = dict(steps=30, warmup=5, eval_every=15, checkpoint_every=15, d_model=32, heads=2,
                d_ff=64, layers=1, block_size=32, batch_size=8, eval_batches=4)
LM_SETTINGS = ("text", "block_size", "eval_batches", "d_model", "heads", "d_ff", "layers",
               "dropout", "norm_first", "attention", "steps", "batch_size", "lr", "warmup",
               "schedule", "label_smoothing", "clip", "weight_decay", "seed", "eval_every",
               "checkpoint_every", "out", "figures")
assert set(RESUMABLE) <= set(LM_SETTINGS)


def add_parsers(commands):
    p = commands.add_parser(
        "train-lm", help="train a character-level GPT language model on a text file",
        description="Train a decoder-only Transformer (GPT) to predict the next character; "
        "report held-out loss (nats per character) and perplexity, and print a sample.",
        epilog=f"defaults: {_fmt(LM)}\n--quick: {_fmt(LM_QUICK)}", formatter_class=_raw())
    p.add_argument("--text", required=True, help="a UTF-8 text file (90%% train, 10%% held out)")
    p.add_argument("--block-size", type=positive_int, help="context length T in characters")
    p.add_argument("--eval-batches", type=positive_int,
                   help="held-out batches per periodic evaluation (the final one uses all)")
    add_model_options(p)
    add_training_options(p)
    add_common(p)
    p.set_defaults(run=run_train_lm)

    p = commands.add_parser("generate", help="continue a prompt with a trained GPT",
                            description="Sample text from a checkpoint written by train-lm.")
    p.add_argument("--checkpoint", required=True, help="a .npz written by train-lm")
    p.add_argument("--prompt", default="\n", help="text to continue (default: a newline)")
    p.add_argument("--max-new-tokens", type=positive_int, default=300,
                   help="characters to generate (default 300)")
    p.add_argument("--temperature", type=positive_float, default=0.8,
                   help="below 1: safer, above 1: wilder (default 0.8)")
    p.add_argument("--top-k", type=positive_int, help="draw only from the K likeliest")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="sampling seed (default 0)")
    add_common(p)
    p.set_defaults(run=run_generate)


def lm_data(s):
    from .data import CharTokenizer, load_text, split_text
    from .training_data import TextStream
    text = load_text(s["text"])
    train_text, val_text = split_text(text, 0.1)
    tok = CharTokenizer.from_texts([text])
    train_ids, val_ids = tok.encode(train_text), tok.encode(val_text)
    if len(val_ids) < s["block_size"] + 1:
        raise InputError(message(s["text"], f"a text whose last 10% holds at least "
                                 f"{s['block_size'] + 1} characters (--block-size + 1)",
                                 f"{len(text)} characters in all"))
    return tok, TextStream(train_ids, s["batch_size"], s["block_size"], s["seed"]), val_ids


def _model(s, tok, resume):
    from .checkpoint import load_checkpoint
    from .models.gpt import GPT, GPTConfig
    if resume:
        return load_checkpoint(resume).model
    return GPT(GPTConfig(vocab_size=tok.vocab_size, d_model=s["d_model"], num_heads=s["heads"],
                         d_ff=s["d_ff"], num_layers=s["layers"], dropout=s["dropout"],
                         max_len=s["block_size"], norm_first=s["norm_first"],
                         attention=s["attention"], seed=s["seed"]))


def run_train_lm(args):
    from .metrics import evaluate_lm
    from .training import Trainer
    s, resume = resolve_settings(args, LM, {}, LM_SETTINGS, LM_QUICK)
    start = time.perf_counter()
    tok, stream, val_ids = lm_data(s)
    model = _model(s, tok, resume)
    evaluate = partial(evaluate_lm, ids=val_ids, block_size=s["block_size"],
                       batch_size=s["batch_size"], max_batches=s["eval_batches"])
    trainer = Trainer(model, stream, train_config(s, args), evaluate=evaluate,
                      best_metric="loss", out=s.get("out") or os.path.join("runs", "lm"),
                      tokenizers={"text": tok}, metadata={"kind": "lm", "settings": s})
    if resume:
        trainer.resume(resume)
    print(f"training a GPT ({model.num_parameters():,} parameters) on {s['text']} "
          f"({len(stream.ids):,} training, {len(val_ids):,} held-out characters) for "
          f"{s['steps']} steps")
    result = trainer.fit()
    if result.interrupted:
        return 130
    final = evaluate_lm(model, val_ids, block_size=s["block_size"], batch_size=s["batch_size"])
    print(f"\n{result.step} steps in {time.perf_counter() - start:.0f} s. Held-out loss "
          f"{final['loss']:.4f} nats per character, perplexity {final['perplexity']:.2f}")
    print("sample:\n" + generate_text(model, tok, "\n", 200, temperature=0.8, seed=s["seed"]))
    if not args.no_figures:
        _figures(s, trainer)
    return 0


def _figures(s, trainer):
    from .plotting import save_figures
    folder = s.get("figures") or (os.path.join(s["out"], "figures") if s.get("out")
                                   else "figures")
    try:
        paths = save_figures(folder, trainer.history, model=trainer.model, prefix="lm_")
    except ImportError as err:
        print(f"figures skipped: {err}")
        return
    print(f"figures: {', '.join(paths)}")


def generate_text(model, tok, prompt, max_new_tokens, *, temperature=1.0, top_k=None, seed=0):
    """The prompt followed by max_new_tokens sampled characters.

    The model sees at most max_len characters, so a long generation slides the
    window: it keeps the last max_len // 2 characters as the context of the next chunk.
    """
    from .backend import xp
    from .decoding import sample
    ids = tok.encode(prompt)
    if not ids:
        raise InputError(message("--prompt", "at least one character", repr(prompt)))
    rng, max_len, out = np.random.default_rng(seed), model.config.max_len, list(ids)
    remaining = max_new_tokens
    while remaining > 0:
        context = out[-(max_len // 2 or 1):] if len(out) > max_len // 2 else out
        n = min(remaining, max_len - len(context) + 1)
        seq = sample(model, xp.asarray([context], dtype=xp.int64), n, temperature=temperature,
                     top_k=top_k, rng=rng)                                  # (1, T0 + n)
        out += [int(t) for t in seq[0, len(context):]]
        remaining -= n
    return tok.decode(out)


def run_generate(args):
    from .cli_use import load_run
    model, toks, meta = load_run(args.checkpoint, kind="lm")
    print(generate_text(model, toks["text"], args.prompt, args.max_new_tokens,
                        temperature=args.temperature, top_k=args.top_k, seed=args.seed))
    return 0
