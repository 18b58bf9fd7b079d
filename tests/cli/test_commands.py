"""The doors: every command run as a user types it, in a fresh process, with its exit status
and the first line of its message checked. No test here calls a function of the command
line; each one starts `python -m numpy_transformer ...` (or the `numpy-transformer` script).

Exit status: 0 done, 2 bad input (`error: ...`, one line), 1 a diverged run or a bug,
130/143/141 a run stopped by Ctrl-C / SIGTERM / a closed output, after saving.
"""

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from doors import NT, error, nt, ok, write_word_pairs

from numpy_transformer.checkpoint import load_checkpoint

QUICK = ["--quick", "--no-figures", "--no-progress"]


def wait_for_line(proc, text, timeout=120):
    """Read proc's stdout until a line holding `text` (the run has started)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = proc.stdout.readline()
        if text in line:
            return line
        if not line and proc.poll() is not None:
            break
    raise AssertionError(f"never printed {text!r}")


def finite(path):
    ckpt = load_checkpoint(str(path))
    return all(np.isfinite(p).all() for _, p, _ in ckpt.model.named_parameters())


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A folder with small data files: a TSV corpus, parallel files, a text."""
    folder = tmp_path_factory.mktemp("work")
    pairs = write_word_pairs(folder)
    (folder / "train.src").write_text("".join(f"{src}\n" for src, _ in pairs))
    (folder / "train.tgt").write_text("".join(f"{tgt}\n" for _, tgt in pairs))
    (folder / "text.txt").write_text("to be or not to be, that is the question.\n" * 60)
    return folder


@pytest.fixture(scope="module")
def task_run(work):
    ok(nt("train", "--task", "reverse", *QUICK, "--out", "runs/reverse", cwd=work))
    return work / "runs" / "reverse"


@pytest.fixture(scope="module")
def lm_run(work):
    ok(nt("train-lm", "--text", "text.txt", *QUICK, "--out", "runs/lm", cwd=work))
    return work / "runs" / "lm"


# Help, version, the script, usage errors.

COMMANDS = [["train"], ["train-lm"], ["evaluate"], ["translate"], ["average"], ["generate"],
            ["gradcheck"], ["figures"], ["data"], ["lessons"], ["assignment"],
            ["assignment", "make"], ["assignment", "grade"]]


@pytest.mark.slow
def test_every_command_listed_in_the_help_has_its_own_help():
    top = ok(nt("--help"))
    block = top.split("COMMAND\n", 1)[1].split("\noptions:", 1)[0]
    listed = {line.split()[0] for line in block.splitlines() if line.startswith("    ")
              and not line.startswith("     ")}
    assert listed == {c[0] for c in COMMANDS}
    for command in COMMANDS:
        assert ok(nt(*command, "--help")).startswith("usage: ")


