"""The options the commands share, named as the configuration fields they set.

An option's destination is the name of the field it sets, so a run's resolved
options map onto the configurations by name alone, with `dataclasses.fields`
(configs.py):

    --d-model, --num-heads, --d-ff, --num-layers, ... -> TransformerConfig / GPTConfig
    --steps, --lr, --warmup, --clip-norm, --batch-size, ... -> TrainConfig
    --task, --src, --bpe, --max-len, --eval-examples, ... -> DataConfig
    --out, --figures, --no-figures -> RunOptions

The library names parameters in its errors, never options; `option_names` (used
by the error report, cli/__init__.py) names the option instead.

(`--num-layers` sets both num_encoder_layers and num_decoder_layers of an
encoder-decoder; the older short names `--heads`, `--layers`, `--clip` and
`--block-size` still work.)
"""

import argparse
import difflib
import os
import re

from .config_file import ConfigFile

class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: 'prog: error: ...' (the usage is under --help), and
    a suggestion for a mistyped option: 'unrecognized arguments: --stpes 5 (did you mean
    --steps?)' (argparse's own `suggest_on_error` is Python 3.14's, and covers choices only)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")

    def parse_args(self, args=None, namespace=None):
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:      # the command's parser (set by cli/__init__.py) knows its options
            command = getattr(parsed, "command_parser", None) or self
            self.error(f"unrecognized arguments: {' '.join(extras)}"
                       f"{did_you_mean(extras, command)}")
        return parsed


def long_options(parser):
    """Every '--x' option of `parser` and of its subcommands."""
    found = []
    for action in getattr(parser, "_actions", ()):
        found += [o for o in action.option_strings if o.startswith("--")]
        choices = getattr(action, "choices", None)
        for sub in choices.values() if isinstance(choices, dict) else ():
            found += long_options(sub)
    return found


def did_you_mean(words, parser):
    """' (did you mean --steps?)' for the first of `words` that is an option spelled close
    to one of `parser`'s (difflib's similarity ratio 0.6 or more), else ''."""
    known = long_options(parser)
    for word in words:
        if word.startswith("--"):
            close = difflib.get_close_matches(word.split("=")[0], known, n=1)
            if close:
                return f" (did you mean {close[0]}?)"
    return ""


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
MAX_EXAMPLES = 100_000          # held-out examples decoded: minutes, not days
examples_int = _typed(int, lambda v: 0 < v <= MAX_EXAMPLES,
                      f"a positive integer at most {MAX_EXAMPLES:,}")


def raw_formatter():
    return argparse.RawDescriptionHelpFormatter


def describe(settings):
    """'k=v, k=v' of a settings dict, for --help epilogues."""
    return ", ".join(f"{k}={v}" for k, v in settings.items())


def add_common(p, threads=True):
    """Options every command has, and --threads where it computes with BLAS (`threads`:
    True, or the option's help; commands without it run on one thread, cli/__init__.py)."""
    p.add_argument("--debug", action="store_true", help="show a full traceback on errors")
    if threads:
        p.add_argument("--threads", type=positive_int, default=1, help=threads if isinstance(
            threads, str) else "BLAS threads (default 1: the small matrices here run "
            "fastest on one)")


def add_model_options(p, encoder_decoder):
    g = p.add_argument_group("model (defaults depend on the task; see the list below)"
                             if encoder_decoder else "model (defaults: see the list below)")
    g.add_argument("--d-model", type=positive_int, help="width D of every token vector")
    g.add_argument("--num-heads", "--heads", type=positive_int,
                   help="attention heads H (D must divide by H)")
    g.add_argument("--d-ff", type=positive_int, help="hidden width F of the feed-forward layers")
    g.add_argument("--num-layers", "--layers", type=positive_int,
                   help="blocks" + (" in the encoder and in the decoder" if encoder_decoder
                                    else ""))
    if encoder_decoder:
        g.add_argument("--num-encoder-layers", type=positive_int, help="encoder blocks")
        g.add_argument("--num-decoder-layers", type=positive_int, help="decoder blocks")
    g.add_argument("--max-len", *(() if encoder_decoder else ("--block-size",)),
                   type=positive_int, help="longest sequence in tokens (the positional "
                   "table)" + ("; longer training pairs are dropped at load time"
                               if encoder_decoder else "; the context and training window"))
    g.add_argument("--dropout", type=probability, help="dropout probability (on sublayer "
                   "outputs and embeddings; also the next two unless given)")
    g.add_argument("--attention-dropout", type=probability,
                   help="dropout on the attention weights (default: --dropout)")
    g.add_argument("--activation-dropout", type=probability,
                   help="dropout on the feed-forward hidden layer (default: --dropout)")
    g.add_argument("--norm-first", action=argparse.BooleanOptionalAction, default=None,
                   help="pre-norm blocks (--no-norm-first: post-norm, as in the paper)")
    g.add_argument("--attention", choices=("mha", "mla"),
                   help="mha: multi-head attention; mla: multi-head latent attention")
    g.add_argument("--latent-dim", type=positive_int, help="latent width L of MLA "
                   "(default d_model // 4)")
    g.add_argument("--tie-embeddings", action=argparse.BooleanOptionalAction, default=None,
                   help="share the (target) embedding with the output projection")


