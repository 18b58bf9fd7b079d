"""Optimizers (Adam, AdamW, SGD), learning-rate schedules and gradient clipping.

    optimizer = AdamW(model, lr=1e-3, weight_decay=0.01)       # decays every parameter
    optimizer = AdamW(model, lr=1e-3, param_groups=decay_groups(model, 0.1))  # matrices only
    optimizer = AdamW(model, lr=1e-3, fast=True)    # the Trainer's: one flat buffer (flat.py)
    scheduler = Scheduler(optimizer, NoamSchedule(d_model=512, warmup_steps=4000))
    optimizer.zero_grad(); loss.backward(); ...; clip_grad_norm(model, max_norm=1.0)
    optimizer.step(); scheduler.step()
"""

from .adam import Adam, AdamW
from .base import Optimizer
from .clip import clip_grad_norm
from .groups import decay_groups
from .schedules import ConstantSchedule, NoamSchedule, Scheduler, WarmupCosineSchedule
from .sgd import SGD

__all__ = ["Adam", "AdamW", "SGD", "Optimizer", "clip_grad_norm", "decay_groups",
           "NoamSchedule", "WarmupCosineSchedule", "ConstantSchedule", "Scheduler"]
