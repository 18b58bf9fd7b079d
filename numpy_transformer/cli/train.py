"""`python -m numpy_transformer train`: an encoder-decoder on a built-in task or a corpus.

    python -m numpy_transformer train --task reverse          # about a minute, ~100% exact match
    python -m numpy_transformer train --tsv fra.tsv --max-len 14 --steps 8000
    python -m numpy_transformer train --resume runs/reverse/last.npz   # continue any run
    python -m numpy_transformer train --src train.de --tgt train.en --bpe 8000 --joint-vocab \
        --share-embeddings                  # subwords, one vocabulary, one embedding matrix
"""

import argparse
import shlex
from functools import partial

from ..checkpoint import load_run
from ..data import TASKS, DataConfig
from ..data.corpus import seq2seq_data
from ..training.metrics import evaluate_seq2seq, format_metrics, sequence_accuracy
from ..models import TransformerConfig, build_transformer
from ..training import PairStream
from . import run
from .configs import config_from, metadata
from .data_files import as_typed
from .options import (add_common, add_model_options, add_training_options, describe,
                      examples_int, MAX_EXAMPLES, positive_int, raw_formatter)

SEQ2SEQ = dict(d_model=64, num_heads=4, d_ff=256, num_layers=2, dropout=0.0, norm_first=True,
               attention="mha", max_len=64, steps=3000, batch_size=64, lr=3e-3, warmup=200,
               schedule="cosine", label_smoothing=0.1, clip_norm=1.0, weight_decay=0.0, seed=0,
               eval_every=500, checkpoint_every=500, log_every=100, eval_examples=1000,
               min_freq=1)
CORPUS = dict(d_model=128, d_ff=512, dropout=0.1, lr=1e-3, warmup=400, steps=4000,
              max_len=256, eval_examples=500, eval_every=1000, checkpoint_every=1000)
QUICK = dict(steps=40, warmup=4, eval_every=20, checkpoint_every=20, log_every=10, d_model=32,
             num_heads=2, d_ff=64, num_layers=1, eval_examples=40)
SETTINGS = ("task", "src", "tgt", "tsv", "val_src", "val_tgt", "test_src", "test_tgt",
            "min_freq", "lowercase", "bleu_tokenize", "eval_examples", "d_model", "num_heads", "d_ff",
            "num_layers", "num_encoder_layers", "num_decoder_layers", "max_len", "dropout",
            "attention_dropout", "activation_dropout", "norm_first", "attention", "latent_dim",
            "tie_embeddings", "share_embeddings",
            "bpe", "joint_vocab", "steps", "batch_size", "batch_tokens", "keep_last",
            "lr", "warmup", "schedule", "label_smoothing", "clip_norm", "weight_decay", "seed",
            "eval_every", "checkpoint_every", "log_every", "out", "figures")


def add_parser(commands):
    tasks = "\n".join(f"  {name:9s} {describe(spec.defaults)}" for name, spec in TASKS.items())
    p = commands.add_parser(
        "train", help="train an encoder-decoder Transformer on a task or a parallel corpus",
        description="Train an encoder-decoder Transformer, print held-out accuracy and example "
        "predictions, write checkpoints, tokenizers, history.json, config.json and figures "
        "into the run folder.",
        epilog=f"defaults: {describe(SEQ2SEQ)}\nper task:\n{tasks}\ncorpus: {describe(CORPUS)}"
        f"\n--quick: {describe(QUICK)}", formatter_class=raw_formatter())
    g = p.add_argument_group("data (a task, or a corpus)")
    g.add_argument("--task", choices=tuple(TASKS), help="a built-in task (default reverse)")
    g.add_argument("--src", help="source side of a parallel corpus, one sentence per line")
    g.add_argument("--tgt", help="target side, line-aligned with --src")
    g.add_argument("--tsv", help="a corpus as 'source<TAB>target' lines")
    for split in ("val", "test"):
        g.add_argument(f"--{split}-src", help=f"{split} source file")
        g.add_argument(f"--{split}-tgt", help=f"{split} target file")
    g.add_argument("--min-freq", type=positive_int, help="keep words seen N+ times (default 1; "
                   "with --bpe: merge pairs seen N+ times)")
    g.add_argument("--lowercase", action="store_true", default=None, help="lower-case corpora")
    g.add_argument("--bleu-tokenize", choices=("13a", "none"),
                   help="how BLEU splits output and references: 13a (sacreBLEU's default, "
                   "for references as written) or none (at whitespace, for tokenised "
                   "references such as Multi30k's .tok files); default 13a")
    g.add_argument("--eval-examples", type=examples_int, help="held-out examples evaluated "
                   f"(at most {MAX_EXAMPLES:,})")
    g = p.add_argument_group("vocabulary and weight sharing (corpora)")
    g.add_argument("--bpe", type=positive_int, metavar="N", help="byte-pair encoding with N "
                   "merges learned on the training side, instead of whole words")
    g.add_argument("--joint-vocab", action="store_true", default=None, help="one vocabulary "
                   "(words, or BPE) fitted on source and target together, used for both")
    g.add_argument("--share-embeddings", action=argparse.BooleanOptionalAction, default=None,
                   help="one matrix for the source embedding, the target embedding and the "
                   "output projection (needs --joint-vocab or a --task; implies "
                   "--tie-embeddings)")
    add_model_options(p, encoder_decoder=True)
    add_training_options(p, "runs/<task> for a task (runs/reverse without --task), "
                         "runs/translation for a corpus", token_batches=True,
                         keep_last=True)
    add_common(p)
    p.set_defaults(run=run_train)


