"""Command line: `python -m numpy_transformer COMMAND --help`.

    train       train an encoder-decoder on a built-in task or a parallel corpus   (train.py)
    train-lm    train a character-level GPT on a text file                          (lm.py)
    generate    continue a prompt with a trained GPT                                (lm.py)
    evaluate    score a checkpoint on held-out data                                 (evaluate.py)
    translate   run a trained encoder-decoder on some text                          (evaluate.py)
    average     average the weights of several checkpoints of one run              (average.py)
    gradcheck   check every layer's backward against finite differences            (tools.py)
    figures     write the key figures (positional encoding, masks, attention maps)  (tools.py)
    data        download tiny Shakespeare or Multi30k, checked against SHA-256      (data.py)
    lessons     copy the Jupyter lessons out, or build their website (--html DIR)   (lessons.py)
    assignment  make a student copy with backward passes to write, and grade it    (assignment.py)

Options shared by several commands live in options.py, and what the two
training commands share in run.py. Exit status: 0 done, 2 bad input (an
`InputError` or an OS error such as a missing file: a one-line `error: ...`),
1 a diverged run, a grade below full marks, or a bug in the package (reported
as one, never disguised as bad input), 130/143 a command stopped by Ctrl-C or
SIGTERM (`interrupted`/`terminated`, its temporary files removed; a training run saves a
checkpoint first, and SIGHUP stops it as SIGTERM does), 141 a closed output. `--debug`
shows the traceback of any error.
"""

import sys

from ..version import __version__
from ..errors import InputError, TrainingDiverged
from ..training.signals import EXIT_STATUS, silence_stdout
from ..system.files import STDOUT
from ..system.interrupts import interrupted
from .config_file import sources
from .data_files import as_typed
from .options import Parser, option_names, path_option, with_files


def build_parser(command=None):
    """The whole command line; the course's part names are loaded only when `command` is
    `assignment` (so that `train` imports no course module)."""
    from . import assignment, average, data, evaluate, lessons, lm, tools, train
    parser = Parser(prog="python -m numpy_transformer",
                    description="A NumPy Transformer with hand-written backward passes.")
    parser.add_argument("--version", action="version", version=f"numpy_transformer "
                        f"{__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    train.add_parser(commands)
    lm.add_parsers(commands)
    evaluate.add_parsers(commands)
    average.add_parser(commands)
    tools.add_parsers(commands)
    data.add_parsers(commands)
    lessons.add_parsers(commands)
    assignment.add_subcommand(commands, list_parts=command == "assignment")
    for sub in commands.choices.values():      # its errors name its options (_report)
        sub.set_defaults(command_parser=sub)
    return parser


def _out_of_device_memory(err):
    """CUDA's own out-of-memory error (CuPy's pool raises a MemoryError instead): a failed
    cudaMalloc, as when the GPU is full or CUDA cannot reserve its address space."""
    return type(err).__name__ == "CUDARuntimeError" and "cudaErrorMemoryAllocation" in str(err)


def _one_line(err):
    return " ".join(str(err).split()) or type(err).__name__


def _os_error(err):
    """'FILE: reason' for an OS error that names its file, else its message."""
    if getattr(err, "filename", None) is not None and err.strerror:
        return f"{err.filename}: {err.strerror}"
    return _one_line(err)


def main(argv=None):
    """Run one command; returns the exit status (see the module's docstring)."""
    words = sys.argv[1:] if argv is None else [str(a) for a in argv]
    parser = build_parser(next((w for w in words if not w.startswith("-")), None))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit:          # --help (0) or a usage error (2): already printed
        return exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 2)
    if getattr(args, "run", None) is None:
        parser.print_help()
        return 2
    from ..system.threads import set_num_threads
    set_num_threads(getattr(args, "threads", 1))     # one where it has no --threads
    try:
        return args.run(args)
    except Exception as err:
        if args.debug:
            raise
        return _report(err, getattr(args, "command_parser", None), sources(args), args)
    except KeyboardInterrupt as err:        # Ctrl-C, or SIGTERM (system/interrupts.py)
        if args.debug:
            raise
        return interrupted(err)


def stdout_flushed(status):
    """`status`, once standard output is flushed (a failure at exit would be a raw
    "Exception ignored" and exit 120): a full one is an error that names it."""
    try:
        sys.stdout.flush()
    except OSError as err:
        return _report(err)
    return status


def _diverged_advice(err, args):
    """' Continue ...: COMMAND', the command that resumes a diverged run from its last good
    checkpoint with half its --lr (a resume takes a new --lr, --warmup, --clip-norm), or
    that starts it again; '' when there is no rate to halve."""
    from .resuming import COMMANDS, continue_command
    lr, kinds = getattr(err, "lr", None), {v: k for k, v in COMMANDS.items()}
    kind = kinds.get(getattr(args, "command", None))
    if not lr or kind is None:
        return ""
    if getattr(err, "checkpoint", None):
        return (f" Continue from it with a smaller rate: "
                f"{continue_command(kind, err.checkpoint, '--lr', f'{lr / 2:g}')}")
    return f" Start it again with a smaller rate: the same command with --lr {lr / 2:g} " \
        f"--overwrite"


def _report(err, parser=None, files=None, args=None):
    """Print one error line (two for a bug); return the exit status. An InputError naming a
    parameter (an OSError: one in backquotes) names the option of `parser` (the command's)
    that sets it instead, and the --config file its value came from (`files`: {dest: file});
    an OS error about the value of an option (`args`) names the option, and an error about
    the model (`err.about`: "checkpoint") the option's file."""
    if isinstance(err, BrokenPipeError):             # the reader of our output went away
        silence_stdout()
        return EXIT_STATUS["closed output"]
    if isinstance(err, TrainingDiverged):            # options named as typed: `lr` -> --lr
        text = option_names(_one_line(err), parser)
        print(f"error: {as_typed(text)}{_diverged_advice(err, args)}", file=sys.stderr)
        return 1
    if isinstance(err, InputError):              # data paths shown as typed (data_files.py)
        text = as_typed(with_files(option_names(_one_line(err), parser), parser, files))
        if getattr(err, "about", None) and getattr(args, err.about, None):
            text = f"{err.about} {getattr(args, err.about)}: {text}"   # decoding.NotFinite
        print(f"error: {text}", file=sys.stderr)
        return 2
    if isinstance(err, OSError):
        if err.filename == STDOUT:                  # full: nothing more is printed
            silence_stdout()
        text = path_option(option_names(_os_error(err), parser, head=False), err, args,
                           parser)
        print(f"error: {as_typed(with_files(text, parser, files))}", file=sys.stderr)
        return 2
    if isinstance(err, MemoryError) or _out_of_device_memory(err):
        where = "GPU memory" if type(err).__module__.startswith("cupy") else "memory"
        print(f"error: out of {where}; try smaller sizes (rerun with --debug for the "
              "traceback)", file=sys.stderr)
        return 1
    print(f"internal error: {type(err).__name__}: {_one_line(err)}\nThis is a bug in "
          f"numpy_transformer {__version__}; rerun with --debug for the traceback and please "
          f"report it.", file=sys.stderr)
    return 1
