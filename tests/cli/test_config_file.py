"""`train --config FILE` and `train-lm --config FILE` (cli/config_file.py): the files of
configs/ reproduce the long commands they replace exactly, the command line overrides a
file, a run's config.json starts the run again, and a wrong file is one clear error."""

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from numpy_transformer.cli import build_parser
from numpy_transformer.cli import lm, run, train
from numpy_transformer.cli.config_file import file_options, toml_reader
from numpy_transformer.data import TASKS
from numpy_transformer.tools.recipes import dataset_commands, multi30k_runs
from doors import WORDS, error, names, nt, ok

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs"


class DataFolder(dict):
    def __missing__(self, name):             # every data file under data/, as the docs say
        return f"data/{name}"


def long_commands():
    """{config file: the long command it replaces}, the commands `data` prints and the
    docs showed (tools/recipes.py), with the data under data/."""
    runs = multi30k_runs(DataFolder())
    lms = dataset_commands("shakespeare", DataFolder())
    return {"multi30k.toml": runs["m30k"][0], "multi30k_en_de.toml": runs["m30k_en_de"][0],
            "multi30k_en_de_tiny.toml": runs["m30k_en_de_tiny"][0],
            "multi30k_de_en_tiny.toml": runs["m30k_de_en_tiny"][0],
            "multi30k_words.toml": runs["translation"][0], "shakespeare.toml": lms[0],
            "shakespeare_big.toml": lms[1], "shakespeare_hour.toml": lms[2],
            "capstone.toml": CAPSTONE}


# lesson 17's checkpoint was made by this command (notebooks/README.md, until issue 40)
CAPSTONE = ("python -m numpy_transformer train-lm --text data/tinyshakespeare.txt "
            "--out runs/capstone --d-model 96 --heads 4 --d-ff 384 --layers 3 --max-len 64 "
            "--dropout 0 --batch-size 48 --steps 2500 --lr 3e-3 --seed 0 --no-figures")


def parse(command):
    """The parsed options of a `python -m numpy_transformer ...` line (after any mpiexec)."""
    argv = shlex.split(command)
    argv = argv[argv.index("numpy_transformer") + 1:]
    return build_parser(argv[0]).parse_args(argv)


def options(args):
    return {k: v for k, v in vars(args).items() if k not in ("config", "config_values", "run",
                                                         "command_parser")}


@pytest.mark.parametrize("name, command", long_commands().items())
def test_each_config_file_parses_to_the_long_command(name, command, monkeypatch):
    monkeypatch.chdir(ROOT)
    verb = command.split("numpy_transformer ")[1].split()[0]
    given = parse(f"python -m numpy_transformer {verb} --config configs/{name}")
    assert given.config == f"configs/{name}"
    assert options(given) == options(parse(command))   # the same options: the same run


def test_the_main_jobs_file_resolves_to_the_settings_of_train_task_reverse(monkeypatch):
    monkeypatch.chdir(ROOT)
    presets = [train.SEQ2SEQ, TASKS["reverse"].defaults]
    resolved = [run.resolve_settings(parse(f"python -m numpy_transformer train {rest}"),
                                     "seq2seq", train.SETTINGS, presets, train.QUICK)[0]
                for rest in ("--task reverse", "--config configs/reverse.toml")]
    assert resolved[0] == resolved[1]


@pytest.mark.parametrize("verb, names", [("train", train.SETTINGS), ("train-lm", lm.LM_SETTINGS)])
def test_a_file_sets_exactly_the_settings_of_a_run(verb, names):
    parser = build_parser(verb)._subparsers._group_actions[0].choices[verb]
    keys = file_options(parser)
    assert {a.dest for a in keys.values()} >= set(names) | {"no_figures"}
    assert all(parser.get_default(a.dest) in (None, False) for a in keys.values())


def test_the_command_line_overrides_the_file_before_or_after_config(monkeypatch):
    monkeypatch.chdir(ROOT)
    for argv in ("--steps 7 --config configs/multi30k.toml --no-share-embeddings",
                 "--config configs/multi30k.toml --steps 7 --no-share-embeddings"):
        args = parse(f"python -m numpy_transformer train {argv}")
        assert (args.steps, args.share_embeddings, args.d_model) == (7, False, 256)


def write(tmp_path, text, name="run.toml"):
    (tmp_path / name).write_text(text)
    return name


