"""A run that diverges says what to change as the options are typed (--lr, not `lr`), a
smaller --clip-norm where clipping is on already, and the command that continues from the
last good checkpoint; that command's --lr is taken by the resume (said in a note), not
ignored; no raw NumPy warning comes before the message (issue 52)."""

from doors import error, nt, ok

SMALL = ("--task", "copy", "--quick", "--no-figures", "--no-progress")


def test_a_diverged_run_advises_a_resume_that_takes_the_new_rate(tmp_path):
    ok(nt("train", *SMALL, "--steps", "4", "--out", "run", cwd=tmp_path))
    done = nt("train", "--resume", "run/last.npz", "--steps", "8", "--lr", "1e30",
              cwd=tmp_path)
    assert "note: resuming with a new --lr 1e+30 (was" in done.stdout, done.stdout
    assert "ignoring" not in done.stdout and "Warning" not in done.stderr, done.stderr
    first = error(done, 1, "--lr", "--warmup", "a smaller --clip-norm (now 1)",
                  "the last good checkpoint is run/last.npz (step 4)")
    assert "`" not in first, first
    assert first.endswith("Continue from it with a smaller rate: python -m numpy_transformer "
                          "train --resume run/last.npz --lr 5e+29"), first
    out = ok(nt("train", "--resume", "run/last.npz", "--steps", "8", "--lr", "0.001",
                "--clip-norm", "0.5", cwd=tmp_path))
    assert "note: resuming with a new --lr 0.001 (was 0.003), --clip-norm 0.5 (was 1.0)" in out
    assert "resuming at step 4" in out and "ignoring" not in out, out


def test_a_run_that_diverges_before_any_checkpoint_says_to_start_again(tmp_path):
    done = nt("train", *SMALL, "--lr", "1e30", "--out", "run", cwd=tmp_path)
    first = error(done, 1, "no checkpoint had been written yet", "--lr 5e+29", "--overwrite")
    assert "Warning" not in done.stderr, done.stderr
    assert "`" not in first, first
    ok(nt("train", *SMALL, "--lr", "0.001", "--overwrite", "--out", "run", cwd=tmp_path))
