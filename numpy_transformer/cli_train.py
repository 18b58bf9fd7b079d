"""`python -m numpy_transformer train`: an encoder-decoder on a built-in task or a corpus.

    python -m numpy_transformer train --task reverse          # about a minute, ~99.9% exact match
    python -m numpy_transformer train --tsv fra.tsv --max-len 12 --steps 8000

Settings come from, in increasing priority: SEQ2SEQ (or CORPUS) defaults, the
task's entry in TASKS, --quick, then the options given. `--resume CKPT`
reuses the settings saved in the checkpoint (only RESUMABLE ones may change).
"""

import os
import time
from dataclasses import dataclass
from functools import partial

import numpy as np

from .checks import message
from .cli import add_common, add_model_options, add_training_options, positive_int
from .errors import InputError

SEQ2SEQ = dict(d_model=64, heads=4, d_ff=256, layers=2, dropout=0.0, norm_first=True,
               attention="mha", steps=3000, batch_size=64, lr=3e-3, warmup=200,
               schedule="cosine", label_smoothing=0.1, clip=1.0, weight_decay=0.0, seed=0,
               eval_every=500, checkpoint_every=500, eval_examples=1000)
TASKS = {"copy": dict(steps=1500), "reverse": dict(steps=3000), "sort": dict(steps=2000),
         "addition": dict(steps=6000), "dates": dict(steps=3000, eval_examples=1000)}
CORPUS = dict(d_model=128, d_ff=512, dropout=0.1, lr=1e-3, warmup=400, steps=4000,
              eval_examples=500, eval_every=1000, checkpoint_every=1000)
QUICK = dict(steps=40, warmup=10, eval_every=20, checkpoint_every=20, d_model=32, heads=2,
             d_ff=64, layers=1, eval_examples=40)
SETTINGS = ("task", "src", "tgt", "tsv", "val_src", "val_tgt", "test_src", "test_tgt",
            "max_len", "min_freq", "lowercase", "eval_examples", "d_model", "heads", "d_ff",
            "layers", "dropout", "norm_first", "attention", "steps", "batch_size", "lr",
            "warmup", "schedule", "label_smoothing", "clip", "weight_decay", "seed",
            "eval_every", "checkpoint_every", "out", "figures")
RESUMABLE = ("steps", "out", "figures", "eval_every", "checkpoint_every")


def add_parser(commands):
    from .data import TASKS as task_names
    tasks = "\n".join(f"  {name:9s} {', '.join(f'{k}={v}' for k, v in TASKS[name].items())}"
                      for name in TASKS)
    p = commands.add_parser(
        "train", help="train an encoder-decoder Transformer on a task or a parallel corpus",
        description="Train an encoder-decoder Transformer, print held-out accuracy and example "
        "predictions, write a checkpoint, tokenizer(s), history.json and figures.",
        epilog=f"defaults: {_fmt(SEQ2SEQ)}\nper task:\n{tasks}\ncorpus: {_fmt(CORPUS)}\n"
        f"--quick: {_fmt(QUICK)}", formatter_class=_raw())
    g = p.add_argument_group("data (a task, or a corpus)")
    g.add_argument("--task", choices=task_names, help="a built-in task (default reverse)")
    g.add_argument("--src", help="source side of a parallel corpus, one sentence per line")
    g.add_argument("--tgt", help="target side, line-aligned with --src")
    g.add_argument("--tsv", help="a corpus as 'source<TAB>target' lines")
    for split in ("val", "test"):
        g.add_argument(f"--{split}-src", help=f"{split} source file")
        g.add_argument(f"--{split}-tgt", help=f"{split} target file")
    g.add_argument("--max-len", type=positive_int, help="skip pairs longer than N words")
    g.add_argument("--min-freq", type=positive_int, help="keep words seen N+ times (default 1)")
    g.add_argument("--lowercase", action="store_true", default=None, help="lower-case corpora")
    g.add_argument("--eval-examples", type=positive_int, help="held-out examples evaluated")
    add_model_options(p)
    add_training_options(p)
    add_common(p)
    p.set_defaults(run=run_train)


def _fmt(settings):
    return ", ".join(f"{k}={v}" for k, v in settings.items())


def _raw():
    import argparse
    return argparse.RawDescriptionHelpFormatter


