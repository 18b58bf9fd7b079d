"""`--help` of every command and subcommand, as a user runs it: each has a description, the
defaults it states for --out are the folders a run really writes, --threads is offered only
where it changes something, and a mistyped option gets a suggestion."""

import re

import pytest

from numpy_transformer.cli import build_parser
from doors import error, nt, ok, write_word_pairs

# Commands that compute with BLAS (lessons: the kernels of --html); the others have no --threads.
THREADS = {"train", "train-lm", "generate", "evaluate", "translate", "gradcheck", "figures",
           "lessons", "assignment check"}


def commands(parser=None, prefix=()):
    """Every command's words, subcommands included: ("train",), ("assignment", "make"), ..."""
    parser = parser or build_parser("assignment")
    found = []
    for action in parser._actions:
        choices = getattr(action, "choices", None)
        for name, sub in choices.items() if isinstance(choices, dict) else ():
            found += [(*prefix, name)] + commands(sub, (*prefix, name))
    return found


def help_text(words):
    return " ".join(ok(nt(*words, "--help")).split())       # one line: argparse wraps


@pytest.mark.parametrize("words", commands(), ids=" ".join)
def test_every_command_describes_itself_and_offers_threads_only_where_they_work(words):
    text = help_text(words)
    parser = build_parser("assignment")
    for word in words:
        parser = next(a.choices[word] for a in parser._actions
                      if isinstance(getattr(a, "choices", None), dict) and word in a.choices)
    assert parser.description, f"{' '.join(words)} has no description"
    assert " ".join(parser.description.split())[:60] in text
    assert ("--threads" in text) == (" ".join(words) in THREADS), " ".join(words)


def test_train_lm_help_speaks_of_its_text_not_of_tasks():
    assert not re.search(r"\btasks?\b", help_text(["train-lm"]))


@pytest.mark.parametrize("words, given, folder", [
    (["train"], [], "runs/reverse"),
    (["train"], ["--task", "copy"], "runs/copy"),
    (["train"], ["--tsv", "pairs.tsv"], "runs/translation"),
    (["train-lm"], ["--text", "pairs.tsv"], "runs/lm")])
def test_the_out_default_the_help_states_is_where_the_run_goes(words, given, folder, tmp_path):
    text = help_text(words)
    stated = re.search(r"--out OUT .*?\(default (.*?); with --resume", text).group(1)
    assert folder in stated or "runs/<task>" in stated and folder != "runs/translation"
    write_word_pairs(tmp_path)
    ok(nt(*words, *given, "--quick", "--no-figures", "--steps", 2, cwd=tmp_path))
    assert (tmp_path / folder / "last.npz").is_file()


def test_a_mistyped_option_gets_a_suggestion():
    assert error(nt("train", "--stpes", 5), 2, "unrecognized arguments: --stpes 5",
                 "(did you mean --steps?)")
    assert error(nt("assignment", "grade", "x", "--jsn", "f"), 2, "did you mean --json?")
    first = error(nt("gradcheck", "--xyzzy"), 2, "unrecognized arguments: --xyzzy")
    assert "did you mean" not in first
