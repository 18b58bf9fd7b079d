"""What `train` and `train-lm` share: settings, resuming, the Trainer, figures, the ending.

Settings come from, in increasing priority: the command's presets (defaults,
then the task's or the corpus's), `--quick`, then the options given (a
`--config FILE` gives options too, under those typed: config_file.py sets the
file's values on the parsed options where none was typed). The
resolved settings (named as the configurations' fields) become the typed
configurations once (configs.py), which the checkpoints save. A `--resume CKPT`
reuses the configurations saved in the checkpoint (resuming.py: only its RESUMABLE
settings may change), so `--resume CKPT` alone continues any run.

Under `mpiexec -n N` both commands train data-parallel (training/distributed.py):
every rank runs the command; rank 0 alone prints, claims the run folder, writes
and draws, and the other ranks stop once training is done.
"""

import os
import shlex
import sys
import time
from functools import partial

from ..system.sizes import check_fits, training_bytes
from ..training import Checkpointer, TrainConfig, Trainer
from ..training.distributed import DataParallelTrainer
from ..training.mpi_world import launched_size, on_root, silence, world
from ..training.signals import EXIT_STATUS
from ..training.tensorboard import TensorBoardLog, close_logs
from .data_files import as_typed, record_digests
from .config_file import sources
from .configs import config_from
from .outputs import check_figures_folder, check_name
from .resuming import continue_command, launcher, resumed_settings
from .sessions import session_line