def resolve_settings(args, defaults, specific, names=SETTINGS, quick=QUICK):
    """(settings, checkpoint path or None): defaults < specific < --quick < explicit options."""
    explicit = {k: getattr(args, k) for k in names if getattr(args, k, None) is not None}
    if args.resume:
        from .checkpoint import load_checkpoint
        saved = load_checkpoint(args.resume).metadata.get("settings")
        if saved is None:
            raise InputError(message("--resume", "a checkpoint written by this command",
                                     f"{args.resume} (it has no saved settings)"))
        ignored = sorted(k for k in explicit if k not in RESUMABLE and explicit[k] != saved.get(k))
        if ignored:
            print(f"note: resuming with the checkpoint's settings; ignoring "
                  f"{', '.join('--' + k.replace('_', '-') for k in ignored)}")
        kept = {k: v for k, v in explicit.items() if k in RESUMABLE}
        folder = os.path.dirname(os.path.abspath(args.resume))
        return {**dict.fromkeys(names), **saved, "out": folder, **kept}, args.resume
    quick = quick if getattr(args, "quick", False) else {}
    unset = dict.fromkeys(names)
    return {**unset, **defaults, **specific, **quick, **explicit}, None


@dataclass
class Data:
    name: str            # "reverse", ..., or "translation"
    stream: object       # a PairStream
    src_tok: object
    tgt_tok: object
    val: list            # encoded held-out pairs, evaluated during training
    test: list           # encoded test pairs (corpus only), evaluated at the end
    max_len: int         # decoding limit (None: source length + 10)
    bleu: bool           # report BLEU (corpora)


def task_data(s):
    from .data import encode_pairs, get_task
    from .training_data import PairStream
    task = get_task(s["task"])
    tok = task.tokenizer()
    rng = np.random.default_rng([s["seed"], 1])
    val = encode_pairs(task.sample(rng, s["eval_examples"], split="test"), tok)
    stream = PairStream.from_task(task, tok, s["batch_size"], s["seed"])
    return Data(task.name, stream, tok, tok, val, None, task.max_tgt_len + 2, False)


def _read_pairs(src, tgt, tsv, max_len, what):
    from .data import load_parallel, load_tsv
    if tsv:
        pairs = load_tsv(tsv, max_len=max_len)
    elif src and tgt:
        pairs = load_parallel(src, tgt, max_len=max_len)
    else:
        return None
    if not pairs:
        raise InputError(f"{what}: no sentence pairs left in {tsv or src} (every pair was "
                         f"blank{' or longer than --max-len' if max_len else ''})")
    return pairs


