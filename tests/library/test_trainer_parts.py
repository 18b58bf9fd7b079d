"""The Trainer is put together from parts (training/loop.py): a Checkpointer writes the run
folder, a GradientSync shares the gradients, a HostSync brings each step's numbers to the
host. A caller may hand it parts of their own; these tests do, and check what the Trainer
asks of them. Also: the loss reaches the loop as one type on every backend, and the
training package speaks parameters, not command-line options."""

import ast
import re
from pathlib import Path

import numpy as np
import pytest
from test_training import tiny_trainer

from numpy_transformer.backend import xp
from numpy_transformer.errors import InputError
from numpy_transformer.training import TrainingDiverged
from numpy_transformer.training.checkpoints import Checkpointer
from numpy_transformer.training.gradient_sync import OneProcess
from numpy_transformer.training.host_sync import HostSync

from doors import raises_naming

TRAINING = Path(__file__).resolve().parents[2] / "numpy_transformer" / "training"


class RecordingCheckpointer(Checkpointer):
    """Writes nothing: remembers what it was asked to save, and at which step."""

    def __init__(self):
        super().__init__(out=None)
        self.saved = []

    def save(self, trainer, name="last.npz"):
        self.saved.append((name, trainer.step))
        if name == "last.npz":
            self.last = (name, trainer.step)
        return name


class StoppingSync(OneProcess):
    """One process whose all-reduce, at its `at`-th call, brings a stop as other ranks would."""

    def __init__(self, at):
        self.at, self.calls = at, 0

    def all_reduce(self, model, loss, weight, stop_request):
        self.calls += 1
        return loss, ("SIGTERM" if self.calls == self.at else None)


def poison_at(step):
    """A callback making the output weights NaN after `step`: the next loss is NaN."""
    def poison(trainer):
        if trainer.step == step:
            trainer.model.output_projection.params["weight"][...] = np.nan
    return poison


def test_a_checkpointer_of_ones_own_is_asked_to_save_at_every_interval():
    recorder = RecordingCheckpointer()
    trainer = tiny_trainer(steps=12, checkpoint_every=4, eval_every=4)
    trainer.checkpointer = recorder
    result = trainer.fit()
    assert [s for s in recorder.saved if s[0] == "last.npz"] == \
        [("last.npz", 4), ("last.npz", 8), ("last.npz", 12)]
    assert recorder.saved[0] == ("best.npz", 4)               # the first evaluation is best
    assert result.checkpoint == "last.npz" and not result.interrupted


def test_a_stopped_run_saves_through_its_checkpointer_and_says_how_to_resume():
    lines, recorder = [], RecordingCheckpointer()
    trainer = tiny_trainer(steps=12, callbacks=[lambda t: t.step == 6 and t.request_stop()])
    trainer.checkpointer, trainer.progress.log = recorder, lines.append
    result = trainer.fit()
    assert result.interrupted and result.step == 6 and recorder.saved[-1] == ("last.npz", 6)
    assert lines[-1] == ("stopped at step 6 (stop requested); saved last.npz, continue with: "
                         "trainer.resume('last.npz')")


def test_a_gradient_sync_of_ones_own_runs_once_per_step_and_can_stop_the_run():
    sync = StoppingSync(at=5)
    trainer = tiny_trainer(steps=12)
    trainer.gradient_sync = sync
    result = trainer.fit()
    assert sync.calls == 5 and result.step == 5
    assert result.interrupted and result.stop_reason == "SIGTERM"


def test_parts_are_passed_to_the_constructor_and_the_default_checkpointer_writes_nothing():
    from numpy_transformer.training import Trainer
    trainer = tiny_trainer()
    parts = dict(checkpointer=RecordingCheckpointer(), gradient_sync=OneProcess(),
                 host_sync=HostSync(every_step=False))
    made = Trainer(trainer.model, trainer.stream, trainer.config, **parts)
    assert all(getattr(made, name) is part for name, part in parts.items())
    plain = Trainer(trainer.model, trainer.stream, trainer.config)
    assert plain.out is None and plain.save_checkpoint() is None


def test_the_best_metric_and_its_direction_are_settings_of_the_run():
    from numpy_transformer.training import TrainConfig
    assert not TrainConfig().best_is_higher()                             # the loss
    assert TrainConfig(best_metric="bleu").best_is_higher()
    assert not TrainConfig(best_metric="perplexity").best_is_higher()
    assert not TrainConfig(best_metric="bleu", higher_is_better=False).best_is_higher()
    with raises_naming(InputError, "best_metric", "the name of a metric"):
        TrainConfig(best_metric="")
    with raises_naming(InputError, "higher_is_better", "True, False or None"):
        TrainConfig(higher_is_better="yes")


def test_the_checkpointer_keeps_what_the_run_folder_holds_besides_the_trainer(tmp_path):
    from numpy_transformer.checkpoint import load_checkpoint
    trainer = tiny_trainer(out=str(tmp_path), steps=4, eval_every=0, checkpoint_every=0)
    trainer.checkpointer.metadata = {"note": "a test"}
    trainer.fit()
    meta = load_checkpoint(str(tmp_path / "last.npz")).metadata
    assert meta["note"] == "a test" and set(meta["tokenizers"]) == {"src", "tgt"}
    assert meta["best"]["metric"] == meta["train_config"]["best_metric"] == "exact_match"
    assert (tmp_path / "src_tokenizer.json").is_file()


@pytest.mark.parametrize("every_step, raised_after", [(True, 6), (False, 10)])
def test_a_nan_is_found_every_step_or_at_the_next_log_line(every_step, raised_after):
    """Checking each step catches step 7's NaN before its update; a HostSync that waits (a
    GPU's) finds it when step 10's log line brings the losses back, naming step 7 still."""
    trainer = tiny_trainer(steps=12, eval_every=0, checkpoint_every=0, log_every=5,
                           callbacks=[poison_at(6)])
    trainer.host_sync = HostSync(every_step=every_step)
    with raises_naming(TrainingDiverged, "step 7", "nan", "`lr`"):
        trainer.fit()
    assert trainer.step == raised_after
    assert [r["step"] for r in trainer.history.train] == list(range(1, 7))


def test_the_loss_and_norm_reach_the_loop_as_0d_arrays_of_the_backend():
    trainer = tiny_trainer(clip_norm=1.0)
    loss, lr, ntokens, norm = trainer.train_step()
    assert type(loss) is xp.ndarray and loss.shape == () and norm.shape == ()
    assert isinstance(lr, float) and ntokens > 0
    trainer.host_sync.add(trainer.step, lr, 1.0, loss=loss, norm=norm)
    (row,) = trainer.host_sync.flush()                           # floats, at a log line
    assert row["loss"] == float(loss) and type(row["loss"]) is float


def option_strings_in(path):
    """The string constants of a module (docstrings aside) that name a command-line option."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)}
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docstrings and re.search(r"--[a-z]", node.value)]


@pytest.mark.parametrize("module", sorted(p.name for p in TRAINING.glob("*.py")))
def test_the_training_package_names_parameters_not_options(module):
    assert option_strings_in(TRAINING / module) == []