def add_training_options(p, out_default, token_batches=False, keep_last=False):
    """out_default: what --out's help says it defaults to; token_batches: also
    --batch-tokens (pairs of a seq2seq run); keep_last: --keep-last (the command's settings
    must then name batch_tokens / keep_last)."""
    g = p.add_argument_group("training")
    g.add_argument("--steps", type=positive_int, help="optimizer updates")
    g.add_argument("--batch-size", type=positive_int, help="sequences per batch")
    if token_batches:
        g.add_argument("--batch-tokens", type=positive_int, metavar="N",
                       help="instead of --batch-size pairs: batches of pairs of similar "
                       "length, up to N tokens in the source and in the target arrays "
                       "(rows x longest, padding included)")
    g.add_argument("--lr", type=positive_float, help="peak learning rate (Adam)")
    g.add_argument("--warmup", type=nonnegative_int,
                   help="linear warm-up steps (default: the list's below, at most --steps / 10)")
    g.add_argument("--schedule", choices=("cosine", "noam"),
                   help="decay after warm-up: cosine, or noam (1/sqrt(step), the paper's)")
    g.add_argument("--label-smoothing", type=probability, help="label smoothing epsilon")
    g.add_argument("--clip-norm", "--clip", type=positive_float,
                   help="max global gradient norm")
    g.add_argument("--weight-decay", type=nonnegative_float, help="AdamW weight decay")
    g.add_argument("--seed", type=nonnegative_int, help="seed of the data, weights and dropout")
    g = p.add_argument_group("run")
    g.add_argument("--eval-every", type=nonnegative_int, help="evaluate every N steps")
    g.add_argument("--checkpoint-every", type=nonnegative_int,
                   help="write OUT/last.npz every N steps")
    if keep_last:
        g.add_argument("--keep-last", type=nonnegative_int, metavar="K",
                       help="also keep OUT/step-<N>.npz of the last K checkpoints (to average "
                       "them: python -m numpy_transformer average OUT/step-*.npz --out AVG)")
    g.add_argument("--log-every", type=nonnegative_int,
                   help="without a progress bar, print a line every N steps")
    g.add_argument("--out", help="the run folder: checkpoints, tokenizers, history.json, "
                   f"config.json and figures/ (default {out_default}; with --resume, "
                   "the checkpoint's folder)")
    g.add_argument("--figures", help="folder for the PNG figures (default OUT/figures)")
    g.add_argument("--no-figures", action="store_true", help="do not draw figures")
    g.add_argument("--config", metavar="FILE", action=ConfigFile, help="settings from FILE: "
                   "TOML, one key per option spelled as the option with dashes (d-model = 256),"
                   " or JSON (a run's config.json); options given here override it; relative "
                   "paths are from the current folder (docs/commands.md)")
    g.add_argument("--resume", metavar="CKPT", help="continue the run saved in CKPT "
                   "(its settings are reused; --steps may extend it)")
    g.add_argument("--overwrite", action="store_true",
                   help="replace a run already in OUT (by default that is refused; a folder "
                   "of other files is refused even so), and figures already in --figures")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    g.add_argument("--tensorboard", action="store_true", help="also write a TensorBoard event "
                   "log in OUT/tensorboard/ (needs tensorboardX: the `tensorboard` extra)")
    g.add_argument("--quick", action="store_true",
                   help="a tiny run of a few seconds (smoke tests, CI)")


# Parameters the library names otherwise than the option that sets them.
ALIASES = {"beam_size": "beam"}


def option_strings(parser):
    """{parameter: its option, '--x-y'} of a command's parser (the first long spelling)."""
    found = {}
    for action in getattr(parser, "_actions", ()):
        longs = [o for o in action.option_strings if o.startswith("--")]
        if longs:
            found.setdefault(action.dest, longs[0])
    for parameter, dest in ALIASES.items():
        if dest in found:
            found[parameter] = found[dest]
    return found


def option_names(text, parser, head=True):
    """'max_len: expected ...' -> '--max-len: expected ...': an error that names a parameter
    (the library speaks parameters: first, before its colon, and in backquotes inside the
    sentence, `joint_vocab`) names the option of `parser` that sets it instead."""
    options = option_strings(parser)
    text = re.sub(r"`(\w+)`", lambda m: options.get(m.group(1), m.group(0)), text)
    name, sep, rest = text.partition(":")
    if head and sep and name in options:
        return f"{options[name]}:{rest}"
    return text


def path_option(text, err, args, parser):
    """'/proc/foo: No such file ...' -> '--out: /proc/foo: No such file ...' when the OS
    error's file is the value of one of the command's options, or a folder above it
    (typed, or from a --config file, which with_files then names): the error says which
    option to change."""
    filename = getattr(err, "filename", None)
    if not isinstance(filename, str) or not filename or args is None:
        return text
    options, where = option_strings(parser), os.path.abspath(filename)
    for dest, value in vars(args).items():
        if dest in options and isinstance(value, str) and value and \
                (os.path.abspath(value) + os.sep).startswith(where.rstrip(os.sep) + os.sep):
            return f"{options[dest]}: {text}"
    return text


def with_files(text, parser, sources):
    """'--warmup: expected ...' -> '--warmup (from configs/x.toml): expected ...' when the
    option's value came from a --config file (`sources`, config_file.sources): an error
    about a value the user did not type names the file that holds it."""
    name, sep, rest = text.partition(":")
    dests = {option: dest for dest, option in option_strings(parser).items()}
    dest = dests.get(name)
    if sep and dest in (sources or {}):
        return f"{name} (from {sources[dest]}):{rest}"
    return text
