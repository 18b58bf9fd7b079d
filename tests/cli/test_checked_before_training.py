"""Bad input is refused with one `error:` line naming the option or the file, exit 2, before
the first training step: no run loses its training to a check that could have run at the
start, and no command hangs on a FIFO or reads a device without end (issue 26)."""

import os

import pytest

from doors import error, nt, ok

QUICK = ("--quick", "--steps", "6", "--warmup", "1", "--no-progress")
WAIT = 300                    # seconds: a command that hangs fails the test instead


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


@pytest.mark.slow
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


# A resumed run keeps the figures setting it started with, and finds its data where it moved.

def test_a_resumed_run_started_with_no_figures_draws_none(corpus):
    ok(nt("train", "--tsv", "words.tsv", "--max-len", "14", *QUICK, "--no-figures",
          "--out", "runs/nofig", cwd=corpus))
    ok(nt("train", "--resume", "runs/nofig/last.npz", "--steps", "12", "--no-progress",
          cwd=corpus))
    assert not (corpus / "runs" / "nofig" / "figures").exists()


def parallel_run(folder, name):
    """A finished 6-step run on folder/NAME.src and NAME.tgt (reversed word pairs)."""
    pairs = [(f"{a} {b}", f"{b} {a}") for a in "pqrstuvw" for b in "pqrstuvw"]
    (folder / f"{name}.src").write_text("".join(s + "\n" for s, _ in pairs))
    (folder / f"{name}.tgt").write_text("".join(t + "\n" for _, t in pairs))
    ok(nt("train", "--src", f"{name}.src", "--tgt", f"{name}.tgt", *QUICK, "--no-figures",
          "--out", f"runs/{name}", cwd=folder))
    return f"runs/{name}/last.npz"


def test_a_run_whose_data_moved_resumes_with_its_new_path(tmp_path):
    ckpt = parallel_run(tmp_path, "moved")
    (tmp_path / "elsewhere").mkdir()
    for side in ("src", "tgt"):
        os.rename(tmp_path / f"moved.{side}", tmp_path / "elsewhere" / f"moved.{side}")
    error(nt("train", "--resume", ckpt, "--steps", "12", cwd=tmp_path), 2,
          "--src", "is gone", f"--resume {ckpt} --src")
    out = ok(nt("train", "--resume", ckpt, "--steps", "12", "--no-progress", "--src",
                "elsewhere/moved.src", "--tgt", "elsewhere/moved.tgt", cwd=tmp_path))
    assert "resuming at step 6" in out and "ignoring" not in out


def test_a_different_file_given_on_resume_is_refused(tmp_path):
    ckpt = parallel_run(tmp_path, "orig")
    (tmp_path / "other.src").write_text("p q\nq p\n" * 40)
    error(nt("train", "--resume", ckpt, "--steps", "12", "--src", "other.src", cwd=tmp_path),
          2, "--src", "sha256")
    (tmp_path / "orig.tgt").write_text("p q\n" * 64)       # edited in place: said, then used
    out = ok(nt("train", "--resume", ckpt, "--steps", "12", "--no-progress", cwd=tmp_path))
    assert "note: the run's --tgt file" in out and "has changed" in out


def without_digests(path):
    """Rewrite the checkpoint without data digests (as a run that recorded none)."""
    import hashlib
    import json

    import numpy as np

    from numpy_transformer.checkpoint import format as fmt
    header, arrays = fmt.read_checkpoint_arrays(path)
    header["metadata"]["data_config"]["sha256"] = {}
    raw = np.frombuffer(json.dumps(header, sort_keys=True).encode(), np.uint8)
    digest = np.frombuffer(hashlib.sha256(raw).hexdigest().encode(), np.uint8)
    np.savez(path, **{fmt._HEADER: raw, fmt._HEADER_DIGEST: digest}, **arrays)


def test_an_older_checkpoint_takes_a_moved_text_with_a_warning(tmp_path):
    (tmp_path / "text.txt").write_text("to be or not to be, that is the question.\n" * 60)
    ok(nt("train-lm", "--text", "text.txt", *QUICK, "--no-figures", "--out", "runs/lm",
          cwd=tmp_path))
    without_digests(tmp_path / "runs" / "lm" / "last.npz")
    os.rename(tmp_path / "text.txt", tmp_path / "moved.txt")
    done = nt("train-lm", "--resume", "runs/lm/last.npz", "--steps", "12", "--no-progress",
              "--text", "moved.txt", cwd=tmp_path)
    assert "warning:" in ok(done) and "resuming at step 6" in done.stdout
