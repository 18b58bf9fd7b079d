"""`load_trained`: a run used from Python gives what the commands `translate` and `generate`
print for the same checkpoint, and says so when it is asked the other kind's question."""

import pytest

import numpy_transformer
from numpy_transformer.errors import InputError
from doors import nt, ok, raises_naming

TEXT = "First Citizen:\nBefore we proceed any further, hear me speak.\n" * 40


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(a `train --task reverse --quick` run folder, a `train-lm --quick` run folder)."""
    root = tmp_path_factory.mktemp("runs")
    (root / "text.txt").write_text(TEXT)
    ok(nt("train", "--task", "reverse", "--quick", "--no-figures", "--out", "seq", cwd=root))
    ok(nt("train-lm", "--text", "text.txt", "--quick", "--no-figures", "--out", "lm",
          cwd=root))
    return root / "seq", root / "lm"


def test_translate_gives_what_the_command_prints(runs):
    run = numpy_transformer.load_trained(runs[0])
    assert run.kind == "seq2seq" and run.path.endswith("best.npz")
    texts = ["abc", "hello"]
    for beam in (1, 3):
        printed = ok(nt("translate", "--checkpoint", runs[0] / "best.npz", *texts,
                        "--beam", beam)).splitlines()
        assert run.translate(texts, beam=beam) == printed
        assert run.translate(texts[0], beam=beam) == printed[0]
    assert run.metadata["kind"] == "seq2seq" and "train_config" in run.metadata


def test_generate_gives_what_the_command_prints(runs):
    run = numpy_transformer.load_trained(runs[1] / "last.npz")
    printed = ok(nt("generate", "--checkpoint", runs[1] / "last.npz", "--prompt", "First",
                    "--max-new-tokens", 40, "--top-k", 5, "--seed", 3))
    assert run.generate("First", 40, top_k=5, seed=3) == printed.rstrip("\n")


def test_the_wrong_question_and_a_folder_without_checkpoints_are_refused(runs, tmp_path):
    with raises_naming(InputError, "translate", "encoder-decoder"):
        numpy_transformer.load_trained(runs[1]).translate("abc")
    with raises_naming(InputError, "generate", "language-model"):
        numpy_transformer.load_trained(runs[0]).generate("abc")
    with raises_naming(InputError, "path", "best.npz"):
        numpy_transformer.load_trained(tmp_path)
    with raises_naming(InputError, "texts[1]"):
        numpy_transformer.load_trained(runs[0]).translate(["a", ""])
