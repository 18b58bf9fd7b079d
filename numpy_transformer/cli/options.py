"""The options the commands share, named as the configuration fields they set.

An option's destination is the name of the field it sets, so a run's settings
(a flat dict saved in every checkpoint and in config.json) map onto the
configurations by name alone, with `dataclasses.fields`:

    --d-model, --num-heads, --d-ff, --num-layers, ... -> TransformerConfig / GPTConfig
    --steps, --lr, --warmup, --clip-norm, --batch-size, ... -> TrainConfig

(`--num-layers` sets both num_encoder_layers and num_decoder_layers of an
encoder-decoder; the older short names `--heads`, `--layers`, `--clip` and
`--block-size` still work.)
"""

import argparse
from dataclasses import fields

from ..errors import InputError
from ..validation import message


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
MAX_EXAMPLES = 100_000          # held-out examples decoded: minutes, not days
examples_int = _typed(int, lambda v: 0 < v <= MAX_EXAMPLES,
                      f"a positive integer at most {MAX_EXAMPLES:,}")


def raw_formatter():
    return argparse.RawDescriptionHelpFormatter


def describe(settings):
    """'k=v, k=v' of a settings dict, for --help epilogues."""
    return ", ".join(f"{k}={v}" for k, v in settings.items())


def add_common(p):
    """Options every command has."""
    p.add_argument("--debug", action="store_true", help="show a full traceback on errors")
    p.add_argument("--threads", type=positive_int, default=1,
                   help="BLAS threads (default 1: the small matrices here run fastest on one)")


def add_model_options(p, encoder_decoder):
    g = p.add_argument_group("model (defaults depend on the task; see the list below)")
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
    g.add_argument("--dropout", type=probability, help="dropout probability")
    g.add_argument("--norm-first", action=argparse.BooleanOptionalAction, default=None,
                   help="pre-norm blocks (--no-norm-first: post-norm, as in the paper)")
    g.add_argument("--attention", choices=("mha", "mla"),
                   help="mha: multi-head attention; mla: multi-head latent attention")
    g.add_argument("--latent-dim", type=positive_int, help="latent width L of MLA "
                   "(default d_model // 4)")
    g.add_argument("--tie-embeddings", action=argparse.BooleanOptionalAction, default=None,
                   help="share the (target) embedding with the output projection")


def add_training_options(p, token_batches=False, keep_last=False):
    """token_batches: also --batch-tokens (pairs of a seq2seq run); keep_last: --keep-last
    (the command's settings must then name batch_tokens / keep_last)."""
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
                   help="linear warm-up steps (default: the task's, at most --steps / 10)")
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
                   "config.json and figures/ (default runs/<task>)")
    g.add_argument("--figures", help="folder for the PNG figures (default OUT/figures)")
    g.add_argument("--no-figures", action="store_true", help="do not draw figures")
    g.add_argument("--resume", metavar="CKPT", help="continue the run saved in CKPT "
                   "(its settings are reused; --steps may extend it)")
    g.add_argument("--overwrite", action="store_true",
                   help="replace a run already in OUT (by default that is refused; a folder "
                   "of other files is refused even so), and figures already in --figures")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    g.add_argument("--quick", action="store_true",
                   help="a tiny run of a few seconds (smoke tests, CI)")


def check_saved(saved, names, parser, preset, source):
    """InputError naming `source` and the option unless each of the settings `names` saved
    in a checkpoint is a value its option could have given (the option's own type, range
    and choices; null only where the preset has none): a crafted checkpoint's settings
    meet the command line's checks. Data digests: a {option: SHA-256} dict."""
    options = {action.dest: action for action in parser._actions} if parser else {}
    for name in names:
        value, action = saved.get(name), options.get(name)
        fits = preset.get(name) is None if value is None else \
            action is None or _could_give(action, value)
        if not fits:
            raise InputError(message(f"{source}: settings: --{name.replace('_', '-')}",
                                     "a value the option takes", repr(value)[:80]))
    digests = saved.get("data_sha256") or {}
    if not isinstance(digests, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                for k, v in digests.items()):
        raise InputError(message(f"{source}: settings: data_sha256", "a dict of SHA-256 "
                                 "digests by option", repr(digests)[:80]))


def _could_give(action, value):
    """True if the option of `action` could have given `value` on a command line."""
    if action.nargs == 0:                                    # a flag: True or False
        return isinstance(value, bool)
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return False
    if action.choices is not None and value not in action.choices:
        return False
    if action.type is None:
        return isinstance(value, str)
    try:
        return action.type(str(value)) == value
    except (argparse.ArgumentTypeError, ValueError, TypeError):
        return False


def config_from(cls, settings, **extra):
    """cls(**the settings named as its fields); an error names the option, not the field."""
    names = {f.name for f in fields(cls)}
    values = {k: v for k, v in settings.items() if k in names and v is not None}
    try:
        return cls(**{**values, **extra})
    except InputError as err:
        raise InputError(option_names(str(err), names)) from None


def option_names(text, names):
    """'warmup: expected ...' -> '--warmup: expected ...' when `warmup` is an option's field."""
    head, sep, rest = text.partition(":")
    if sep and head in names:
        return f"--{head.replace('_', '-')}:{rest}"
    return text