def resolve_settings(args, kind, names, presets, quick):
    """(settings, Checkpoint to resume or None): presets < --quick < the options given."""
    explicit = {k: getattr(args, k) for k in names if getattr(args, k, None) is not None}
    for name in ("out", "figures"):     # '' must not quietly mean the default
        if name in explicit:
            check_name(f"--{name}", explicit[name])
    if args.resume:
        return resumed_settings(args, kind, names, explicit)    # resuming.py
    settings = dict.fromkeys(names)
    for preset in presets + ([quick] if args.quick else []):
        settings.update(preset)
    settings.update(explicit)
    settings["no_figures"] = bool(args.no_figures)
    record_digests(settings)            # absolute paths, and the files' SHA-256 digests
    typed = sources(args)               # {setting: the --config file it came from}
    if "warmup" not in explicit or "warmup" in typed and "steps" not in typed:
        # the default warm-up scales with --steps, and so does a file's under a --steps
        # typed on the command line: at most a tenth of the steps
        settings["warmup"] = min(settings["warmup"], settings["steps"] // 10)
        if settings["schedule"] == "noam":
            settings["warmup"] = max(1, settings["warmup"])
    if settings.get("figures") and not args.no_figures:     # refused now, not after training
        check_figures_folder(settings["figures"], overwrite=args.overwrite)
    return settings, None


def check_memory(config, settings, sequence_length):
    """Refuse model settings that cannot fit in memory, before building anything."""
    check_fits(training_bytes(config, settings["batch_size"], sequence_length),
               "model settings", "choose a smaller --d-model, --d-ff, --num-layers, "
               "--max-len or --batch-size")


STARTED = {}     # when the command started (join_ranks): its session's wall time counts


def join_ranks():
    """Under an MPI launcher, mute every rank but 0 (call it before printing anything);
    start the session's clock."""
    STARTED["at"] = time.perf_counter()
    comm = world()
    if comm is not None and comm.Get_rank() != 0:
        silence()


def make_trainer(args, settings, model, stream, ckpt, evaluate, best_metric, **written):
    """A Trainer with the run's TrainConfig (its best metric `best_metric`), writing into
    settings["out"] what `written` names besides (Checkpointer's tokenizers, metadata,
    resume_command); resumed if ckpt. Under MPI, a DataParallelTrainer for this rank."""
    config = config_from(TrainConfig, settings, best_metric=best_metric,
                         progress=False if args.no_progress else None)
    comm = world()
    kind = Trainer if comm is None else partial(DataParallelTrainer, comm=comm)
    checkpointer = Checkpointer(settings["out"], args.overwrite, **written)
    trainer = kind(model, stream, config, evaluate=evaluate, checkpointer=checkpointer)
    state = trainer.state                           # the run state (training/state.py):
    state.command = provenance()["command"]         # this session's command, and its time
    state.clock.total = time.perf_counter() - STARTED.get("at", time.perf_counter())
    if ckpt is not None:          # the checkpoint's run state, with this session's command
        trainer.resume(ckpt)      # and clock (sessions.py)
    if getattr(args, "tensorboard", False) and trainer.rank == 0:   # before the folder is
        trainer.callbacks.append(TensorBoardLog(                       # claimed
            settings["out"], trainer.step, hparams=settings, metrics=[best_metric],
            samples=partial(decoded_samples, written.get("tokenizers") or {}, evaluate)))
    if comm is None:
        trainer.claim_out()
        return trainer
    on_root(comm, trainer.claim_out)         # without the run folder, no rank may start
    B, N = settings["batch_size"], comm.Get_size()
    share = f"{B // N}" if B % N == 0 else f"{B // N} or {B // N + 1}"
    if settings.get("batch_tokens"):                # rows vary: a rank may get none
        print(f"data-parallel on {N} MPI ranks: each takes 1/{N} of the rows of every batch")
    else:
        print(f"data-parallel on {N} MPI ranks: each takes {share} of the {B} sequences of "
              f"every batch")
    return trainer


def decoded_samples(tokenizers, evaluate, trainer, count=3):
    """A few samples of the model as it is now, in markdown (the TensorBoard log's text at
    each evaluation): a language model's continuation of a newline (seed 0); a translation
    model's first held-out predictions, beside their sources and targets."""
    from ..decoding import generate_text
    if "text" in tokenizers:
        text = generate_text(trainer.model, tokenizers["text"], "\n", 200, temperature=0.8,
                             seed=0)
        return "    " + text.replace("\n", "\n    ")         # a code block: the text as drawn
    src, tgt = tokenizers["src"], tokenizers["tgt"]
    cell = lambda text: text.replace("|", "\\|")
    rows = [f"| {cell(src.decode(s))} | {cell(tgt.decode(t))} | {cell(tgt.decode(p))} |"
            for (s, t), p in zip(evaluate.keywords["pairs"][:count],
                                 (trainer.last_eval or {}).get("predictions", [])[:count])]
    return "\n".join(["| source | target | prediction |", "| --- | --- | --- |", *rows])


def train(args, settings, model, stream, ckpt, what, **options):
    """Make the Trainer (make_trainer's `options`), say what is trained, train: (trainer,
    result, exit status), the status None when this process goes on to report (it
    finished; MPI rank 0 or no MPI)."""
    kind = options["metadata"]["kind"]
    trainer = make_trainer(args, settings, model, stream, ckpt, **options,
                           resume_command=partial(continue_command, kind))
    resuming = f" (resuming at step {trainer.step})" if ckpt is not None else ""
    print(as_typed(f"training {what} ({model.num_parameters():,} parameters) for "
                   f"{settings['steps']} steps{resuming}; run folder {settings['out']}"))
    result = trainer.fit()
    close_logs(trainer)
    if result.interrupted:
        return trainer, result, interrupted_status(result)
    return trainer, result, (0 if quiet_rank(trainer) else None)


def quiet_rank(trainer):
    """True on the MPI ranks other than 0: they stop after training, rank 0 reports."""
    return getattr(trainer, "rank", 0) != 0


def interrupted_status(result):
    """The exit status of a run that stopped early (130 Ctrl-C, 143 SIGTERM or SIGHUP,
    141 pipe)."""
    return EXIT_STATUS.get(result.stop_reason, 130)


def figures_folder(settings):
    return settings.get("figures") or os.path.join(settings["out"], "figures")


def run_name(settings):
    """A short name of the run for figure titles: its task, corpus or text, and folder."""
    if settings.get("text"):
        what = f"character LM on {os.path.basename(settings['text'])}"
    elif settings.get("task"):
        what = f"{settings['task']} task"
    else:
        corpus = settings.get("tsv") or settings.get("src") or ""
        what = f"translation, {os.path.basename(corpus)}"
    return f"{what} ({settings['out']})"


def draw_figures(args, settings, trainer, **drawing):
    """Draw the run's figures (skipped, with a note, when matplotlib is missing)."""
    from ..training.plotting import save_figures
    if settings.get("no_figures"):
        return []
    try:
        return save_figures(figures_folder(settings), trainer.history, model=trainer.model,
                            name=run_name(settings), label_smoothing=settings["label_smoothing"],
                            **drawing)
    except ImportError as err:
        print(f"figures skipped: {err}")
        return []


def write_results(settings, trainer, result, **results):
    """results.json in the run folder: what the run reached, in how long, started how.

    `sessions` lists every session of the run as its last checkpoint records them
    (`result.sessions`, fit()'s): its command, steps from-to and seconds (from the
    command's start to its last checkpoint: sessions.py); wall_seconds sums them,
    earlier_sessions_seconds sums all but this one, seconds_per_step is this session's.

    The README's numbers are copied from these files (figures/*.json keeps one per
    README run, and tests/cli/test_readme_results.py ties the two together)."""
    import platform
    from ..system.files import write_json
    state = trainer.state                               # training/state.py
    sessions = result.sessions
    record = {**provenance(), "steps": state.step, "parameters": trainer.model.num_parameters(),
              "wall_seconds": round(sum(s["seconds"] for s in sessions), 1),
              "earlier_sessions_seconds": round(sum(s["seconds"] for s in sessions[:-1]), 1),
              "seconds_per_step": round(sessions[-1]["seconds"] / max(
                  1, sessions[-1]["to"] - sessions[-1]["from"]), 4),
              "sessions": sessions,
              "best_step": state.best_step,               # the step best.npz holds
              "peak_memory_mib": peak_memory_mib(),
              "machine": {"cpus": os.cpu_count(), "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
                          "mpi_ranks": launched_size(), "python": platform.python_version()},
              **results}
    return write_json(os.path.join(settings["out"], "results.json"), record)


def steps_line(result):
    """'1000 steps in 40 s (0.040 s/step; 4000 steps in 2 sessions, 160 s in all)'."""
    return session_line(result.sessions, result.step)


def provenance():
    """How a result was made: the command as typed (with its `mpiexec -n N` under MPI),
    today's date, the package version."""
    import datetime
    from ..version import __version__
    return {"command": f"{launcher()}python -m numpy_transformer " + shlex.join(sys.argv[1:]),
            "date": datetime.date.today().isoformat(), "version": __version__}


def peak_memory_mib():
    """The process's peak resident memory in MiB (None where the OS does not say)."""
    try:
        import resource
    except ImportError:                      # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (2**20 if sys.platform == "darwin" else 2**10), 1)   # bytes / KiB


def best_text(metric, value):
    """'exact match 99.8%', 'BLEU 27.31', 'held-out loss 1.2345': a best value, named."""
    if metric in ("exact_match", "token_accuracy"):
        return f"{metric.replace('_', ' ')} {100 * value:.1f}%"
    if metric == "bleu":
        return f"BLEU {value:.2f}"
    return f"held-out {metric.replace('_', ' ')} {value:.4f}"


def print_ending(settings, figures, next_command, trainer=None):
    """Where everything is, which step best.npz holds, and the next command to try."""
    out = settings["out"]
    names = [n for n in sorted(os.listdir(out)) if not n.startswith(".") and n != "figures"]
    print(f"saved in {out}/: {', '.join(names)}")
    if trainer is not None and trainer.state.best_step is not None:
        print(f"best.npz: step {trainer.state.best_step} "
              f"({best_text(trainer.config.best_metric, trainer.state.best)})")
    if figures:
        print(f"figures in {os.path.dirname(figures[0])}/: "
              f"{', '.join(os.path.basename(f) for f in figures)}")
    print(f"next:  {next_command}")
