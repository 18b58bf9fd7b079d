"""Per-step numbers that wait on the device until they are needed on the host.

With NumPy a step's loss is a Python float at once. On a GPU, `float(loss)`
would make the CPU wait for the GPU at every step and stall the queue of
kernels; so the loop keeps the step's loss (and gradient norm) as 0-d device
arrays here and brings them all to the host in one transfer when a line is
logged, an evaluation or a checkpoint is due, or the run ends:

    pending.add(step, lr, tokens_per_s, loss=loss, norm=norm)
    for row in pending.flush():     # [{"step", "lr", "tokens_per_s", "loss", "norm"}]
        ...

`flush` returns the rows in step order with Python floats only.
"""

import math

from ..backend import to_numpy, xp


class PendingSteps:
    def __init__(self):
        self.rows = []

    def add(self, step, lr, tokens_per_s, **values):
        self.rows.append((step, lr, tokens_per_s, values))

    def __len__(self):
        return len(self.rows)

    def flush(self):
        """The waiting rows, every value a Python float (one device-to-host transfer)."""
        rows, self.rows = self.rows, []
        names = sorted({name for *_, values in rows for name in values})
        device = [v for *_, values in rows for k in names
                  if not isinstance(v := values.get(k, math.nan), (int, float))]
        host = iter(to_numpy(xp.stack(device)).tolist()) if device else iter(())
        out = []
        for step, lr, tokens_per_s, values in rows:
            row = {"step": step, "lr": lr, "tokens_per_s": tokens_per_s}
            for k in names:
                v = values.get(k, math.nan)
                row[k] = float(v) if isinstance(v, (int, float)) else next(host)
            out.append(row)
        return out
