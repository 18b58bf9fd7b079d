"""The sessions of a run that was resumed: what results.json and the closing line say.

A run may take several commands (`train ...`, then `train --resume RUN/last.npz --steps N`):
each is a session, {"command", "from", "to", "seconds"} (steps from-to, wall time from the
command's start). Every checkpoint lists the sessions up to it (training/state.py), each
timed up to its last save; results.json has the whole wall time of the commands it saw.
"""

import json


def with_wall_times(sessions, path):
    """`sessions` (from a checkpoint: each timed up to its last save), with the whole wall
    time of those that the run folder's results.json (`path`, when readable) records."""
    try:
        with open(path, encoding="utf-8") as f:
            recorded = json.load(f).get("sessions") or []
        wall = {(s["command"], s["from"], s["to"]): s["seconds"] for s in recorded}
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        return sessions
    return [{**s, "seconds": wall.get((s.get("command"), s["from"], s["to"]), s["seconds"])}
            for s in sessions]


def with_this_one(before, start, step, seconds, command):
    """The run's sessions, this one (`command`, from `start` to `step`, `seconds`) last."""
    return before + [{"command": command, "from": start, "to": step,
                      "seconds": round(seconds, 1)}]


def session_line(sessions, step, seconds, command):
    """What this session did, and the whole run when it was resumed: '1000 steps in 40 s
    (0.040 s/step; 4000 steps in 2 sessions, 160 s in all)'. `sessions`: the run's, this one
    last (TrainResult.sessions), which is timed here with `seconds`."""
    sessions = sessions or [{"from": 0, "to": step}]
    sessions = with_this_one(sessions[:-1], sessions[-1]["from"], step, seconds, command)
    done = step - sessions[-1]["from"]
    line = f"{done} steps in {seconds:.0f} s ({seconds / max(1, done):.3f} s/step"
    if len(sessions) > 1:
        total = sum(s["seconds"] for s in sessions)
        line += f"; {step} steps in {len(sessions)} sessions, {total:.0f} s in all"
    return line + ")"
