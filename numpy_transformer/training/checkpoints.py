"""The Trainer's run folder, its checkpoints and resuming.

    checkpointer = Checkpointer("runs/reverse", overwrite=False,
                                tokenizers={"src": tok, "tgt": tok}, metadata={"kind": ...})
    trainer = Trainer(model, stream, config, checkpointer=checkpointer)

A Checkpointer is the part of a Trainer (loop.py) that writes the run folder, and holds
what goes into it besides the Trainer's own state:

    out, overwrite    the run folder (None: write nothing) and whether an earlier run in
                      it may be replaced
    tokenizers        {"src": tok, "tgt": tok} or {"text": tok}: <name>_tokenizer.json,
                      and in every checkpoint
    metadata          more JSON values stored in every checkpoint and in config.json
    resume_command    resume_command(path) -> how to continue from the checkpoint `path`
                      (said when a run stops early); by default trainer.resume(path)

The Trainer calls

    claim(trainer)          lock `out`, write the tokenizers and config.json; a run resumed
                            from an earlier checkpoint may not replace its later ones; True
                            for a branch (resumed into another folder): it starts its own
                            best, so its first evaluation writes out/best.npz
    save(trainer, name)     out/<name> + history.json; refuses non-finite weights (and
                            out/step-<N>.npz of the last `keep_last` saves of last.npz);
                            a write that fails (a full disk) names its file and the last
                            good checkpoint
    save_history(history)   out/history.json alone (a run that diverged)
    resumed(path, step)     the run continues from the checkpoint `path` of `step`
    diverged(step, what, config)  the TrainingDiverged to raise, naming the last good
                            checkpoint and what to change
    release()               unlock `out` (fit() does, when it returns)

and reads `last`: (path, step) of the last good last.npz, or None. With out=None it
writes nothing. `saved_metadata(trainer)` is what a checkpoint keeps besides the weights and
the optimizer: the Trainer's run state whole (state.py), the data stream's position, the
dropout generators' states, the settings. `restore(trainer, checkpoint)` loads a
checkpoint's weights and those states into the Trainer's parts and returns its run state.
"""

import contextlib
import os
import shutil
from dataclasses import asdict

from ..backend import xp
from ..checkpoint import load_checkpoint, save_checkpoint
from ..errors import InputError, TrainingDiverged
from ..validation import check_bool, message
from .dropout_generators import generator_states, load_generator_states
from .history import History
from .run_folder import RunFolder, step_files
from ..optim import WarmupCosineSchedule
from .state import RunState