@pytest.mark.parametrize("text, words", [
    ("d_model = 64\n", ["run.toml", "d_model", "write it d-model"]),
    ("d-modle = 64\n", ["run.toml", "unknown key 'd-modle'", "did you mean d-model?"]),
    ("d-model = 'big'\n", ["run.toml", "d-model = 'big'", "expected a number"]),
    ("d-model = -3\n", ["run.toml", "d-model = -3", "expected a positive integer"]),
    ("schedule = 'linear'\n", ["run.toml", "schedule", "one of 'cosine', 'noam'"]),
    ("joint-vocab = 'yes'\n", ["run.toml", "joint-vocab", "expected true or false"]),
    ("src = 3\n", ["run.toml", "src = 3", "expected a string"]),
    ("resume = 'x.npz'\n", ["run.toml", "not a setting of the run", "--resume"]),
    ("[model]\nd-model = 64\n[more]\nd-model = 32\n", ["run.toml", "d-model is given twice"]),
    ("d-model = \n", ["run.toml"]),
])
def test_a_wrong_file_is_one_error_naming_the_file_the_key_and_what_is_expected(
        tmp_path, text, words):
    name = write(tmp_path, text)
    error(nt("train", "--config", name, cwd=tmp_path), 2, "--config", *words)


def test_a_missing_file_and_another_commands_config_json_are_refused(tmp_path):
    error(nt("train", "--config", "none.toml", cwd=tmp_path), 2, "none.toml", "cannot read")
    name = write(tmp_path, json.dumps({"model_class": "GPT", "kind": "lm", "train": {}}),
                 "config.json")
    error(nt("train", "--config", name, cwd=tmp_path), 2, "config.json", "`train-lm` run")


def test_without_tomllib_or_tomli_the_error_names_the_fix(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "tomllib", None)
    monkeypatch.setitem(__import__("sys").modules, "tomli", None)
    with pytest.raises(ValueError, match="pip install tomli"):
        toml_reader()


def test_a_runs_config_json_given_back_trains_the_same_run(tmp_path):
    ok(nt("train", "--task", "copy", "--quick", "--steps", "4", "--no-figures", "--no-norm-first",
          "--out", "a", cwd=tmp_path))
    again = parse(f"python -m numpy_transformer train --config {tmp_path}/a/config.json --out b")
    saved = json.loads((tmp_path / "a" / "config.json").read_text())
    assert (again.task, again.steps, again.d_model, again.norm_first, again.out) == \
        ("copy", 4, 32, False, "b")
    assert again.warmup == saved["train"]["warmup"] and again.no_figures
    out = ok(nt("train", "--config", "a/config.json", "--out", "b", cwd=tmp_path))
    assert json.loads((tmp_path / "b" / "config.json").read_text())["model"] == saved["model"]
    assert "training" in out


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
@pytest.mark.parametrize("verb", ["train", "train-lm"])
def test_a_fifo_or_a_device_as_the_config_is_refused_at_once(tmp_path, verb, special):
    path = special
    if special == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        path = tmp_path / "run.toml"
        os.mkfifo(path)
    try:
        done = nt(verb, "--config", path, cwd=tmp_path, timeout=300)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{verb} --config {path} hung")
    error(done, 2, "--config", str(path), "a regular file",
          "a FIFO" if special == "fifo" else "a device")


@pytest.mark.parametrize("name, text, words", [
    ("run.toml", "heads = 2\nnum-heads = 4\n", ["run.toml", "heads", "num-heads"]),
    ("run.toml", "[model]\nlayers = 2\n[more]\nnum-layers = 3\n",
     ["run.toml", "layers", "num-layers"]),
    ("run.json", '{"steps": 5, "steps": 7}', ["run.json", "steps", "twice"]),
    ("run.json", '{"clip": 1.0, "clip-norm": 2.0}', ["run.json", "clip", "clip-norm"]),
])
def test_one_option_set_twice_in_a_file_is_refused_naming_the_file_and_the_keys(
        tmp_path, name, text, words):
    write(tmp_path, text, name)
    error(nt("train", "--config", name, cwd=tmp_path), 2, "--config", *words)


def test_two_config_files_are_refused_naming_both(tmp_path):
    write(tmp_path, "steps = 5\n", "a.toml")
    write(tmp_path, "lr = 0.1\n", "b.json")
    error(nt("train", "--config", "a.toml", "--config", "b.json", cwd=tmp_path), 2,
          "--config", "a.toml", "b.json", "twice")


def test_a_value_from_a_file_is_named_with_the_file_in_errors_and_notes(tmp_path):
    write(tmp_path, "src = 'nope.de'\ntgt = 'nope.en'\n", "data.toml")
    first = error(nt("train", "--config", "data.toml", "--quick", cwd=tmp_path), 2)
    names(first, "--src", "data.toml", "nope.de")
    write(tmp_path, "steps = 50\nwarmup = 100\n", "long.toml")
    first = error(nt("train", "--task", "copy", "--quick", "--config", "long.toml",
                     cwd=tmp_path), 2)
    names(first, "--warmup", "long.toml", "100", "50")
    ok(nt("train", "--task", "copy", "--quick", "--steps", "4", "--no-figures", "--out", "a",
          cwd=tmp_path))
    write(tmp_path, "d-model = 16\n", "wide.toml")
    out = ok(nt("train", "--resume", "a/last.npz", "--steps", "6", "--config", "wide.toml",
                "--dropout", "0.5", cwd=tmp_path))
    note = next(line for line in out.splitlines() if line.startswith("note: resuming"))
    names(note, "--d-model", "wide.toml", "--dropout")
    assert "--dropout (from" not in note            # typed here: no file to name


