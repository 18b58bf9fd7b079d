"""`translate` on many sentences: each line of a file or of standard input.

    python -m numpy_transformer translate --checkpoint CKPT --input sentences.txt
    cat sentences.txt | python -m numpy_transformer translate --checkpoint CKPT > out.txt

One output line per input line, in input order (an empty line gives an empty line).
The lines are decoded in batches of --batch-size, sorted by length inside windows of
a few batches so that a batch pads little; each window's outputs are written as soon
as it is done, so `| head` sees the first lines early. Greedy decoding of a batch
gives the outputs of decoding each line alone (tests/cli/test_translate_input.py).
Warnings (unknown symbols, inputs longer than the training data) and the progress
bar go to stderr: stdout holds the outputs only. A closed output (`| head -1`) ends
the command quietly (cli/__init__.py: exit status 141, EXIT_STATUS["closed output"]).
"""

import contextlib
import os
import stat
import sys

from ..checkpoint import load_run
from ..data import get_task
from ..errors import InputError
from ..system.files import is_stdout
from ..training.metrics import decode_batches
from ..training.progress import progress_bar
from ..validation import message
from .configs import data_config
from .options import positive_int
from .outputs import check_outputs, overwrite_option

WINDOW = 4                       # batches sorted together before their outputs are written


def add_input_options(p):
    """--input, --output, --batch-size and --overwrite of `translate`."""
    p.add_argument("--input", metavar="FILE",
                   help="translate each line of FILE ('-': standard input, the default when "
                   "no TEXT is given and input is piped); one output line per input line")
    p.add_argument("--output", metavar="FILE",
                   help="write the outputs to FILE (default, or - or /dev/stdout: standard "
                   "output)")
    p.add_argument("--batch-size", type=positive_int, default=64,
                   help="sentences decoded together (default 64)")
    overwrite_option(p)


def run_translate(args):
    """The `translate` command: outputs of TEXT..., or of each line of --input."""
    path = _input_path(args)
    check_outputs({"--output": args.output}, overwrite=args.overwrite, stdout=("--output",),
                  inputs={"--checkpoint": args.checkpoint,        # before the model loads
                          "--input": None if path in (None, "-") else path})
    model, toks, meta = load_run(args.checkpoint, "seq2seq")
    texts = args.texts if path is None else _read_lines(path)
    where = "TEXT" if path is None else "--input line"
    seqs = encode_inputs(toks["src"], texts, where, model.config.max_len, path is None)
    warn_unknown_symbols(toks["src"], texts)
    warn_long_inputs(seqs, where, _longest_trained(meta, args.checkpoint, model))
    if args.alpha != 0.6 and args.beam == 1:
        print("note: --alpha only changes beam search (give --beam 2 or more)", file=sys.stderr)
    with _writer(args.output) as write:
        for lines in _translations(model, toks["tgt"], seqs, args):
            write(lines)
    return 0


def _input_path(args):
    """The file to read lines from ('-': stdin), or None for the TEXT arguments."""
    if args.texts:
        if args.input is not None:
            raise InputError(message("--input", "no TEXT arguments as well (give one or the "
                                     "other)", f"{args.input!r} and {len(args.texts)} TEXT"))
        return None
    if args.input is not None:
        return args.input
    if not _piped_stdin():
        raise InputError("translate needs TEXT, --input FILE, or lines on standard input "
                         "(--input -)")
    return "-"


def _piped_stdin():
    """True if standard input is a pipe or a file (not a terminal, not /dev/null)."""
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode)


