"""What a finished run leaves to quote: results.json, `evaluate --json`, and `figures --all /
--run`, which re-draw the README runs' figures and summaries from their run folders (each
command run as a user types it)."""

import json

import pytest

from doors import error, nt, ok

pytest.importorskip("matplotlib")

QUICK = ["--quick", "--no-figures", "--no-progress"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Quick versions of the README runs, in the folders their commands write."""
    work = tmp_path_factory.mktemp("readme_runs")
    words = ["red", "green", "blue", "cat", "dog", "bird", "big", "small"]
    pairs = [(f"{a} {b}", f"{b} {a}") for a in words for b in words]
    for name, side in (("src", 0), ("tgt", 1)):
        (work / f"train.{name}").write_text("\n".join(p[side] for p in pairs) + "\n")
    (work / "text.txt").write_text("to be or not to be, that is the question.\n" * 60)
    ok(nt("train", "--task", "reverse", *QUICK, cwd=work))
    ok(nt("train", "--task", "dates", *QUICK, cwd=work))
    ok(nt("train-lm", "--text", "text.txt", *QUICK, cwd=work))
    for folder in ("lm_big", "lm_hour"):
        ok(nt("train-lm", "--text", "text.txt", *QUICK, "--out", f"runs/{folder}", cwd=work))
    corpus = ["--src", "train.src", "--tgt", "train.tgt", "--test-src", "train.src",
              "--test-tgt", "train.tgt"]
    ok(nt("train", *corpus, *QUICK, cwd=work))
    ok(nt("evaluate", "--checkpoint", "runs/translation/best.npz", "--src", "train.src",
          "--tgt", "train.tgt", "--beam", "2", "--bleu-tokenize", "none", "--json",
          "runs/translation/beam2.json",
          cwd=work))
    recipe = ["--bpe", "20", "--joint-vocab", "--share-embeddings", "--bleu-tokenize", "none",
              "--keep-last", "2"]
    for folder in ("m30k", "m30k_en_de", "m30k_en_de_tiny", "m30k_de_en_tiny"):  # recipe, tiny
        ok(nt("train", *corpus, *recipe, *QUICK, "--out", f"runs/{folder}", cwd=work))
        ok(nt("average", f"runs/{folder}/step-20.npz", f"runs/{folder}/step-40.npz", "--out",
              f"runs/{folder}/avg.npz", cwd=work))
        ok(nt("evaluate", "--checkpoint", f"runs/{folder}/avg.npz", "--src", "train.src",
              "--tgt", "train.tgt", "--beam", "2", "--json", f"runs/{folder}/train_beam2.json",
              cwd=work))
    return work


@pytest.mark.slow
def test_a_finished_run_writes_results_json(runs):
    results = json.loads((runs / "runs" / "reverse" / "results.json").read_text())
    assert results["command"] == "python -m numpy_transformer train --task reverse " \
        "--quick --no-figures --no-progress"
    assert results["steps"] == 40 and results["parameters"] > 0
    assert results["wall_seconds"] > 0 and results["seconds_per_step"] > 0
    assert 0 <= results["held_out"]["exact_match"] <= 1
    assert "predictions" not in results["held_out"]
    lm = json.loads((runs / "runs" / "lm" / "results.json").read_text())
    assert lm["held_out"]["perplexity"] > 1 and lm["held_out_characters"] > 0
    corpus = json.loads((runs / "runs" / "translation" / "results.json").read_text())
    assert 0 <= corpus["test"]["bleu"] <= 100 and corpus["test_examples"] == 64


def test_a_resumed_run_counts_the_time_of_the_sessions_before_it(tmp_path):
    from numpy_transformer.checkpoint import load_checkpoint
    ok(nt("train", "--task", "copy", *QUICK, "--steps", "4", "--out", "r", cwd=tmp_path))
    first = json.loads((tmp_path / "r" / "results.json").read_text())
    before = load_checkpoint(str(tmp_path / "r" / "last.npz")).metadata["training_seconds"]
    assert first["earlier_sessions_seconds"] == 0 and before > 0
    assert first["sessions"][0]["seconds"] == before            # one record of the time
    assert first["wall_seconds"] == round(before, 1)
    ok(nt("train", "--resume", "r/last.npz", "--steps", "6", "--no-progress", "--no-figures",
          cwd=tmp_path))
    resumed = json.loads((tmp_path / "r" / "results.json").read_text())
    assert resumed["earlier_sessions_seconds"] == round(before, 1)
    this = resumed["sessions"][-1]                  # seconds_per_step: this session's
    assert resumed["wall_seconds"] == round(before + this["seconds"], 1)
    assert resumed["steps"] == 6 and (this["from"], this["to"]) == (4, 6)
    assert resumed["seconds_per_step"] == round(this["seconds"] / 2, 4)
    assert load_checkpoint(str(tmp_path / "r" / "last.npz")).metadata["training_seconds"] == \
        round(before + this["seconds"], 3)


def test_evaluate_json_records_the_scores_and_what_was_scored(runs):
    record = json.loads((runs / "runs" / "translation" / "beam2.json").read_text())
    assert record["beam"] == 2 and "bleu" in record["scores"]
    assert record["bleu_tokenize"] == "none" and record["alpha"] == 0.6
    assert record["scored"].startswith("64 sentence pairs of train.src")
    assert record["command"].endswith("--json runs/translation/beam2.json")


def test_bleu_tokenize_is_a_setting_of_train_and_evaluate(runs):
    out = ok(nt("train", "--src", "train.src", "--tgt", "train.tgt", "--bleu-tokenize", "none",
                *QUICK, "--out", "runs/none", cwd=runs))
    assert "bleu" in out
    config = json.loads((runs / "runs" / "none" / "config.json").read_text())
    assert config["data_config"]["bleu_tokenize"] == "none"
    out = ok(nt("evaluate", "--checkpoint", "runs/none/best.npz", "--src", "train.src",
                "--tgt", "train.tgt", cwd=runs))
    assert "(BLEU tokenize=none)" in out                          # the run's setting
    done = nt("evaluate", "--checkpoint", "runs/none/best.npz", "--bleu-tokenize", "intl",
              cwd=runs)
    assert done.returncode == 2 and "--bleu-tokenize" in done.stderr


@pytest.mark.slow
def test_figures_all_redraws_every_readme_run_and_writes_summaries(runs, tmp_path):
    out = ok(nt("figures", "--all", "--quick", "--out", tmp_path / "figs",
                "--runs", runs / "runs", cwd=runs))
    assert "figures in" in out
    summary = json.loads((tmp_path / "figs" / "multi30k.json").read_text())
    assert summary["kind"] == "seq2seq"
    assert "beam 2 on train" in " ".join(summary["claims"])
    assert any(claim.endswith("ms per step") for claim in summary["claims"])
    recipe = json.loads((tmp_path / "figs" / "multi30k_recipe.json").read_text())
    assert recipe["settings"]["bleu_tokenize"] == "none" and recipe["settings"]["bpe"] == 20
    assert any(c.endswith("greedy from the best checkpoint") for c in recipe["claims"])
    assert recipe["commands"][0].startswith("mpiexec -n 2 python -m numpy_transformer train")
    for name, figures in (("reverse", 5), ("dates", 5), ("multi30k", 5), ("shakespeare_lm", 2),
                          ("shakespeare_lm_big", 2), ("shakespeare_lm_hour", 2),
                          ("multi30k_recipe", 5),
                          ("multi30k_en_de", 5), ("multi30k_en_de_tiny", 5),
                          ("multi30k_de_en_tiny", 5)):
        summary = json.loads((tmp_path / "figs" / f"{name}.json").read_text())
        assert len(summary["figures"]) == figures
        for png in summary["figures"]:
            assert (tmp_path / "figs" / png).stat().st_size > 1000
    assert (tmp_path / "figs" / "masks.png").is_file()              # the lessons' too


@pytest.mark.slow
def test_figures_all_only_redraws_the_named_readme_runs(runs, tmp_path):
    out = ok(nt("figures", "--all", "--only", "multi30k_en_de", "--out", tmp_path / "figs",
                "--runs", runs / "runs", cwd=runs))
    assert "6 figures in" in out                                     # 5 PNG files + the summary
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == sorted(
        json.loads((tmp_path / "figs" / "multi30k_en_de.json").read_text())["figures"]
        + ["multi30k_en_de.json"])
    error(nt("figures", "--only", "dates", cwd=runs), 2, "--only", "--all", "dates")
    error(nt("figures", "--all", "--only", "nope", cwd=runs), 2, "--only", "nope")


def test_figures_all_names_each_missing_run_and_its_command(tmp_path):
    first = error(nt("figures", "--all", "--runs", tmp_path, cwd=tmp_path), 2, "--all",
                  "results.json", "train --task reverse", "train-lm --text")
    assert "evaluate --checkpoint runs/translation/best.npz" in first
    assert not (tmp_path / "figures").exists()                      # nothing drawn


def test_figures_run_redraws_one_run_into_its_folder(runs):
    out = ok(nt("figures", "--run", "runs/lm", cwd=runs))
    assert "2 figures in" in out and (runs / "runs" / "lm" / "figures" / "loss.png").is_file()
    error(nt("figures", "--run", "runs/missing", cwd=runs), 2, "--run", "runs/missing")
    error(nt("figures", "--run", "runs/lm", "--all", cwd=runs), 2, "--all")


@pytest.mark.slow
def test_figures_all_redraws_the_curves_of_a_run_whose_folder_is_gone(runs, tmp_path):
    """figures/<name>.json keeps the training curves, so the loss and learning-rate figures
    can be re-drawn (new axes, say) after the run folder is deleted."""
    figs = tmp_path / "figs"
    ok(nt("figures", "--all", "--only", "shakespeare_lm", "--out", figs, "--runs",
          runs / "runs", cwd=runs))
    summary = json.loads((figs / "shakespeare_lm.json").read_text())
    history = json.loads((runs / "runs" / "lm" / "history.json").read_text())
    assert [r["step"] for r in summary["history"]["train"]] == [r["step"] for r in
                                                                history["train"]]
    assert summary["history"]["train"][-1]["loss"] == pytest.approx(
        history["train"][-1]["loss"], rel=1e-5)
    (figs / "shakespeare_lm_loss.png").unlink()
    out = ok(nt("figures", "--all", "--only", "shakespeare_lm", "--out", figs, "--runs",
                tmp_path / "no_runs", cwd=tmp_path))
    assert "run folder is gone" in out and "2 figures in" in out
    assert (figs / "shakespeare_lm_loss.png").stat().st_size > 1000
    assert json.loads((figs / "shakespeare_lm.json").read_text()) == summary   # unchanged
    error(nt("figures", "--all", "--only", "dates", "--out", figs, "--runs",
             tmp_path / "no_runs", cwd=tmp_path), 2, "--all", "train --task dates")


def test_a_quick_run_says_it_is_a_smoke_test(tmp_path):
    out = ok(nt("train", "--task", "reverse", *QUICK, "--steps", "4", "--out", "r",
                cwd=tmp_path))
    lines = out.splitlines()
    said = [i for i, line in enumerate(lines) if line.startswith("note: --quick is a smoke test")]
    assert said and "not expected to translate correctly" in lines[said[0]], out
    assert said[0] > max(i for i, line in enumerate(lines) if line.endswith(("WRONG", "ok")))
    full = ok(nt("train", "--task", "reverse", "--no-figures", "--no-progress", "--steps", "4",
                 "--out", "full", cwd=tmp_path))
    assert "smoke test" not in full
