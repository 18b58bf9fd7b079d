"""The commands that reproduce the README's results from the public data sets (printed by
`data DATASET` once downloaded, and quoted by readme_runs.py).

    dataset_commands("shakespeare", {"tinyshakespeare.txt": "data/tinyshakespeare.txt"})
"""

import os

from ..data.datasets import MULTI30K_TESTS

# The wall time of each README run in minutes, on an idle 2-core machine unless said, by its
# run folder under runs/: the README quotes them and `data` prints them, and
# tests/cli/test_readme_results.py checks each against the run's figures/<name>.json.
MINUTES = {"lm": 10.0, "lm_big": 34.4, "lm_hour": 54.5, "translation": 26.8, "m30k": 44.0,
           "m30k_en_de": 84.3, "m30k_en_de_tiny": 53.8, "m30k_de_en_tiny": 54.8}


def run_times(dataset):
    """What `data DATASET` says the README's runs with it took (MINUTES)."""
    m = {folder: f"{minutes:.1f} min" for folder, minutes in MINUTES.items()}
    if dataset == "shakespeare":
        return (f"the README's character LMs (as its runs took on 2 cores: {m['lm']} and "
                f"{m['lm_big']} for the first two, {m['lm_hour']} for the hour's under "
                f"mpiexec -n 2)")
    return (f"the README's Multi30k translations (as its runs took on 2 cores: German -> "
            f"English by words {m['translation']}; the paper's recipe under mpiexec -n 2, "
            f"{m['m30k']} German -> English and {m['m30k_en_de']} English -> German on a "
            f"busy machine; the published tiny shape {m['m30k_en_de_tiny']} English -> German "
            f"and {m['m30k_de_en_tiny']} German -> English; then up to 1 min per evaluation)")


def _shakespeare_commands(p):
    text = p["tinyshakespeare.txt"]
    return [f"python -m numpy_transformer train-lm --text {text} --steps 4000",
            f"python -m numpy_transformer train-lm --text {text} --d-model 128 --num-layers 4 "
            "--num-heads 4 --d-ff 512 --dropout 0.05 --lr 3e-3 --warmup 200 --batch-size 32 "
            "--max-len 128 --steps 6000 --out runs/lm_big",
            f"mpiexec -n 2 python -m numpy_transformer train-lm --text {text} --d-model 128 "
            "--num-layers 6 --num-heads 4 --d-ff 512 --dropout 0.1 --attention-dropout 0 "
            "--activation-dropout 0 --max-len 256 --lr 2.5e-3 "
            "--warmup 200 --batch-size 32 --weight-decay 0.1 --steps 4600 --eval-every 300 "
            "--log-every 100 --out runs/lm_hour",
            'python -m numpy_transformer generate --checkpoint runs/lm/best.npz --prompt "ROMEO:"']


# The paper's recipe (docs/multi30k_recipe.md): BPE over a joint vocabulary, one shared
# embedding matrix, 2000-token batches, 2 MPI ranks (one per core), the last 6 checkpoints kept.
RECIPE = ("--bleu-tokenize none --bpe 8000 --joint-vocab --share-embeddings --d-model 256 "
          "--num-heads 4 --d-ff 1024 --num-layers 3 --dropout 0.15 --schedule noam --lr 1.5e-3 "
          "--warmup 400 --batch-tokens 2000 --steps 3800 --eval-every 950 "
          "--checkpoint-every 200 --keep-last 6")

# The shape and schedule of the published "Transformer-Tiny" (docs/multi30k_recipe.md): 4 + 4
# layers of width 128, fairseq's dropout (0.3 on the sublayer outputs and embeddings only),
# 4096-token batches, the published 8000 updates (validated every 2000 steps to fit the hour),
# the last 10 kept; decoded with a beam of 5 and the length penalty chosen on the validation set
# (1.0 in both directions).
TINY = ("--bleu-tokenize none --bpe 8000 --joint-vocab --share-embeddings --d-model 128 "
        "--num-heads 4 --d-ff 256 --num-layers 4 --dropout 0.3 --attention-dropout 0 "
        "--activation-dropout 0 --schedule noam --lr 5e-3 "
        "--warmup 2000 --batch-tokens 4096 --steps 8000 --eval-every 2000 "
        "--checkpoint-every 100 --keep-last 10 --log-every 200")