def _read_lines(path):
    """The lines of `path` ('-': standard input), UTF-8, without their line ends."""
    if path == "-":
        data = sys.stdin.buffer.read()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise InputError(message("--input -", "UTF-8 text on standard input",
                                     f"a byte {data[err.start]:#04x} at offset {err.start}"))
    else:
        from ..data import load_text
        text = load_text(path, "--input")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()                                   # the end of the last line
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def encode_inputs(tok, texts, where, max_len, refuse_empty):
    """Token ids of each text; an input longer than the model's max_len is refused, an
    empty one (refuse_empty: TEXT arguments) too, else it gives an empty output."""
    seqs = [tok.encode(t) for t in texts]
    for i, seq in enumerate(seqs):
        if not seq and refuse_empty:
            raise InputError(message(f"{where} {i + 1}", "at least one token", repr(texts[i])))
        if len(seq) > max_len:
            raise InputError(message(f"{where} {i + 1}", f"at most {max_len} tokens (the "
                                     f"model's max_len)", f"{len(seq)} tokens"))
    return seqs


def warn_unknown_symbols(tok, texts):
    """One warning on stderr naming the input's symbols (characters, words or subwords)
    outside the model's vocabulary: the model reads them as <unk>."""
    shown = tok.unknown_symbols(texts)
    if shown:
        listed = ", ".join(map(repr, shown[:20])) + (", ..." if len(shown) > 20 else "")
        print(f"warning: {len(shown)} symbol{'s' * (len(shown) > 1)} of the input "
              f"{'are' if len(shown) > 1 else 'is'} not in the model's vocabulary (read as "
              f"<unk>): {listed}", file=sys.stderr)


def _longest_trained(meta, path, model):
    """(longest training input in tokens, what that number is)."""
    data = data_config(meta, path)
    if data is not None and data.task is not None:
        task = get_task(data.task)
        return task.max_src_len, f"the {data.task} task's inputs have at most " \
            f"{task.max_src_len} characters"
    if data is not None and (data.src or data.tsv):
        return data.max_len, f"the run kept training pairs of at most {data.max_len} " \
            f"tokens (its longest input is not recorded)"
    return model.config.max_len, f"the model's max_len is {model.config.max_len} (the " \
        f"checkpoint records no training data)"


def warn_long_inputs(seqs, where, longest):
    """One warning on stderr if inputs are longer than any the model trained on: the
    model then gives confident nonsense."""
    limit, what = longest
    long_ = [i for i, seq in enumerate(seqs) if len(seq) > limit]
    if long_:
        worst = max(long_, key=lambda i: len(seqs[i]))
        print(f"warning: {len(long_)} input{'s' * (len(long_) > 1)} longer than any the model "
              f"was trained on (the longest, {where} {worst + 1}, has {len(seqs[worst])} "
              f"tokens; {what}): expect nonsense", file=sys.stderr)


def _translations(model, tgt_tok, seqs, args):
    """The output lines of `seqs`, window by window in input order (an empty input gives
    an empty line); a progress bar on a terminal when there are several batches."""
    size = args.batch_size * WINDOW
    bar = progress_bar(len(seqs), unit="line", file=sys.stderr) \
        if len(seqs) > args.batch_size else None
    try:
        for start in range(0, len(seqs), size):
            window = seqs[start:start + size]
            full = [i for i, seq in enumerate(window) if seq]
            outs = decode_batches(model, [window[i] for i in full], batch_size=args.batch_size,
                                  max_len=args.max_len, beam_size=args.beam,
                                  length_penalty=args.alpha) if full else []
            lines = [""] * len(window)
            for i, out in zip(full, outs):
                lines[i] = " ".join(tgt_tok.decode(out).splitlines())     # one line each
            if bar is not None:
                bar.update(len(window))
            yield lines
    finally:
        if bar is not None:
            bar.close()


@contextlib.contextmanager
def _writer(path):
    """write(lines): to stdout (flushed each time; `path` None, "-" or "/dev/stdout"), or
    atomically to the file `path`."""
    if path is None or is_stdout(path):
        def write(lines):
            for line in lines:
                sys.stdout.write(line + "\n")
            sys.stdout.flush()
        yield write
        return
    from ..system.files import atomic_write
    with atomic_write(path, "w") as f:
        yield lambda lines: f.writelines(line + "\n" for line in lines)
    print(f"{path}: written", file=sys.stderr)
