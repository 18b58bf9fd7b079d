"""The README's results, re-drawn and summarised from the folders of the runs that made them.

    python -m numpy_transformer figures --all                 # every committed figure
    python -m numpy_transformer figures --run runs/reverse    # one run's figures, re-drawn

README_RUNS lists the runs whose numbers the README quotes: the command that
makes each, and the folder it writes. For each, `figures --all` reads that
folder (history.json, config.json, results.json, best.npz, and the files that
`evaluate --json` wrote into it), draws the run's figures into
figures/<name>_*.png and writes figures/<name>.json: the results, the command,
and `claims`, the phrases the README prints. tests/cli/test_readme_results.py checks
that every claim is in the README and that the claims follow from the results,
so a README number cannot drift from the run it came from.
"""

import glob
import os
from dataclasses import dataclass

from ..system import files
from ..checkpoint.header import KIND_NAMES
from ..data.config import DataConfig
from ..data.datasets import DATASETS
from ..errors import InputError
from ..system.files import atomic_write
from ..training.history import History
from ..validation import message
from .recipes import dataset_commands, multi30k_runs


def _data_commands(dataset):
    """The commands `data DATASET --out data` prints (the README's)."""
    return dataset_commands(dataset, _saved_paths(dataset))


def _saved_paths(dataset):
    return {f.path: f"data/{f.path}" for f in DATASETS[dataset].files}


def _multi30k(folder):
    """The commands that make the README's Multi30k run folder `runs/<folder>`."""
    return tuple(multi30k_runs(_saved_paths("multi30k"))[folder])


@dataclass(frozen=True)
class ReadmeRun:
    name: str          # figures/<name>_*.png and figures/<name>.json
    folder: str        # the run folder its command writes (under runs/)
    title: str         # named in every figure title
    commands: tuple    # what makes the folder: training, then any `evaluate --json`


def readme_runs():
    return (
        ReadmeRun("reverse", "reverse", "reverse strings",
                  ("python -m numpy_transformer train --task reverse",)),
        ReadmeRun("dates", "dates", "dates to ISO",
                  ("python -m numpy_transformer train --task dates",)),
        ReadmeRun("shakespeare_lm", "lm", "tiny Shakespeare, character LM",
                  (_data_commands("shakespeare")[0],)),
        ReadmeRun("shakespeare_lm_big", "lm_big", "tiny Shakespeare, character LM, 6000 steps",
                  (_data_commands("shakespeare")[1],)),
        ReadmeRun("shakespeare_lm_hour", "lm_hour",
                  "tiny Shakespeare, character LM, an hour on 2 cores",
                  (_data_commands("shakespeare")[2],)),
        ReadmeRun("multi30k", "translation", "Multi30k German -> English",
                  _multi30k("translation")),
        ReadmeRun("multi30k_recipe", "m30k", "Multi30k German -> English, the paper's recipe",
                  _multi30k("m30k")),
        ReadmeRun("multi30k_en_de", "m30k_en_de", "Multi30k English -> German, the paper's recipe",
                  _multi30k("m30k_en_de")),
        ReadmeRun("multi30k_en_de_tiny", "m30k_en_de_tiny",
                  "Multi30k English -> German, the published tiny shape",
                  _multi30k("m30k_en_de_tiny")),
        ReadmeRun("multi30k_de_en_tiny", "m30k_de_en_tiny",
                  "Multi30k German -> English, the published tiny shape",
                  _multi30k("m30k_de_en_tiny")),
    )


def read_json(path):
    return files.read_json(path, str(path))


def run_config(folder):
    """The config.json of a run folder, checked: a dict with the run's kind and its typed
    configurations (model, train, data_config), plus "settings": one flat record of them,
    named as the options (the README's summaries quote it)."""
    path = os.path.join(folder, "config.json")
    config = read_json(path)
    if not isinstance(config, dict) or config.get("kind") not in KIND_NAMES or not all(
            isinstance(config.get(k), dict) for k in ("model", "train", "data_config")):
        raise InputError(message(path, "the config.json a run writes (its kind and "
                                 "configurations)", "another JSON value"))
    smoothing = config["train"].get("label_smoothing")
    if not (isinstance(smoothing, (int, float)) and 0 <= smoothing < 1):
        raise InputError(message(f"{path}: train.label_smoothing", "a number in [0, 1)",
                                 repr(smoothing)[:80]))
    try:
        data = DataConfig(**config["data_config"])
    except (TypeError, InputError) as err:
        raise InputError(f"{path}: data_config: {err}") from None
    model = dict(config["model"])
    if model.get("num_encoder_layers") == model.get("num_decoder_layers") is not None:
        model["num_layers"] = model["num_encoder_layers"]         # what --num-layers set
    run = config.get("run_config") if isinstance(config.get("run_config"), dict) else {}
    settings = {**model, **config["train"], **data.to_dict(), **run}
    return {**config, "data": data, "settings": settings}


