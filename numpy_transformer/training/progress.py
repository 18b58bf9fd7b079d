"""What a training run shows while it runs: a progress bar, or a log line every few steps.

    progress = Progress(log=print)
    progress.open(total=3000, initial=0, enabled=None)    # a tqdm bar, or None (state.py)
    progress.record(loss, tokens_per_s, window=100)       # each step's numbers, as floats
    line = progress.show(step, steps, lr, logged=True)    # the bar's text, or a log line
    progress.write("step 500/3000  held-out ...")         # False: the output is closed
    progress.close()

The bar and the log lines show the mean loss and speed of the last `window` steps
(`log_every`). A write to a closed output (a broken pipe, a closed terminal) silences
the output, writes later lines to stderr, and returns False, so the Trainer stops.
"""

from .signals import write_line
from .state import progress_bar


class Progress:
    def __init__(self, log=print):
        self.log, self.bar, self.closed = log, None, False
        self.recent = []                     # (loss, tokens/s) of the last steps

    def open(self, total, initial, enabled):
        """A bar from `initial` to `total` steps (enabled: True, False, None: on a terminal)."""
        self.bar = progress_bar(total, initial, enabled)

    def close(self):
        if self.bar is not None:
            self.bar.close()
        self.bar = None

    def step(self):
        if self.bar is not None:
            self.bar.update(1)

    def record(self, loss, tokens_per_s, window):
        self.recent = (self.recent + [(loss, tokens_per_s)])[-max(window, 1):]

    def mean_loss(self):
        """The mean loss of the recent steps (None before the first)."""
        return sum(r[0] for r in self.recent) / len(self.recent) if self.recent else None

    def show(self, step, steps, lr, logged):
        """The recent steps' mean loss and speed on the bar; without a bar, the log line
        to write when `logged` (else None)."""
        if not self.recent:
            return None
        loss = self.mean_loss()
        speed = sum(r[1] for r in self.recent) / len(self.recent)
        if self.bar is not None:
            self.bar.set_postfix_str(f"loss {loss:.3f} lr {lr:.2e} {speed:,.0f} tok/s",
                                     refresh=False)
            return None
        return f"step {step}/{steps}  loss {loss:.4f}  lr {lr:.2e}  {speed:,.0f} tok/s" \
            if logged else None

    def write(self, text):
        """A line above the bar, or to the log; False when the output turned out closed."""
        if write_line(text, self.bar, self.log, self.closed):
            return True
        self.log, self.closed = None, True
        return False
