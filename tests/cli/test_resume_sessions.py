"""A run in several sessions (stopped by a smaller --steps, then extended): the closing
line and results.json give this session's speed and every session of the run, paths stay
as typed, and the learning rate goes on from where it was (no jump at the resume step)."""

import json
import re
from types import SimpleNamespace

import pytest

from doors import ok, nt
from numpy_transformer.checkpoint import load_checkpoint
from numpy_transformer.training import TrainConfig
from numpy_transformer.training.checkpoints import continue_schedule

QUICK = ["--quick", "--no-figures", "--no-progress", "--warmup", "2"]
LINE = re.compile(r"(\d+) steps in (\d+) s \(([\d.]+) s/step(?:; (\d+) steps in (\d+) sessions, "
                  r"(\d+) s in all)?\)")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """train --steps 20, then --resume --steps 30, then --steps 36: three sessions."""
    work = tmp_path_factory.mktemp("sessions")
    outs = [ok(nt("train", "--task", "copy", *QUICK, "--steps", "20", "--out", "runs/c",
                  cwd=work))]
    (work / "first.json").write_text((work / "runs" / "c" / "results.json").read_text())
    for steps in (30, 36):
        outs.append(ok(nt("train", "--resume", "runs/c/last.npz", "--steps", steps,
                          "--no-figures", "--no-progress", cwd=work)))
    return work, outs


def test_the_closing_line_gives_this_sessions_speed_and_the_whole_run(run):
    work, outs = run
    first = LINE.search(outs[0]).groups()
    assert first[0] == "20" and first[3] is None         # one session: no totals
    done, seconds, per_step, total, sessions, in_all = LINE.search(outs[2]).groups()
    assert (done, total, sessions) == ("6", "36", "3")
    results = json.loads((work / "runs" / "c" / "results.json").read_text())
    times = [s["seconds"] for s in results["sessions"]]     # one record, written twice
    assert (seconds, per_step, in_all) == (f"{times[2]:.0f}", f"{times[2] / 6:.3f}",
                                           f"{sum(times):.0f}")


def test_results_json_records_every_session(run):
    work, _ = run
    results = json.loads((work / "runs" / "c" / "results.json").read_text())
    sessions = results["sessions"]
    assert [(s["from"], s["to"]) for s in sessions] == [(0, 20), (20, 30), (30, 36)]
    assert "--steps 20 --out runs/c" in sessions[0]["command"]
    assert sessions[2]["command"].endswith("--resume runs/c/last.npz --steps 36 --no-figures "
                                           "--no-progress")
    assert results["command"] == sessions[2]["command"] and results["steps"] == 36
    assert all(s["seconds"] > 0 for s in sessions)
    first = json.loads((work / "first.json").read_text())["sessions"]
    assert sessions[0] == first[0]          # its time, as its results.json said
    # one clock, one record (the last checkpoint's): every sum is of the same numbers
    saved = load_checkpoint(str(work / "runs" / "c" / "last.npz")).metadata
    assert saved["sessions"] == sessions
    assert saved["training_seconds"] == round(sum(s["seconds"] for s in sessions), 3)
    assert results["wall_seconds"] == round(sum(s["seconds"] for s in sessions), 1)
    assert results["seconds_per_step"] == round(sessions[2]["seconds"] / 6, 4)
    assert results["earlier_sessions_seconds"] == round(
        sum(s["seconds"] for s in sessions[:2]), 1)


def test_resuming_keeps_paths_as_typed(run):
    work, outs = run
    config = json.loads((work / "runs" / "c" / "config.json").read_text())
    assert config["run_config"]["out"] == "runs/c"
    for out in outs[1:]:
        assert str(work) not in out
        assert "saved in runs/c/:" in out and "run folder runs/c" in out


def test_extending_a_finished_run_continues_the_lr_schedule(run):
    work, outs = run
    train = json.loads((work / "runs" / "c" / "history.json").read_text())["train"]
    lr = {row["step"]: row["lr"] for row in train}
    assert lr[21] <= lr[20] and lr[31] <= lr[30]
    assert lr[20] == lr[25] == lr[36]                    # the cosine's floor, after its end
    assert "the cosine decay keeps its horizon of 20 steps" in outs[1]
    assert "steps 21-30 train at its floor lr" in outs[1]
    assert "steps 21-36" in outs[2]


def fake_trainer(steps, schedule="cosine"):
    config = TrainConfig(steps=steps, warmup=5, schedule=schedule)
    return SimpleNamespace(config=config, scheduler=SimpleNamespace(
        schedule=config.make_schedule(d_model=16)))


@pytest.mark.parametrize("saved, horizon, steps, at", [
    (30, 30, 50, 10),      # stopped at step 10 of 30, resumed for 50: the horizon stays 30
    (50, 30, 50, 40),      # an extended run resumed as it is: still 30
    (30, 30, 20, 10),      # a shorter run: the horizon comes in, the lr only goes down
])
def test_the_cosine_never_jumps_up_at_the_resume_step(saved, horizon, steps, at):
    before = fake_trainer(horizon).scheduler.schedule
    trainer = fake_trainer(steps)
    continue_schedule(trainer, {"train_config": {"steps": saved}, "schedule_steps": horizon})
    assert trainer.scheduler.schedule(at + 1) <= before(at)
    assert trainer.scheduler.schedule.total_steps == min(steps, horizon)


def test_noam_does_not_depend_on_the_total():
    before = fake_trainer(30, "noam").scheduler.schedule
    trainer = fake_trainer(60, "noam")
    note = continue_schedule(trainer, {"train_config": {"steps": 30}, "schedule_steps": None})
    assert "noam does not depend on the number of steps" in note
    assert trainer.scheduler.schedule(31) == before(31)


def test_a_crafted_schedule_horizon_is_refused_naming_the_field(tmp_path):
    from numpy_transformer.checkpoint import load_checkpoint
    from numpy_transformer.errors import InputError
    from test_training import tiny_trainer
    tiny_trainer(out=str(tmp_path), steps=6).fit()
    ckpt = load_checkpoint(str(tmp_path / "last.npz"))
    ckpt.metadata["schedule_steps"] = 1                   # not more than the warm-up
    with pytest.raises(InputError, match="metadata.schedule_steps"):
        tiny_trainer(out=str(tmp_path / "again"), steps=12).resume(ckpt)
