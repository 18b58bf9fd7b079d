"""The Trainer's run folder, checkpoints and resuming (a mixin of loop.Trainer).

    save_checkpoint(name)   out/<name> + history.json; refuses non-finite weights
                            (and out/step-<N>.npz of the last `keep_last` saves of last.npz);
                            a write that fails (a full disk) names its file and the last
                            good checkpoint
    claim_out()             lock `out`, write the tokenizers and config.json; a run resumed
                            from an earlier checkpoint may not replace its later ones
    resume(checkpoint)      continue exactly where a checkpoint left off
"""

import contextlib
import os
from dataclasses import asdict

from ..backend import xp
from ..checkpoint import load_checkpoint, save_checkpoint
from ..errors import InputError
from ..validation import message
from .run_folder import RunFolder, step_files
from .state import History, generator_states, load_generator_states


class Checkpoints:
    """What a Trainer (loop.py) does with its run folder; uses its model, optimizer,
    stream, history, config and out."""

    def _metadata(self):
        return {**self.metadata, "step": self.step, "run_id": self.run_id,
                "train_config": asdict(self.config),
                "data_state": self.stream.state_dict(),
                "dropout_states": generator_states(self.model),
                "best": {"metric": self.best_metric, "value": self.best},
                "training_seconds": round(self.training_seconds, 3),
                "tokenizers": {k: t.to_dict() for k, t in self.tokenizers.items()}}

    def save_checkpoint(self, name="last.npz"):
        """Write out/<name> and out/history.json; returns the path (None without `out`).

        Refuses (TrainingDiverged) when a weight is NaN or infinite, so every
        checkpoint on disk is a good one.
        """
        if self.out is None:
            return None
        self._flush()                                # the history up to this step
        if not all(bool(xp.isfinite(p).all()) for _, p, _ in self.model.named_parameters()):
            self._diverged("a weight became NaN or infinite", self.step)
        path = os.path.join(self.out, name)
        with self._writing(path):
            save_checkpoint(path, self.model, self.optimizer, **self._metadata())
        history = os.path.join(self.out, "history.json")
        with self._writing(history):
            self.history.save(history)
        if name == "last.npz":
            self.last_checkpoint = (path, self.step)
            if self.config.keep_last:
                self._keep_last(self.config.keep_last)
        return path

    def _keep_last(self, K):
        """out/step-<step>.npz too; of those, keep the K latest up to this step.

        Files of later steps are left by a run resumed from an earlier checkpoint: like
        its last.npz, they belong to the future this run rewrites, and go."""
        path = os.path.join(self.out, f"step-{self.step}.npz")
        with self._writing(path):
            save_checkpoint(path, self.model, self.optimizer, **self._metadata())
        saved = step_files(self.out)                    # [(step, path)], by step
        done = [path for step, path in saved if step <= self.step]
        for path in done[:-K] + [path for step, path in saved if step > self.step]:
            os.remove(path)

    def kept(self):
        """Which checkpoint is the last good one, in words."""
        if self.last_checkpoint is None:
            return "no checkpoint had been written yet"
        path, step = self.last_checkpoint
        return f"the last good checkpoint is {path} (step {step})"

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

    def claim_out(self):
        """Lock `out` for this run (no run replaced by accident); write tokenizers, config.json.

        fit() does this itself; call it earlier to fail before anything else happens.
        The lock is held until fit() returns."""
        if self.out is None:
            return
        here = os.path.realpath(self.out)
        in_place = self._resumed_from == here and not self._owns_out   # resumed from here
        resuming = self._owns_out or in_place
        self._folder = RunFolder(self.out).claim(resuming=resuming, overwrite=self.overwrite,
                                                 step=self.step if in_place else None)
        self._owns_out = True
        for name, tokenizer in self.tokenizers.items():
            tokenizer.save(os.path.join(self.out, f"{name}_tokenizer.json"))
        self._folder.write_json("config.json", {
            "model_class": type(self.model).__name__, "model": self.model.config.to_dict(),
            "train": asdict(self.config), "run_id": self.run_id, **self.metadata})

    def resume(self, checkpoint):
        """Continue from a checkpoint (a path or a loaded Checkpoint) written by a Trainer."""
        path = checkpoint if isinstance(checkpoint, (str, os.PathLike)) else None
        ckpt = load_checkpoint(path) if path is not None else checkpoint
        meta = ckpt.metadata
        path = path if path is not None else getattr(ckpt, "path", None)
        if "data_state" not in meta or ckpt.optimizer_state is None:
            raise InputError(message(f"checkpoint {path or ''}".strip(), "a checkpoint written "
                                     "by a Trainer (with optimizer and data state)",
                                     "a bare model checkpoint"))
        with _restoring(path, "model"):
            self.model.load_state_dict(ckpt.model.state_dict())
        with _restoring(path, "optimizer"):
            self.optimizer.load_state_dict(ckpt.optimizer_state)
        self.step = int(meta.get("step", 0))
        with _restoring(path, "metadata.data_state"):
            self.stream.load_state_dict(meta["data_state"])
        with _restoring(path, "metadata.dropout_states"):
            load_generator_states(self.model, meta.get("dropout_states", []))
        self.scheduler.step()                        # the lr of the next update
        self.best = meta.get("best", {}).get("value")
        self.seconds_before = float(meta.get("training_seconds", 0.0))
        self.run_id = meta.get("run_id") or self.run_id     # one run, across its sessions
        if path is not None:
            self._resumed_from = os.path.dirname(os.path.realpath(path))
            self.last_checkpoint = (str(path), self.step)
            history = os.path.join(self._resumed_from, "history.json")
            if os.path.isfile(history):                 # the curves up to the checkpoint
                self.history = History.load(history).truncate(self.step)
        return self


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
