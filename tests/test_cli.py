"""The command line: help, one-line errors with exit status 2, and quick end-to-end runs."""

import json
import os
import subprocess
import sys

import pytest

from numpy_transformer.cli import main

COMMANDS = ("train", "train-lm", "evaluate", "translate", "generate", "gradcheck")


def run(argv, capsys):
    """(exit status, stdout, stderr) of main(argv), in this process."""
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_line_error(code, err, *words):
    assert code == 2
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for word in words:
        assert word in lines[0], err


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """A --quick `train --task reverse` run in a temporary folder."""
    out = tmp_path_factory.mktemp("reverse")
    assert main(["train", "--task", "reverse", "--quick", "--out", str(out),
                 "--no-figures"]) == 0
    return out


@pytest.fixture(scope="module")
def lm_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lm")
    text = folder / "text.txt"
    text.write_text("to be or not to be, that is the question.\n" * 40)
    out = folder / "run"
    assert main(["train-lm", "--text", str(text), "--quick", "--out", str(out),
                 "--no-figures"]) == 0
    return out, text


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command, capsys):
    code, out, _ = run([command, "--help"], capsys)
    assert code == 0 and "usage:" in out


def test_no_command_prints_help(capsys):
    code, out, _ = run([], capsys)
    assert code == 2 and "train" in out


def test_unknown_task_is_a_one_line_error(capsys):
    code, _, err = run(["train", "--task", "juggle"], capsys)
    assert_one_line_error(code, err, "--task", "juggle")


@pytest.mark.parametrize("option, value", [("--steps", "-3"), ("--dropout", "1.5"),
                                           ("--lr", "fast"), ("--batch-size", "0"),
                                           ("--attention", "sparse")])
def test_bad_option_values_are_one_line_errors(option, value, capsys):
    code, _, err = run(["train", "--task", "copy", option, value], capsys)
    assert_one_line_error(code, err, option)


def test_inconsistent_model_settings_are_one_line_errors(capsys):
    code, _, err = run(["train", "--task", "copy", "--d-model", "30", "--heads", "4",
                        "--no-figures", "--out", "unused"], capsys)
    assert_one_line_error(code, err, "d_model")


def test_missing_file_is_a_one_line_error(tmp_path, capsys):
    code, _, err = run(["train", "--src", str(tmp_path / "no.txt"), "--tgt",
                        str(tmp_path / "no.txt")], capsys)
    assert_one_line_error(code, err, "no.txt")
    code, _, err = run(["train-lm", "--text", str(tmp_path / "missing.txt")], capsys)
    assert_one_line_error(code, err, "missing.txt")
    code, _, err = run(["translate", "--checkpoint", str(tmp_path / "x.npz"), "hi"], capsys)
    assert_one_line_error(code, err, "x.npz")


def test_empty_file_is_a_one_line_error(tmp_path, capsys):
    empty = tmp_path / "empty.tsv"
    empty.write_text("")
    code, _, err = run(["train", "--tsv", str(empty)], capsys)
    assert_one_line_error(code, err, "empty")
    code, _, err = run(["train-lm", "--text", str(empty)], capsys)
    assert_one_line_error(code, err, "empty")


def test_task_and_corpus_together_is_a_one_line_error(tmp_path, capsys):
    code, _, err = run(["train", "--task", "copy", "--tsv", str(tmp_path / "a.tsv")], capsys)
    assert_one_line_error(code, err, "--task")


def test_quick_train_writes_checkpoints_tokenizers_and_history(quick_run):
    names = set(os.listdir(quick_run))
    assert {"last.npz", "best.npz", "src_tokenizer.json", "tgt_tokenizer.json",
            "history.json"} <= names
    history = json.loads((quick_run / "history.json").read_text())
    assert history["train"][-1]["step"] == 40 and history["eval"]


def test_translate_and_evaluate_from_a_quick_checkpoint(quick_run, capsys):
    ckpt = str(quick_run / "best.npz")
    code, out, _ = run(["translate", "--checkpoint", ckpt, "abc", "hello"], capsys)
    assert code == 0 and len(out.splitlines()) == 2
    code, out, _ = run(["translate", "--checkpoint", ckpt, "--beam", "3", "abc"], capsys)
    assert code == 0 and len(out.splitlines()) == 1
    code, out, _ = run(["evaluate", "--checkpoint", ckpt, "--examples", "30"], capsys)
    assert code == 0 and "exact_match" in out and "30 held-out" in out
    code, _, err = run(["generate", "--checkpoint", ckpt, "--prompt", "a"], capsys)
    assert_one_line_error(code, err, "train-lm")


def test_resume_continues_a_quick_run(quick_run, tmp_path, capsys):
    import shutil
    for name in ("last.npz", "history.json", "src_tokenizer.json", "tgt_tokenizer.json"):
        shutil.copy(quick_run / name, tmp_path / name)
    code, out, _ = run(["train", "--resume", str(tmp_path / "last.npz"), "--steps", "50",
                        "--no-figures"], capsys)
    assert code == 0 and "resuming at step 40" in out
    history = json.loads((tmp_path / "history.json").read_text())
    assert [r["step"] for r in history["train"]] == list(range(1, 51))


def test_train_lm_generate_and_evaluate(lm_run, capsys):
    out, text = lm_run
    ckpt = str(out / "best.npz")
    code, printed, _ = run(["generate", "--checkpoint", ckpt, "--prompt", "to be",
                            "--max-new-tokens", "80", "--top-k", "5"], capsys)
    assert code == 0 and printed.startswith("to be") and len(printed.rstrip("\n")) >= 85
    code, printed, _ = run(["evaluate", "--checkpoint", ckpt, "--text", str(text)], capsys)
    assert code == 0 and "perplexity" in printed
    code, _, err = run(["translate", "--checkpoint", ckpt, "abc"], capsys)
    assert_one_line_error(code, err, "train")


def test_train_on_a_tsv_corpus_reports_bleu(tmp_path, capsys):
    words = ["one", "two", "three", "four", "five"]
    lines = [f"{a} {b}\t{b} {a}" for a in words for b in words]
    corpus = tmp_path / "pairs.tsv"
    corpus.write_text("\n".join(lines * 2) + "\n")
    code, out, _ = run(["train", "--tsv", str(corpus), "--quick", "--out", str(tmp_path / "r"),
                        "--no-figures"], capsys)
    assert code == 0 and "BLEU" in out


def test_module_entry_point_quick_run(tmp_path):
    """`python -m numpy_transformer train --task reverse --quick` in a fresh process."""
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(__file__))}
    done = subprocess.run([sys.executable, "-m", "numpy_transformer", "train", "--task",
                           "reverse", "--quick", "--out", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "exact match" in done.stdout and "prediction" in done.stdout
    assert (tmp_path / "last.npz").is_file()
    if "figures skipped" not in done.stdout:
        pngs = list((tmp_path / "figures").glob("*.png"))
        assert len(pngs) == 6 and all(p.stat().st_size > 0 for p in pngs)


@pytest.mark.slow
def test_default_reverse_run_reaches_99_percent(tmp_path, capsys):
    code, out, _ = run(["train", "--task", "reverse", "--out", str(tmp_path), "--no-figures"],
                       capsys)
    assert code == 0
    final = json.loads((tmp_path / "history.json").read_text())["eval"][-1]
    assert final["step"] == 3000 and final["exact_match"] >= 0.99, out