TINY_BEAM = "--beam 5 --alpha 1.0 "


def multi30k_runs(p):
    """{run folder under runs/: the commands that make it}, for the README's Multi30k results,
    given {path under the data folder: saved path}."""
    tok = {split: {lang: p[f"multi30k/tok/{split}.lc.norm.tok.{lang}"] for lang in ("de", "en")}
           for split in ("train", "val") + MULTI30K_TESTS}
    test = tok["test_2016_flickr"]

    def evaluate(checkpoint, split, src, tgt, beam, name):
        return (f"python -m numpy_transformer evaluate --checkpoint {checkpoint} "
                f"--src {tok[split][src]} --tgt {tok[split][tgt]} --bleu-tokenize none "
                f"{beam}--json {os.path.dirname(checkpoint)}/{name}.json")

    def recipe(src, tgt, folder, options=RECIPE, beam="--beam 4 "):
        data = " ".join(f"--{prefix}src {tok[split][src]} --{prefix}tgt {tok[split][tgt]}"
                        for prefix, split in (("", "train"), ("val-", "val"),
                                              ("test-", "test_2016_flickr")))
        avg = f"runs/{folder}/avg.npz"
        name = "beam" + beam.split()[1]
        return [f"mpiexec -n 2 python -m numpy_transformer train {data} {options} "
                f"--out runs/{folder}",
                f"python -m numpy_transformer average runs/{folder}/step-*.npz --out {avg}"] + [
                evaluate(avg, split, src, tgt, decoding, f"{split}_{named}")
                for split, decoding, named in (("test_2016_flickr", "", "greedy"),) + tuple(
                    (split, beam, name) for split in MULTI30K_TESTS)]

    return {
        "translation": [
            f"python -m numpy_transformer train --src {tok['train']['de']} "
            f"--tgt {tok['train']['en']} --val-src {tok['val']['de']} --val-tgt {tok['val']['en']} "
            f"--test-src {test['de']} --test-tgt {test['en']} --min-freq 2 --d-model 256 "
            "--num-heads 4 --d-ff 1024 --num-layers 3 --dropout 0.1 --schedule noam --lr 1e-3 "
            "--warmup 400 --batch-size 64 --steps 3600"] + [
            evaluate("runs/translation/best.npz", "test_2016_flickr", "de", "en", beam, name)
            for beam, name in (("", "greedy"), ("--beam 4 ", "beam4"))],
        "m30k": recipe("de", "en", "m30k"),
        "m30k_en_de": recipe("en", "de", "m30k_en_de"),
        "m30k_en_de_tiny": recipe("en", "de", "m30k_en_de_tiny", TINY, TINY_BEAM),
        "m30k_de_en_tiny": recipe("de", "en", "m30k_de_en_tiny", TINY, TINY_BEAM),
    }


def _multi30k_commands(p):
    return [line for commands in multi30k_runs(p).values() for line in commands]


COMMANDS = {"shakespeare": _shakespeare_commands, "multi30k": _multi30k_commands}


# The training commands above as the docs print them, from the configs/ files (which name the
# data where `data DATASET --out data` saves it), in the order dataset_commands gives them.
CONFIG_FILES = {
    "shakespeare": ("train-lm --config configs/shakespeare.toml",
                    "train-lm --config configs/shakespeare_big.toml",
                    "train-lm --config configs/shakespeare_hour.toml"),
    "multi30k": ("train --config configs/multi30k_words.toml",
                 "train --config configs/multi30k.toml", "train --config configs/multi30k_en_de.toml",
                 "train --config configs/multi30k_en_de_tiny.toml",
                 "train --config configs/multi30k_de_en_tiny.toml"),
}


def printed_commands(dataset, saved):
    """What `data DATASET` prints: dataset_commands, each training command given by its
    configs/ file when the data is where those files expect it (under data/)."""
    lines = dataset_commands(dataset, saved)
    if any(path != f"data/{name}" for name, path in saved.items()):
        return lines
    short = iter(CONFIG_FILES[dataset])
    return [line.split("python -m numpy_transformer ")[0] + "python -m numpy_transformer "
            + next(short) if " numpy_transformer train" in line else line for line in lines]


def dataset_commands(dataset, saved):
    """The commands that use `dataset`, given {path under the data folder: shell-quoted
    saved path}."""
    return COMMANDS[dataset](saved)
