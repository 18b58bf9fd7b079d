"""Command line: `python -m numpy_transformer COMMAND --help`.

    train       train an encoder-decoder on a built-in task or a parallel corpus
    train-lm    train a character-level GPT on a text file
    evaluate    score a checkpoint on held-out data
    translate   run a trained encoder-decoder on some text
    generate    continue a prompt with a trained GPT
    gradcheck   check every layer's backward against finite differences
    figures     write the key figures (positional encoding, masks, attention maps, ...)
    assignment  make a student copy with backward passes to write, and grade it

Every error a user can cause (a missing or empty file, an unknown task, a bad
option value) ends with a one-line message on stderr and exit status 2, never
a traceback; `--debug` shows the traceback instead.
"""

import argparse
import sys

from .training import TrainingDiverged


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: 'prog: error: ...' (the usage is under --help)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _typed(convert, check, expected):
    def parse(text):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not check(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value
    return parse


positive_int = _typed(int, lambda v: v > 0, "a positive integer")
nonnegative_int = _typed(int, lambda v: v >= 0, "an integer >= 0")
positive_float = _typed(float, lambda v: 0 < v < float("inf"), "a number > 0")
nonnegative_float = _typed(float, lambda v: 0 <= v < float("inf"), "a number >= 0")
probability = _typed(float, lambda v: 0 <= v < 1, "a number in [0, 1)")


def add_common(p):
    """Options every command has."""
    p.add_argument("--debug", action="store_true", help="show a full traceback on errors")
    p.add_argument("--threads", type=positive_int, default=1,
                   help="BLAS threads (default 1: the small matrices here run fastest on one)")


def add_model_options(p):
    g = p.add_argument_group("model (defaults depend on the task; see the list below)")
    g.add_argument("--d-model", type=positive_int, help="width D of every token vector")
    g.add_argument("--heads", type=positive_int, help="attention heads H (D must divide by H)")
    g.add_argument("--d-ff", type=positive_int, help="hidden width F of the feed-forward layers")
    g.add_argument("--layers", type=positive_int, help="blocks in the encoder and in the decoder")
    g.add_argument("--dropout", type=probability, help="dropout probability")
    g.add_argument("--norm-first", action=argparse.BooleanOptionalAction, default=None,
                   help="pre-norm blocks (--no-norm-first: post-norm, as in the paper)")
    g.add_argument("--attention", choices=("mha", "mla"),
                   help="mha: multi-head attention; mla: multi-head latent attention")


def add_training_options(p):
    g = p.add_argument_group("training")
    g.add_argument("--steps", type=positive_int, help="optimizer updates")
    g.add_argument("--batch-size", type=positive_int, help="sequences per batch")
    g.add_argument("--lr", type=positive_float, help="peak learning rate (Adam)")
    g.add_argument("--warmup", type=nonnegative_int, help="linear warm-up steps")
    g.add_argument("--schedule", choices=("cosine", "noam"),
                   help="decay after warm-up: cosine, or noam (1/sqrt(step), the paper's)")
    g.add_argument("--label-smoothing", type=probability, help="label smoothing epsilon")
    g.add_argument("--clip", type=positive_float, help="max global gradient norm")
    g.add_argument("--weight-decay", type=nonnegative_float, help="AdamW weight decay")
    g.add_argument("--seed", type=nonnegative_int, help="seed of the data, weights and dropout")
    g = p.add_argument_group("run")
    g.add_argument("--eval-every", type=nonnegative_int, help="evaluate every N steps")
    g.add_argument("--checkpoint-every", type=nonnegative_int,
                   help="write OUT/last.npz every N steps")
    g.add_argument("--out", help="output folder for checkpoints, tokenizers, history")
    g.add_argument("--figures", help="folder for the PNG figures (default: figures/, or "
                   "OUT/figures when --out is given)")
    g.add_argument("--no-figures", action="store_true", help="do not draw figures")
    g.add_argument("--resume", metavar="CKPT", help="continue the run saved in CKPT "
                   "(its settings are reused; --steps may extend it)")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    g.add_argument("--quick", action="store_true",
                   help="a tiny run of a few seconds (smoke tests, CI)")


def _gradcheck(args):
    from .selfcheck import run_report
    return 0 if run_report(models=not args.layers_only, seed=args.seed) else 1


def build_parser():
    from . import cli_lm, cli_train, cli_use, figures
    parser = Parser(prog="python -m numpy_transformer",
                    description="A NumPy Transformer with hand-written backward passes.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    cli_train.add_parser(commands)
    cli_lm.add_parsers(commands)
    cli_use.add_parsers(commands)
    figures.add_parser(commands)
    p = commands.add_parser("gradcheck", help="check every layer's backward against finite "
                            "differences (float64) and print a report")
    p.add_argument("--layers-only", action="store_true", help="skip the whole-model checks")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    add_common(p)
    p.set_defaults(run=_gradcheck)
    from .assignment.cli import add_subcommand
    add_subcommand(commands)
    return parser


def _one_line(err):
    text = " ".join(str(err).split())
    if isinstance(err, KeyError):
        text = f"missing {text}"
    return text or type(err).__name__


def main(argv=None):
    """Run one command; returns the exit status (0 ok, 1 diverged, 2 bad input, 130 Ctrl-C)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit:          # --help (0) or a usage error (2): already printed
        return exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 2)
    if getattr(args, "run", None) is None:
        parser.print_help()
        return 2
    from .threads import set_num_threads
    set_num_threads(args.threads)
    try:
        return args.run(args)
    except TrainingDiverged as err:
        if args.debug:
            raise
        print(f"error: {_one_line(err)}", file=sys.stderr)
        return 1
    except (ValueError, TypeError, KeyError, OSError, ImportError) as err:
        if args.debug:
            raise
        print(f"error: {_one_line(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