class Checkpointer:
    def __init__(self, out=None, overwrite=False, *, tokenizers=None, metadata=None,
                 resume_command=None):
        check_bool(overwrite, "overwrite")
        self.out, self.overwrite = out, overwrite
        self.tokenizers, self.metadata = dict(tokenizers or {}), dict(metadata or {})
        self.resume_command = resume_command or (lambda path: f"trainer.resume({path!r})")
        self.last = None             # (path, step) of the last good last.npz
        self.last_sessions = None    # the sessions it records (fit() returns them)
        self.folder = None           # the RunFolder, locked while a fit() runs
        self.claimed = False         # claimed before: a later fit() continues in it
        self.resumed_from = None     # the folder of the checkpoint the run resumed from

    def claim(self, trainer):
        """Lock `out` for this run (no run replaced by accident); write tokenizers, config.json.
        Held until `release`; claiming it again meanwhile does nothing. True when the run
        is a branch (resumed from a checkpoint of another folder)."""
        if self.out is None or self.folder is not None:
            return False
        here = os.path.realpath(self.out)
        in_place = self.resumed_from == here and not self.claimed   # resumed from here
        branch = self.resumed_from not in (None, here) and not self.claimed
        self.folder = RunFolder(self.out).claim(resuming=self.claimed or in_place,
                                                overwrite=self.overwrite,
                                                step=trainer.state.step if in_place else None)
        self.claimed = True
        for name, tokenizer in self.tokenizers.items():
            tokenizer.save(os.path.join(self.out, f"{name}_tokenizer.json"))
        self.folder.write_json("config.json", {
            "model_class": type(trainer.model).__name__, "model": trainer.model.config.to_dict(),
            "train": asdict(trainer.config), "run_id": trainer.state.run_id, **self.metadata})
        return branch

    def release(self):
        if self.folder is not None:
            self.folder.release()
            self.folder = None

    def save(self, trainer, name="last.npz"):
        """Write out/<name> and out/history.json; returns the path (None without `out`).

        Refuses (TrainingDiverged) when a weight is NaN or infinite, so every
        checkpoint on disk is a good one.
        """
        if self.out is None:
            return None
        model = trainer.model
        if not all(bool(xp.isfinite(p).all()) for _, p, _ in model.named_parameters()):
            raise self.diverged(trainer.state.step, "a weight became NaN or infinite",
                                trainer.config)
        path, metadata = os.path.join(self.out, name), self.saved_metadata(trainer)
        with self._writing(path):
            save_checkpoint(path, model, trainer.optimizer, **metadata)
        self.save_history(trainer.state.history)
        if name == "last.npz":
            self.last, self.last_sessions = (path, trainer.state.step), metadata["sessions"]
            if trainer.config.keep_last:
                self._keep_last(trainer, metadata, trainer.config.keep_last)
        return path

    def save_history(self, history):
        if self.out is not None:
            path = os.path.join(self.out, "history.json")
            with self._writing(path):
                history.save(path)

    def _keep_last(self, trainer, metadata, K):
        """out/step-<step>.npz too; of those, keep the K latest up to this step.

        Files of later steps are left by a run resumed from an earlier checkpoint: like
        its last.npz, they belong to the future this run rewrites, and go."""
        step = trainer.state.step
        path = os.path.join(self.out, f"step-{step}.npz")
        with self._writing(path):
            save_checkpoint(path, trainer.model, trainer.optimizer, **metadata)
        saved = step_files(self.out)                    # [(step, path)], by step
        done = [path for n, path in saved if n <= step]
        for path in done[:-K] + [path for n, path in saved if n > step]:
            os.remove(path)

    def resumed(self, path, step):
        """The run continues from the checkpoint `path` (None: one loaded elsewhere)."""
        if path is not None:
            self.resumed_from = os.path.dirname(os.path.realpath(path))
            self.last = (str(path), step)

    def kept(self):
        """Which checkpoint is the last good one, in words."""
        if self.last is None:
            return "no checkpoint had been written yet"
        path, step = self.last
        return f"the last good checkpoint is {path} (step {step})"

    def diverged(self, step, what, config=None):
        """TrainingDiverged: the run stopped at `step` because of `what`; it names the last
        good checkpoint (its attribute `checkpoint`, None if none) and what to change of the
        TrainConfig `config` (its `lr` the attribute `lr`): a smaller clip_norm where
        clipping is on already."""
        clip = getattr(config, "clip_norm", None)
        clipping = f"a smaller `clip_norm` (now {clip:g})" if clip else \
            "gradient clipping (`clip_norm`)"
        err = TrainingDiverged(f"training stopped at step {step}: {what}; {self.kept()}. Try "
                               f"a smaller `lr`, a longer `warmup` or {clipping}.")
        err.checkpoint = self.last[0] if self.last else None
        err.lr = getattr(config, "lr", None)
        return err

    def saved_metadata(self, trainer):
        """What a checkpoint keeps besides weights and optimizer: enough to resume exactly."""
        return {**self.metadata, **trainer.state.saved(trainer.config.best_metric),
                "train_config": asdict(trainer.config),
                "data_state": trainer.stream.state_dict(),
                "dropout_states": generator_states(trainer.model),
                "schedule_steps": getattr(trainer.scheduler.schedule, "total_steps", None),
                "tokenizers": {k: t.to_dict() for k, t in self.tokenizers.items()}}

    @contextlib.contextmanager
    def _writing(self, path):
        """An OSError while writing `path` (a full disk) names it and the last good checkpoint
        (the file being replaced is untouched: saves are atomic)."""
        try:
            yield
        except OSError as err:
            reason = err.strerror or " ".join(str(err).split())
            raise OSError(err.errno, f"could not write it ({reason}); {self.kept()}",
                          path) from err