def corpus_data(s):
    from .data import WordTokenizer, encode_pairs
    from .training_data import PairStream
    train = _read_pairs(s["src"], s["tgt"], s["tsv"], s["max_len"], "training data")
    val = _read_pairs(s["val_src"], s["val_tgt"], None, None, "validation data")
    test = _read_pairs(s["test_src"], s["test_tgt"], None, None, "test data")
    if val is None:                  # hold out the end of the training corpus
        n_val = min(len(train) // 10, s["eval_examples"])
        if n_val == 0:
            raise InputError(message("training data", "at least 10 sentence pairs (to hold "
                                     "some out), or --val-src/--val-tgt", len(train)))
        train, val = train[:-n_val], train[-n_val:]
    opts = dict(lowercase=bool(s["lowercase"]), min_freq=s["min_freq"] or 1)
    src_tok = WordTokenizer.from_texts([a for a, _ in train], **opts)
    tgt_tok = WordTokenizer.from_texts([b for _, b in train], **opts)
    enc = partial(encode_pairs, src_tokenizer=src_tok, tgt_tokenizer=tgt_tok)
    stream = PairStream(s["batch_size"], s["seed"], pairs=enc(train))
    return Data("translation", stream, src_tok, tgt_tok, enc(val[:s["eval_examples"]]),
                enc(test) if test else None, None, True)


def build_data(s):
    corpus = [k for k in ("src", "tgt", "tsv") if s.get(k)]
    if s.get("task") and corpus:
        raise InputError("give either --task or a corpus (--src/--tgt or --tsv), not both")
    if corpus:
        if s.get("tsv") and (s.get("src") or s.get("tgt")):
            raise InputError("give either --tsv or --src/--tgt, not both")
        if not s.get("tsv") and not (s.get("src") and s.get("tgt")):
            raise InputError("a parallel corpus needs both --src and --tgt")
        return corpus_data(s)
    return task_data(s)


def train_config(s, args):
    from .training import TrainConfig
    return TrainConfig(steps=s["steps"], lr=s["lr"], warmup=s["warmup"], schedule=s["schedule"],
                       weight_decay=s["weight_decay"], label_smoothing=s["label_smoothing"],
                       clip_norm=s["clip"], eval_every=s["eval_every"],
                       checkpoint_every=s["checkpoint_every"],
                       progress=False if args.no_progress else None)


def _model(s, data, resume):
    from .checkpoint import load_checkpoint
    from .models import TransformerConfig, build_transformer
    if resume:
        return load_checkpoint(resume).model
    return build_transformer(TransformerConfig(
        src_vocab_size=data.src_tok.vocab_size, tgt_vocab_size=data.tgt_tok.vocab_size,
        d_model=s["d_model"], num_heads=s["heads"], d_ff=s["d_ff"], num_encoder_layers=s["layers"],
        num_decoder_layers=s["layers"], dropout=s["dropout"], max_len=512,
        norm_first=s["norm_first"], attention=s["attention"], seed=s["seed"]))


def run_train(args):
    from .metrics import evaluate_seq2seq
    from .training import Trainer
    corpus = args.src or args.tgt or args.tsv
    specific = CORPUS if corpus else TASKS[args.task or "reverse"]
    s, resume = resolve_settings(args, SEQ2SEQ, specific)
    if not corpus and not s.get("task"):
        s["task"] = "reverse"
    start = time.perf_counter()
    data = build_data(s)
    model = _model(s, data, resume)
    out = s.get("out") or os.path.join("runs", data.name)
    # Held-out loss is the plain cross-entropy (no smoothing): exp(loss) is the perplexity.
    evaluate = partial(evaluate_seq2seq, pairs=data.val, tgt_tokenizer=data.tgt_tok,
                       bleu=data.bleu, max_len=data.max_len)
    trainer = Trainer(model, data.stream, train_config(s, args), evaluate=evaluate,
                      best_metric="bleu" if data.bleu else "exact_match", out=out,
                      tokenizers={"src": data.src_tok, "tgt": data.tgt_tok},
                      metadata={"kind": "seq2seq", "task": s.get("task"), "settings": s})
    if resume:
        trainer.resume(resume)
    resuming = f" (resuming at step {trainer.step})" if resume else ""
    print(f"training a Transformer ({model.num_parameters():,} parameters) on "
          f"{data.name} for {s['steps']} steps{resuming}; held-out set: {len(data.val)} examples")
    result = trainer.fit()
    if result.interrupted:
        return 130
    report_seq2seq(result, data, s, time.perf_counter() - start, model)
    figures(args, s, trainer, data)
    return 0


def report_seq2seq(result, data, s, seconds, model):
    from .metrics import evaluate_seq2seq, format_metrics
    m = result.metrics
    print(f"\n{result.step} steps in {seconds:.0f} s. Held-out ({len(data.val)} examples never "
          f"seen in training): exact match {100 * m['exact_match']:.1f}%, token accuracy "
          f"{100 * m['token_accuracy']:.1f}%" + (f", BLEU {m['bleu']:.2f}" if data.bleu else ""))
    show_examples(data, m["predictions"])
    if data.test:
        scores = evaluate_seq2seq(model, data.test, tgt_tokenizer=data.tgt_tok, bleu=True)
        scores.pop("predictions")
        print(f"test set ({len(data.test)} pairs): {format_metrics(scores)}")
    if result.checkpoint:
        folder = os.path.dirname(result.checkpoint)
        print(f"saved: {folder}/last.npz, best.npz, src_tokenizer.json, tgt_tokenizer.json, "
              f"history.json\ntry:   python -m numpy_transformer translate --checkpoint "
              f"{folder}/best.npz \"{data.src_tok.decode(data.val[0][0])}\"")


def show_examples(data, predictions, count=5):
    """A few held-out examples: short ones as a table, long ones (sentences) as blocks."""
    rows = [(data.src_tok.decode(s), data.tgt_tok.decode(t), data.tgt_tok.decode(p))
            for (s, t), p in zip(data.val[:count], predictions[:count])]
    if not rows:
        return
    longest = max(len(text) for row in rows for text in row)
    if longest <= 30:
        width = longest + 3
        print(f"  {'source':{width}s}{'target':{width}s}prediction")
        for src, tgt, pred in rows:
            print(f"  {src:{width}s}{tgt:{width}s}{pred:{width}s}"
                  f"{'ok' if pred == tgt else 'WRONG'}")
        return
    for src, tgt, pred in rows:
        print(f"  source:     {src}\n  target:     {tgt}\n"
              f"  prediction: {pred}   ({'exact' if pred == tgt else 'differs'})\n")


def figures(args, s, trainer, data):
    """Draw the run's figures (skipped, with a note, when matplotlib is missing)."""
    from .plotting import save_figures
    if args.no_figures:
        return
    folder = s.get("figures") or (os.path.join(s["out"], "figures") if s.get("out")
                                   else "figures")
    preds = (trainer.last_eval or {}).get("predictions") or []
    longest = max(range(min(50, len(data.val))), key=lambda i: len(data.val[i][0]))
    example = (data.val[longest][0], preds[longest] if preds else data.val[longest][1])
    try:
        paths = save_figures(folder, trainer.history, model=trainer.model, example=example,
                             src_tokenizer=data.src_tok, tgt_tokenizer=data.tgt_tok,
                             prefix=f"{data.name}_")
    except ImportError as err:
        print(f"figures skipped: {err}")
        return
    print(f"figures: {', '.join(paths)}")
