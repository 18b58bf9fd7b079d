"""`evaluate` and `translate`: using a checkpoint written by `train` (or `train-lm`).

    python -m numpy_transformer evaluate --checkpoint runs/reverse/best.npz   # the run's split
    python -m numpy_transformer evaluate --checkpoint runs/reverse/best.npz --fresh 1000
    python -m numpy_transformer translate --checkpoint runs/reverse/best.npz "hello" "world"
"""

import numpy as np

from ..checkpoint import load_run
from ..validation import message
from ..data import TASKS, UNK_ID, DataConfig, encode_pairs, get_task, load_text
from ..data.corpus import fits, read_pairs
from ..errors import InputError
from ..training.metrics import evaluate_lm, evaluate_seq2seq, format_metrics
from .configs import data_config
from .held_out import run_seq2seq_split, run_text_split
from .options import (MAX_EXAMPLES, add_common, examples_int, nonnegative_float,
                      nonnegative_int, positive_int)
from .outputs import check_outputs, overwrite_option
from .translate_input import add_input_options, run_translate


def add_parsers(commands):
    p = commands.add_parser("evaluate", help="score a checkpoint on held-out data",
                            description="Exact match and token accuracy (tasks), BLEU "
                            "(corpora) or loss and perplexity (language models). Without data "
                            "options: the run's own held-out split, as training scored it (a "
                            "task's held-out examples, a corpus's test files or held-out pairs, "
                            "a text's last 10%%).")
    p.add_argument("--checkpoint", required=True, help="a .npz written by train or train-lm")
    p.add_argument("--task", choices=tuple(TASKS),
                   help="task to test on, --fresh examples of it (default: the trained one)")
    p.add_argument("--src", help="source sentences, one per line")
    p.add_argument("--tgt", help="reference translations, line-aligned with --src")
    p.add_argument("--tsv", help="'source<TAB>reference' lines")
    p.add_argument("--text", help="a text file (language models: the whole file is scored)")
    p.add_argument("--fresh", "--examples", type=examples_int, metavar="N",
                   help=f"held-out task examples generated anew, at most {MAX_EXAMPLES:,} "
                   f"(the task's test split, seeded by --seed), instead of the run's own "
                   f"(1000 with --task)")
    add_beam_options(p)
    p.add_argument("--seed", type=nonnegative_int, help="seed of the --fresh examples (default 0)")
    p.add_argument("--bleu-tokenize", choices=("13a", "none"),
                   help="how BLEU splits output and references: 13a (sacreBLEU's default) or "
                   "none (at whitespace, for tokenised references); default: the run's setting, "
                   "else 13a")
    p.add_argument("--json", metavar="FILE",
                   help="also write the scores, what was scored and the command to FILE (- or "
                   "/dev/stdout: standard output)")
    overwrite_option(p)
    add_common(p)
    p.set_defaults(run=run_evaluate)

    p = commands.add_parser("translate", help="run a trained encoder-decoder on some text",
                            description="Print the model's output for each TEXT, or for each "
                            "line of --input FILE or of standard input.")
    p.add_argument("--checkpoint", required=True, help="a .npz written by train")
    p.add_argument("texts", nargs="*", metavar="TEXT", help="input text(s)")
    add_beam_options(p)
    p.add_argument("--max-len", type=positive_int,
                   help="longest output in tokens (default: input length + 10, or + 50 with "
                   "--beam as in the paper; at most the model's max_len)")
    add_input_options(p)
    add_common(p)
    p.set_defaults(run=run_translate)


def add_beam_options(p):
    p.add_argument("--beam", type=positive_int, default=1,
                   help="beam size (default 1: greedy; the paper uses 4)")
    p.add_argument("--alpha", "--length-penalty", type=nonnegative_float, default=0.6,
                   help="beam search's length penalty: hypotheses Y rank by log P(Y) / "
                   "((5 + |Y|) / 6)^alpha (default 0.6, the paper's; 0: log P(Y), which "
                   "favours short outputs)")


def _check_alpha(args):
    if args.alpha != 0.6 and args.beam == 1:
        print("note: --alpha only changes beam search (give --beam 2 or more)")


def _warn_unknown(ids, where, what):
    unknown = sum(1 for i in ids if i == UNK_ID)
    if unknown:
        print(f"warning: {unknown} of {len(ids)} {what} of {where} are not in the model's "
              f"vocabulary (read as <unk>)")


