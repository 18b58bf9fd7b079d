"""TrainConfig: every setting of a training run, with its default and meaning.

The defaults suit the small models of this package on a laptop CPU: Adam with
the paper's betas, a short linear warm-up to a fairly high peak rate (small
models tolerate it), then a cosine decay that ends the run at a low rate, where
the last few hundred steps polish the accuracy.
"""

from dataclasses import dataclass

from ..validation import (check_choice, check_integer, check_nonnegative, check_positive,
                          check_unit_interval, message)
from ..optim import NoamSchedule, WarmupCosineSchedule
from ..errors import InputError


@dataclass
class TrainConfig:
    steps: int = 3000                 # optimizer updates in the whole run
    lr: float = 2e-3                  # peak learning rate, reached at the end of warm-up
    warmup: int = 200                 # steps of linear warm-up from 0 to lr
    schedule: str = "cosine"          # after warm-up: "cosine" to min_lr_ratio*lr, "noam" 1/sqrt(step)
    min_lr_ratio: float = 0.05        # the cosine schedule's final lr, as a fraction of lr
    betas: tuple = (0.9, 0.98)        # Adam's moment decay rates (the paper's)
    weight_decay: float = 0.0         # > 0 uses AdamW (decoupled weight decay)
    label_smoothing: float = 0.1      # spread this much target probability over the vocabulary
    clip_norm: float = 1.0            # clip the global gradient norm to this (None: no clipping)
    eval_every: int = 500             # evaluate every N steps (0: only at the end)
    checkpoint_every: int = 500       # write last.npz every N steps (0: only at the end)
    log_every: int = 100              # without a progress bar, print a line every N steps (0: never)
    batch_size: int = 64              # sequences per batch (the data stream's)
    batch_tokens: int = None          # or: pairs of similar length within N tokens (the stream's)
    keep_last: int = 0                # also keep step-<N>.npz of the last K checkpoints (0: none)
    seed: int = 0                     # seed of the data order and of dropout
    progress: bool = None             # progress bar: None = only on a terminal / in Jupyter
    best_metric: str = "loss"         # the evaluation's metric that decides best.npz
    higher_is_better: bool = None     # its direction (None: higher, but for loss and perplexity)

    def __post_init__(self):
        check_integer(self.steps, "steps")
        check_positive(self.lr, "lr")
        check_choice(self.schedule, "schedule", ("cosine", "noam"))
        check_integer(self.batch_size, "batch_size")
        if self.batch_tokens is not None:
            check_integer(self.batch_tokens, "batch_tokens")
        for name in ("warmup", "eval_every", "checkpoint_every", "log_every", "seed",
                     "keep_last"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InputError(message(name, "an integer >= 0", repr(value)))
        if self.schedule == "cosine" and self.warmup >= self.steps:
            raise InputError(message("warmup", f"fewer steps than steps={self.steps}",
                                     self.warmup))
        if self.schedule == "noam" and self.warmup < 1:
            raise InputError(message("warmup", "at least 1 step for the noam schedule", 0))
        check_unit_interval(self.label_smoothing, "label_smoothing")
        check_unit_interval(self.min_lr_ratio, "min_lr_ratio")
        check_nonnegative(self.weight_decay, "weight_decay")
        if self.clip_norm is not None:
            check_positive(self.clip_norm, "clip_norm")
        for name in ("progress", "higher_is_better"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), bool):
                raise InputError(message(name, "True, False or None", repr(getattr(self, name))))
        if not isinstance(self.best_metric, str) or not self.best_metric:
            raise InputError(message("best_metric", "the name of a metric",
                                     repr(self.best_metric)))
        self.betas = tuple(self.betas)

    def best_is_higher(self):
        """Whether a higher best_metric is better: higher_is_better, or when it is None,
        for every metric but loss and perplexity."""
        if self.higher_is_better is not None:
            return self.higher_is_better
        return self.best_metric not in ("loss", "perplexity")

    def make_schedule(self, d_model):
        """The lr schedule: step -> lr, peaking at `lr` after `warmup` steps."""
        if self.schedule == "noam":
            factor = self.lr * (d_model * self.warmup) ** 0.5      # so that the peak is lr
            return NoamSchedule(d_model, self.warmup, factor)
        return WarmupCosineSchedule(self.lr, self.steps, self.warmup, self.lr * self.min_lr_ratio)
