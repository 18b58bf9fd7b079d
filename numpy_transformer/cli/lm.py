"""`train-lm` and `generate`: a character-level GPT on a text file.

    python -m numpy_transformer train-lm --text tinyshakespeare.txt
    python -m numpy_transformer generate --checkpoint runs/lm/best.npz --prompt "ROMEO:"

The first 90% of the characters train the model, the last 10% measure it:
the mean loss in nats per character and the perplexity exp(loss).
"""

import shlex
import sys
from functools import partial

from ..checkpoint import load_run
from ..data import DataConfig
from ..data.corpus import text_data
from ..data.loaders import load_text
from ..decoding import generate_text, stream_text, stream_texts
from ..training.metrics import evaluate_lm
from ..models.gpt import GPT, GPTConfig
from ..training import TextStream
from . import run
from .configs import config_from, metadata
from .data_files import as_typed
from .options import (_typed, add_common, add_model_options, add_training_options, describe,
                      nonnegative_int, positive_float, positive_int, raw_formatter)

top_p_value = _typed(float, lambda v: 0 < v <= 1, "a number P with 0 < P <= 1")

LM = dict(d_model=128, num_heads=4, d_ff=512, num_layers=4, dropout=0.1, norm_first=True,
          attention="mha", max_len=64, steps=2000, batch_size=32, lr=2e-3, warmup=100,
          schedule="cosine", label_smoothing=0.0, clip_norm=1.0, weight_decay=0.0, seed=0,
          eval_every=250, checkpoint_every=250, log_every=50, eval_batches=20)
LM_QUICK = dict(steps=30, warmup=3, eval_every=15, checkpoint_every=15, log_every=10,
                d_model=32, num_heads=2, d_ff=64, num_layers=1, max_len=32, batch_size=8,
                eval_batches=4)
LM_SETTINGS = ("text", "eval_batches", "d_model", "num_heads", "d_ff", "num_layers", "max_len",
               "dropout", "attention_dropout", "activation_dropout", "norm_first", "attention",
               "latent_dim", "tie_embeddings", "steps", "batch_size", "lr", "warmup", "schedule",
               "label_smoothing", "clip_norm", "weight_decay", "keep_last", "seed", "eval_every",
               "checkpoint_every", "log_every", "out", "figures")


def add_parsers(commands):
    p = commands.add_parser(
        "train-lm", help="train a character-level GPT language model on a text file",
        description="Train a decoder-only Transformer (GPT) to predict the next character; "
        "report held-out loss (nats per character) and perplexity, and print a sample.",
        epilog=f"defaults: {describe(LM)}\n--quick: {describe(LM_QUICK)}",
        formatter_class=raw_formatter())
    p.add_argument("--text", help="a UTF-8 text file (90%% train, 10%% held out); "
                   "not needed with --resume")
    p.add_argument("--eval-batches", type=positive_int,
                   help="held-out batches per periodic evaluation (the final one uses all)")
    add_model_options(p, encoder_decoder=False)
    add_training_options(p, "runs/lm", keep_last=True)
    add_common(p)
    p.set_defaults(run=run_train_lm)

    p = commands.add_parser("generate", help="continue a prompt with a trained GPT",
                            description="Sample text from a checkpoint written by train-lm.")
    p.add_argument("--checkpoint", required=True, help="a .npz written by train-lm")
    first = p.add_mutually_exclusive_group()
    first.add_argument("--prompt", default="\n", help="text to continue (default: a newline)")
    first.add_argument("--prompt-file", metavar="FILE",
                       help="continue the text of FILE (UTF-8, at most 16 MiB), as nanoGPT's "
                       "--start=FILE:")
    p.add_argument("--max-new-tokens", type=positive_int, default=300,
                   help="characters to generate (default 300); the first sample is printed as "
                   "it is drawn, any others are held in memory and printed when all are drawn "
                   "(refused, with an estimate, where they cannot fit)")
    p.add_argument("--temperature", type=positive_float, default=0.8,
                   help="below 1: safer, above 1: wilder, near 0: greedy (default 0.8)")
    p.add_argument("--top-k", type=positive_int, help="draw only from the K likeliest")
    p.add_argument("--top-p", type=top_p_value, metavar="P",
                   help="nucleus sampling: draw only from the smallest set of the likeliest "
                   "whose probabilities sum to at least P, 0 < P <= 1 (after --top-k when "
                   "both are given, as Hugging Face does)")
    p.add_argument("--stop-at-eos", action="store_true",
                   help="end the text when the model draws <eos> (default: never draw it)")
    p.add_argument("--num-samples", type=positive_int, default=1,
                   help="independent continuations of the prompt, sampled as one batch and "
                   "printed after '--- sample N ---' lines when more than one (default 1; "
                   "refused, with an estimate, where they cannot fit in memory)")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="sampling seed (default 0)")
    add_common(p)
    p.set_defaults(run=run_generate)