def _evaluation_pairs(args, meta, toks):
    """(encoded pairs, reference lines (corpora; None for tasks), decoding limit, a
    description of what is scored)."""
    if args.tsv or args.src or args.tgt:
        notes = []                      # blank sides, a TSV's extra columns
        pairs = read_pairs(args.src, args.tgt, args.tsv, "evaluation data", notes=notes)
        for note in notes:
            print(f"note: {note}")
        encoded = encode_pairs(pairs, toks["src"], toks["tgt"])
        where = args.tsv or f"{args.src} / {args.tgt}"
        _warn_unknown([i for s, _ in encoded for i in s], where + " (sources)", "words")
        _warn_unknown([i for _, t in encoded for i in t], where + " (references)", "words")
        return encoded, [t for _, t in pairs], None, f"{len(pairs)} sentence pairs of {where}"
    if not args.task and args.fresh is None:
        if args.seed is not None:
            raise InputError(message("--seed", "--fresh N or --task (the seed of fresh "
                                     "examples)", "neither (the run's split has its own seed)"))
        return run_seq2seq_split(meta, args.checkpoint, toks)
    data = data_config(meta, args.checkpoint)
    name = args.task or (data.task if data else None)
    if name is None:
        raise InputError("this checkpoint was trained on a corpus: --fresh is for tasks; give "
                         "--src/--tgt or --tsv (or nothing: the run's own split)")
    task = get_task(name)
    count, seed = args.fresh or 1000, args.seed or 0
    pairs = task.sample(np.random.default_rng([seed, 2]), count, split="test")
    encoded = encode_pairs(pairs, toks["src"], toks["tgt"])
    for side, k in (("sources", 0), ("references", 1)):
        _warn_unknown([i for pair in encoded for i in pair[k]], f"the {name} task ({side})",
                      "characters")
    return encoded, None, task.max_tgt_len + 2, \
        f"{count} held-out examples of the {name} task (test split, seed {seed})"


# None unless given:
SEQ2SEQ_OPTIONS = ("task", "src", "tgt", "tsv", "bleu_tokenize", "fresh", "seed")


def _refuse_the_other_kinds_options(args, kind):
    """An option meant for the other kind of checkpoint would be silently ignored: refuse it."""
    if kind != "lm" and args.text:
        raise InputError(message("--text", "a language-model checkpoint (--text is for "
                                 "language-model checkpoints, written by train-lm)",
                                 f"{args.checkpoint}, an encoder-decoder checkpoint (score "
                                 "it with --task, --src/--tgt or --tsv)"))
    given = [n for n in SEQ2SEQ_OPTIONS if getattr(args, n) is not None] \
        + ["beam"] * (args.beam > 1) + ["alpha"] * (args.alpha != 0.6)
    if kind == "lm" and given:
        name = "--" + given[0].replace("_", "-")
        raise InputError(message(name, f"an encoder-decoder checkpoint ({name} is for "
                                 "encoder-decoder checkpoints, written by train)",
                                 f"{args.checkpoint}, a language-model checkpoint (score "
                                 "it with --text FILE alone, or nothing: its held-out 10%)"))


def run_evaluate(args):
    check_outputs({"--json": args.json}, overwrite=args.overwrite, stdout=("--json",), inputs={
        "--checkpoint": args.checkpoint, "--src": args.src, "--tgt": args.tgt,
        "--tsv": args.tsv, "--text": args.text})
    model, toks, meta = load_run(args.checkpoint)
    _refuse_the_other_kinds_options(args, meta["kind"])
    if meta["kind"] == "lm":
        if args.text:
            ids = toks["text"].encode(load_text(args.text, "--text"))
            what = f"{args.text} (the whole file, {len(ids):,} characters)"
        else:
            ids, what = run_text_split(meta, args.checkpoint, toks["text"])
        _warn_unknown(ids, args.text or "the run's held-out text", "characters")
        if len(ids) < 2:
            raise InputError(message("--text", "at least 2 characters", len(ids)))
        scores = evaluate_lm(model, ids, block_size=min(model.config.max_len, len(ids) - 1))
        print(f"{what}: loss {scores['loss']:.4f} nats per character, perplexity "
              f"{scores['perplexity']:.2f}")
        return _write_json(args, what, scores)
    _check_alpha(args)
    pairs, references, max_len, what = _evaluation_pairs(args, meta, toks)
    keep = [i for i, pair in enumerate(pairs) if fits(pair, model.config.max_len)]
    kept = [pairs[i] for i in keep]
    if len(kept) < len(pairs):
        print(f"note: skipped {len(pairs) - len(kept)} of {len(pairs)} pairs longer than the "
              f"model's max_len of {model.config.max_len} tokens")
    if not kept:
        raise InputError(message("evaluation data", f"pairs of at most {model.config.max_len} "
                                 f"tokens (the model's max_len)", "only longer ones"))
    references = None if references is None else [references[i] for i in keep]
    data = data_config(meta, args.checkpoint) or DataConfig()
    lowercase = data.lowercase
    scores = evaluate_seq2seq(model, kept, tgt_tokenizer=toks["tgt"], bleu=references is not None,
                              max_len=max_len, beam_size=args.beam, references=references,
                              lowercase=lowercase, length_penalty=args.alpha,   # plain loss
                              bleu_tokenize=args.bleu_tokenize or data.bleu_tokenize)
    scores.pop("predictions")
    tokenize = (args.bleu_tokenize or data.bleu_tokenize) if "bleu" in scores else None
    print(f"{what}: {format_metrics(scores)}" + (f" (BLEU tokenize={tokenize})" if tokenize else ""))
    return _write_json(args, what, scores, bleu_tokenize=tokenize)


def _write_json(args, what, scores, bleu_tokenize=None):
    """--json FILE: the scores with what was scored and how (written atomically)."""
    if args.json:
        from ..system.files import is_stdout, write_json
        from .run import provenance
        write_json(args.json, {**provenance(), "checkpoint": args.checkpoint, "scored": what,
                               "beam": args.beam, "alpha": args.alpha,
                               "bleu_tokenize": bleu_tokenize, "scores": scores})
        if not is_stdout(args.json):
            print(f"scores written to {args.json}")
    return 0
