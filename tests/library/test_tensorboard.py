"""The optional TensorBoard event log (training/tensorboard.py, `train --tensorboard`): its
event files hold the training and held-out scalars at their steps, a resumed run appends,
and without tensorboardX the error names the extra to install."""

import os
import struct
import subprocess
import sys

import pytest
from doors import NT, error, nt, ok
from test_training import tiny_trainer

from numpy_transformer.errors import InputError
from numpy_transformer.training.tensorboard import TensorBoardLog, close_logs


def events(folder):
    """{tag: [(step, value)]} of every event file in `folder`, read as TensorBoard does:
    TFRecords (length, its CRC, an Event protocol buffer, its CRC)."""
    from tensorboardX.proto import event_pb2
    scalars = {}
    for path in sorted(folder.glob("events.out.tfevents.*")):
        data, i = path.read_bytes(), 0
        while i < len(data):
            n, = struct.unpack("<Q", data[i:i + 8])
            event = event_pb2.Event.FromString(data[i + 12:i + 12 + n])
            i += 12 + n + 4
            for value in event.summary.value:
                scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    return scalars


def test_the_log_holds_loss_lr_grad_norm_and_held_out_metrics(tmp_path):
    pytest.importorskip("tensorboardX")
    log = TensorBoardLog(str(tmp_path))
    trainer = tiny_trainer(out=str(tmp_path), steps=8, callbacks=[log])
    trainer.fit()
    close_logs(trainer)
    scalars = events(tmp_path / "tensorboard")
    assert [step for step, _ in scalars["train/loss"]] == list(range(1, 9))
    assert {"train/lr", "train/grad_norm", "train/tokens_per_s"} <= scalars.keys()
    assert [step for step, _ in scalars["held_out/exact_match"]] == [4, 8]
    first = trainer.history.train[0]
    assert scalars["train/loss"][0][1] == pytest.approx(first["loss"], rel=1e-6)
    assert scalars["train/lr"][-1][1] == pytest.approx(trainer.history.train[-1]["lr"])


def test_a_resumed_run_appends_after_its_step(tmp_path):
    pytest.importorskip("tensorboardX")
    first = tiny_trainer(out=str(tmp_path), steps=8, callbacks=[TensorBoardLog(str(tmp_path))])
    first.fit()
    close_logs(first)
    again = tiny_trainer(out=str(tmp_path), steps=12)
    again.resume(str(tmp_path / "last.npz"))
    again.callbacks.append(TensorBoardLog(str(tmp_path), start_step=again.step))
    again.fit()
    close_logs(again)
    assert len(list((tmp_path / "tensorboard").glob("events.out.tfevents.*"))) == 2
    steps = [step for step, _ in events(tmp_path / "tensorboard")["train/loss"]]
    assert steps == list(range(1, 13))                  # each step once, in order


def test_without_tensorboardx_the_error_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)       # import fails
    with pytest.raises(InputError, match=r"numpy_transformer\[tensorboard\]"):
        TensorBoardLog(str(tmp_path))


@pytest.mark.slow
def test_train_tensorboard_writes_the_run_folders_log(tmp_path):
    pytest.importorskip("tensorboardX")
    quick = ["--quick", "--no-figures", "--no-progress", "--steps", "6", "--warmup", "1"]
    ok(nt("train", "--task", "copy", *quick, "--out", "r", "--tensorboard", cwd=tmp_path))
    scalars = events(tmp_path / "r" / "tensorboard")
    assert len(scalars["train/loss"]) == 6 and "held_out/exact_match" in scalars


def test_train_lm_tensorboard_without_the_package_is_one_error_line(tmp_path):
    (tmp_path / "t.txt").write_text("to be or not to be\n" * 40)
    block = tmp_path / "block"
    block.mkdir()
    (block / "tensorboardX.py").write_text("raise ImportError('no tensorboardX here')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(block), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([*NT, "train-lm", "--text", "t.txt", "--quick", "--no-figures",
                           "--no-progress", "--tensorboard"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    error(done, 2, "tensorboardX", "numpy_transformer[tensorboard]",
          "pip install -e '.[tensorboard]'")                     # the clone's form too
    assert not (tmp_path / "runs" / "lm" / "last.npz").exists()


def summaries(folder):
    """(settings, texts) of the event files in `folder`: the HPARAMS tab's settings of each
    session ({name: value}, one dict per file) and the TEXT tab's {tag: [(step, text)]}."""
    from tensorboardX.proto import event_pb2, plugin_hparams_pb2
    settings, texts = [], {}
    for path in sorted(folder.glob("events.out.tfevents.*")):
        data, i = path.read_bytes(), 0
        while i < len(data):
            n, = struct.unpack("<Q", data[i:i + 8])
            event = event_pb2.Event.FromString(data[i + 12:i + 12 + n])
            i += 12 + n + 4
            for value in event.summary.value:
                plugin = value.metadata.plugin_data
                if plugin.plugin_name == "hparams" and value.tag.endswith("session_start_info"):
                    info = plugin_hparams_pb2.HParamsPluginData.FromString(plugin.content)
                    settings.append({name: getattr(v, v.WhichOneof("kind"))
                                     for name, v in info.session_start_info.hparams.items()})
                elif plugin.plugin_name == "text":
                    texts.setdefault(value.tag, []).append(
                        (event.step, value.tensor.string_val[0].decode()))
    return settings, texts


@pytest.mark.slow
def test_the_log_holds_the_runs_settings_and_decoded_samples(tmp_path):
    pytest.importorskip("tensorboardX")
    quick = ["--quick", "--no-figures", "--no-progress", "--steps", "6", "--warmup", "1",
             "--eval-every", "3", "--tensorboard"]
    ok(nt("train", "--task", "copy", *quick, "--out", "r", cwd=tmp_path))
    [settings], texts = summaries(tmp_path / "r" / "tensorboard")
    assert settings["task"] == "copy" and settings["steps"] == 6 and settings["warmup"] == 1
    assert settings["out"] == "r" and "lr" in settings and "d_model" in settings
    shown = texts["held_out/samples/text_summary"]
    assert [step for step, _ in shown] == [3, 6]
    assert shown[-1][1].startswith("| source | target | prediction |\n| --- | --- | --- |\n| ")
    assert shown[-1][1].count("\n") == 4                        # three held-out examples
    (tmp_path / "t.txt").write_text("to be or not to be\n" * 40)
    ok(nt("train-lm", "--text", "t.txt", *quick, "--out", "lm", cwd=tmp_path))
    [settings], texts = summaries(tmp_path / "lm" / "tensorboard")
    assert settings["text"].endswith("t.txt") and settings["steps"] == 6
    [(step, sample)] = texts["held_out/samples/text_summary"][-1:]
    assert step == 6 and sample.startswith("    \n    ") and len(sample) > 200