def test_a_files_warmup_scales_with_a_typed_steps_as_the_tasks_own(monkeypatch):
    monkeypatch.chdir(ROOT)
    presets = [train.SEQ2SEQ, TASKS["reverse"].defaults]
    resolved = [run.resolve_settings(parse(f"python -m numpy_transformer train {rest}"),
                                     "seq2seq", train.SETTINGS, presets, train.QUICK)[0]
                for rest in ("--task reverse --steps 60",
                             "--config configs/reverse.toml --steps 60")]
    assert resolved[0] == resolved[1] and resolved[1]["warmup"] == 6


SMALL = ["--steps", "3", "--d-model", "16", "--num-heads", "2", "--d-ff", "32",
         "--num-layers", "1", "--no-figures", "--out", "run"]
CORPUS = {"src": "a.src", "tgt": "a.tgt", "val-src": "v.src", "val-tgt": "v.tgt",
          "test-src": "t.src", "test-tgt": "t.tgt"}


def tiny_data(folder, verb, text):
    """Options pointing a config's data files at tiny ones written into `folder`."""
    if verb == "train-lm":
        (folder / "text.txt").write_text("to be or not to be, that is the question.\n" * 70)
        return ["--text", "text.txt"]
    if "task = " in text:
        return ["--eval-examples", "4"]
    sentences = [f"{a} {b}" for a in WORDS for b in WORDS]
    for option, name in CORPUS.items():
        (folder / name).write_text("\n".join(sentences[:len(sentences) // (
            1 if option in ("src", "tgt") else 4)]) + "\n")
    return ["--eval-examples", "4", *(f"--{option}={name}" for option, name in CORPUS.items())]


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.toml")), ids=lambda p: p.name)
def test_every_config_file_trains_for_a_few_typed_steps(tmp_path, path):
    """A new user tries a headline file for a few steps: it trains (its warm-up scales
    with the --steps typed, as `--steps` alone scales a task's), with the data options
    pointed at tiny files (never the real corpora) and a small model."""
    text = path.read_text()
    verb = "train-lm" if "train-lm" in text.split("\n\n")[0] else "train"
    out = ok(nt(verb, "--config", path, *SMALL, *tiny_data(tmp_path, verb, text),
                cwd=tmp_path))
    assert "training" in out and (tmp_path / "run" / "last.npz").exists()


@pytest.mark.parametrize("name, text", [
    ("deep.toml", "steps = " + "[" * 100_000 + "]" * 100_000 + "\n"),
    ("deep.json", '{"steps": ' + "[" * 100_000 + "]" * 100_000 + "}"),
    ("some.json", '{"steps": ' + "[" * 40 + "]" * 40 + "}"),
], ids=["toml", "json", "json-40"])
def test_a_deeply_nested_file_is_refused_naming_the_limit(tmp_path, name, text):
    write(tmp_path, text, name)
    first = error(nt("train", "--config", name, cwd=tmp_path), 2, "--config", name,
                  "nested too deeply")
    names(first, "32")


@pytest.mark.parametrize("name, text", [
    ("bom.toml", "\ufeffsteps = 5\n"), ("bom.json", '\ufeff{"steps": 5}'),
    ("c.JSON", '{"steps": 5}'), ("c.Toml", "steps = 5\n"),
])
def test_a_byte_order_mark_and_a_suffix_in_capitals_are_read(tmp_path, name, text):
    (tmp_path / name).write_text(text, encoding="utf-8")
    args = parse(f"python -m numpy_transformer train --config {tmp_path / name}")
    assert args.steps == 5


def test_an_os_error_about_a_path_from_a_file_names_the_option_and_the_file(tmp_path):
    write(tmp_path, 'out = "/proc/nt-no-such/run"\ntask = "copy"\n', "c.toml")
    first = error(nt("train", "--config", "c.toml", "--quick", "--no-figures", cwd=tmp_path), 2)
    assert "--out (from c.toml): /proc/nt-no-such" in first, first
    first = error(nt("train", "--task", "copy", "--quick", "--no-figures",
                     "--out", "/proc/nt-no-such/run", cwd=tmp_path), 2)
    assert "--out: /proc/nt-no-such" in first, first
