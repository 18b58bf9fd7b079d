"""The training loop: Adam with a warm-up schedule, label smoothing, gradient clipping,
a progress bar (or log lines), evaluation, checkpoints, history and resuming.

    trainer = Trainer(model, PairStream.from_task(task, tok, batch_size=64),
                      TrainConfig(steps=3000, best_metric="exact_match"),
                      evaluate=lambda m: evaluate_seq2seq(m, test_pairs),
                      checkpointer=Checkpointer("runs/reverse"))
    result = trainer.fit()

A step (`train_step`): batch; forward and backward; sync the gradients; clip their norm;
the Adam step. Then, at their intervals: a log line, an evaluation (best.npz when the best
metric improves), a checkpoint (last.npz: weights, optimizer, step, data position, dropout
generators: a resumed run continues exactly as an uninterrupted one).

Three parts do what depends on where the run is (pass your own to change them):
- checkpointer   writes the run folder: Checkpointer(out, overwrite, tokenizers=...,
                 metadata=...) (checkpoints.py); the default, Checkpointer(), writes nothing;
- gradient_sync  shares the gradients: OneProcess() (gradient_sync.py), or AllReduce(comm)
                 summing them over MPI ranks (distributed.py);
- host_sync      brings a step's loss and gradient norm, 0-d arrays of the active array
                 module on every backend, to the host (host_sync.py): each step with
                 NumPy (free), at a log line, evaluation or checkpoint on a GPU.

Nothing is lost: the run folder is locked (run_folder.py); only finite weights are saved,
so a NaN raises `TrainingDiverged` naming a good checkpoint; Ctrl-C, SIGTERM, SIGHUP and a
closed output finish the step and save (signals.py); a failed save names its file.
"""

import time

import numpy as np

from ..backend import xp
from ..errors import TrainingDiverged
from ..losses import CrossEntropyLoss
from ..optim import Adam, AdamW, Scheduler, clip_grad_norm, decay_groups
from .checkpoints import Checkpointer, restore
from .config import TrainConfig
from .dropout_generators import generator_states, load_generator_states
from .gradient_sync import OneProcess
from .host_sync import HostSync, non_finite
from .metrics import format_metrics
from .progress import Progress
from .signals import stop_message, stop_requests
from .state import RunState, TrainResult


class InterruptedUpdate(KeyboardInterrupt):
    """Ctrl-C inside the optimizer's update: the weights are half-updated, so nothing is
    saved (the last checkpoint stays the good one)."""


