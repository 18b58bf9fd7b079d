"""When a step's numbers come to the host: every step on the CPU, in batches on a GPU.

A training step ends with its loss and gradient norm as 0-d arrays of the active array
module (backend.xp), on every backend. With NumPy, reading them (`float(loss)`) is
free; on a GPU it would make the CPU wait for the GPU at every step and stall the
queue of kernels. So the loop hands each step's numbers to its HostSync:

    problem = host.check(loss, norm)      # NumPy: "the loss became nan" or None, before
                                          # the update; a GPU: None (checked when flushed)
    host.add(step, lr, tokens_per_s, loss=loss, norm=norm)
    if host.every_step or a log line, an evaluation or a checkpoint is due:
        for row in host.flush():          # [{"step", "lr", "tokens_per_s", "loss", "norm"}]
            ...                           # Python floats, in step order

`flush` brings every waiting number to the host in one transfer. `every_step` is
True on NumPy (checked each step, so a diverging step is caught before its update)
and False on a GPU (the loss stays on the device until it is logged, evaluated or
saved); pass it to choose.
"""

import math

from ..backend import get_backend, to_numpy, xp

NAMES = {"loss": "loss", "norm": "gradient norm"}


def non_finite(values):
    """'the loss became nan' (or the gradient norm's) for the first value of
    {"loss": ..., "norm": ...} that is NaN or infinite; None when all are finite."""
    for name, words in NAMES.items():
        value = values.get(name)
        if value is not None and not math.isfinite(value):
            return f"the {words} became {float(value)}"
    return None


class HostSync:
    def __init__(self, every_step=None):
        self.every_step = get_backend() == "numpy" if every_step is None else every_step
        self.rows = []

    def check(self, loss, norm=None):
        """Every step: the first non-finite value, in words, when checked now (every_step),
        else None (flush's rows are checked instead)."""
        return non_finite({"loss": loss, "norm": norm}) if self.every_step else None

    def add(self, step, lr, tokens_per_s, **values):
        """A step's numbers; values: 0-d arrays by name (a None is left out)."""
        values = {k: v for k, v in values.items() if v is not None}
        self.rows.append((step, lr, tokens_per_s, values))

    def flush(self):
        """The waiting rows, every value a Python float (one device-to-host transfer)."""
        rows, self.rows = self.rows, []
        names = sorted({name for *_, values in rows for name in values})
        gap = xp.asarray(math.nan) if any(len(v) < len(names) for *_, v in rows) else None
        device = [values.get(k, gap) for *_, values in rows for k in names]        # 0-d each
        host = iter(to_numpy(xp.stack(device)).tolist()) if device else iter(())
        out = []
        for step, lr, tokens_per_s, values in rows:
            row = {"step": step, "lr": lr, "tokens_per_s": tokens_per_s}
            row.update((k, next(host)) for k in names)
            out.append(row)
        return out
