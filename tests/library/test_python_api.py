"""`load_trained`: a run used from Python gives what the commands `translate` and `generate`
print for the same checkpoint, and says so when it is asked the other kind's question; a wrong
argument is an InputError naming the parameter, a symbol outside the vocabulary is warned of
(as the commands do), and a text too long for memory is refused unless it is streamed."""

import warnings

import pytest

import numpy_transformer
from numpy_transformer.errors import InputError, InputTypeError
from doors import names, nt, ok, raises_naming

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


def test_wrong_arguments_are_input_errors_naming_the_parameter(runs, tmp_path):
    for path, words in [(None, ["path", "NoneType"]), (3, ["path", "int"]),
                        (b"runs", ["path", "bytes"])]:
        with raises_naming(InputTypeError, *words):
            numpy_transformer.load_trained(path)
    with raises_naming(InputError, "path", repr(str(tmp_path / "nope"))):
        numpy_transformer.load_trained(tmp_path / "nope")
    run, lm = numpy_transformer.load_trained(runs[0]), numpy_transformer.load_trained(runs[1])
    for texts, words in [(None, ["texts", "NoneType"]), (b"abc", ["texts", "bytes"]),
                         (["abc", 3], ["texts[1]", "int"])]:
        with raises_naming(InputTypeError, *words):
            run.translate(texts)
    for kwargs, words in [(dict(seed=-1), ["seed", "-1"]), (dict(seed="x"), ["seed", "'x'"]),
                          (dict(prompt=None), ["prompt", "NoneType"]),
                          (dict(stream="yes"), ["stream", "'yes'"])]:
        with raises_naming(InputError, *words):
            lm.generate(**kwargs)


def test_a_text_too_long_for_memory_is_refused_and_a_stream_holds_none(runs):
    lm = numpy_transformer.load_trained(runs[1])
    with raises_naming(InputError, "max_new_tokens", "1,000,000,000,000", "estimate"):
        lm.generate("First", 10**12)
    pieces = lm.generate("First", 10**12, stream=True)     # refused by time only: stop it
    assert [next(pieces) for _ in range(4)][0] == "First"
    assert "".join(lm.generate("First", 60, seed=2, stream=True)) == lm.generate("First", 60,
                                                                                  seed=2)


def test_symbols_outside_the_vocabulary_are_warned_once_by_name(runs):
    run, lm = numpy_transformer.load_trained(runs[0]), numpy_transformer.load_trained(runs[1])
    for call, words in [(lambda: run.translate(["abQ", "Q\u00e9"]), ["texts", "'Q'", "'\u00e9'"]),
                        (lambda: lm.generate("Fir\u00e9Z", 5), ["prompt", "'Z'", "'\u00e9'"]),
                        (lambda: lm.generate("Z", 5, stream=True), ["prompt", "'Z'"])]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        assert len(caught) == 1, [str(w.message) for w in caught]
        names(caught[0].message, *words, "<unk>")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run.translate("abc")
        lm.generate("First", 5)
