"""What a training run prints, as a user reads it (issue 40): data paths as they were typed
(the run folder alone keeps them absolute, for --resume), the step best.npz holds, and, after
Ctrl-C in a terminal, the resume command as the last line above the prompt."""

import json
import os
import re
import select
import signal
import subprocess
import sys
import time

import pytest

from doors import NT, error, names, nt, ok, write_word_pairs

QUICK = ["--steps", "4", "--warmup", "1", "--quick", "--no-figures", "--no-progress"]


@pytest.mark.slow
def test_data_paths_are_printed_as_typed_and_kept_absolute_in_the_run_folder(tmp_path):
    write_word_pairs(tmp_path)
    (tmp_path / "text.txt").write_text("the cat sat on the mat. " * 60)
    absolute = str(tmp_path)
    done = nt("train", "--tsv", "pairs.tsv", *QUICK, "--out", "run", cwd=tmp_path)
    ok(done)
    assert absolute not in done.stdout + done.stderr
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert str(tmp_path / "pairs.tsv") in json.dumps(config)       # --resume finds it anywhere
    lm = nt("train-lm", "--text", "text.txt", *QUICK, "--out", "lm", cwd=tmp_path)
    names(ok(lm).splitlines()[0], "text.txt")
    assert absolute not in lm.stdout + lm.stderr
    assert str(tmp_path / "text.txt") in (tmp_path / "lm" / "config.json").read_text()
    # errors name the file as typed: a missing one, a directory, a bad line, another file
    (tmp_path / "folder").mkdir()
    (tmp_path / "bad.tsv").write_text("no tab here\n")
    (tmp_path / "other.tsv").write_text("a\tb\n")
    for typed, words in [("missing.tsv", ["--tsv", "'missing.tsv'"]),
                         ("folder", ["--tsv", "'folder'"]), ("bad.tsv", ["'bad.tsv'"])]:
        done = nt("train", "--tsv", typed, *QUICK, "--out", "bad", cwd=tmp_path)
        line = error(done, 2, *words)
        assert absolute not in line, line
    done = nt("train", "--resume", "run/last.npz", "--steps", "8", "--tsv", "other.tsv",
              cwd=tmp_path)
    assert absolute not in error(done, 2, "--tsv", "'other.tsv'")


def test_the_step_best_npz_holds_is_printed_and_in_results_json(tmp_path):
    write_word_pairs(tmp_path)
    out = ok(nt("train", "--tsv", "pairs.tsv", *QUICK, "--eval-every", "2", "--out", "run",
                cwd=tmp_path))
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    best = results["best_step"]
    assert best in (2, 4), results
    line = next(x for x in out.splitlines() if x.startswith("best.npz:"))
    names(line, "step", best, "BLEU")
    from numpy_transformer import load_checkpoint
    assert load_checkpoint(tmp_path / "run" / "best.npz").metadata["step"] == best
    # a resumed run keeps it, and moves it when a later evaluation is better
    ok(nt("train", "--resume", "run/last.npz", "--steps", "6", cwd=tmp_path))
    again = json.loads((tmp_path / "run" / "results.json").read_text())["best_step"]
    assert again in (best, 6), again
    lm = ok(nt("train-lm", "--text", "pairs.tsv", *QUICK, "--out", "lm", cwd=tmp_path))
    names(next(x for x in lm.splitlines() if x.startswith("best.npz:")), "step", "loss")


def _read_all(fd, until=None, timeout=300.0):
    """What the terminal `fd` shows, read until `until` appears in it (None: the end)."""
    text, end = b"", time.monotonic() + timeout
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:                          # EIO: the other side is closed
            break
        if not chunk:
            break
        text += chunk
        if until is not None and until in text:
            break
    return text.decode(errors="replace")


def _shown_lines(text):
    """The lines a terminal shows: ANSI sequences dropped, each line's last redraw ('\\r')."""
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
    lines = [line.split("\r")[-1].strip() for line in text.replace("\r\n", "\n").split("\n")]
    return [line for line in lines if line]


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_after_ctrl_c_the_last_line_is_the_resume_command(tmp_path):
    import fcntl
    import pty
    import struct
    import termios
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))   # 100 columns
    proc = subprocess.Popen([*NT, "train", "--task", "reverse", "--quick", "--steps", "100000",
                             "--no-figures", "--eval-every", "100000", "--out", "run"],
                            cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=child, stderr=child)
    os.close(child)
    try:
        shown = _read_all(main, until=b"step/s")   # from the bar's first draw
        assert "step/s" in shown, shown
        proc.send_signal(signal.SIGINT)
        shown += _read_all(main)
        assert proc.wait(timeout=300) == 130, shown
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(main)
    last = _shown_lines(shown)[-1]
    assert "continue with: python -m numpy_transformer train --resume" in last, shown
    assert (tmp_path / "run" / "last.npz").exists()
