"""The run state: what a training run carries from step to step and across a resume,
besides the weights and the optimizer's moments.

    trainer.state                       # a RunState: the Trainer owns it (loop.py)
    trainer.state.step, trainer.state.best, trainer.state.history, ...
    checkpointer.save(trainer)          # keeps it whole: state.saved(best_metric)
    RunState.resumed(meta, history, trainer.state)   # read back whole (checkpoints.restore)

It holds the step; the best value of the best metric and the step best.npz holds; the
training curves (history.py); the run id; the sessions before this one, and the step,
command and clock of this one. The data stream's position and the dropout generators'
states are the stream's (streams.py) and the model's (dropout_generators.py): every
checkpoint keeps them beside the run state, and a resumed run restores them with it, so
it continues exactly as an uninterrupted one.

Also here: `TrainResult`, what `Trainer.fit` returns; `Stopwatch`, the clock of a session;
`saved_sessions`, the sessions a checkpoint's metadata records.
"""

import math
import secrets
import time
from dataclasses import dataclass, field

from .history import History, is_number


@dataclass
class RunState:
    """What a run keeps across its steps and sessions (the module docstring)."""

    step: int = 0                  # updates done
    best: float = None             # the best value of config.best_metric (None: none yet)
    best_step: int = None          # the step best.npz holds
    history: History = field(default_factory=History)     # the training curves
    run_id: str = field(default_factory=lambda: secrets.token_hex(8))  # one per run, in its
    #                                checkpoints: `average` mixes no runs
    sessions_before: list = field(default_factory=list)   # the sessions this one resumed
    #                                (saved_sessions): each one's time, as its checkpoint says
    session_start: int = 0         # the step this session started at
    command: str = None            # this session's command as typed (None: not from the CLI)
    clock: "Stopwatch" = field(default_factory=lambda: Stopwatch())   # this session's time

    @property
    def seconds_before(self):
        """Seconds of the sessions this one resumed: the sum of their records."""
        return round(sum(s["seconds"] for s in self.sessions_before), 3)

    @property
    def training_seconds(self):
        """Seconds to reach this step, summed over the run's sessions (their records)."""
        return round(sum(s["seconds"] for s in self.sessions()), 3)

    def sessions(self):
        """The run's sessions, this one last: [{"command": as typed (None: not from the
        command line), "from": step, "to": step, "seconds": the clock's (the time in fit(),
        and from the command line the wall time since the command started; fit() returns
        the reading its last last.npz keeps, so that every record says one number)}]."""
        now = {"command": self.command, "from": self.session_start, "to": self.step,
               "seconds": round(self.clock.seconds, 3)}
        return self.sessions_before + [now]

    def improved(self, value, higher_is_better):
        """Keep the metric `value` of this step (a number or None) as the best if it beats
        the best so far; True if it did."""
        better = value is not None and math.isfinite(value) and (
            self.best is None or (value > self.best if higher_is_better else value < self.best))
        if better:
            self.best, self.best_step = value, self.step
        return better

    def forget_best(self):
        """A branch (a run resumed into another folder) starts its own best: its first
        evaluation writes its own best.npz (the old run's stays where it is)."""
        self.best = self.best_step = None

    def saved(self, best_metric):
        """What a checkpoint's metadata keeps of the state (`resumed` reads it back)."""
        sessions = self.sessions()             # one reading of the clock, for both records
        return {"step": self.step, "run_id": self.run_id,
                "best": {"metric": best_metric, "value": self.best, "step": self.best_step},
                "training_seconds": round(sum(s["seconds"] for s in sessions), 3),
                "sessions": sessions}

    @classmethod
    def resumed(cls, meta, history, now):
        """The state a checkpoint saved (`meta`: its metadata; `history`: its folder's curves
        up to its step, or None), continued by this session: `now`'s command and clock
        (and curves, when the folder kept none)."""
        step, best = int(meta.get("step", 0)), meta.get("best", {})
        return cls(step=step, best=best.get("value"),
                   best_step=best.get("step"),              # None: saved before issue 40
                   history=now.history if history is None else history,
                   run_id=meta.get("run_id") or now.run_id,    # one run, across its sessions
                   sessions_before=saved_sessions(meta), session_start=step,
                   command=now.command, clock=now.clock)


@dataclass
class TrainResult:
    step: int                 # steps done
    interrupted: bool         # stopped early (a checkpoint was written)
    metrics: dict             # the last evaluation (None if never evaluated)
    best: float               # the best value of the best metric seen (None if none)
    history: History          # the training curves
    checkpoint: str           # path of the last checkpoint written (None if no `out`)
    stop_reason: str = None   # why it stopped early: "SIGINT", "SIGTERM", "closed output", ...
    sessions: list = None     # the run's sessions, this one last (RunState.sessions)


def saved_sessions(meta):
    """The sessions a checkpoint's metadata records; for a checkpoint written before they
    were recorded, one session of unknown command that took its `training_seconds`."""
    sessions = meta.get("sessions")
    if isinstance(sessions, list) and all(
            isinstance(s, dict) and all(is_number(s.get(k)) for k in ("from", "to", "seconds"))
            and (s.get("command") is None or isinstance(s["command"], str)) for s in sessions):
        return [dict(s) for s in sessions]
    step = int(meta.get("step", 0))
    return [{"command": None, "from": 0, "to": step,
             "seconds": float(meta.get("training_seconds", 0.0))}] if step else []


class Stopwatch:
    """Seconds summed over the intervals between start() and stop(), the running one included."""

    def __init__(self):
        self.total, self.started = 0.0, None

    def start(self):
        self.started = time.perf_counter()

    def stop(self):
        self.total, self.started = self.seconds, None

    @property
    def seconds(self):
        running = 0.0 if self.started is None else time.perf_counter() - self.started
        return self.total + running