class Trainer:
    """Trains `model` on batches from `stream` (streams.py).

    config:      a TrainConfig (its best_metric, a key of evaluate's dict, decides best.npz)
    evaluate:    evaluate(model) -> dict of metrics on held-out data (or None)
    callbacks:   callback(trainer) after every step; log: print, or None for silence
    checkpointer, gradient_sync, host_sync: the parts (the module docstring); by default
                 Checkpointer() (writes nothing), OneProcess() and HostSync()

    What the run keeps across steps and sessions is one object, `state` (a RunState,
    state.py): the step, the best metric, the history, the sessions. The checkpointer
    saves it whole; `resume` takes the one a checkpoint saved.
    """

    def __init__(self, model, stream, config=None, *, evaluate=None, callbacks=(), log=print,
                 checkpointer=None, gradient_sync=None, host_sync=None):
        self.model, self.stream = model, stream
        self.config = c = config if config is not None else TrainConfig()
        groups = decay_groups(model, c.weight_decay, decay_embeddings=True)  # no bias, norm
        self.optimizer = (AdamW if c.weight_decay else Adam)(    # fast: the flat buffer
            model, lr=c.lr, betas=c.betas, weight_decay=c.weight_decay, param_groups=groups,
            fast=True)
        self.scheduler = Scheduler(self.optimizer, c.make_schedule(model.config.d_model))
        self.loss_fn = CrossEntropyLoss(ignore_index=model.config.pad_id,
                                        label_smoothing=c.label_smoothing)
        self.evaluate_fn = evaluate
        self.checkpointer = Checkpointer() if checkpointer is None else checkpointer
        self.gradient_sync = OneProcess() if gradient_sync is None else gradient_sync
        self.host_sync = HostSync() if host_sync is None else host_sync
        self.progress = Progress(log, c.label_smoothing)
        self.callbacks = list(callbacks)
        self.state = RunState()              # step, best, history, sessions (state.py)
        self.last_eval = None                # the metrics of the last evaluation
        self.stop_requested = self.stop_reason = None   # asked for here; agreed: the run
                                                        # ends after this step
        self.gradient_sync.spread_dropout(model)

    # One step.

    def train_step(self):
        """One update: (loss, lr used, tokens in the batch, gradient norm or None), the loss
        and norm 0-d arrays of backend.xp on every backend (host_sync.py reads them). NumPy's
        overflow warnings are held back: a loss or norm that is not finite is said once, as
        the run's TrainingDiverged."""
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            inputs, targets, ntokens = self.stream.next_batch()              # batch
            self.optimizer.zero_grad()
            loss, weight = self.forward_backward(inputs, targets, ntokens)   # forward, backward
            loss, stop = self.gradient_sync.all_reduce(self.model, loss, weight,
                                                       self.stop_requested)  # sync
            self.stop_reason = stop or self.stop_reason  # agreed: all ranks stop after it
            norm = self.clip()                                               # clip
            problem = self.host_sync.check(loss, norm)
            if problem:
                raise self.checkpointer.diverged(self.state.step + 1, problem, self.config)
            lr = self.update()                                               # step
        return loss, lr, ntokens, norm

    def forward_backward(self, inputs, targets, ntokens=None):
        """Forward, loss and backward on this process's part of the batch (all of it in one
        process: gradient_sync.py); (its mean loss, a 0-d array; its weight in the batch)."""
        inputs, targets, ntokens, weight = self.gradient_sync.shard(
            inputs, targets, ntokens, self.loss_fn.ignore_index)
        if not weight:                               # a shard with no counted token adds 0
            return xp.zeros(()), 0.0
        logits = self.model.forward(*inputs)                                 # (B, T, V)
        loss = self.loss_fn.forward(logits, targets, num_tokens=ntokens)
        self.model.backward(self.loss_fn.backward(weight))     # d(w L): the weight in dloss
        return xp.asarray(loss), weight

    def clip(self):
        """Scale the gradients to a global norm <= config.clip_norm; the norm before (0-d)."""
        if self.config.clip_norm is None:
            return None
        return xp.asarray(clip_grad_norm(self.optimizer.grads, self.config.clip_norm))

    def update(self):
        """The optimizer's step at this step's lr (returned); then the next step's lr."""
        lr = self.optimizer.lr
        try:
            with np.errstate(over="ignore", invalid="ignore"):   # a diverging update is
                self.optimizer.step()                            # caught by the checks
            self.state.step += 1
        except KeyboardInterrupt:
            raise InterruptedUpdate from None
        self.scheduler.step()
        return lr

    # The loop.

    def fit(self):
        """Train up to `config.steps` steps; returns a TrainResult. (Ranks training together
        fail together: gradient_sync.failing_together.)"""
        with self.gradient_sync.failing_together():
            return self._fit()

    def _fit(self):
        self.stop_requested = self.stop_reason = None
        self.claim_out()
        state = self.state
        state.clock.start()
        try:
            with stop_requests(self.request_stop):      # Ctrl-C from the bar's first draw
                self.progress.open(self.config.steps, state.step, self.config.progress)
                interrupted = self._loop()
            self.flush()
            if interrupted:
                path = self.save_checkpoint()
                how = self.checkpointer.resume_command
                where = f"; saved {path}, continue with: {how(path)}" if path else ""
                self.progress.close()       # the bar stays above: the command is the last line
                self.write(f"stopped at step {state.step} ({self.stop_reason}){where}")
            else:                       # the last step: evaluated and saved at that step
                if not state.history.eval or state.history.eval[-1]["step"] != state.step:
                    self.evaluate()
                if not self.checkpointer.last or self.checkpointer.last[1] != state.step:
                    self.save_checkpoint()
        except TrainingDiverged:
            self.checkpointer.save_history(state.history)
            raise
        finally:
            state.clock.stop()
            self.progress.close()
            self.checkpointer.release()
        last, recorded = self.checkpointer.last, self.checkpointer.last_sessions
        if not (recorded and recorded[-1]["to"] == state.step):   # one record of the time:
            recorded = state.sessions()                  # the one last.npz keeps, if any
        return TrainResult(state.step, interrupted, self.last_eval, state.best, state.history,
                           last[0] if last else None, self.stop_reason, recorded)

    def _loop(self):
        """Steps until done (False) or asked to stop (True), leaving a consistent state."""
        state = self.state
        while state.step < self.config.steps:
            if self.stop_reason is not None:
                return True
            done = state.step
            snapshot = (self.stream.state_dict(), generator_states(self.model))
            try:
                start = time.perf_counter()
                loss, lr, ntokens, norm = self.train_step()
                speed = ntokens / max(time.perf_counter() - start, 1e-9)
                self.host_sync.add(state.step, lr, speed, loss=loss, norm=norm)
                self._after_step()
            except InterruptedUpdate:
                raise               # half-updated weights: keep the last checkpoint instead
            except KeyboardInterrupt:
                if state.step == done:                  # the step did not happen: undo its draws
                    self.stream.load_state_dict(snapshot[0])
                    load_generator_states(self.model, snapshot[1])
                self.stop_reason = self.stop_reason or "SIGINT"
                return True
        return False

    def _after_step(self):
        """Log, evaluate and checkpoint at their intervals; then the callbacks."""
        c, step = self.config, self.state.step
        self.progress.step()
        logged = c.log_every and step % c.log_every == 0
        evaluate = c.eval_every and step % c.eval_every == 0
        checkpoint = c.checkpoint_every and step % c.checkpoint_every == 0
        if self.host_sync.every_step or logged or evaluate or checkpoint:
            self.flush(logged)
        if evaluate:
            self.evaluate()
        if checkpoint:
            self.save_checkpoint()
        for callback in self.callbacks:
            callback(self)

    def flush(self, logged=False):
        """Bring the waiting steps' numbers to the host (host_sync.py): check them, keep
        them in the history, show them (`logged`: as a log line when there is no bar)."""
        for row in self.host_sync.flush():
            problem = non_finite(row)
            if problem:
                raise self.checkpointer.diverged(row["step"], problem, self.config)
            self.state.history.log_step(row["step"], row["loss"], row["lr"], row["tokens_per_s"],
                                  row.get("norm"))
            self.progress.record(row["loss"], row["tokens_per_s"], self.config.log_every)
        if self.progress.recent:
            line = self.progress.show(self.state.step, self.config.steps,
                                      self.state.history.train[-1]["lr"], logged)
            if line:
                self.write(line)

    def request_stop(self, reason="stop requested"):
        """Stop after the current step and save (what Ctrl-C, SIGTERM and SIGHUP do; for
        notebooks). Ranks that train together (distributed.py) stop after the same step:
        the one whose all-reduce carries the request."""
        if self.stop_requested is not None or self.stop_reason is not None:
            return
        self.stop_requested = reason
        if self.gradient_sync.alone:
            self.stop_reason = reason
        if stop_message(reason):
            self.write(stop_message(reason))

    def write(self, text):
        """A log line; a closed output (broken pipe) stops the run after this step."""
        if not self.progress.write(text):
            self.request_stop("closed output")

    # Evaluation, checkpoints, resuming.

    def evaluate(self):
        """Run `evaluate(model)`, log it, keep it in the history; save best.npz if improved."""
        if self.evaluate_fn is None:
            return None
        metrics = self.evaluate_fn(self.model)
        scalars = {k: float(v) for k, v in metrics.items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool)}
        step = self.state.step
        self.state.history.log_eval(step, scalars)
        self.last_eval = metrics
        self.write(f"step {step}/{self.config.steps}  {self.progress.train_text()}held-out "
                   + format_metrics(scalars))
        value = scalars.get(self.config.best_metric)
        if self.state.improved(value, self.config.best_is_higher()):
            self.save_checkpoint("best.npz")
        return metrics

    def save_checkpoint(self, name="last.npz"):
        """Write out/<name> (checkpointer.save) with the history up to this step; its path."""
        self.flush()
        return self.checkpointer.save(self, name)

    def claim_out(self):
        """Lock `out` and write its tokenizers and config.json until fit() returns (fit()
        does; call it earlier to fail before anything else happens)."""
        if self.checkpointer.claim(self):   # a branch: its first evaluation writes its own
            self.state.forget_best()        # best.npz (the old run's stays)

    def resume(self, checkpoint):
        """Continue from a checkpoint (a path or a loaded Checkpoint) written by a Trainer."""
        path, self.state = restore(self, checkpoint)
        self.checkpointer.resumed(path, self.state.step)
        self.gradient_sync.spread_dropout(self.model)
        return self

    out = property(lambda self: self.checkpointer.out,                # the run folder
                   lambda self, folder: setattr(self.checkpointer, "out", folder))
    rank = property(lambda self: self.gradient_sync.rank)            # 0: writes and logs
    step = property(lambda self: self.state.step)                    # read-only views of
    history = property(lambda self: self.state.history)              # the run state