def test_version_and_the_installed_script():
    assert ok(nt("--version")).startswith("numpy_transformer ")
    script = shutil.which("numpy-transformer")
    if script is None:
        pytest.skip("the numpy-transformer script is not on PATH (package not installed)")
    done = subprocess.run([script, "gradcheck", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("usage: ")


def test_no_command_prints_the_usage_and_exits_2():
    done = nt()
    assert done.returncode == 2 and "usage:" in done.stdout


@pytest.mark.parametrize("args, words", [
    (["train", "--task", "nope"], ["--task", "invalid choice", "'nope'"]),
    (["train", "--steps", "0"], ["--steps", "a positive integer", "'0'"]),
    (["train", "--lr", "-1"], ["--lr", "a number > 0"]),
    (["train", "--dropout", "1.5"], ["--dropout", "[0, 1)"]),
    (["train", "--attention-dropout", "1"], ["--attention-dropout", "[0, 1)", "'1'"]),
    (["train-lm", "--text", "text.txt", "--activation-dropout", "-0.1"],
     ["--activation-dropout", "[0, 1)"]),
    (["train-lm", "--text", "text.txt", "--max-len", "x"], ["--max-len", "'x'"]),
    (["generate", "--checkpoint", "x.npz", "--temperature", "0"], ["--temperature"]),
])
def test_bad_option_values_are_one_line_errors(work, args, words):
    error(nt(*args, cwd=work), 2, *words)


def test_steps_30_just_works_and_too_long_a_warmup_names_the_option(work):
    out = ok(nt("train", "--task", "copy", "--steps", "30", "--out", "runs/s30",
                "--no-figures", cwd=work))
    assert "30 steps in" in out
    error(nt("train", "--task", "copy", "--steps", "30", "--warmup", "200", "--out",
             "runs/w200", cwd=work), 2, "--warmup", "steps=30", "200")


def test_attention_and_activation_dropout_reach_the_saved_model(work):
    ok(nt("train-lm", "--text", "text.txt", *QUICK, "--dropout", "0.3", "--attention-dropout",
          "0", "--activation-dropout", "0.05", "--out", "runs/lm_dropouts", cwd=work))
    config = json.loads((work / "runs" / "lm_dropouts" / "config.json").read_text())["model"]
    assert (config["dropout"], config["attention_dropout"], config["activation_dropout"]) == (
        0.3, 0.0, 0.05)
    block = load_checkpoint(str(work / "runs" / "lm_dropouts" / "last.npz")).model.layers[0]
    assert (block.self_attn.dropout.p, block.feed_forward.dropout.p,
            block.sublayers[0].dropout.p) == (0.0, 0.05, 0.3)


def test_inconsistent_model_settings_name_the_option(work):
    error(nt("train", "--d-model", "30", "--num-heads", "4", "--out", "runs/x", cwd=work), 2,
          "30", "4")


# A run: plain log lines, the run folder, translate / evaluate / generate.

@pytest.mark.slow
def test_a_run_logs_plain_lines_and_writes_everything_in_its_folder(work, task_run):
    names = {p.name for p in task_run.iterdir()}
    assert {"last.npz", "best.npz", "history.json", "config.json", "src_tokenizer.json",
            "tgt_tokenizer.json"} <= names
    config = json.loads((task_run / "config.json").read_text())
    assert config["model"]["d_model"] == 32 and config["train"]["steps"] == 40
    assert config["data_config"]["task"] == "reverse" and config["kind"] == "seq2seq"
    done = nt("train", "--task", "copy", "--quick", "--no-progress", "--out", "runs/log",
              cwd=work)
    out = ok(done)
    assert "step 10/40  train loss (label-smoothed 0.1) " in out and " tok/s" in out
    assert "step 20/40  train loss (label-smoothed 0.1) " in out and "held-out loss" in out
    assert "saved in runs/log/" in out and "next:  python -m numpy_transformer translate" in out
    assert (work / "runs" / "log" / "figures" / "loss.png").is_file() or \
        "figures skipped" in out
    assert not (work / "figures").exists()          # nothing outside the run folder


def test_translate_and_evaluate_name_what_they_score(work, task_run):
    out = ok(nt("translate", "--checkpoint", task_run / "best.npz", "abc", "hello", cwd=work))
    assert len(out.splitlines()) == 2
    out = ok(nt("evaluate", "--checkpoint", task_run / "best.npz", "--examples", "50",
                cwd=work))
    assert out.startswith("50 held-out examples of the reverse task (test split, seed 0): ")
    assert "exact_match" in out


def test_generate_never_ends_early_and_never_prints_padding(lm_run):
    out = ok(nt("generate", "--checkpoint", lm_run / "best.npz", "--temperature", "2.0",
                "--max-new-tokens", "105", "--prompt", "to"))
    assert len(out) == len("to") + 105 + 1            # the prompt, 105 characters, a newline
    out = ok(nt("generate", "--checkpoint", lm_run / "best.npz", "--temperature", "1e-300",
                "--max-new-tokens", "20", "--prompt", "to"))
    assert len(out) == len("to") + 20 + 1


def test_evaluate_a_language_model_warns_of_unknown_characters(work, lm_run):
    (work / "odd.txt").write_text("to be \u00e9\u00e9\u00e9 zz")
    out = ok(nt("evaluate", "--checkpoint", lm_run / "best.npz", "--text", "odd.txt",
                cwd=work))
    assert "warning: 5 of 12 characters of odd.txt are not in the model's vocabulary" in out
    assert "odd.txt (the whole file, 12 characters): loss " in out


# Resuming: --resume CKPT alone continues any run kind.

def test_resume_alone_continues_a_task_run_and_a_finished_run_says_how_to_extend(work, task_run):
    first = error(nt("train", "--resume", task_run / "last.npz", cwd=work), 2,
                  "is finished (step 40 of 40)", "--steps 80")
    assert "train --resume" in first
    out = ok(nt("train", "--resume", task_run / "last.npz", "--steps", "50", *QUICK, cwd=work))
    assert "resuming at step 40" in out and "50 steps in" in out


@pytest.mark.parametrize("corpus", [["--tsv", "pairs.tsv"],
                                    ["--src", "train.src", "--tgt", "train.tgt"]])
def test_resume_alone_continues_a_corpus_run(work, corpus):
    out = f"runs/corpus{len(corpus)}"
    ok(nt("train", *corpus, *QUICK, "--steps", "10", "--out", out, cwd=work))
    ckpt = f"{out}/last.npz"
    assert "BLEU" in ok(nt("train", "--resume", ckpt, "--steps", "14", *QUICK, cwd=work))
    proc = subprocess.Popen([*NT, "train", *corpus, "--quick", "--steps", "400",
                             "--no-progress", "--out", f"{out}b"], cwd=work,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_line(proc, "step 10/400")
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    hint = [line for line in stdout.splitlines() if "continue with: " in line][0]
    command = shlex.split(hint.split("continue with: ")[1])   # exactly what the message says
    assert command[:4] == ["python", "-m", "numpy_transformer", "train"], hint
    assert "BLEU" in ok(nt(*command[3:], "--steps", "30", *QUICK, cwd=work))


def test_resume_alone_continues_a_language_model_and_kinds_name_their_command(work, lm_run,
                                                                               task_run):
    out = ok(nt("train-lm", "--resume", lm_run / "last.npz", "--steps", "34", *QUICK))
    assert "34 steps in" in out
    error(nt("train", "--resume", lm_run / "last.npz"), 2, "language-model checkpoint",
          "train-lm --resume")
    error(nt("train-lm", "--resume", task_run / "last.npz"), 2,
          "encoder-decoder checkpoint", "train --resume")
    error(nt("generate", "--checkpoint", task_run / "best.npz"), 2,
          "--checkpoint", "language-model", "train-lm")


# Nothing a user made is lost.

def test_a_second_run_into_a_folder_is_refused_and_overwrite_replaces_it(work, task_run):
    before = (task_run / "best.npz").read_bytes()
    error(nt("train", "--task", "reverse", *QUICK, "--out", task_run, cwd=work), 2,
          "already holds a run", "--resume", "--overwrite")
    assert (task_run / "best.npz").read_bytes() == before
    folder = work / "runs" / "over"
    ok(nt("train", "--task", "copy", *QUICK, "--out", folder, cwd=work))
    (folder / ".tmp-left-by-a-crash.npz").write_bytes(b"half")
    ok(nt("train", "--task", "copy", *QUICK, "--steps", "8", "--overwrite", "--out", folder,
          cwd=work))
    assert load_checkpoint(str(folder / "best.npz")).metadata["step"] <= 8
    assert not list(folder.glob(".tmp-*"))


@pytest.mark.slow
def test_two_runs_on_one_folder_sigterm_and_a_broken_pipe_all_save(work):
    folder = work / "runs" / "busy"
    proc = subprocess.Popen([*NT, "train", "--task", "reverse", "--quick", "--steps", "5000",
                             "--no-progress", "--no-figures", "--out", folder], cwd=work,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_line(proc, "step 10/5000")
    error(nt("train", "--task", "reverse", *QUICK, "--overwrite", "--out", folder, cwd=work),
          2, "is in use by another training run")
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stderr
    assert "SIGTERM: stopping after this step" in stdout
    step = load_checkpoint(str(folder / "last.npz")).metadata["step"]
    assert step >= 10 and f"stopped at step {step} (SIGTERM)" in stdout
    # A closed output: `... | head -2`
    piped = subprocess.run(f"{sys.executable} -m numpy_transformer train --task reverse "
                           f"--quick --steps 5000 --no-figures --out runs/pipe | head -2",
                           shell=True, cwd=work, capture_output=True, text=True, timeout=300,
                           executable="/bin/bash")
    assert len(piped.stdout.splitlines()) == 2
    assert "stopped at step" in piped.stderr and "(closed output)" in piped.stderr
    assert load_checkpoint(str(work / "runs" / "pipe" / "last.npz")).metadata["step"] > 0
    ok(nt("train", "--resume", "runs/pipe/last.npz", "--steps", "60", *QUICK, cwd=work))


def test_a_diverged_run_names_a_checkpoint_that_is_finite(work):
    done = nt("train", "--task", "copy", *QUICK, "--lr", "1e300", "--checkpoint-every", "1",
              "--warmup", "0", "--out", "runs/nan", cwd=work)
    error(done, 1, "training stopped at step 1", "NaN or infinite")
    assert not (work / "runs" / "nan" / "last.npz").exists()
    done = nt("train", "--task", "copy", *QUICK, "--lr", "30", "--clip-norm", "1e30",
              "--checkpoint-every", "1", "--warmup", "0", "--out", "runs/nan2", cwd=work)
    if done.returncode == 1:
        first = error(done, 1, "training stopped at step")
        if "last good checkpoint is" in first:
            assert finite(first.split("last good checkpoint is ")[1].split(" (step")[0])
    for name in ("last.npz", "best.npz"):
        if (work / "runs" / "nan2" / name).exists():
            assert finite(work / "runs" / "nan2" / name)


# Inputs.

def test_over_long_training_pairs_are_dropped_with_a_count(work):
    lines = [" ".join(["w"] * 600) + "\tx"] + ["a b\tb a"] * 100
    (work / "long.tsv").write_text("\n".join(lines) + "\n")
    out = ok(nt("train", "--tsv", "long.tsv", *QUICK, "--steps", "4", "--out", "runs/long",
                cwd=work))
    assert "note: dropped 1 of 91 training pairs longer than --max-len 256 tokens" in out


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifos_and_devices_are_refused(work):
    fifo = work / "fifo"
    if not fifo.exists():
        os.mkfifo(fifo)
    error(nt("train-lm", "--text", fifo, *QUICK, cwd=work), 2, "--text", "a regular file",
          "FIFO")
    error(nt("train", "--src", fifo, "--tgt", "train.tgt", *QUICK, cwd=work), 2, "--src",
          "FIFO")
    if os.path.exists("/dev/zero"):
        error(nt("train-lm", "--text", "/dev/zero", *QUICK, cwd=work), 2, "a device")
        error(nt("translate", "--checkpoint", "/dev/zero", "x", cwd=work), 2, "a device")


def test_sizes_that_cannot_fit_memory_are_refused_before_allocating(work, task_run):
    error(nt("train", "--task", "copy", "--d-model", "100000", "--out", "runs/big", cwd=work),
          2, "model settings", "fits in memory", "--d-model")
    error(nt("translate", "--checkpoint", task_run / "best.npz", "--beam", "100000000", "abc"),
          2, "--beam", "fits in memory")


def _rewrite(src, dst, change_header=None, arrays=None):
    """A copy of checkpoint src with its JSON header changed (checksums made consistent)."""
    import hashlib
    with np.load(src) as npz:
        data = {k: npz[k] for k in npz.files}
    header = json.loads(data["__header__"].tobytes())
    header = change_header(header) if change_header else header
    data.update(arrays or {})
    raw = json.dumps(header).encode()
    data["__header__"] = np.frombuffer(raw, np.uint8)
    data["__header_sha256__"] = np.frombuffer(hashlib.sha256(raw).hexdigest().encode(),
                                              np.uint8)
    np.savez(dst, **data)


def _config(**fields):
    def change(header):
        header["config"].update(fields)
        return header
    return change


@pytest.mark.slow
def test_crafted_checkpoints_are_refused_before_anything_large_is_built(work, task_run):
    src = task_run / "best.npz"
    cases = {"d_model.npz": (_config(d_model=100000, num_heads=4), "config"),
             "max_len.npz": (_config(max_len=10**9), "fits in memory"),
             "layers.npz": (_config(num_encoder_layers=10**7), "config"),
             "list.npz": (lambda h: [h], "not a numpy_transformer checkpoint")}
    for name, (change, words) in cases.items():
        _rewrite(src, work / name, change)
        error(nt("translate", "--checkpoint", name, "abc", cwd=work), 2, name, words)
    # A member whose directory entry claims 4 GB.
    raw = bytearray(src.read_bytes())
    central = raw.index(b"PK\x01\x02")
    raw[central + 24:central + 28] = (0xFFFFFFF0).to_bytes(4, "little")
    (work / "claims.npz").write_bytes(bytes(raw))
    error(nt("translate", "--checkpoint", "claims.npz", "abc", cwd=work), 2, "claims.npz")
    # A zip bomb: a small compressed member that inflates to 64 MB.
    import zipfile
    shutil.copy(src, work / "bomb.npz")
    with zipfile.ZipFile(work / "bomb.npz", "a", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("zeros.npy", np.lib.format.magic(1, 0) + b"\x00" * (64 * 2**20))
    assert (work / "bomb.npz").stat().st_size < 2 * src.stat().st_size + 2**20
    error(nt("translate", "--checkpoint", "bomb.npz", "abc", cwd=work), 2, "bomb.npz",
          "compressed")


def test_missing_file_names_it_and_debug_shows_the_traceback(work):
    error(nt("train-lm", "--text", "missing.txt", cwd=work), 2, "--text", "missing.txt")
    done = nt("train-lm", "--text", "missing.txt", "--debug", cwd=work)
    assert done.returncode == 1 and "Traceback" in done.stderr


def test_a_bug_is_reported_as_one_not_as_bad_input():
    code = ("import sys; from numpy_transformer import cli; from numpy_transformer.cli import "
            "tools\ndef boom(args): raise KeyError('oops')\ntools.run_gradcheck = boom\n"
            "sys.exit(cli.main(['gradcheck']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.startswith("internal error: KeyError: 'oops'")
    assert "This is a bug" in done.stderr and "--debug" in done.stderr


# Assignments.

@pytest.mark.slow
def test_assignment_make_and_grade_through_the_command_line(work):
    out = ok(nt("assignment", "make", "--out", "hw1", "--parts", "linear", cwd=work))
    assert out.startswith("wrote a student copy to hw1")
    done = nt("assignment", "grade", "hw1", "--json", "grades.json", cwd=work)
    assert done.returncode == 1 and "Traceback" not in done.stderr   # 1: not full marks
    assert "linear                    0   10" in done.stdout and "total" in done.stdout
    assert json.loads((work / "grades.json").read_text())
    error(nt("assignment", "make", "--out", "hw2", "--parts", "nope", cwd=work), 2,
          "unknown part 'nope'")
    error(nt("assignment", "grade", "nowhere", cwd=work), 2, "nowhere")
    ok(nt("assignment", "make", "--out", "teacher", "--parts", "linear", "--teacher", cwd=work))
    assert (work / "teacher" / "notebooks" / "answers").is_dir()
    assert not (work / "hw1" / "notebooks" / "answers").exists()     # students: no answer keys


@pytest.mark.slow
def test_the_main_job_as_printed_reaches_99_percent(tmp_path):
    """`python -m numpy_transformer train --task reverse`, exactly as the README prints it."""
    out = ok(nt("train", "--task", "reverse", cwd=tmp_path, timeout=900))
    final = json.loads((tmp_path / "runs" / "reverse" / "history.json").read_text())["eval"][-1]
    assert final["step"] == 3000 and final["exact_match"] >= 0.99, out
    assert "exact match" in out and (tmp_path / "runs" / "reverse" / "best.npz").is_file()
