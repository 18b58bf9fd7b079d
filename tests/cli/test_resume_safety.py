"""Issue 26, resuming: nothing a user made is lost or silently wrong. Each test runs the
commands as a user types them (the full-disk one calls `main` in-process, to fake the disk).

- a resume from an earlier checkpoint never replaces the run's later ones (--out branches);
- a closed terminal (SIGHUP) saves like SIGTERM, and the stop message is a command to paste;
- a resumed language model keeps its saved characters, warning of new ones;
- an averaged checkpoint is refused by --resume with what to do instead;
- a save that fails (a full disk) names the file and the last good checkpoint.
"""

import errno
import shlex
import signal
import subprocess

import pytest

from doors import NT, error, nt, ok

from numpy_transformer.checkpoint import load_checkpoint, load_run

QUICK = ["--quick", "--no-figures", "--no-progress"]
TEXT = "to be or not to be, that is the question of the quiet queen.\n" * 40


def contents(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.npz"))}


def step_of(path):
    return load_checkpoint(str(path)).metadata["step"]


def wait_for_line(proc, text, timeout=120):
    """Read proc's stdout until a line holding `text` (the run has started)."""
    for line in proc.stdout:
        if text in line:
            return line
    raise AssertionError(f"never printed {text!r}")


def stop(proc, sig):
    """Send `sig` to a running training command; check that it stopped after saving and said
    the exact command that continues it. Returns (its output, that command's arguments)."""
    wait_for_line(proc, "step 10/")
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stderr            # SIGHUP and SIGTERM alike
    line = [line for line in stdout.splitlines() if "continue with: " in line][0]
    command = shlex.split(line.split("continue with: ")[1])
    assert command[:3] == ["python", "-m", "numpy_transformer"], line
    return stdout, command[3:]


@pytest.fixture(scope="module")
def kept_run(tmp_path_factory):
    """A quick reverse run keeping step-20, step-30 and step-40.npz beside last.npz (40), and
    avg.npz, the average of two of them."""
    work = tmp_path_factory.mktemp("kept")
    ok(nt("train", "--task", "reverse", *QUICK, "--checkpoint-every", "10", "--keep-last", "3",
          "--out", "r", cwd=work))
    ok(nt("average", "r/step-20.npz", "r/step-30.npz", "--out", "avg.npz", cwd=work))
    return work


def test_resume_from_an_earlier_checkpoint_never_replaces_later_ones(kept_run):
    work, before = kept_run, contents(kept_run / "r")
    first = error(nt("train", "--resume", "r/step-20.npz", "--steps", "60", *QUICK, cwd=work),
                  2, "--out", "later than step 20", "last.npz (step 40)", "step-30.npz")
    assert first.endswith("--resume r/last.npz")          # the folder as typed
    assert contents(work / "r") == before
    out = ok(nt("train", "--resume", "r/step-20.npz", "--steps", "50", *QUICK, "--out",
                "branch", cwd=work))
    assert "resuming at step 20" in out
    assert step_of(work / "branch" / "last.npz") == 50
    assert contents(work / "r") == before                # the old run is untouched
    ok(nt("train", "--resume", "r/last.npz", "--steps", "50", *QUICK, cwd=work))
    assert step_of(work / "r" / "last.npz") == 50        # the latest continues in place


def test_an_averaged_checkpoint_is_not_resumed_and_says_what_to_do(kept_run):
    work = kept_run
    for more in ([], ["--steps", "80"]):
        error(nt("train", "--resume", "avg.npz", *more, *QUICK, cwd=work), 2,
              "avg.npz is an average of checkpoints", "cannot be resumed",
              "python -m numpy_transformer evaluate --checkpoint avg.npz",
              "python -m numpy_transformer train --resume r/last.npz")


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="needs POSIX signals")
def test_a_closed_terminal_saves_like_sigterm_and_says_the_command_to_paste(tmp_path):
    proc = subprocess.Popen([*NT, "train", "--task", "copy", *QUICK, "--steps", "5000",
                             "--out", "my runs/copy"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    stdout, command = stop(proc, signal.SIGHUP)
    step = step_of(tmp_path / "my runs" / "copy" / "last.npz")
    assert f"stopped at step {step} (SIGHUP)" in stdout
    assert "continue with: python -m numpy_transformer train --resume " \
           "'my runs/copy/last.npz'" in stdout
    assert f"resuming at step {step}" in ok(nt(*command, "--steps", "60", *QUICK, cwd=tmp_path))
    assert step_of(tmp_path / "my runs" / "copy" / "last.npz") == 60


def test_train_lm_stop_message_is_the_train_lm_command(tmp_path):
    (tmp_path / "text.txt").write_text(TEXT)
    proc = subprocess.Popen([*NT, "train-lm", "--text", "text.txt", *QUICK, "--steps", "5000",
                             "--out", "lm run"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    stdout, command = stop(proc, signal.SIGTERM)
    assert "continue with: python -m numpy_transformer train-lm --resume " \
           "'lm run/last.npz'" in stdout
    assert "40 steps in" in ok(nt(*command, "--steps", "40", *QUICK, cwd=tmp_path))


def test_the_command_to_paste_keeps_the_mpiexec_launcher(monkeypatch):
    from numpy_transformer.cli.run import continue_command
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
    assert continue_command("lm", "runs/a b/last.npz") == \
        "mpiexec -n 2 python -m numpy_transformer train-lm --resume 'runs/a b/last.npz'"


def test_a_resumed_language_model_keeps_its_saved_characters(tmp_path):
    text = tmp_path / "text.txt"
    text.write_text(TEXT)
    ok(nt("train-lm", "--text", text, *QUICK, "--steps", "8", "--out", "lm", cwd=tmp_path))
    _, toks, _ = load_run(str(tmp_path / "lm" / "last.npz"))
    symbols = toks["text"].symbols
    text.write_text(TEXT.replace("q", "").replace("b", "Z"))   # one gone, one new
    out = ok(nt("train-lm", "--resume", "lm/last.npz", "--steps", "12", *QUICK, cwd=tmp_path))
    warning = [line for line in out.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and "1 character" in warning[0] and "'Z'" in warning[0]
    assert "<unk>" in warning[0]
    _, toks, _ = load_run(str(tmp_path / "lm" / "last.npz"))
    assert toks["text"].symbols == symbols
    assert step_of(tmp_path / "lm" / "last.npz") == 12


def test_a_full_disk_names_the_file_and_the_last_good_checkpoint(tmp_path, monkeypatch,
                                                                capsys):
    from numpy_transformer.cli import main
    from numpy_transformer.training import checkpoints
    real, saves = checkpoints.save_checkpoint, []

    def filling_up(path, *args, **kwargs):
        saves.append(path)
        if len(saves) > 1:                       # the second save finds the disk full
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(checkpoints, "save_checkpoint", filling_up)
    out = tmp_path / "full"
    status = main(["train", "--task", "copy", *QUICK, "--checkpoint-every", "10",
                   "--eval-every", "1000", "--out", str(out)])
    assert status == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    last = str(out / "last.npz")
    assert lines[0] == (f"error: {last}: could not write it (No space left on device); "
                        f"the last good checkpoint is {last} (step 10)")
    assert step_of(last) == 10                   # and it is still there, intact