def _settings(args):
    corpus = bool(args.src or args.tgt or args.tsv)
    specific = CORPUS if corpus else TASKS[args.task or "reverse"].defaults
    s, ckpt = run.resolve_settings(args, "seq2seq", SETTINGS, [SEQ2SEQ, specific], QUICK)
    if ckpt is None:
        if not corpus:
            s["task"] = s["task"] or "reverse"
        for side in ("num_encoder_layers", "num_decoder_layers"):
            s[side] = s[side] or s["num_layers"]
        if s["share_embeddings"] and s["tie_embeddings"] is None:
            s["tie_embeddings"] = True         # sharing all three includes the output
        s["out"] = s["out"] or f"runs/{s['task'] or 'translation'}"
    return s, ckpt


def run_train(args):
    run.join_ranks()                            # under mpiexec: data-parallel, rank 0 prints
    s, ckpt = _settings(args)
    data_config = config_from(DataConfig, s)
    data = seq2seq_data(data_config, _saved_tokenizers(ckpt),
                        share_embeddings=bool(s["share_embeddings"]))
    for note in data.notes:                     # blank sides, a TSV's extra columns
        print(f"note: {as_typed(note)}")
    for split, (dropped, total) in data.dropped.items():
        print(f"note: dropped {dropped} of {total} {split} pairs longer than --max-len "
              f"{s['max_len']} tokens")
    if ckpt is not None:
        model = ckpt.model
    else:
        config = config_from(TransformerConfig, s, src_vocab_size=data.src_tok.vocab_size,
                             tgt_vocab_size=data.tgt_tok.vocab_size)
        tokens = s.get("batch_tokens")             # at most that many tokens per batch
        run.check_memory(config, {**s, "batch_size": tokens} if tokens else s,
                         1 if tokens else s["max_len"])
        model = build_transformer(config)
    stream = _stream(data, s)
    # Held-out loss is the plain cross-entropy (no smoothing): exp(loss) is the perplexity.
    evaluate = partial(evaluate_seq2seq, pairs=data.val, tgt_tokenizer=data.tgt_tok,
                       bleu=data.bleu, max_len=data.decode_len, references=data.val_refs,
                       lowercase=bool(s.get("lowercase")),
                       bleu_tokenize=s.get("bleu_tokenize") or "13a")
    what = f"a Transformer on {data.name} (held-out set: {len(data.val)} examples)"
    trainer, result, status = run.train(
        args, s, model, stream, ckpt, what, evaluate=evaluate,
        best_metric="bleu" if data.bleu else "exact_match",
        tokenizers={"src": data.src_tok, "tgt": data.tgt_tok},
        metadata=metadata("seq2seq", data_config, s))
    if status is not None:
        return status
    results = report(result, data, model, s)
    if args.quick:                             # its WRONG rows are expected: say so
        print(f"note: --quick is a smoke test ({s['steps']} steps of a small model): it checks "
              f"that everything runs and is not expected to translate correctly; drop "
              f"--quick for a real run")
    run.write_results(s, trainer, result, **results)
    figures = run.draw_figures(args, s, trainer, example=_example(trainer, data),
                               src_tokenizer=data.src_tok, tgt_tokenizer=data.tgt_tok)
    text = _pasteable_source(data)
    run.print_ending(s, figures, f"python -m numpy_transformer translate --checkpoint "
                     f"{shlex.quote(s['out'] + '/best.npz')} {shlex.quote(text)}", trainer)
    return 0