def restore(trainer, checkpoint):
    """Load a checkpoint (a path or a loaded Checkpoint written by a Trainer) into the
    Trainer's parts: weights, optimizer, lr schedule, data position, dropout generators.
    Returns (its path or None, the run state it saved: step, best value, time, sessions,
    run id and, from the checkpoint's folder, the history up to its step) for the Trainer
    to take whole (Trainer.resume)."""
    path = checkpoint if isinstance(checkpoint, (str, os.PathLike)) else None
    ckpt = load_checkpoint(path) if path is not None else checkpoint
    meta = ckpt.metadata
    path = path if path is not None else getattr(ckpt, "path", None)
    if "data_state" not in meta or ckpt.optimizer_state is None:
        raise InputError(message(f"checkpoint {path or ''}".strip(), "a checkpoint written "
                                 "by a Trainer (with optimizer and data state)",
                                 "a bare model checkpoint"))
    with _restoring(path, "model"):
        trainer.model.load_state_dict(ckpt.model.state_dict())
    with _restoring(path, "optimizer"):
        trainer.optimizer.load_state_dict(ckpt.optimizer_state)
    with _restoring(path, "metadata.data_state"):
        trainer.stream.load_state_dict(meta["data_state"])
    with _restoring(path, "metadata.dropout_states"):
        load_generator_states(trainer.model, meta.get("dropout_states", []))
    with _restoring(path, "metadata.schedule_steps"):
        note = continue_schedule(trainer, meta)
    trainer.scheduler.step()                        # the lr of the next update
    if note:
        trainer.write(note)
    history = None if path is None else _saved_history(path, int(meta.get("step", 0)),
                                                       trainer.write)
    return path, RunState.resumed(meta, history, trainer.state)


def _saved_history(path, step, write):
    """The curves up to `step` of history.json beside the checkpoint `path`. A missing one,
    or one that cannot be read (copied aside as history.json.damaged first), restarts the
    history at `step`, said in a line (None then)."""
    saved = os.path.join(os.path.dirname(os.path.realpath(path)), "history.json")
    if not os.path.lexists(saved):
        write(f"note: {saved} is missing; the history (history.json, the loss curves) "
              f"restarts at step {step}")
        return None
    try:
        return History.load(saved).truncate(step)
    except InputError as err:
        kept = saved + ".damaged"
        try:                          # a regular file only: copying a FIFO would block
            if os.path.isfile(saved) and not os.path.lexists(kept):
                shutil.copyfile(saved, kept)
                kept = f"; a copy is kept as {kept}"
            else:
                kept = ""
        except OSError:
            kept = ""
        write(f"note: {saved} cannot be read ({' '.join(str(err).split())[:200]}){kept}; "
              f"the history restarts at step {step}")
        return None


def continue_schedule(trainer, meta):
    """Keep the lr schedule of a run resumed with another `steps` from jumping up; a line
    saying what happens to it (None when `steps` is the checkpoint's).

    The warm-up + cosine schedule depends on the total: a longer one would put step t back
    near the peak. So the cosine keeps the horizon it had (`schedule_steps`, saved in every
    checkpoint): it ends there at its floor min_lr, and the steps added after it train at
    that floor. A shorter run brings the horizon in (the lr can only go down). Noam's
    schedule does not depend on the total: it continues unchanged."""
    steps, saved = trainer.config.steps, meta.get("train_config", {}).get("steps")
    schedule = trainer.scheduler.schedule
    horizon = meta.get("schedule_steps") or saved
    if not isinstance(schedule, WarmupCosineSchedule) or isinstance(horizon, bool) \
            or not isinstance(horizon, int):
        return None if steps == saved else (
            f"schedule: {trainer.config.schedule} does not depend on the number of steps; it "
            f"continues unchanged to step {steps}")
    if steps > horizon:
        trainer.scheduler.schedule = WarmupCosineSchedule(
            schedule.peak_lr, horizon, schedule.warmup_steps, schedule.min_lr)
    if steps == saved:
        return None
    if steps <= horizon:
        return (f"schedule: the cosine decay now ends at step {steps} (was {horizon}), at its "
                f"floor lr {schedule.min_lr:.3g}")
    return (f"schedule: the cosine decay keeps its horizon of {horizon} steps (a longer one "
            f"would raise the lr again); steps {horizon + 1}-{steps} train at its floor lr "
            f"{schedule.min_lr:.3g}")


@contextlib.contextmanager
def _restoring(path, field):
    """A resume state the objects cannot take (a crafted or damaged checkpoint) is an
    InputError naming the checkpoint and its field, never a raw KeyError or TypeError.
    (The header's types are checked on reading, header.py; these are their contents.)"""
    where = f"checkpoint {path}: {field}"
    try:
        yield
    except InputError as err:
        raise InputError(f"{where}: {err}") from None
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError) as err:
        raise InputError(message(where, "the state a Trainer saves",
                                 f"{type(err).__name__}: {str(err)[:200]}")) from None
