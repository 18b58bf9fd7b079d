"""The training loop: Adam with a warm-up schedule, label smoothing, gradient clipping,
a progress bar (or plain log lines), periodic evaluation, checkpoints, history and resuming.

    stream = PairStream.from_task(task, tok, batch_size=64)          # streams.py
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

Nothing is lost: the run folder is locked and never silently reused
(run_folder.py); only finite weights are saved, so a NaN loss raises
`TrainingDiverged` naming a good checkpoint; Ctrl-C, SIGTERM, a closed terminal
(SIGHUP) and a closed output finish the step, save and return (signals.py), saying
the command that continues the run; a save that fails (a full disk) names the file
and the last good checkpoint (checkpoints.py). On a GPU the loss of a
step stays on the device until it is logged, evaluated or saved (pending.py).
"""

import math
import os
import secrets
import shlex
import time

import numpy as np

from ..backend import get_backend
from ..errors import TrainingDiverged
from ..losses import CrossEntropyLoss
from .metrics import format_metrics
from ..optim import Adam, AdamW, Scheduler, clip_grad_norm
from .config import TrainConfig
from .checkpoints import Checkpoints
from .pending import PendingSteps
from .signals import stop_requests, write_line
from .state import History, TrainResult, generator_states, load_generator_states, progress_bar


