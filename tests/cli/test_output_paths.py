"""Nothing a user made is ever lost (issue 26): every option that names something a command
writes refuses a folder of someone else's files, an existing file without --overwrite, and
the command's own inputs and a run's files even with it, before any work is done."""

import json

import pytest
from doors import error, nt, ok

QUICK = ("--task", "reverse", "--quick", "--steps", "6", "--no-progress", "--no-figures")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A finished tiny run folder (best.npz, last.npz, history.json, ...)."""
    out = tmp_path_factory.mktemp("run") / "r"
    ok(nt("train", *QUICK, "--out", out))
    return out


def test_out_into_a_folder_of_other_files_is_refused_even_with_overwrite(tmp_path):
    proj = tmp_path / "proj"
    (proj / "figures").mkdir(parents=True)
    (proj / "config.json").write_text('{"mine": 1}\n')
    (tmp_path / "t.txt").write_text("to be or not to be, that is the question. " * 20)
    for extra in ((), ("--overwrite",)):
        error(nt("train", *QUICK, "--out", proj, *extra), 2, "--out", "config.json", "figures")
        error(nt("train-lm", "--text", tmp_path / "t.txt", "--quick", "--steps", "6",
                 "--no-figures", "--out", proj, *extra), 2, "--out", "config.json")
    assert (proj / "config.json").read_text() == '{"mine": 1}\n'
    assert sorted(p.name for p in proj.iterdir()) == ["config.json", "figures"]


def test_an_empty_out_or_figures_is_refused_not_the_default(tmp_path):
    error(nt("train", *QUICK, "--out", "", cwd=tmp_path), 2, "--out", "''")
    error(nt("train", "--task", "reverse", "--quick", "--figures", "", cwd=tmp_path), 2,
          "--figures")
    assert not (tmp_path / "runs").exists()


def test_figures_naming_a_file_is_refused_before_training(tmp_path):
    (tmp_path / "plot").write_text("mine")
    done = nt("train", "--task", "reverse", "--quick", "--steps", "6", "--out", tmp_path / "r",
              "--figures", tmp_path / "plot")
    error(done, 2, "--figures", "a folder")
    assert "training" not in done.stdout and not (tmp_path / "r").exists()
    (tmp_path / "figs").mkdir()
    (tmp_path / "figs" / "loss.png").write_text("mine")
    error(nt("train", *QUICK[:-1], "--out", tmp_path / "r", "--figures", tmp_path / "figs"),
          2, "--figures", "loss.png", "--overwrite")
    assert (tmp_path / "figs" / "loss.png").read_text() == "mine"


@pytest.mark.slow
def test_evaluate_json_never_writes_over_its_checkpoint_or_the_run(run, tmp_path):
    before = (run / "best.npz").read_bytes()
    for extra in ((), ("--overwrite",)):
        error(nt("evaluate", "--checkpoint", run / "best.npz", "--json", run / "best.npz",
                 *extra), 2, "--json", "--checkpoint")
        error(nt("evaluate", "--checkpoint", run / "best.npz", "--json", run / "history.json",
                 *extra), 2, "--json", "history.json")
    assert (run / "best.npz").read_bytes() == before
    json.loads((run / "history.json").read_text())
    mine = tmp_path / "scores.json"
    mine.write_text("mine")
    args = ("evaluate", "--checkpoint", run / "best.npz", "--examples", "5", "--json", mine)
    error(nt(*args), 2, "--json", "already exists", "--overwrite")
    assert mine.read_text() == "mine"
    ok(nt(*args, "--overwrite"))
    assert "scores" in json.loads(mine.read_text())
    error(nt("evaluate", "--checkpoint", run / "best.npz", "--json", ""), 2, "--json")


def test_a_write_error_names_the_file_asked_for_not_a_temporary_one(run, tmp_path):
    long = tmp_path / ("s" * 300 + ".json")
    first = error(nt("evaluate", "--checkpoint", run / "best.npz", "--examples", "5",
                     "--json", long), 2, "File name too long", str(long))
    assert ".tmp-" not in first


def test_average_never_writes_over_one_of_its_checkpoints(run):
    before = (run / "last.npz").read_bytes()
    error(nt("average", run / "last.npz", run / "best.npz", "--out", run / "last.npz",
             "--overwrite"), 2, "--out", "CKPT")
    assert (run / "last.npz").read_bytes() == before


def test_assignment_outputs_refuse_existing_files_and_each_other(tmp_path):
    mine = tmp_path / "mine.json"
    mine.write_text("mine")
    copy = tmp_path / "copy"
    copy.mkdir()
    error(nt("assignment", "grade", copy, "--json", mine), 2, "--json", "already exists")
    error(nt("assignment", "grade", copy, "--csv", mine), 2, "--csv", "--overwrite")
    error(nt("assignment", "grade", copy, "--gradescope", mine), 2, "--gradescope")
    error(nt("assignment", "grade", copy, "--json", tmp_path / "a", "--csv", tmp_path / "a",
             "--overwrite"), 2, "--csv", "--json")
    zip_ = tmp_path / "autograder.zip"
    zip_.write_text("mine")
    error(nt("assignment", "autograder", "--out", zip_), 2, "--out", "already exists")
    assert mine.read_text() == "mine" and zip_.read_text() == "mine"


def test_lessons_html_refuses_existing_pages_as_out_refuses_lessons(tmp_path):
    source = tmp_path / "mine"
    source.mkdir()
    cells = [{"id": "a", "cell_type": "code", "metadata": {}, "source": "print(6 * 7)",
              "outputs": [], "execution_count": None}]
    (source / "01_small.ipynb").write_text(json.dumps(
        {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("my page")
    error(nt("lessons", "--html", site, "--from", source), 2, "--html", "index.html",
          "--overwrite")
    assert (site / "index.html").read_text() == "my page"


def test_gradescope_results_errors_name_the_file_not_a_temporary_one(tmp_path):
    from numpy_transformer.course.classroom.gradescope import write_json
    long = tmp_path / ("g" * 300 + ".json")
    with pytest.raises(OSError) as caught:
        write_json(long, {"score": 0})
    assert caught.value.filename == str(long) and not list(tmp_path.iterdir())
    write_json(tmp_path / "results.json", {"score": 1})
    assert json.loads((tmp_path / "results.json").read_text()) == {"score": 1}
