"""Learning-rate schedules: plain functions of the step number, and a Scheduler that applies one.

A schedule is a callable `schedule(step) -> lr`, with step = 1 for the first
update. Use it directly,

    optimizer.lr = schedule(optimizer.step_count + 1)    # the rate for the next update

or let `Scheduler(optimizer, schedule)` do exactly that on every `.step()`.
Because the rate is a pure function of the optimizer's step count, saving and
restoring the optimizer (its `state_dict` holds `step_count`) restores the
schedule too: nothing else to save.
"""

import math

from ..validation import message
from ..errors import InputError, InputTypeError
from ..validation import check_integer, check_nonnegative, check_positive


def check_step(step):
    """Schedules count updates from 1: the first optimizer.step() is step 1."""
    check_integer(step, "step", 1)


class NoamSchedule:
    """The schedule of "Attention Is All You Need" (section 5.3):

        lr(step) = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)

    Linear warm-up for `warmup_steps` steps, then decay as 1/sqrt(step). The two
    branches meet at step = warmup, the peak: factor * (d_model * warmup)^-0.5.
    """

    def __init__(self, d_model, warmup_steps=4000, factor=1.0):
        check_integer(d_model, "d_model", 1)
        check_integer(warmup_steps, "warmup_steps", 1)
        check_positive(factor, "factor")
        self.d_model, self.warmup_steps, self.factor = d_model, warmup_steps, factor

    @property
    def peak_lr(self):
        return self.factor * (self.d_model * self.warmup_steps) ** -0.5

    def __call__(self, step):
        check_step(step)
        return self.factor * self.d_model**-0.5 * min(step**-0.5, step * self.warmup_steps**-1.5)

    def __repr__(self):
        return (f"NoamSchedule(d_model={self.d_model}, warmup_steps={self.warmup_steps}, "
                f"factor={self.factor})")


class WarmupCosineSchedule:
    """Linear warm-up to `peak_lr`, then a half cosine down to `min_lr`:

        lr(step) = peak_lr * step / warmup                                    step <= warmup
        lr(step) = min_lr + (peak_lr - min_lr) * (1 + cos(pi * s)) / 2,
                   s = (step - warmup) / (total_steps - warmup)               up to total_steps
        lr(step) = min_lr                                                     after

    warmup_steps = 0 starts the cosine straight from peak_lr.
    """

    def __init__(self, peak_lr, total_steps, warmup_steps=0, min_lr=0.0):
        check_positive(peak_lr, "peak_lr")
        check_integer(warmup_steps, "warmup_steps", 0)
        check_integer(total_steps, "total_steps", 1)
        if total_steps <= warmup_steps:
            raise InputError(message("total_steps", f"more than warmup_steps={warmup_steps}",
                                     total_steps))
        check_nonnegative(min_lr, "min_lr")
        if min_lr > peak_lr:
            raise InputError(message("min_lr", f"at most peak_lr={peak_lr}", min_lr))
        self.peak_lr, self.total_steps = peak_lr, total_steps
        self.warmup_steps, self.min_lr = warmup_steps, min_lr

    def __call__(self, step):
        check_step(step)
        if step <= self.warmup_steps:
            return self.peak_lr * step / self.warmup_steps
        s = min(1.0, (step - self.warmup_steps) / (self.total_steps - self.warmup_steps))
        return self.min_lr + (self.peak_lr - self.min_lr) * 0.5 * (1.0 + math.cos(math.pi * s))

    def __repr__(self):
        return (f"WarmupCosineSchedule(peak_lr={self.peak_lr}, total_steps={self.total_steps}, "
                f"warmup_steps={self.warmup_steps}, min_lr={self.min_lr})")


class ConstantSchedule:
    """lr(step) = lr for every step."""

    def __init__(self, lr):
        check_positive(lr, "lr")
        self.lr = lr

    def __call__(self, step):
        check_step(step)
        return self.lr

    def __repr__(self):
        return f"ConstantSchedule(lr={self.lr})"


class Scheduler:
    """Sets `optimizer.lr` from `schedule` for the optimizer's next update.

        scheduler = Scheduler(optimizer, NoamSchedule(d_model=512))   # lr = schedule(1) now
        for batch in batches:
            ...backward...
            optimizer.step()
            scheduler.step()                                          # lr = schedule(t + 1)

    `step()` reads `optimizer.step_count`, so it holds no state of its own and
    calling it before or after `optimizer.step()` in every iteration gives the
    same rates; it also picks up where a restored optimizer left off.
    """

    def __init__(self, optimizer, schedule):
        if not callable(schedule):
            raise InputTypeError(message("schedule", "a callable step -> lr", type(schedule).__name__))
        self.optimizer, self.schedule = optimizer, schedule
        self.step()

    def step(self):
        """Set and return the learning rate of the optimizer's next update."""
        self.optimizer.lr = self.schedule(self.optimizer.step_count + 1)
        return self.optimizer.lr
