"""`evaluate --checkpoint RUN/...npz` with no data options scores the run's own split, the
one training scored, so the numbers agree (each command run as a user types it); `average`'s
`next:` command runs as printed; fresh examples are `--fresh N`."""

import re
import shlex

import pytest

from doors import error, nt, ok

QUICK = ["--quick", "--no-figures", "--no-progress"]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """Four quick runs: a task, a corpus with test files, a corpus holding out its end,
    and a language model; each run's training output kept in OUT.log."""
    work = tmp_path_factory.mktemp("held_out")
    words = ["red", "green", "blue", "cat", "dog", "bird", "big", "small"]
    pairs = [(f"{a} {b}", f"{b} {a}") for a in words for b in words]
    for name, side in (("src", 0), ("tgt", 1)):
        (work / f"train.{name}").write_text("\n".join(p[side] for p in pairs) + "\n")
        (work / f"test.{name}").write_text("\n".join(p[side] for p in pairs[:20]) + "\n")
    (work / "text.txt").write_text("to be or not to be, that is the question.\n" * 60)
    corpus = ["--src", "train.src", "--tgt", "train.tgt"]
    for out, args in (("task", ["train", "--task", "reverse", "--keep-last", "2"]),
                      ("test", ["train", *corpus, "--test-src", "test.src", "--test-tgt",
                                "test.tgt"]),
                      ("end", ["train", *corpus, "--keep-last", "2"]),
                      ("lm", ["train-lm", "--text", "text.txt"])):
        log = ok(nt(*args, *QUICK, "--out", f"runs/{out}", cwd=work))
        (work / f"{out}.log").write_text(log)
    return work


def scores(out):
    """The scores evaluate printed after 'WHAT: ' (without the BLEU tokenisation note)."""
    line = out.strip().splitlines()[-1]
    return line.split("): ", 1)[1].split(" (BLEU tokenize")[0]


def held_out_lines(work, run):
    return [line for line in (work / f"{run}.log").read_text().splitlines()
            if "held-out loss" in line]


@pytest.mark.parametrize("run", ["task", "end"])
def test_the_run_split_is_scored_as_training_scored_it(work, run):
    for name in ("best", "last"):
        out = ok(nt("evaluate", "--checkpoint", f"runs/{run}/{name}.npz", cwd=work))
        assert out.startswith("the run's held-out split ("), out
        assert any(line.endswith("held-out " + scores(out)) for line in
                   held_out_lines(work, run)), (out, held_out_lines(work, run))
    assert held_out_lines(work, run)[-1].endswith("held-out " + scores(out))   # last = last
    if run == "task":
        assert "held-out examples of the reverse task, seed 0: the ones training evaluated" \
            in out


def test_a_corpus_run_with_test_files_scores_them_as_train_did_at_the_end(work):
    out = ok(nt("evaluate", "--checkpoint", "runs/test/last.npz", cwd=work))
    assert out.startswith("the run's test split (20 pairs of "), out
    assert "test.src / " in out and "as train scored it at the end" in out
    test_line = next(line for line in (work / "test.log").read_text().splitlines()
                     if line.startswith("test set (20 pairs): "))
    assert test_line == "test set (20 pairs): " + scores(out)


def test_a_language_model_scores_its_last_ten_percent(work):
    out = ok(nt("evaluate", "--checkpoint", "runs/lm/last.npz", cwd=work))
    assert out.startswith("the run's held-out split (the last 10% of "), out
    loss = re.search(r"loss (\d\.\d{4}) nats per character", out).group(1)
    final = re.search(r"Held-out loss \(the last 10% of the text, [\d,]+ characters\) "
                      r"(\d\.\d{4}) nats", (work / "lm.log").read_text()).group(1)
    assert loss == final


@pytest.mark.parametrize("run", ["task", "end"])
def test_average_next_command_runs_as_printed(work, run):
    out = ok(nt("average", f"runs/{run}/step-*.npz", "--out", f"runs/{run}/avg.npz",
                cwd=work))
    command = next(line for line in out.splitlines() if line.startswith("next:  "))
    argv = shlex.split(command[len("next:  "):])
    assert argv[:3] == ["python", "-m", "numpy_transformer"]
    assert "the run's held-out split (" in ok(nt(*argv[3:], cwd=work))


def test_fresh_examples_and_refusals(work):
    out = ok(nt("evaluate", "--checkpoint", "runs/task/best.npz", "--fresh", "30", "--seed",
                "3", cwd=work))
    assert out.startswith("30 held-out examples of the reverse task (test split, seed 3): ")
    error(nt("evaluate", "--checkpoint", "runs/task/best.npz", "--seed", "3", cwd=work), 2,
          "--seed", "--fresh")
    error(nt("evaluate", "--checkpoint", "runs/end/best.npz", "--fresh", "30", cwd=work), 2,
          "--fresh", "--src/--tgt")
    error(nt("evaluate", "--checkpoint", "runs/lm/best.npz", "--fresh", "30", cwd=work), 2,
          "--fresh")
    (work / "gone").mkdir()
    (work / "text.txt").rename(work / "gone" / "text.txt")
    try:
        error(nt("evaluate", "--checkpoint", "runs/lm/best.npz", cwd=work), 2, "--text",
              "text.txt", "not found")
    finally:
        (work / "gone" / "text.txt").rename(work / "text.txt")
