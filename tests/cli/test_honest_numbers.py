"""Issue 26: a number printed is a number that means what it says.

Each test meets the number (or the refusal) where a user would: through the command line,
in a fresh process (tests/doors.py), or at the public function a notebook calls.
"""

import re

import numpy as np
import pytest

from doors import error, nt, ok, write_word_pairs

from numpy_transformer.decoding import beam_search, greedy_decode, sample
from numpy_transformer.errors import InputError
from numpy_transformer.training.metrics import sequence_accuracy, token_accuracy
from numpy_transformer.models import GPT, GPTConfig, TransformerConfig, build_transformer

QUICK = ["--quick", "--no-figures", "--no-progress"]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A folder with a small TSV corpus (word level)."""
    folder = tmp_path_factory.mktemp("honest")
    write_word_pairs(folder)
    return folder


@pytest.fixture(scope="module")
def specials_only_run(work):
    """A corpus run whose vocabulary holds only the specials: every word is <unk>."""
    out = ok(nt("train", "--tsv", "pairs.tsv", "--min-freq", "100000", *QUICK, "--steps", "4",
                "--warmup", "1", "--out", "runs/unk", cwd=work))
    return work / "runs" / "unk", out


@pytest.fixture(scope="module")
def lm_run(work):
    (work / "text.txt").write_text("to be or not to be, that is the question.\n" * 60)
    ok(nt("train-lm", "--text", "text.txt", *QUICK, "--out", "runs/lm", cwd=work))
    return work / "runs" / "lm"


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


# 2. Sampling at any positive temperature; search refuses a meaningless alpha or EOS id.

def test_a_tiny_temperature_samples_greedily_even_below_the_overflow_of_one_over_t(lm_run):
    common = ["--checkpoint", lm_run / "best.npz", "--max-new-tokens", "20", "--prompt", "to"]
    greedy = ok(nt("generate", *common, "--top-k", "1"))
    assert len(greedy) == len("to") + 20 + 1
    for temperature in ("1e-300", "1e-310", "5e-324"):   # 1 / T overflows below ~5.6e-309
        assert ok(nt("generate", *common, "--temperature", temperature)) == greedy


def test_sample_at_the_smallest_positive_temperature_never_draws_padding():
    model = GPT(GPTConfig(vocab_size=9, d_model=8, num_heads=2, d_ff=16, num_layers=1,
                          max_len=12, seed=1))
    prompt = np.full((4, 2), 5)
    tiny = sample(model, prompt, 8, temperature=5e-324, rng=np.random.default_rng(0))
    assert (tiny == sample(model, prompt, 8, top_k=1, rng=np.random.default_rng(0))).all()
    assert (tiny[:, 2:] != 0).all()


def _seq2seq():
    return build_transformer(TransformerConfig(
        src_vocab_size=9, tgt_vocab_size=7, d_model=8, num_heads=2, d_ff=16,
        num_encoder_layers=1, num_decoder_layers=1, max_len=10, seed=2))


@pytest.mark.parametrize("search,kwargs,name", [
    (beam_search, dict(length_penalty=float("nan")), "length_penalty"),
    (beam_search, dict(length_penalty=float("inf")), "length_penalty"),
    (beam_search, dict(eos_id=7), "eos_id"),
    (beam_search, dict(eos_id=-1), "eos_id"),
    (greedy_decode, dict(eos_id=7), "eos_id"),
    (greedy_decode, dict(bos_id=99), "bos_id"),
])
def test_search_refuses_a_meaningless_alpha_or_an_id_outside_the_vocabulary(search, kwargs,
                                                                            name):
    with pytest.raises(InputError, match=f"^{name}: expected "):
        search(_seq2seq(), np.array([[4, 5, 6]]), **kwargs)


@pytest.mark.parametrize("alpha", ["nan", "inf", "-1"])
def test_the_alpha_option_refuses_nan_and_infinity(work, specials_only_run, alpha):
    run, _ = specials_only_run
    error(nt("translate", "--checkpoint", run / "best.npz", "--beam", "2", "--alpha", alpha,
             "red cat", cwd=work), 2, "--alpha")


# 3. An option of the other kind of checkpoint is refused, never silently ignored.

@pytest.fixture(scope="module")
def task_run(work):
    ok(nt("train", "--task", "reverse", *QUICK, "--out", "runs/reverse", cwd=work))
    return work / "runs" / "reverse"


def test_evaluate_text_on_an_encoder_decoder_checkpoint_is_refused(work, task_run, lm_run):
    first = error(nt("evaluate", "--checkpoint", task_run / "best.npz", "--text", "text.txt",
                     cwd=work), 2, "--text", "language-model checkpoints")
    assert "encoder-decoder checkpoint" in first


@pytest.mark.parametrize("option", [["--task", "reverse"], ["--src", "pairs.tsv"],
                                    ["--tgt", "pairs.tsv"], ["--tsv", "pairs.tsv"],
                                    ["--beam", "4"], ["--alpha", "1.0"],
                                    ["--bleu-tokenize", "none"]])
def test_evaluate_refuses_encoder_decoder_options_for_a_language_model(work, lm_run, option):
    first = error(nt("evaluate", "--checkpoint", lm_run / "best.npz", "--text", "text.txt",
                     *option, cwd=work), 2, option[0], "encoder-decoder checkpoints")
    assert "a language-model checkpoint" in first


# 4. Symbols outside the vocabulary are warned of, wherever they come in.

def test_evaluate_task_warns_of_characters_outside_the_vocabulary(work, task_run):
    out = ok(nt("evaluate", "--checkpoint", task_run / "best.npz", "--task", "dates",
                "--examples", "20", cwd=work))
    assert re.search(r"warning: \d+ of \d+ characters of the dates task \(sources\) are not in "
                     r"the model's vocabulary \(read as <unk>\)", out), out
    assert "warning: 200 of 200 characters of the dates task (references)" in out
    out = ok(nt("evaluate", "--checkpoint", task_run / "best.npz", "--examples", "20",
                cwd=work))
    assert "warning" not in out                         # its own task: every character known


def test_generate_warns_once_naming_the_unknown_prompt_characters(lm_run):
    done = nt("generate", "--checkpoint", lm_run / "best.npz", "--prompt", "tQ\u00e9Q",
              "--max-new-tokens", "5")
    out = ok(done)
    assert done.stderr.count("warning") == 1, done.stderr
    assert ("warning: 2 characters of --prompt are not in the model's vocabulary (read as "
            "<unk>): 'Q\u00e9'") in done.stderr
    assert "warning" not in out                         # the text alone on standard output
    quiet = nt("generate", "--checkpoint", lm_run / "best.npz", "--prompt", "to be",
               "--max-new-tokens", "5")
    assert ok(quiet) and "warning" not in quiet.stderr


# 5. Held-out example counts are bounded, the bound stated in --help.

@pytest.mark.parametrize("command,option", [("evaluate", "--examples"),
                                            ("train", "--eval-examples")])
def test_example_counts_are_bounded_and_the_bound_is_in_the_help(work, task_run, command,
                                                                 option):
    args = ["--checkpoint", task_run / "best.npz"] if command == "evaluate" else \
        ["--task", "reverse", *QUICK, "--out", "runs/never"]
    error(nt(command, *args, option, "1000000000", cwd=work), 2, option, "100,000")
    assert not (work / "runs" / "never").exists()
    help_text = " ".join(ok(nt(command, "--help")).split())
    assert re.search(rf"{option} \S+ held-out [^-]*at most 100,000", help_text)
