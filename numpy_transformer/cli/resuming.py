"""Resuming a run from the command line (`train --resume CKPT`, `train-lm --resume CKPT`).

A resumed run takes the settings saved in its checkpoint, so `--resume CKPT` alone
continues any run. Of the options given with it, the RESUMABLE ones change the run, and
so do data files given anew where they moved (each checked against its recorded digest:
data_files.py); the others are ignored, with a note. The RATES (`--lr`, `--warmup`,
`--clip-norm`) change it too, with a note that says so: a run that diverged continues from
its last good checkpoint with a smaller rate, as its error advises. An average of checkpoints, a run of
the other command and a finished run are refused, each with the command to type instead:
`continue_command`, also said when a run stops early.
"""

import os
import shlex

from ..checkpoint import KINDS, load_checkpoint, run_kind
from ..errors import InputError
from ..training.mpi_world import launched_size
from ..validation import message
from .config_file import sources
from .configs import saved_settings
from .data_files import FILES, find_data

RESUMABLE = ("steps", "out", "figures", "eval_every", "checkpoint_every", "log_every",
             "keep_last")
RATES = ("lr", "warmup", "clip_norm")        # taken too, said in a note
COMMANDS = {"seq2seq": "train", "lm": "train-lm"}


def resumed_settings(args, kind, names, explicit):
    """(settings, Checkpoint) of `--resume CKPT`: the checkpoint's, with the RESUMABLE options
    given (`explicit`) over them; the others given are ignored, with a note."""
    ckpt = load_checkpoint(args.resume)
    found = run_kind(ckpt)
    if found != kind:
        raise InputError(message("--resume", KINDS[kind], f"{args.resume}, {KINDS[found]}; "
                                 f"continue it with: {continue_command(found, args.resume)}"))
    refuse_average(args.resume, ckpt, kind)
    saved = saved_settings(ckpt, args.resume)
    ignored = sorted(k for k in explicit if k not in RESUMABLE + RATES + FILES
                     and explicit[k] != saved.get(k))
    files = sources(args)               # a value from a --config file is named with it
    if ignored:
        print(f"note: resuming with the checkpoint's settings; ignoring "
              f"{', '.join(ignored_option(k, files) for k in ignored)}")
    changed = [k for k in RATES if k in explicit and explicit[k] != saved.get(k)]
    if changed:
        print("note: resuming with a new " + ", ".join(
            f"{ignored_option(k, files)} {explicit[k]:g} (was {saved.get(k)})"
            if explicit[k] is not None else f"{ignored_option(k, files)} off"
            for k in changed) + "; the weights and the optimizer's state are kept")
    kept = {k: v for k, v in explicit.items() if k in RESUMABLE + RATES}
    settings = {**saved, "out": os.path.dirname(args.resume) or ".", **kept}   # as typed
    step = int(ckpt.metadata.get("step", 0))
    if step >= settings["steps"] and "steps" in kept:     # not "finished (step 194 of 50)"
        more = () if step < saved.get("steps", 0) else ("--steps", 2 * step)
        raise InputError(message("--steps", f"more than {step}, the step {args.resume} "
                                 f"reached (the run trains up to --steps)", settings["steps"])
                         + f"; nothing to train: continue it with "
                         f"{continue_command(kind, args.resume, *more)}")
    if step >= settings["steps"]:
        raise InputError(f"--resume: the run in {args.resume} is finished (step {step} of "
                         f"{settings['steps']}); to train it further, give a larger --steps: "
                         f"{continue_command(kind, args.resume, '--steps', 2 * step)}")
    settings["no_figures"] = figures_off(args, saved, explicit)
    find_data(settings, explicit, args.resume, COMMANDS[kind])
    return settings, ckpt


def refuse_average(path, ckpt, kind):
    """An average (written by `average`) has no optimizer or data state: say what to do."""
    averaged = ckpt.metadata.get("averaged_from")
    if not averaged:
        return
    use = "generate" if kind == "lm" else "evaluate"
    last = os.path.join(os.path.dirname(str(averaged[-1])), "last.npz")
    run = continue_command(kind, last) if os.path.isfile(last) else "--resume with the " \
        "run's last.npz"
    raise InputError(f"--resume: {path} is an average of checkpoints (written by `average`), "
                     f"which cannot be resumed (it holds no optimizer or data state); use it "
                     f"with: python -m numpy_transformer {use} --checkpoint "
                     f"{shlex.quote(str(path))}, or continue the run itself: {run}")


def ignored_option(name, files):
    """'--d-model', or '--d-model (from configs/x.toml)' for a value from a --config file."""
    option = "--" + name.replace("_", "-")
    return f"{option} (from {files[name]})" if name in files else option


def figures_off(args, saved, explicit):
    """A resumed run draws no figures if it started with --no-figures (unless given
    --figures DIR now) or is given --no-figures now."""
    return bool(args.no_figures or saved.get("no_figures") and "figures" not in explicit)


def continue_command(kind, path, *more):
    """The command line, quoted for a shell, that continues a run of `kind` from the
    checkpoint `path` (with `more` options; under `mpiexec -n N` when launched so)."""
    return (f"{launcher()}python -m numpy_transformer {COMMANDS[kind]} "
            + shlex.join(["--resume", str(path), *map(str, more)]))


def launcher():
    """'mpiexec -n N ' when an MPI launcher started N > 1 processes, else ''."""
    size = launched_size()
    return f"mpiexec -n {size} " if size > 1 else ""
