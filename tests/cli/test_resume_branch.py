"""Issue 40, resuming honestly: a branch (`train --resume RUN/best.npz --out NEW`) writes its
own NEW/best.npz, so the command its closing line names works; `load_trained` on a folder
without best.npz says which file it loaded; a --steps below the step a run reached is refused
naming both numbers (not "finished (step 194 of 50)")."""

import shlex
import warnings

import pytest

from doors import error, names, nt, ok

from numpy_transformer import load_trained
from numpy_transformer.checkpoint import load_checkpoint

QUICK = ["--quick", "--no-figures", "--no-progress"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A quick reverse run of 20 steps, evaluated every 10 (best.npz, last.npz)."""
    work = tmp_path_factory.mktemp("branch")
    ok(nt("train", "--task", "reverse", *QUICK, "--steps", "20", "--eval-every", "10",
          "--out", "r", cwd=work))
    return work


def test_a_branch_writes_its_own_best_and_its_closing_command_works(run):
    work = run
    before = (work / "r" / "best.npz").read_bytes()
    out = ok(nt("train", "--resume", "r/best.npz", "--steps", "30", "--eval-every", "10",
                *QUICK, "--out", "new", cwd=work))
    assert (work / "new" / "best.npz").is_file()
    assert load_checkpoint(str(work / "new" / "best.npz")).metadata["step"] in (20, 30)
    assert (work / "r" / "best.npz").read_bytes() == before        # the old run untouched
    line = [ln for ln in out.splitlines() if "translate --checkpoint" in ln][-1]
    command = shlex.split(line[line.index("python -m"):])
    assert command[4:6] == ["--checkpoint", "new/best.npz"], line
    assert len(ok(nt(*command[3:], cwd=work)).splitlines()) == 1    # the closing line works
    assert "exact_match" in ok(nt("evaluate", "--checkpoint", "new/best.npz", "--examples",
                                  "10", cwd=work))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_trained(work / "new").path.endswith("best.npz")


def test_load_trained_says_it_loaded_last_npz_of_a_folder_without_best(run, tmp_path):
    folder = tmp_path / "r"
    folder.mkdir()
    for name in ("last.npz", "src_tokenizer.json", "tgt_tokenizer.json"):
        (folder / name).write_bytes((run / "r" / name).read_bytes())
    with pytest.warns(UserWarning) as caught:
        trained = load_trained(folder)
    assert trained.path.endswith("last.npz")
    names(caught[0].message, "best.npz", str(folder / "last.npz"), "step", "20")


def test_steps_below_the_step_reached_are_refused_naming_both(run):
    work = run
    for steps in ("5", "20"):                  # r finished at 20: it suggests 2 x 20
        first = error(nt("train", "--resume", "r/last.npz", "--steps", steps, *QUICK,
                         cwd=work), 2)
        names(first, "--steps", "20", steps, "r/last.npz")
        assert "finished" not in first and first.endswith("--resume r/last.npz --steps 40"), first
