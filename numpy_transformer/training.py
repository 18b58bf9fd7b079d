"""The training loop: Adam with a warm-up schedule, label smoothing, gradient clipping,
a progress bar, periodic evaluation, checkpoints, history and resuming.

    stream = PairStream.from_task(task, tok, batch_size=64)          # training_data.py
    trainer = Trainer(model, stream, TrainConfig(steps=3000), out="runs/reverse",
                      evaluate=lambda m: evaluate_seq2seq(m, test_pairs),
                      best_metric="exact_match")
    result = trainer.fit()

One step: zero the gradients, forward, loss, backward, clip the global
gradient norm, Adam update, set the next learning rate. Every `eval_every`
steps the model is evaluated on held-out data; every `checkpoint_every` steps
`out/last.npz` is written (weights, optimizer, step, data position and the
dropout generators' states: resuming continues exactly as an uninterrupted
run), and `out/best.npz` whenever the best metric improves.

A NaN or infinite loss stops training with `TrainingDiverged`, leaving the
last good checkpoint untouched. Ctrl-C finishes the current step, writes a
checkpoint and returns (a second Ctrl-C stops at once).
"""

import contextlib
import math
import os
import signal
import threading
import time
from dataclasses import asdict, dataclass

from .checkpoint import load_checkpoint, save_checkpoint
from .checks import message
from .data.tokenizers import PAD_ID
from .losses import CrossEntropyLoss
from .metrics import format_metrics
from .optim import Adam, AdamW, Scheduler, clip_grad_norm
from .training_config import TrainConfig
from .training_state import History, generator_states, load_generator_states, progress_bar
from .errors import InputError


class TrainingDiverged(RuntimeError):
    """The loss (or the gradient norm) became NaN or infinite."""


@dataclass
class TrainResult:
    step: int                 # steps done
    interrupted: bool         # stopped early by Ctrl-C (a checkpoint was written)
    metrics: dict             # the last evaluation (None if never evaluated)
    best: float               # the best value of the best metric seen (None if none)
    history: History          # the training curves
    checkpoint: str           # path of the last checkpoint written (None if no `out`)


