"""The closing `next:` command runs clean as printed: after a word-level run whose held-out
sentences hold words never seen in training, it suggests a sentence without an <unk>
(pasting `<unk>` back printed a vocabulary warning), quoted for a shell (issue 52)."""

import shlex

from doors import nt, ok


def test_the_next_command_after_a_word_level_run_runs_clean(tmp_path):
    known = [f"the cat sat on mat {i % 7}" for i in range(90)]
    held = [f"unseen{i} words here" for i in range(9)] + ["the cat sat"]
    lines = [f"{s}\t{s[::-1]}" for s in known + held]            # the last 10 are held out
    (tmp_path / "words.tsv").write_text("\n".join(lines) + "\n")
    out = ok(nt("train", "--tsv", "words.tsv", "--quick", "--steps", "2", "--no-figures",
                "--out", "run", cwd=tmp_path))
    command = next(line for line in out.splitlines() if line.startswith("next:  "))
    assert "<unk>" not in command and "unseen" not in command, command
    argv = shlex.split(command[len("next:  "):])
    assert argv[:4] == ["python", "-m", "numpy_transformer", "translate"], command
    done = nt(*argv[3:], cwd=tmp_path)
    ok(done)
    assert "warning" not in done.stdout + done.stderr, done.stdout + done.stderr


def test_the_next_command_after_a_text_without_romeo_runs_clean(tmp_path):
    (tmp_path / "low.txt").write_text("to be or not to be, that is the question.\n" * 40)
    out = ok(nt("train-lm", "--text", "low.txt", "--quick", "--steps", "2", "--no-figures",
                "--out", "run", cwd=tmp_path))
    command = next(line for line in out.splitlines() if line.startswith("next:  "))
    argv = shlex.split(command[len("next:  "):])
    assert argv[3:5] == ["generate", "--checkpoint"] and "ROMEO" not in command, command
    done = nt(*argv[3:], "--max-new-tokens", "5", cwd=tmp_path)
    ok(done)
    assert "warning" not in done.stdout + done.stderr, done.stdout + done.stderr
