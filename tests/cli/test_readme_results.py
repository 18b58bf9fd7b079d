"""The README's results come from runs, and its figures from the committed code.

figures/<name>.json is written by `python -m numpy_transformer figures --all` from the
folder of each README run (readme_runs.py). Here: every phrase a summary says the README
prints is in the README, the phrases follow from the summary's own results (so neither can
be edited alone), and every committed figure is one that `figures --all` writes.
"""

import json
import re
import shlex
from pathlib import Path

import pytest

from numpy_transformer.tools.readme_runs import claims, readme_runs

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SUMMARIES = {run.name: ROOT / "figures" / f"{run.name}.json" for run in readme_runs()}


def summary(name):
    return json.loads(SUMMARIES[name].read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(SUMMARIES))
def test_every_readme_run_has_a_summary_made_by_its_command(name):
    s = summary(name)
    run = {r.name: r for r in readme_runs()}[name]
    assert s["commands"] == list(run.commands)
    # The run was made by the README's command (shortened paths aside: same options), by the
    # configs/ file the docs print for it, or resumed (`train --resume FOLDER/last.npz`) from a
    # run: in the last two, the saved settings are that command's.
    training = run.commands[0].split()
    options = lambda command: [w for w in command.split() if w.startswith("--")]   # noqa: E731
    if "--config" in s["command_run"]:
        # the printed `--config` command, perhaps followed by options that repeat the file's
        # own values (checked below, as every setting is) or only change what is shown
        printed = AS_PRINTED[run.commands[0]]
        typed = shlex.split(s["command_run"])
        end = typed.index("--config") + 2
        assert printed.endswith(shlex.join(typed[:end])), (printed, s["command_run"])
        extra = [w for w in typed[end:] if w not in DISPLAY_ONLY]
        assert all(f"{option} {value}" in run.commands[0]
                   for option, value in zip(extra[::2], extra[1::2])), extra
    elif "--resume" in s["command_run"]:
        assert s["command_run"].endswith(f"train --resume runs/{run.folder}/last.npz")
    else:
        assert options(s["command_run"]) == options(run.commands[0])
        return
    for option, value in zip(training, training[1:] + [""]):
        if option.startswith("--") and option != "--out":
            saved = s["settings"][option[2:].replace("-", "_")]
            assert same_setting(saved, value), (option, saved, value)


DISPLAY_ONLY = ("--no-progress",)           # options that change no setting of a run


def same_setting(saved, typed):
    """Whether a saved setting is what `--option typed` gives (a flag: typed is no value)."""
    if not typed or typed.startswith("--"):
        return saved is True
    if isinstance(saved, str):                     # file paths are saved absolute
        return saved == typed or saved.endswith("/" + typed.split("/", 1)[-1])
    return float(saved) == float(typed)


@pytest.mark.parametrize("name", sorted(SUMMARIES))
def test_readme_quotes_each_run_as_its_summary_says(name):
    s = summary(name)
    assert s["claims"] == claims(s["kind"], s["results"], s["evaluations"], s.get("settings"))
    for phrase in s["claims"]:
        assert phrase in README, f"README lacks {phrase!r} (from figures/{name}.json)"


def test_every_committed_figure_is_drawn_by_figures_all():
    from numpy_transformer.course.lessons import figures
    drawn = set(figures.FIGURES)
    for name in SUMMARIES:
        drawn |= set(summary(name)["figures"])
    committed = {p.name for p in (ROOT / "figures").glob("*.png")}
    assert committed == drawn


def test_every_figure_the_readme_shows_is_committed():
    shown = re.findall(r"\]\((figures/[^)]+\.png)\)", README)
    assert shown
    for path in shown:
        assert (ROOT / path).is_file(), path


def as_printed():
    """{a README run's whole command: the `--config configs/...` form the docs print}."""
    from numpy_transformer.data.datasets import DATASETS
    from numpy_transformer.tools.recipes import dataset_commands, printed_commands
    pairs = {}
    for dataset in ("shakespeare", "multi30k"):
        saved = {f.path: f"data/{f.path}" for f in DATASETS[dataset].files}
        pairs.update(zip(dataset_commands(dataset, saved), printed_commands(dataset, saved)))
    return pairs


AS_PRINTED = as_printed()


def test_each_run_printed_on_a_docs_page_shows_its_results_beside_its_command():
    """A run whose command a docs/ page prints (the hour-long ones) has every phrase the
    README quotes of it in the same code block, as `# expected: ...` lines beside it."""
    pages = "".join(p.read_text(encoding="utf-8") for p in sorted(ROOT.glob("docs/*.md")))
    shown = 0
    for name in SUMMARIES:
        s = summary(name)
        if s["commands"][0] in README:                 # the quick start's, in the README
            continue
        printed = AS_PRINTED.get(s["commands"][0], s["commands"][0])    # its configs/ file
        found = [b for b in re.findall(r"```sh\n(.*?)```", pages, flags=re.S)
                 if printed in b.splitlines()]
        assert len(found) == 1, f"{name}: its command is in no docs/ page, or in several"
        said = " ".join(line for line in found[0].splitlines() if line.startswith("# "))
        assert [p for p in s["claims"] if p not in said] == [], name
        shown += 1
    assert shown >= 5


@pytest.mark.parametrize("name", ["multi30k_recipe", "multi30k_en_de", "multi30k_en_de_tiny",
                                  "multi30k_de_en_tiny"])
def test_the_recipe_page_table_of_runs_quotes_their_summaries(name):
    """docs/multi30k_recipe.md's table "The runs": time, steps and BLEU of each direction."""
    s, folder = summary(name), {r.name: r.folder for r in readme_runs()}[name]
    page = (ROOT / "docs" / "multi30k_recipe.md").read_text(encoding="utf-8")
    row = next(line for line in page.splitlines()
               if line.startswith("| ") and f"(`runs/{folder}`," in line)
    said = dict((f"{m[2]} {m[3]}", m[1]) for m in
                map(re.compile(r"([\d.]+) (greedy|beam \d) on (\w+)$").match, s["claims"]) if m)
    beam = next(k.split(" test")[0] for k in said if k.startswith("beam"))
    time = s["claims"][0].replace(" (", ", ") + ", " + s["claims"][1]
    assert row.strip("| ").split(" | ")[1:] == [
        time, f"{said[beam + ' test_2016_flickr']} (greedy {said['greedy test_2016_flickr']})",
        said[beam + " test_2017_flickr"], said[beam + " test_2017_mscoco"]]


def test_the_run_times_data_prints_are_the_summaries_as_the_readme_quotes_them():
    """`data DATASET` closes with how long the README's runs took (recipes.MINUTES): each is
    its figures/<name>.json's wall time, as the README's claims write it."""
    from numpy_transformer.tools.readme_runs import _duration
    from numpy_transformer.tools.recipes import MINUTES, run_times
    runs = {run.folder: run.name for run in readme_runs()}
    assert set(MINUTES) == set(runs) - {"reverse", "dates"}
    for folder, minutes in MINUTES.items():
        quoted = _duration(summary(runs[folder])["results"]["wall_seconds"])
        assert f"{minutes:.1f} min" == quoted, (folder, minutes, quoted)
        assert f"{quoted} (" in README, quoted
    said = run_times("shakespeare") + run_times("multi30k")
    assert all(f"{minutes:.1f} min" in said for minutes in MINUTES.values()), said