class Trainer(Checkpoints):
    """Trains `model` on batches from `stream` (streams.py).

    evaluate:    evaluate(model) -> dict of metrics on held-out data (or None)
    best_metric: the key of that dict deciding best.npz; higher_is_better its direction
    out:         folder for last.npz, best.npz, history.json, config.json and tokenizers
                 (None: write nothing); locked while training (run_folder.py)
    overwrite:   replace an earlier run found in `out` (default: refuse to)
    tokenizers:  {"src": tok, "tgt": tok} or {"text": tok}, saved as <name>_tokenizer.json
    metadata:    more JSON values stored in every checkpoint and in config.json
    callbacks:   callback(trainer) after every step
    log:         where progress lines go (print; None for silence)
    resume_command: resume_command(path) -> the command line that continues the run from
                 the checkpoint `path`, quoted for a shell (said when a run is stopped)
    """

    def __init__(self, model, stream, config=None, *, evaluate=None, best_metric="loss",
                 higher_is_better=None, out=None, overwrite=False, tokenizers=None,
                 metadata=None, callbacks=(), log=print, resume_command=None):
        self.model, self.stream = model, stream
        self.config = c = config if config is not None else TrainConfig()
        optimizer_class = AdamW if c.weight_decay else Adam
        self.optimizer = optimizer_class(model, lr=c.lr, betas=c.betas,
                                         weight_decay=c.weight_decay)
        self.scheduler = Scheduler(self.optimizer, c.make_schedule(model.config.d_model))
        self.loss_fn = CrossEntropyLoss(ignore_index=model.config.pad_id,
                                        label_smoothing=c.label_smoothing)
        self.evaluate_fn, self.best_metric = evaluate, best_metric
        self.higher_is_better = best_metric not in ("loss", "perplexity") \
            if higher_is_better is None else higher_is_better
        self.out, self.overwrite, self.log = out, overwrite, log
        self.resume_command = resume_command or (lambda path: f"--resume {shlex.quote(path)}")
        self.callbacks = list(callbacks)
        self.tokenizers = dict(tokenizers or {})
        self.metadata = dict(metadata or {})
        self.run_id = secrets.token_hex(8)   # in every checkpoint: `average` mixes no runs
        self.step, self.best, self.last_eval = 0, None, None
        self.history = History()
        self.last_checkpoint = None          # (path, step)
        self.stop_reason = None
        self._stop, self._updating, self._bar, self._recent = False, False, None, []
        self._resumed_from, self._owns_out, self._folder = None, False, None
        self.seconds_before = 0.0          # time in fit() of the sessions this one resumed
        self._fit_seconds, self._fit_started = 0.0, None        # and of this one
        self._pending = PendingSteps()                 # losses still on the device
        self._sync_every_step = get_backend() == "numpy"   # free on the CPU: check each step

    # One step.

    def train_step(self):
        """One update; returns (loss, lr used, tokens in the batch, gradient norm or None).

        The loss and norm are Python floats with NumPy and 0-d device arrays on a GPU
        (checked when they reach the host: `_flush`)."""
        inputs, targets, ntokens = self.stream.next_batch()
        self.optimizer.zero_grad()
        loss = self.gradients(inputs, targets, ntokens)
        norm = None
        if self.config.clip_norm is not None:
            norm = clip_grad_norm(self.model, self.config.clip_norm)
            if isinstance(norm, float) and not math.isfinite(norm):
                self._diverged(f"the gradient norm became {norm}")
        lr = self.optimizer.lr
        self._updating = True
        with np.errstate(over="ignore", invalid="ignore"):   # a diverging update is caught
            self.optimizer.step()                            # by the finite checks instead
        self.step += 1
        self._updating = False
        self.scheduler.step()
        return loss, lr, ntokens, norm

    def gradients(self, inputs, targets, ntokens=None):
        """Forward, loss and backward on a batch; its mean loss (distributed.py: summed)."""
        logits = self.model.forward(*inputs)                                 # (B, T, V)
        loss = self.loss_fn.forward(logits, targets, num_tokens=ntokens)
        if isinstance(loss, float) and not math.isfinite(loss):
            self._diverged(f"the loss became {loss}")
        self.model.backward(self.loss_fn.backward())
        return loss

    def _diverged(self, what, step=None):
        step = self.step + 1 if step is None else step
        raise TrainingDiverged(f"training stopped at step {step}: {what}; {self.kept()}. "
                               "Try a smaller --lr, a longer --warmup or gradient clipping.")

    # The loop.

    def fit(self):
        """Train up to `config.steps` steps; returns a TrainResult."""
        self._stop, self.stop_reason = False, None
        self._fit_started = time.perf_counter()
        if self._folder is None:
            self.claim_out()
        self._bar = progress_bar(self.config.steps, self.step, self.config.progress)
        try:
            with stop_requests(self.request_stop):
                interrupted = self._loop()
            self._flush()
            if interrupted:
                path = self.save_checkpoint()
                where = f"; saved {path}, continue with: {self.resume_command(path)}" \
                    if path else ""
                self._write(f"stopped at step {self.step} ({self.stop_reason}){where}")
            else:
                if not self.history.eval or self.history.eval[-1]["step"] != self.step:
                    self.evaluate()
                if not self.last_checkpoint or self.last_checkpoint[1] != self.step:
                    self.save_checkpoint()
        except TrainingDiverged:
            if self.out is not None:
                self.history.save(os.path.join(self.out, "history.json"))
            raise
        finally:
            self._fit_seconds += time.perf_counter() - self._fit_started
            self._fit_started = None
            if self._bar is not None:
                self._bar.close()
            self._bar = None
            if self._folder is not None:
                self._folder.release()
                self._folder = None
        path = self.last_checkpoint[0] if self.last_checkpoint else None
        return TrainResult(self.step, interrupted, self.last_eval, self.best, self.history,
                           path, self.stop_reason)

    @property
    def training_seconds(self):
        """Seconds spent in fit() to reach this step, summed over resumed sessions."""
        now = 0.0 if self._fit_started is None else time.perf_counter() - self._fit_started
        return self.seconds_before + self._fit_seconds + now

    def _loop(self):
        """Steps until done (False) or asked to stop (True), leaving a consistent state."""
        while self.step < self.config.steps:
            if self._stop:
                return True
            done = self.step
            snapshot = (self.stream.state_dict(), generator_states(self.model))
            try:
                start = time.perf_counter()
                loss, lr, ntokens, norm = self.train_step()
                values = {"loss": loss} if norm is None else {"loss": loss, "norm": norm}
                self._pending.add(self.step, lr, ntokens / max(time.perf_counter() - start,
                                                               1e-9), **values)
                self._after_step()
            except KeyboardInterrupt:
                if self._updating:
                    raise           # half-updated weights: keep the last checkpoint instead
                if self.step == done:                   # the step did not happen: undo its draws
                    self.stream.load_state_dict(snapshot[0])
                    load_generator_states(self.model, snapshot[1])
                self.stop_reason = self.stop_reason or "SIGINT"
                return True
        return False

    def _after_step(self):
        c, step = self.config, self.step
        if self._bar is not None:
            self._bar.update(1)
        logged = c.log_every and step % c.log_every == 0
        evaluate = c.eval_every and step % c.eval_every == 0
        checkpoint = c.checkpoint_every and step % c.checkpoint_every == 0
        if self._sync_every_step or logged or evaluate or checkpoint:
            self._flush(logged)
        if evaluate:
            self.evaluate()
        if checkpoint:
            self.save_checkpoint()
        for callback in self.callbacks:
            callback(self)

    def _flush(self, logged=False):
        """Bring the waiting steps' losses to the host: check them, log them."""
        c = self.config
        for row in self._pending.flush():
            for name in ("loss", "norm"):
                if name in row and not math.isfinite(row[name]):
                    what = "loss" if name == "loss" else "gradient norm"
                    self._diverged(f"the {what} became {row[name]}", row["step"])
            self.history.log_step(row["step"], row["loss"], row["lr"], row["tokens_per_s"])
            self._recent = (self._recent + [(row["loss"], row["tokens_per_s"])]
                            )[-max(c.log_every, 1):]
        if not self._recent:
            return
        mean_loss = sum(r[0] for r in self._recent) / len(self._recent)
        speed = sum(r[1] for r in self._recent) / len(self._recent)
        lr = self.history.train[-1]["lr"]
        if self._bar is not None:
            self._bar.set_postfix_str(f"loss {mean_loss:.3f} lr {lr:.2e} {speed:,.0f} tok/s",
                                      refresh=False)
        elif logged:
            self._write(f"step {self.step}/{c.steps}  loss {mean_loss:.4f}  lr {lr:.2e}  "
                        f"{speed:,.0f} tok/s")

    def request_stop(self, reason="stop requested"):
        """Stop after the current step and save (what Ctrl-C, SIGTERM and SIGHUP do; for
        notebooks)."""
        if self._stop:
            return
        self._stop, self.stop_reason = True, reason
        if reason in ("SIGINT", "SIGTERM", "SIGHUP"):
            name = {"SIGINT": "Ctrl-C", "SIGHUP": "SIGHUP (terminal closed)"}.get(reason, reason)
            self._write(f"{name}: stopping after this step and saving a checkpoint "
                        f"(send it again to stop at once)")

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
        recent = [r[0] for r in self._recent]
        train = f"train loss {sum(recent) / len(recent):.4f}  " if recent else ""
        self._write(f"step {self.step}/{self.config.steps}  {train}held-out "
                    + format_metrics(scalars))
        value = scalars.get(self.best_metric)
        if value is not None and math.isfinite(value) and (
                self.best is None or (value > self.best if self.higher_is_better
                                      else value < self.best)):
            self.best = value
            self.save_checkpoint("best.npz")
        return metrics

    def _write(self, text):
        """A log line; a closed output (broken pipe) stops the run after this step."""
        if not write_line(text, self._bar, self.log, self.stop_reason == "closed output"):
            self.log = None
            self.request_stop("closed output")
