"""`evaluate` and `translate`: using a checkpoint written by `train` (or `train-lm`).

    python -m numpy_transformer evaluate --checkpoint runs/reverse/best.npz
    python -m numpy_transformer translate --checkpoint runs/reverse/best.npz "hello" "world"
"""

import os

import numpy as np

from .checks import message
from .cli import add_common, nonnegative_int, positive_int
from .errors import InputError

KINDS = {"seq2seq": "an encoder-decoder checkpoint written by `train`",
         "lm": "a language-model checkpoint written by `train-lm`"}


def add_parsers(commands):
    from .data import TASKS
    p = commands.add_parser("evaluate", help="score a checkpoint on held-out data",
                            description="Exact match and token accuracy (tasks), BLEU "
                            "(corpora) or loss and perplexity (language models).")
    p.add_argument("--checkpoint", required=True, help="a .npz written by train or train-lm")
    p.add_argument("--task", choices=TASKS, help="task to test on (default: the trained one)")
    p.add_argument("--src", help="source sentences, one per line")
    p.add_argument("--tgt", help="reference translations, line-aligned with --src")
    p.add_argument("--tsv", help="'source<TAB>reference' lines")
    p.add_argument("--text", help="a text file (language models: the whole file is scored)")
    p.add_argument("--examples", type=positive_int, default=1000,
                   help="held-out task examples to generate (default 1000)")
    p.add_argument("--beam", type=positive_int, default=1, help="beam size (default 1: greedy)")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="seed of the examples")
    add_common(p)
    p.set_defaults(run=run_evaluate)

    p = commands.add_parser("translate", help="run a trained encoder-decoder on some text",
                            description="Print the model's output for each TEXT.")
    p.add_argument("--checkpoint", required=True, help="a .npz written by train")
    p.add_argument("texts", nargs="+", metavar="TEXT", help="input text(s)")
    p.add_argument("--beam", type=positive_int, default=1, help="beam size (default 1: greedy)")
    p.add_argument("--max-len", type=positive_int,
                   help="longest output in tokens (default: input length + 10)")
    add_common(p)
    p.set_defaults(run=run_translate)


def load_run(path, kind=None):
    """(model, {name: tokenizer}, metadata) of a checkpoint of `kind` ("seq2seq", "lm" or
    None for either); metadata["kind"] says which it is."""
    from .checkpoint import load_checkpoint
    from .data import Tokenizer
    ckpt = load_checkpoint(path)
    meta = ckpt.metadata
    found = meta.get("kind") or ("lm" if type(ckpt.model).__name__ == "GPT" else "seq2seq")
    meta = {**meta, "kind": found}
    kind = kind or found
    if found != kind:
        raise InputError(message("--checkpoint", KINDS[kind], f"{path}, {KINDS[found]}"))
    tokenizers = {name: Tokenizer.from_dict(d, source=f"{path} ({name} tokenizer)")
                  for name, d in meta.get("tokenizers", {}).items()}
    for name in (("text",) if kind == "lm" else ("src", "tgt")):
        beside = os.path.join(os.path.dirname(os.path.abspath(path)), f"{name}_tokenizer.json")
        if name not in tokenizers and os.path.isfile(beside):
            tokenizers[name] = Tokenizer.load(beside)
        if name not in tokenizers:
            raise InputError(message("--checkpoint", f"a checkpoint with its {name} tokenizer "
                                     f"(or {beside})", path))
    return ckpt.model, tokenizers, meta


def _encode_all(tok, texts, what):
    seqs = [tok.encode(t) for t in texts]
    for i, seq in enumerate(seqs):
        if not seq:
            raise InputError(message(f"{what} {i + 1}", "at least one token", repr(texts[i])))
    return seqs


def run_translate(args):
    from .metrics import decode_batches
    model, toks, _ = load_run(args.checkpoint, "seq2seq")
    seqs = _encode_all(toks["src"], args.texts, "TEXT")
    outputs = decode_batches(model, seqs, max_len=args.max_len, beam_size=args.beam)
    for out in outputs:
        print(toks["tgt"].decode(out))
    return 0


def _evaluation_pairs(args, meta, toks):
    from .cli_train import _read_pairs
    from .data import encode_pairs, get_task
    if args.tsv or args.src or args.tgt:
        if not args.tsv and not (args.src and args.tgt):
            raise InputError("a parallel corpus needs both --src and --tgt")
        pairs = _read_pairs(args.src, args.tgt, args.tsv, None, "evaluation data")
        return encode_pairs(pairs, toks["src"], toks["tgt"]), True, None
    name = args.task or meta.get("task")
    if name is None:
        raise InputError("this checkpoint was trained on a corpus: give --src/--tgt or --tsv")
    task = get_task(name)
    pairs = task.sample(np.random.default_rng([args.seed, 2]), args.examples, split="test")
    return encode_pairs(pairs, toks["src"], toks["tgt"]), False, task.max_tgt_len + 2


def run_evaluate(args):
    from .metrics import evaluate_lm, evaluate_seq2seq, format_metrics
    model, toks, meta = load_run(args.checkpoint)
    if meta["kind"] == "lm":
        from .data import load_text
        if not args.text:
            raise InputError("evaluating a language model needs --text FILE")
        ids = toks["text"].encode(load_text(args.text))
        scores = evaluate_lm(model, ids, block_size=model.config.max_len)
        print(f"{args.text}: loss {scores['loss']:.4f} nats per character, "
              f"perplexity {scores['perplexity']:.2f}")
        return 0
    pairs, bleu, max_len = _evaluation_pairs(args, meta, toks)
    scores = evaluate_seq2seq(model, pairs, tgt_tokenizer=toks["tgt"], bleu=bleu,
                              max_len=max_len, beam_size=args.beam)   # plain cross-entropy
    scores.pop("predictions")
    print(f"{len(pairs)} held-out examples: {format_metrics(scores)}")
    return 0
