"""Issue 26: a number printed is a number that means what it says.

Each test meets the number (or the refusal) where a user would: through the command line,
in a fresh process (tests/doors.py), or at the public function a notebook calls.
"""

import re

import pytest

from doors import error, nt, ok

from numpy_transformer.metrics import sequence_accuracy, token_accuracy

QUICK = ["--quick", "--no-figures", "--no-progress"]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A folder with a small TSV corpus (word level)."""
    folder = tmp_path_factory.mktemp("honest")
    words = ["red", "green", "blue", "cat", "dog", "bird", "big", "small"]
    pairs = [f"{a} {b}\t{b} {a}" for a in words for b in words]
    (folder / "pairs.tsv").write_text("\n".join(pairs * 2) + "\n")
    return folder


@pytest.fixture(scope="module")
def specials_only_run(work):
    """A corpus run whose vocabulary holds only the specials: every word is <unk>."""
    out = ok(nt("train", "--tsv", "pairs.tsv", "--min-freq", "100000", *QUICK, "--steps", "4",
                "--warmup", "1", "--out", "runs/unk", cwd=work))
    return work / "runs" / "unk", out


def _percent(name, text):
    return float(re.search(rf"{name} ([0-9.]+)%", text).group(1))


# 1. An <unk> in the reference is never a correct prediction.

def test_an_unk_in_the_reference_is_never_predicted_right():
    assert token_accuracy([[3, 6]], [[3, 6]]) == pytest.approx(2 / 3)   # 6 and the end
    assert sequence_accuracy([[3, 6]], [[3, 6]]) == 0.0
    assert sequence_accuracy([[5, 6]], [[5, 6]]) == 1.0


def test_a_vocabulary_of_specials_scores_no_exact_match_in_train_and_evaluate(work,
                                                                             specials_only_run):
    run, out = specials_only_run
    assert _percent("exact match", out) == 0.0
    assert _percent("token accuracy", out) < 34.0      # only end-of-sequence positions
    assert "(exact)" not in out and " ok\n" not in out
    out = ok(nt("evaluate", "--checkpoint", run / "best.npz", "--tsv", "pairs.tsv", cwd=work))
    assert _percent("exact_match", out) == 0.0
    assert _percent("token_accuracy", out) < 34.0
