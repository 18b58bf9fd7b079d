"""Typed settings end to end: one task registry, the configurations a checkpoint saves,
checkpoints of the old format refused, the library naming parameters and the CLI options."""

import json
import pathlib

import numpy as np
import pytest
from doors import error, nt, ok

from numpy_transformer.cli import main
from numpy_transformer.data import TASKS, DataConfig, Task, register_task
from numpy_transformer.data.corpus import seq2seq_data, text_data
from numpy_transformer.errors import InputError

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "numpy_transformer"


class NextLetter(Task):
    """'abc' -> 'bcd': each letter replaced by the next one of the alphabet."""

    name = "next_letter"
    alphabet = "abcdefgh"
    max_src_len = max_tgt_len = 6

    def example(self, rng):
        src = "".join(rng.choice(list(self.alphabet[:-1]), size=int(rng.integers(1, 7))))
        return src, "".join(self.alphabet[self.alphabet.index(c) + 1] for c in src)


@pytest.fixture
def next_letter():
    """The task, registered in one place with its own defaults (and removed afterwards)."""
    register_task("next_letter", NextLetter, steps=6, warmup=1, eval_every=3,
                  checkpoint_every=3, d_model=16, num_heads=2, d_ff=32, num_layers=1,
                  max_len=12, batch_size=8, eval_examples=20)
    yield "next_letter"
    del TASKS["next_letter"]


def test_a_task_registered_in_one_place_trains_from_the_command_line(next_letter, tmp_path,
                                                                      capsys):
    run = tmp_path / "r"
    assert main(["train", "--task", next_letter, "--no-figures", "--no-progress",
                 "--out", str(run)]) == 0
    assert "6 steps in" in capsys.readouterr().out
    config = json.loads((run / "config.json").read_text())
    assert config["model"]["d_model"] == 16 and config["train"]["steps"] == 6   # its defaults
    assert config["data_config"]["task"] == next_letter
    assert main(["evaluate", "--checkpoint", str(run / "best.npz")]) == 0
    assert "held-out examples of the next_letter task" in capsys.readouterr().out
    assert main(["train", "--help"]) == 0
    assert "next_letter steps=6" in capsys.readouterr().out


def test_an_unknown_task_is_refused_by_the_command_line(tmp_path):
    error(nt("train", "--task", "next_letter", cwd=tmp_path), 2, "--task", "invalid choice")


def as_format_1(header):
    """The header as numpy_transformer 0.1.0 wrote it: format 1, a flat settings dict."""
    meta = header["metadata"]
    settings = {**header["config"], **meta.pop("train_config"), **meta.pop("data_config"),
                **meta.pop("run_config")}
    header.pop("written_by", None)
    return {**header, "version": 1, "metadata": {**meta, "settings": settings}}


def test_a_checkpoint_of_the_old_format_is_refused_naming_its_version(tmp_path):
    from test_commands import _rewrite
    ok(nt("train", "--task", "copy", "--quick", "--steps", "4", "--no-figures",
          "--no-progress", "--out", "r", cwd=tmp_path))
    _rewrite(tmp_path / "r" / "last.npz", tmp_path / "old.npz", as_format_1)
    words = ("old.npz", "numpy_transformer 0.1.0", "format 1", "train the run again")
    for command in (["train", "--resume", "old.npz", "--steps", "6"],
                    ["evaluate", "--checkpoint", "old.npz"],
                    ["translate", "--checkpoint", "old.npz", "abc"],
                    ["average", "old.npz", "r/last.npz", "--out", "avg.npz"]):
        error(nt(*command, cwd=tmp_path), 2, *words)


def without_best_metric(header):
    """The header as a format-2 checkpoint wrote it before TrainConfig held the best metric."""
    for key in ("best_metric", "higher_is_better"):
        del header["metadata"]["train_config"][key]
    return header