def evaluations(folder):
    """The records `evaluate --json FILE` wrote into the run folder, by file name."""
    found = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        record = read_json(path)
        if isinstance(record, dict) and {"scores", "checkpoint", "beam"} <= set(record):
            found[os.path.basename(path)] = record
    return found


def _duration(seconds):
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def _decoding(beam):
    return "greedy" if beam == 1 else f"beam {beam}"


def _scored_set(record):
    """'test_2017_mscoco' from an evaluation's 'N sentence pairs of data/.../test_2017_mscoco...'."""
    path = record["scored"].split(" of ", 1)[-1].split(" / ")[0]
    return os.path.basename(path).split(".")[0]


def claims(kind, results, evaluated, settings=None):
    """The phrases of the README's results table that come from this run's files."""
    said = [f"{_duration(results['wall_seconds'])} ({results['steps']} steps",
            f"{1000 * results['seconds_per_step']:.0f} ms per step"]
    held = results["held_out"]
    if kind == "lm":
        said += [f"{held['loss']:.3f} nats per character (perplexity {held['perplexity']:.2f})",
                 f"{results['parameters'] / 1e6:.1f}M parameters"]
    elif "test" in results:
        tokenize = (settings or {}).get("bleu_tokenize") or "13a"
        said += [f"{results['test']['bleu']:.1f} with sacreBLEU's default 13a tokenisation"
                 if tokenize == "13a" else
                 f"{results['test']['bleu']:.1f} greedy from the best checkpoint",
                 f"validation perplexity {held['perplexity']:.2f}",
                 f"{results['parameters'] / 1e6:.1f}M parameters"]
        said += [f"{e['scores']['bleu']:.1f} {_decoding(e['beam'])} on {_scored_set(e)}"
                 for e in evaluated.values() if "bleu" in e["scores"]]
    else:
        said += [f"{100 * held['exact_match']:.1f}% exact match on "
                 f"{results['held_out_examples']:,} held-out",
                 f"{results['parameters'] / 1e6:.2f}M parameters"]
    if results.get("peak_memory_mib"):
        said.append(f"peak memory {results['peak_memory_mib']:.0f} MiB")
    return said


def summarize(run, folder):
    """figures/<name>.json's content: what the run reached, how, the README's phrases, and
    the training curves (so that the loss and learning-rate figures can be re-drawn once the
    run folder is gone)."""
    config = run_config(folder)
    results = read_json(os.path.join(folder, "results.json"))
    evaluated = evaluations(folder)
    history = History.load(os.path.join(folder, "history.json"))
    return {"name": run.name, "title": run.title, "commands": list(run.commands),
            "command_run": results["command"], "kind": config["kind"],
            "settings": config["settings"], "results": results, "evaluations": evaluated,
            "claims": claims(config["kind"], results, evaluated, config["settings"]),
            "history": _rounded(history.to_dict())}


def _rounded(value, digits=6):
    """`value` with every float at `digits` significant digits (a smaller JSON; the curves
    drawn from it do not change at any figure's resolution)."""
    if isinstance(value, float):
        return float(f"{value:.{digits}g}")
    if isinstance(value, dict):
        return {k: _rounded(v, digits) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v, digits) for v in value]
    return value


def write_summary(path, summary):
    """figures/<name>.json, atomically: readable JSON (sorted keys, indented), each record of
    the training curves on one line of its own (thousands of records: a few lines per record
    would make it a file of 100,000 lines)."""
    import json
    curves = summary.get("history")
    text = json.dumps({**summary, "history": None}, indent=2, sort_keys=True, default=float)
    if curves is not None:
        rows = lambda records: ",\n".join(       # noqa: E731
            "      " + json.dumps(r, sort_keys=True, default=float) for r in records)
        body = ",\n".join(f'    "{k}": [\n{rows(curves[k])}\n    ]' if curves[k] else
                          f'    "{k}": []' for k in sorted(curves))
        text = text.replace('"history": null', '"history": {\n' + body + "\n  }", 1)
    with atomic_write(path, "w", suffix=".json") as f:
        f.write(text + "\n")
    return path


