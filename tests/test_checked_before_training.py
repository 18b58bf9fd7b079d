"""Bad input is refused with one `error:` line naming the option or the file, exit 2, before
the first training step: no run loses its training to a check that could have run at the
start, and no command hangs on a FIFO or reads a device without end (issue 26)."""

import os

import pytest

from doors import error, nt, ok

QUICK = ("--quick", "--steps", "6", "--warmup", "1", "--no-progress")
WAIT = 30                     # seconds: a command that hangs fails the test instead


@pytest.fixture
def fifo(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("needs os.mkfifo")
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


# Every path the package reads goes through one regular-file check (files.open_regular).

def test_a_fifo_or_a_device_as_the_data_manifest_is_refused(tmp_path, fifo):
    for path, kind in ((fifo, "a FIFO"), ("/dev/zero", "a device")):
        error(nt("data", "shakespeare", "--out", tmp_path / "d", "--manifest", path,
                 cwd=tmp_path, timeout=WAIT), 2, "--manifest", kind)


@pytest.mark.parametrize("name", ["tinyshakespeare.txt", "tinyshakespeare.txt.part"])
def test_a_fifo_under_a_data_file_name_is_refused(tmp_path, name):
    if not hasattr(os, "mkfifo"):
        pytest.skip("needs os.mkfifo")
    (tmp_path / "d").mkdir()
    os.mkfifo(tmp_path / "d" / name)
    error(nt("data", "shakespeare", "--out", "d", "--base-url", "http://127.0.0.1:9",
             cwd=tmp_path, timeout=WAIT), 2, name, "a FIFO")


def test_a_fifo_as_the_gradescope_visibility_is_refused(tmp_path, fifo):
    error(nt("assignment", "grade", tmp_path, "--gradescope", tmp_path / "results.json",
             "--visibility", fifo, cwd=tmp_path, timeout=WAIT), 2, "--visibility", "a FIFO")


# A corpus run whose model fills --max-len draws its figures (the README's --max-len 14).

@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A folder with words.tsv: 300 pairs of 3 to 8 words out of 200, the target reversed (an
    untrained model's outputs run to --max-len: it seldom says <eos> among 200 words)."""
    import random
    folder = tmp_path_factory.mktemp("corpus")
    draw = random.Random(0)
    lines = []
    for _ in range(300):
        words = [f"w{draw.randrange(200)}" for _ in range(draw.randint(3, 8))]
        lines.append(" ".join(words) + "\t" + " ".join(reversed(words)))
    (folder / "words.tsv").write_text("\n".join(lines) + "\n")
    return folder


def test_a_corpus_run_whose_outputs_fill_max_len_draws_its_attention_figures(corpus):
    out = ok(nt("train", "--tsv", "words.tsv", "--max-len", "14", *QUICK, "--out", "runs/full",
                cwd=corpus))
    assert "attention_decoder_self.png" in out
    assert (corpus / "runs" / "full" / "figures" / "attention_cross.png").is_file()


# Settings that --max-len makes impossible are found before the first step.

def test_the_smallest_max_len_a_task_accepts_trains_and_evaluates(tmp_path):
    ok(nt("train", "--task", "reverse", "--max-len", "11", *QUICK, "--eval-every", "3",
          "--no-figures", "--out", "runs/r", cwd=tmp_path))


@pytest.mark.parametrize("split", ["val", "test"])
def test_a_held_out_set_emptied_by_max_len_is_refused_before_training(corpus, split):
    short, long = "a b c\n" * 40, "a b c d e f g h i j k l\n" * 5
    for side in ("src", "tgt"):
        (corpus / f"short.{side}").write_text(short)
        (corpus / f"long.{side}").write_text(long)
    done = nt("train", "--src", "short.src", "--tgt", "short.tgt", f"--{split}-src", "long.src",
              f"--{split}-tgt", "long.tgt", "--max-len", "8", *QUICK, "--out", f"runs/{split}",
              cwd=corpus)
    error(done, 2, "--max-len", "validation" if split == "val" else "test")
    assert "training a Transformer" not in done.stdout