def run_train_lm(args):
    from ..errors import InputError
    run.join_ranks()                            # under mpiexec: data-parallel, rank 0 prints
    s, ckpt = run.resolve_settings(args, "lm", LM_SETTINGS, [LM], LM_QUICK)
    if not s["text"]:
        raise InputError("train-lm needs --text FILE (or --resume CKPT)")
    s["out"] = s["out"] or "runs/lm"
    data_config = config_from(DataConfig, s)
    tok, train_ids, val_ids = text_data(data_config, _saved_tokenizer(ckpt, s["text"]))
    stream = TextStream(train_ids, s["batch_size"], s["max_len"], s["seed"])
    if ckpt is not None:
        model = ckpt.model
    else:
        config = config_from(GPTConfig, s, vocab_size=tok.vocab_size)
        run.check_memory(config, s, s["max_len"])
        model = GPT(config)
    evaluate = partial(evaluate_lm, ids=val_ids, block_size=s["max_len"],
                       batch_size=s["batch_size"], max_batches=s["eval_batches"])
    what = (f"a GPT on {s['text']} ({len(stream.ids):,} training, {len(val_ids):,} held-out "
            f"characters)")
    trainer, result, status = run.train(args, s, model, stream, ckpt, what, evaluate=evaluate,
                                        best_metric="loss", tokenizers={"text": tok},
                                        metadata=metadata("lm", data_config, s))
    if status is not None:
        return status
    final = evaluate_lm(model, val_ids, block_size=s["max_len"], batch_size=s["batch_size"])
    print(f"\n{run.steps_line(result)}. Held-out loss "
          f"(the last 10% of the text, {len(val_ids):,} characters) {final['loss']:.4f} nats "
          f"per character, perplexity {final['perplexity']:.2f}")
    sample = generate_text(model, tok, "\n", 200, temperature=0.8, seed=s["seed"])
    print("sample:\n" + sample)
    run.write_results(s, trainer, result, held_out=final,
                      held_out_characters=len(val_ids), sample=sample)
    figures = run.draw_figures(args, s, trainer, unit="character")
    run.print_ending(s, figures, f"python -m numpy_transformer generate --checkpoint "
                     f"{shlex.quote(s['out'] + '/best.npz')} --prompt "
                     f"{shlex.quote(_pasteable_prompt(tok, stream.ids))}", trainer)
    return 0


def _pasteable_prompt(tok, ids):
    """The prompt of the closing `next:` command, which runs clean as printed: ROMEO: where
    the text has those characters (Shakespeare), else the start of the text's first line."""
    if not tok.unknown_symbols(["ROMEO:"]):
        return "ROMEO:"
    lines = tok.decode([int(i) for i in ids[:200]]).strip().splitlines()
    return lines[0][:20] if lines else "ROMEO:"


def _saved_tokenizer(ckpt, text):
    """A resumed run's character tokenizer, so that every id keeps its meaning even if the
    text changed (None for a fresh run: it is fitted on the text); warns, in one line, of
    characters of the text it does not know (they read as <unk>)."""
    if ckpt is None:
        return None
    _, toks, _ = load_run(ckpt.path, "lm", option="--resume", ckpt=ckpt)
    tok = toks["text"]
    unknown = sorted(set(load_text(text, "--text")) - set(tok.symbols))
    if unknown:
        shown = "".join(unknown[:20]) + ("..." if len(unknown) > 20 else "")
        print(f"warning: {as_typed(text)} now holds {len(unknown)} "
              f"character{'s' * (len(unknown) > 1)} "
              f"the run's saved vocabulary lacks ({shown!r}); they read as <unk> (the run "
              f"keeps its saved tokenizer)")
    return tok


def warn_unknown_prompt(tok, prompt, option="--prompt"):
    """One warning (on stderr: stdout is the text) naming the prompt's characters outside
    the model's vocabulary, which the model reads, and the output shows, as <unk>."""
    unknown = tok.unknown_symbols([prompt])
    if unknown:
        print(f"warning: {len(unknown)} character{'s' * (len(unknown) > 1)} of {option} "
              f"{'are' if len(unknown) > 1 else 'is'} not in the model's vocabulary (read as "
              f"<unk>): {''.join(unknown)!r}", file=sys.stderr)


def run_generate(args):
    prompt = args.prompt if args.prompt_file is None else read_prompt(args.prompt_file)
    model, toks, _ = load_run(args.checkpoint, kind="lm")
    warn_unknown_prompt(toks["text"], prompt,
                        "--prompt" if args.prompt_file is None else "--prompt-file")
    settings = dict(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p,
                    seed=args.seed, stop_at_eos=args.stop_at_eos)
    if args.num_samples == 1:                   # each character printed as it is drawn
        for piece in stream_text(model, toks["text"], prompt, args.max_new_tokens,
                                 **settings):
            sys.stdout.write(piece)
            sys.stdout.flush()
        print()
        return 0
    shown = None                  # the first sample as it is drawn, the others when all are
    for i, piece in stream_texts(model, toks["text"], prompt, args.max_new_tokens,
                                 args.num_samples, **settings):
        if i != shown:
            sys.stdout.write(("\n" if shown is not None else "") + f"--- sample {i + 1} ---\n")
            shown = i
        sys.stdout.write(piece)
        sys.stdout.flush()
    print()
    return 0


MAX_PROMPT_BYTES = 16 * 2**20       # the model reads the last max_len characters of it


def read_prompt(path):
    """The text of --prompt-file: a regular UTF-8 file of at most MAX_PROMPT_BYTES."""
    from ..errors import InputError
    from ..system.files import open_regular
    from ..validation import message
    with open_regular(path, "--prompt-file") as f:
        data = f.read(MAX_PROMPT_BYTES + 1)
    if len(data) > MAX_PROMPT_BYTES:
        raise InputError(message("--prompt-file", "a file of at most 16 MiB",
                                 f"{path!r}, larger"))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(message("--prompt-file", "UTF-8 text",
                                 f"{path!r} (byte {err.start}: {data[err.start:err.start + 1]!r})"))
    if not text:
        raise InputError(message("--prompt-file", "at least one character", f"{path!r}, empty"))
    return text
