"""What a training run shows while it runs: a progress bar, or a log line every few steps.

    progress = Progress(log=print, label_smoothing=0.1)
    progress.open(total=3000, initial=0, enabled=None)    # a tqdm bar, or None
    progress.record(loss, tokens_per_s, window=100)       # each step's numbers, as floats
    line = progress.show(step, steps, lr, logged=True)    # the bar's text, or a log line
    progress.train_text()      # "train loss (label-smoothed 0.1) 0.6400  " (held-out lines)
    progress.write("step 500/3000  held-out ...")         # False: the output is closed
    progress.close()

The bar and the log lines show the mean loss and speed of the last `window` steps
(`log_every`). That loss is the training loss, label-smoothed when the run smooths
(the lines say so: "train loss (label-smoothed 0.1)"), unlike the plain cross-entropy
that evaluation reports as the held-out loss. A write to a closed output (a broken
pipe, a closed terminal) silences the output, writes later lines to stderr, and
returns False, so the Trainer stops.

`progress_bar` is the one tqdm bar of the package: the Trainer's steps, `translate`'s
lines and `data`'s bytes.
"""

from .signals import write_line


class Progress:
    def __init__(self, log=print, label_smoothing=0.0):
        self.log, self.bar, self.closed = log, None, False
        self.label_smoothing = label_smoothing   # of the training loss, named on the lines
        self.recent = []                     # (loss, tokens/s) of the last steps

    def open(self, total, initial, enabled):
        """A bar from `initial` to `total` steps (enabled: True, False, None: on a terminal)."""
        self.bar = progress_bar(total, initial, enabled, unit="step")

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

    @property
    def loss_label(self):
        """"train loss", with its label smoothing when it has some."""
        eps = self.label_smoothing
        return f"train loss (label-smoothed {eps:g})" if eps else "train loss"

    def train_text(self):
        """"<loss_label> <mean loss>  " for a held-out line ("" before the first step)."""
        mean = self.mean_loss()
        return f"{self.loss_label} {mean:.4f}  " if mean is not None else ""

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
        return (f"step {step}/{steps}  {self.loss_label} {loss:.4f}  lr {lr:.2e}  "
                f"{speed:,.0f} tok/s") if logged else None

    def write(self, text):
        """A line above the bar, or to the log; False when the output turned out closed."""
        if write_line(text, self.bar, self.log, self.closed):
            return True
        self.log, self.closed = None, True
        return False


def progress_bar(total, initial=0, enabled=None, **options):
    """A tqdm.auto bar from `initial` to `total` (a text bar on a terminal, a widget in
    Jupyter), or None: without tqdm, or not enabled.

    enabled: True (always), False (never) or None (only on a terminal or in Jupyter).
    options: more of tqdm's settings (unit, desc, file, ...).
    """
    if enabled is False:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    bar = tqdm(total=total, initial=initial, dynamic_ncols=True,
               disable=None if enabled is None else False, **options)
    if bar.disable:
        bar.close()
        return None
    return bar