class Trainer:
    """Trains `model` on batches from `stream` (training_data.py).

    evaluate:    evaluate(model) -> dict of metrics on held-out data (or None)
    best_metric: the key of that dict deciding best.npz; higher_is_better its direction
    out:         folder for last.npz, best.npz, history.json, tokenizers (None: write nothing)
    tokenizers:  {"src": tok, "tgt": tok} or {"text": tok}, saved as <name>_tokenizer.json
    metadata:    more JSON values stored in every checkpoint (e.g. the task's name)
    callbacks:   callback(trainer) after every step
    """

    def __init__(self, model, stream, config=None, *, evaluate=None, best_metric="loss",
                 higher_is_better=None, out=None, tokenizers=None, metadata=None,
                 callbacks=(), log=print):
        self.model, self.stream = model, stream
        self.config = c = config if config is not None else TrainConfig()
        optimizer_class = AdamW if c.weight_decay else Adam
        self.optimizer = optimizer_class(model, lr=c.lr, betas=c.betas,
                                         weight_decay=c.weight_decay)
        self.scheduler = Scheduler(self.optimizer, c.make_schedule(model.config.d_model))
        self.loss_fn = CrossEntropyLoss(ignore_index=PAD_ID, label_smoothing=c.label_smoothing)
        self.evaluate_fn, self.best_metric = evaluate, best_metric
        self.higher_is_better = (best_metric != "loss" and best_metric != "perplexity") \
            if higher_is_better is None else higher_is_better
        self.out, self.log, self.callbacks = out, log, list(callbacks)
        self.tokenizers = dict(tokenizers or {})
        self.metadata = dict(metadata or {})
        self.step, self.best, self.last_eval = 0, None, None
        self.history = History()
        self.last_checkpoint = None          # (path, step)
        self._stop, self._updating, self._bar, self._smooth = False, False, None, None
        if out is not None:
            self._save_tokenizers()

    # One step.

    def train_step(self):
        """One update; returns (loss, lr used, tokens in the batch)."""
        inputs, targets, ntokens = self.stream.next_batch()
        self.optimizer.zero_grad()
        logits = self.model.forward(*inputs)                         # (B, T, V)
        loss = self.loss_fn.forward(logits, targets)
        if not math.isfinite(loss):
            self._diverged(f"the loss became {loss}")
        self.model.backward(self.loss_fn.backward())
        if self.config.clip_norm is not None:
            norm = clip_grad_norm(self.model, self.config.clip_norm)
            if not math.isfinite(norm):
                self._diverged(f"the gradient norm became {norm}")
        lr = self.optimizer.lr
        self._updating = True
        self.optimizer.step()
        self.step += 1
        self._updating = False
        self.scheduler.step()
        return loss, lr, ntokens

    def _diverged(self, what):
        if self.last_checkpoint is None:
            kept = "no checkpoint had been written yet"
        else:
            kept = f"the last good checkpoint is {self.last_checkpoint[0]} " \
                   f"(step {self.last_checkpoint[1]})"
        raise TrainingDiverged(f"training stopped at step {self.step + 1}: {what}; {kept}. "
                               "Try a smaller --lr, a longer --warmup or gradient clipping.")

    # The loop.

    def fit(self):
        """Train up to `config.steps` steps; returns a TrainResult."""
        self._stop = False
        self._bar = progress_bar(self.config.steps, self.step, self.config.progress)
        try:
            with self._ctrl_c_requests_stop():
                interrupted = self._loop()
        except TrainingDiverged:
            if self.out is not None:
                self.history.save(os.path.join(self.out, "history.json"))
            raise
        finally:
            if self._bar is not None:
                self._bar.close()
            self._bar = None
        if interrupted:
            path = self.save_checkpoint()
            where = f"; saved {path}, continue with --resume {path}" if path else ""
            self._write(f"interrupted at step {self.step}{where}")
        else:
            if not self.history.eval or self.history.eval[-1]["step"] != self.step:
                self.evaluate()
            if not self.last_checkpoint or self.last_checkpoint[1] != self.step:
                self.save_checkpoint()
        path = self.last_checkpoint[0] if self.last_checkpoint else None
        return TrainResult(self.step, interrupted, self.last_eval, self.best, self.history, path)

    def _loop(self):
        """Steps until done (False) or interrupted (True), leaving a consistent state."""
        while self.step < self.config.steps:
            if self._stop:
                return True
            done = self.step
            snapshot = (self.stream.state_dict(), generator_states(self.model))
            try:
                start = time.perf_counter()
                loss, lr, ntokens = self.train_step()
                self._after_step(loss, lr, ntokens / max(time.perf_counter() - start, 1e-9))
            except KeyboardInterrupt:
                if self._updating:
                    raise           # half-updated weights: keep the last checkpoint instead
                if self.step == done:                   # the step did not happen: undo its draws
                    self.stream.load_state_dict(snapshot[0])
                    load_generator_states(self.model, snapshot[1])
                return True
        return False

    def _after_step(self, loss, lr, tokens_per_s):
        c, step = self.config, self.step
        self.history.log_step(step, loss, lr, tokens_per_s)
        if self._bar is not None:           # running means: a steadier display
            self._smooth = [tokens_per_s, loss] if self._smooth is None else \
                [0.9 * old + 0.1 * new for old, new in zip(self._smooth, (tokens_per_s, loss))]
            speed, mean_loss = self._smooth
            self._bar.update(1)
            self._bar.set_postfix_str(f"loss {mean_loss:.3f} lr {lr:.2e} {speed:,.0f} tok/s",
                                      refresh=False)
        if c.eval_every and step % c.eval_every == 0:
            self.evaluate()
        if c.checkpoint_every and step % c.checkpoint_every == 0:
            self.save_checkpoint()
        for callback in self.callbacks:
            callback(self)

    @contextlib.contextmanager
    def _ctrl_c_requests_stop(self):
        """While training, Ctrl-C asks the loop to stop after the current step."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def request_stop(signum, frame):
            if self._stop:
                raise KeyboardInterrupt
            self._stop = True
            self._write("Ctrl-C: stopping after this step and saving a checkpoint "
                        "(press Ctrl-C again to stop at once)")

        previous = signal.signal(signal.SIGINT, request_stop)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

    def request_stop(self):
        """Stop after the current step, as Ctrl-C does (for notebooks and callbacks)."""
        self._stop = True

    # Evaluation, checkpoints, resuming.

    def evaluate(self):
        """Run `evaluate(model)`, log it, keep it in the history; save best.npz if improved."""
        if self.evaluate_fn is None:
            return None
        metrics = self.evaluate_fn(self.model)
        scalars = {k: float(v) for k, v in metrics.items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool)}
        self.history.log_eval(self.step, scalars)
        self.last_eval = metrics
        self._write(f"step {self.step}/{self.config.steps}  held-out " + format_metrics(scalars))
        value = scalars.get(self.best_metric)
        if value is not None and math.isfinite(value) and (
                self.best is None or (value > self.best if self.higher_is_better
                                      else value < self.best)):
            self.best = value
            self.save_checkpoint("best.npz")
        return metrics

    def _write(self, text):
        if self._bar is not None:
            self._bar.write(text)
        elif self.log is not None:
            self.log(text)

    def _metadata(self):
        return {**self.metadata, "step": self.step, "train_config": asdict(self.config),
                "data_state": self.stream.state_dict(),
                "dropout_states": generator_states(self.model),
                "best": {"metric": self.best_metric, "value": self.best},
                "tokenizers": {k: t.to_dict() for k, t in self.tokenizers.items()}}

    def save_checkpoint(self, name="last.npz"):
        """Write out/<name> and out/history.json; returns the path (None without `out`)."""
        if self.out is None:
            return None
        path = os.path.join(self.out, name)
        save_checkpoint(path, self.model, self.optimizer, **self._metadata())
        self.history.save(os.path.join(self.out, "history.json"))
        if name == "last.npz":
            self.last_checkpoint = (path, self.step)
        return path

    def _save_tokenizers(self):
        os.makedirs(self.out, exist_ok=True)
        for name, tokenizer in self.tokenizers.items():
            tokenizer.save(os.path.join(self.out, f"{name}_tokenizer.json"))

    def resume(self, checkpoint):
        """Continue from a checkpoint (a path or a loaded Checkpoint) written by a Trainer."""
        ckpt = load_checkpoint(checkpoint) if isinstance(checkpoint, (str, os.PathLike)) \
            else checkpoint
        meta = ckpt.metadata
        if "data_state" not in meta or ckpt.optimizer_state is None:
            raise InputError(message("checkpoint", "a checkpoint written by a Trainer (with "
                                     "optimizer and data state)", "a bare model checkpoint"))
        self.model.load_state_dict(ckpt.model.state_dict())
        self.optimizer.load_state_dict(ckpt.optimizer_state)
        self.step = int(meta["step"])
        self.stream.load_state_dict(meta["data_state"])
        load_generator_states(self.model, meta["dropout_states"])
        self.scheduler.step()                        # the lr of the next update
        self.best = meta.get("best", {}).get("value")
        if isinstance(checkpoint, (str, os.PathLike)):
            self.last_checkpoint = (str(checkpoint), self.step)
            history = os.path.join(os.path.dirname(os.path.abspath(checkpoint)), "history.json")
            if os.path.isfile(history):                 # the curves up to the checkpoint
                self.history = History.load(history).truncate(self.step)
        return self
