"""The sessions of a run that was resumed: what results.json and the closing line say.

A run may take several commands (`train ...`, then `train --resume RUN/last.npz --steps N`):
each is a session, {"command", "from", "to", "seconds"} (steps from-to; its clock: from the
command's start to its last checkpoint). Every checkpoint lists the sessions up to it
(training/state.py); fit() returns the record of the last one, and results.json and the
closing line repeat it: one clock, read once, written the same everywhere.
"""


def session_line(sessions, step):
    """What this session did, and the whole run when it was resumed: '1000 steps in 40 s
    (0.040 s/step; 4000 steps in 2 sessions, 160 s in all)'. `sessions`: the run's, this one
    last (TrainResult.sessions)."""
    this = sessions[-1] if sessions else {"from": 0, "seconds": 0.0}
    done, seconds = step - this["from"], this["seconds"]
    line = f"{done} steps in {seconds:.0f} s ({seconds / max(1, done):.3f} s/step"
    if len(sessions) > 1:
        total = sum(s["seconds"] for s in sessions)
        line += f"; {step} steps in {len(sessions)} sessions, {total:.0f} s in all"
    return line + ")"
