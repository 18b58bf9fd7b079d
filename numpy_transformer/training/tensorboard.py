"""An optional TensorBoard event log of a training run (`train --tensorboard`).

    log = TensorBoardLog("runs/reverse")            # needs tensorboardX: the `tensorboard` extra
    trainer = Trainer(model, stream, config, checkpointer=Checkpointer("runs/reverse"),
                      callbacks=[log])
    trainer.fit()
    log.close(trainer)                              # the last rows, then the file is complete
    # tensorboard --logdir runs/reverse/tensorboard

A history listener: called after every step (a Trainer callback), it writes the rows the
history gained since it last looked (training: train/loss, train/lr, train/grad_norm,
train/tokens_per_s; each evaluation: held_out/<metric>), each at its step. Given them, it
also writes the run's settings (`hparams`: TensorBoard's HPARAMS tab, in the same event
file, each session's) and, at each evaluation, a few decoded samples as text
(`samples(trainer)`, markdown, under held_out/samples: the TEXT tab). Rows reach the
history at log lines, evaluations and checkpoints on a GPU (host_sync.py), every step with
NumPy; `close` writes the rest. A resumed run appends: its log starts after the step it
resumed from (`start_step`), in a new event file of the same folder, which TensorBoard
reads as one run. A fresh run (start_step 0) replaces the event files of an earlier run in
the folder (the run folder's claim already allowed replacing that run). Under MPI only rank
0 keeps one (cli/run.py).
"""

import os

from ..errors import InputError

INSTALL = ("pip install 'numpy_transformer[tensorboard]' "
           "(from a clone: pip install -e '.[tensorboard]'; or pip install tensorboardX)")


class TensorBoardLog:
    """Writes a Trainer's history to OUT/tensorboard/ as TensorBoard scalars; with
    `hparams` ({name: value}) the run's settings, with `samples` (samples(trainer) -> text)
    a few decoded samples at each evaluation. `metrics`: the held-out metrics the HPARAMS
    tab shows beside the settings."""

    def __init__(self, out, start_step=0, *, hparams=None, samples=None, metrics=()):
        try:
            from tensorboardX import SummaryWriter
            from tensorboardX.summary import hparams as hparams_summaries
        except ImportError:
            raise InputError(f"a TensorBoard log needs the tensorboardX package, which is "
                             f"not installed: {INSTALL}") from None
        self.folder = os.path.join(out, "tensorboard")
        self.make_writer, self.writer = SummaryWriter, None
        self.start_step = start_step
        self.written = {"train": start_step, "eval": start_step}   # the last step written
        self.hparams = hparams_summaries(
            {k: v if isinstance(v, (bool, int, float, str)) else str(v)
             for k, v in hparams.items() if v is not None},
            {f"held_out/{m}": 0.0 for m in metrics}) if hparams else ()
        self.samples = samples

    def __call__(self, trainer):
        """Write the history's rows after the last written step (a Trainer callback)."""
        history = trainer.history
        for part, prefix in (("train", "train/"), ("eval", "held_out/")):
            rows = new_rows(getattr(history, part), self.written[part])
            for row in rows:
                for name, value in row.items():
                    if name != "step" and isinstance(value, (int, float)) \
                            and not isinstance(value, bool):
                        self.writer_now().add_scalar(prefix + name, value, row["step"])
            if rows:
                self.written[part] = rows[-1]["step"]
            if rows and part == "eval" and self.samples is not None:
                self.writer_now().add_text("held_out/samples", self.samples(trainer),
                                           rows[-1]["step"])

    def writer_now(self):
        """The SummaryWriter, made at the first row (after the run folder was claimed)."""
        if self.writer is None:
            if self.start_step == 0 and os.path.isdir(self.folder):     # an earlier run's
                for name in os.listdir(self.folder):
                    if name.startswith("events.out.tfevents."):
                        os.remove(os.path.join(self.folder, name))
            self.writer = self.make_writer(self.folder,     # apart from an earlier session's
                                           filename_suffix=f".from-step-{self.start_step}")
            for summary in self.hparams:        # the experiment, its session's start and end
                self.writer.file_writer.add_summary(summary)
        return self.writer

    def close(self, trainer=None):
        """Write what `trainer`'s history still holds unwritten, then close the file."""
        if trainer is not None:
            self(trainer)
        if self.writer is not None:
            self.writer.close()


def new_rows(rows, after):
    """The rows with a step > `after`, in order (read from the end: the new ones are last)."""
    start = len(rows)
    while start > 0 and rows[start - 1]["step"] > after:
        start -= 1
    return rows[start:]


def close_logs(trainer):
    """Close the TensorBoardLogs among the trainer's callbacks (their last rows written)."""
    for callback in trainer.callbacks:
        if isinstance(callback, TensorBoardLog):
            callback.close(trainer)