def _stream(data, s):
    """The training batches: fresh examples of a task every epoch, or the corpus's pairs;
    with --batch-tokens, says how full its batches are."""
    tokens = s.get("batch_tokens")
    if data.task is not None:
        stream = PairStream.from_task(data.task, data.src_tok, s["batch_size"], s["seed"],
                                      batch_tokens=tokens)
    else:
        stream = PairStream(s["batch_size"], s["seed"], pairs=data.train, batch_tokens=tokens)
    if tokens:
        print(stream.summary())
    return stream


def _saved_tokenizers(ckpt):
    """A resumed run's (src, tgt) tokenizers, so that its vocabulary stays the model's (None
    for a fresh run: they are fitted on the training data)."""
    if ckpt is None:
        return None
    _, toks, _ = load_run(ckpt.path, "seq2seq", option="--resume", ckpt=ckpt)
    return toks["src"], toks["tgt"]


def report(result, data, model, s):
    """Print the held-out and test scores; returns them for results.json."""
    m = result.metrics
    print(f"\n{run.steps_line(result)}. Held-out ({len(data.val)} examples never "
          f"seen in training): exact match {100 * m['exact_match']:.1f}%, token accuracy "
          f"{100 * m['token_accuracy']:.1f}%" + (f", BLEU {m['bleu']:.2f}" if data.bleu else ""))
    show_examples(data, m["predictions"])
    if data.test:
        scores = evaluate_seq2seq(model, data.test, tgt_tokenizer=data.tgt_tok, bleu=True,
                                  references=data.test_refs, lowercase=bool(s.get("lowercase")),
                                  bleu_tokenize=s.get("bleu_tokenize") or "13a")
        scores.pop("predictions")
        print(f"test set ({len(data.test)} pairs): {format_metrics(scores)}")
    held_out = {k: v for k, v in m.items() if k != "predictions"}
    return {"held_out": held_out, "held_out_examples": len(data.val),
            **({"test": scores, "test_examples": len(data.test)} if data.test else {})}


def show_examples(data, predictions, count=5):
    """A few held-out examples: short ones as a table, long ones (sentences) as blocks."""
    rows = [(data.src_tok.decode(s), data.tgt_tok.decode(t), data.tgt_tok.decode(p),
             sequence_accuracy([p], [t]) == 1.0)      # an <unk> in the target is never right
            for (s, t), p in zip(data.val[:count], predictions[:count])]
    if not rows:
        return
    longest = max(len(text) for row in rows for text in row[:3])
    if longest <= 30:
        width = longest + 3
        print(f"  {'source':{width}s}{'target':{width}s}prediction")
        for src, tgt, pred, right in rows:
            print(f"  {src:{width}s}{tgt:{width}s}{pred:{width}s}{'ok' if right else 'WRONG'}")
        return
    for src, tgt, pred, right in rows:
        print(f"  source:     {src}\n  target:     {tgt}\n"
              f"  prediction: {pred}   ({'exact' if right else 'differs'})\n")


def _pasteable_source(data, tries=200):
    """A held-out source for the closing `next:` command that runs clean as printed: the
    first of `tries` whose symbols are all in the vocabulary (an <unk> pasted back is warned
    of), else a training source, else the first held-out one."""
    tok = data.src_tok
    sources = [tok.decode(src) for src, _ in (data.val or [])[:tries]]
    sources += [tok.decode(src) for src, _ in (data.train or [])[:tries]]
    clean = (text for text in sources if text.strip() and not tok.unknown_symbols([text]))
    return next(clean, sources[0] if sources else "hello")


def _example(trainer, data):
    """The longest of the first 50 held-out sources, with the model's prediction."""
    if not data.val:
        return None
    preds = (trainer.last_eval or {}).get("predictions") or []
    longest = max(range(min(50, len(data.val))), key=lambda i: len(data.val[i][0]))
    return data.val[longest][0], preds[longest] if preds else data.val[longest][1]