def test_a_format_2_checkpoint_without_the_best_metric_setting_resumes_as_before(tmp_path):
    from numpy_transformer.checkpoint import load_checkpoint
    from test_commands import _rewrite
    ok(nt("train", "--task", "copy", "--quick", "--steps", "4", "--no-figures",
          "--no-progress", "--out", "r", cwd=tmp_path))
    (tmp_path / "old").mkdir()
    _rewrite(tmp_path / "r" / "last.npz", tmp_path / "old" / "last.npz", without_best_metric)
    ok(nt("train", "--resume", "old/last.npz", "--steps", "6", "--no-progress", cwd=tmp_path))
    meta = load_checkpoint(tmp_path / "old" / "last.npz").metadata
    assert meta["step"] == 6 and meta["train_config"]["best_metric"] == "exact_match"
    assert meta["best"]["metric"] == "exact_match"


def test_data_errors_name_parameters_and_the_command_line_names_options(tmp_path):
    with pytest.raises(InputError, match=r"^bpe: expected a corpus"):
        seq2seq_data(DataConfig(task="copy", bpe=10))
    with pytest.raises(InputError, match=r"^max_len: expected at least 11"):
        seq2seq_data(DataConfig(task="reverse", max_len=5))
    (tmp_path / "t.txt").write_text("short text")
    with pytest.raises(InputError, match=r"`max_len` \+ 1"):
        text_data(DataConfig(text=str(tmp_path / "t.txt"), max_len=64))
    error(nt("train", "--task", "reverse", "--quick", "--max-len", "5", cwd=tmp_path), 2,
          "--max-len: expected at least 11")


@pytest.mark.parametrize("fields, named", [
    (dict(task="nope"), "task"), (dict(bpe=0), "bpe"), (dict(src=3), "src"),
    (dict(bleu_tokenize="intl"), "bleu_tokenize"), (dict(seed=-1), "seed"),
    (dict(joint_vocab=1), "joint_vocab"), (dict(sha256=[]), "sha256")])
def test_a_data_config_checks_its_fields(fields, named):
    with pytest.raises(InputError, match=f"^{named}: expected"):
        DataConfig(**fields)


@pytest.mark.parametrize("folder", ["data", "decoding", "checkpoint"])
def test_the_library_names_no_command_line_option(folder):
    for path in sorted((PACKAGE / folder).glob("*.py")):
        text = path.read_text(encoding="utf-8")
        for quote in ('"--', "'--", "f\"--", "`--"):
            assert quote not in text, f"{path.name} names an option ({quote}...)"
    assert "--" not in (PACKAGE / "system" / "sizes.py").read_text(encoding="utf-8")


def test_rebuilt_configurations_round_trip(tmp_path):
    from numpy_transformer.checkpoint import load_checkpoint
    from numpy_transformer.cli.configs import saved_configs
    ok(nt("train", "--task", "copy", "--quick", "--steps", "4", "--no-figures",
          "--no-progress", "--out", "r", "--lowercase", cwd=tmp_path))
    ckpt = load_checkpoint(tmp_path / "r" / "last.npz")
    model, train, data, run = saved_configs(ckpt, "last.npz")
    assert (model.d_model, train.steps, data.task, data.lowercase) == (32, 4, "copy", True)
    assert run.no_figures is True and np.isclose(train.lr, 3e-3)


def test_the_command_line_names_its_options_where_the_library_names_parameters():
    from numpy_transformer.cli import build_parser
    from numpy_transformer.cli.options import option_names
    train = build_parser().parse_args(["train"]).command_parser
    said = "bpe: expected a corpus (`src`/`tgt` or `tsv`), got `task` copy"
    assert option_names(said, train) == \
        "--bpe: expected a corpus (--src/--tgt or --tsv), got --task copy"
    assert option_names("batch_tokens: expected at least 11", train).startswith("--batch-tokens")
    assert option_names("steps x: no", train) == "steps x: no"           # not a parameter
    translate = build_parser().parse_args(["translate", "--checkpoint", "c", "x"]).command_parser
    assert option_names("beam_size: expected something that fits", translate).startswith(
        "--beam:")
    assert option_names("`nothing_here` stays", translate) == "`nothing_here` stays"