def stored_history(out, run):
    """The History kept in figures/<name>.json by an earlier `figures --all`, or None."""
    path = os.path.join(out, f"{run.name}.json")
    if not os.path.isfile(path):
        return None
    record = read_json(path)
    curves = record.get("history") if isinstance(record, dict) else None
    return History(curves["train"], curves["eval"]) if isinstance(curves, dict) else None


def redraw_curves(run, out, history, kind, label_smoothing):
    """The loss and learning-rate figures of a run whose folder is gone, from its stored
    curves (figures/<name>.json); the attention maps, which need the model, stay as they are."""
    from ..training.plotting import save_figures
    unit = "character" if kind == "lm" else "token"
    return save_figures(out, history, prefix=f"{run.name}_", name=run.title, unit=unit,
                        label_smoothing=label_smoothing)


def draw_run(folder, out, *, prefix="", name=None):
    """Re-draw a run's figures from its folder (history.json, config.json, best.npz)."""
    from ..checkpoint import load_run
    from ..training.plotting import save_figures
    config = run_config(folder)
    history = History.load(os.path.join(folder, "history.json"))
    model, toks, _ = load_run(os.path.join(folder, "best.npz"))
    drawing = dict(prefix=prefix, name=name or folder, positional=False,
                   label_smoothing=config["train"]["label_smoothing"])
    if config["kind"] == "lm":
        return save_figures(out, history, unit="character", **drawing)
    return save_figures(out, history, model=model, example=attention_example(model, config["data"]),
                        src_tokenizer=toks["src"], tgt_tokenizer=toks["tgt"], **drawing)


def attention_example(model, data):
    """(source ids, the model's greedy output) of the longest of the first 50 held-out
    sources of the run's DataConfig `data`, the example `train` draws attention maps of."""
    from ..data.corpus import seq2seq_data
    from ..training.metrics import decode_batches
    for key in ("src", "tgt", "val_src", "val_tgt", "tsv"):
        path = getattr(data, key)
        if path and not os.path.isfile(path):
            raise InputError(f"the run's {key} file {path} is gone; its held-out example is "
                             f"drawn from it")
    val = seq2seq_data(data).val
    longest = max(range(min(50, len(val))), key=lambda i: len(val[i][0]))
    src = val[longest][0]
    return src, decode_batches(model, [src])[0]


def write_all(out="figures", runs="runs", log=print, only=None):
    """Every README run's figures and JSON summary into `out` (or only the runs named in
    `only`); returns the paths written. A run whose folder is gone but whose curves
    figures/<name>.json keeps gets its loss and learning-rate figures re-drawn from them
    (nothing else changes). InputError naming every run that has neither (and its command)
    before drawing anything."""
    todo = [(run, os.path.join(runs, run.folder)) for run in readme_runs()
            if not only or run.name in only]
    gone = {run.name for run, folder in todo
            if not os.path.isfile(os.path.join(folder, "results.json"))}
    stored = {run.name: stored_history(out, run) for run, _ in todo if run.name in gone}
    missing = [(run, folder) for run, folder in todo if run.name in gone and not stored[run.name]]
    if missing:
        lines = "; ".join(f"{folder} ({run.title}): " + " && ".join(run.commands)
                          for run, folder in missing)
        raise InputError(f"--all: expected a finished run (its results.json) in each folder of "
                         f"the README's runs, or its curves in {out}/<name>.json; missing: "
                         f"{lines}")
    paths = []
    for run, folder in todo:
        if run.name in gone:
            paths += _redraw_from_summary(run, out, stored[run.name], log)
            continue
        if log is not None:
            log(f"{run.title}: re-drawing from {folder}")
        summary = summarize(run, folder)
        drawn = draw_run(folder, out, prefix=f"{run.name}_", name=run.title)
        summary["figures"] = [os.path.basename(p) for p in drawn]
        paths += drawn + [write_summary(os.path.join(out, f"{run.name}.json"), summary)]
    return paths


def _redraw_from_summary(run, out, history, log):
    summary = read_json(os.path.join(out, f"{run.name}.json"))
    if log is not None:
        log(f"{run.title}: its run folder is gone; re-drawing the loss and learning rate "
            f"from {os.path.join(out, run.name + '.json')}")
    smoothing = (summary.get("settings") or {}).get("label_smoothing", 0.0)
    return redraw_curves(run, out, history, summary.get("kind"), smoothing)
