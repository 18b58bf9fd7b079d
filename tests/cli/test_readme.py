"""The README and its pages in docs/, run as printed: every `python -m numpy_transformer`
command of their shell blocks (the README's, then each docs/ page's in the order the README
first links them, each command once, in one fresh folder holding small stand-ins for the data
files they name), and every Python block, whose printed values must match the comments beside
them. A shell comment line (`# expected: ...`, the result a command gave) is not run.

Training commands run shortened (`--steps 6`, `--quick`), the only change made to them; every
other command runs exactly as printed. A command under `mpiexec -n N` runs as one process here
(tests/library/test_mpi.py checks that N ranks train as one process does, and runs the launcher). Lines that install, clone, open Jupyter, run the
benchmarks or download data are not run here (tests/library/test_benchmarks.py runs the benchmark's
smoke mode; tests/cli/test_data_command.py runs `data` against a local server).
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from numpy_transformer.backend import get_backend
from doors import shortened

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
NOT_RUN = ("git clone", "cd ", ". .venv/", "python -m venv", "pip install", "python -m pytest", "jupyter lab",
           "python benchmarks/", "python -m numpy_transformer data ",
           "bash benchmarks/")          # the device's call: rehearsed by test_benchmarks_gpu.py
DATA = {"data/tinyshakespeare.txt":
        "First Citizen:\nBefore we proceed any further, hear me speak.\n" * 80}
WORDS = ["ein", "mann", "eine", "frau", "hund", "rot", "blau", "klein"]
ENGLISH = ["a", "man", "a", "woman", "dog", "red", "blue", "small"]
for split in ("train", "val", "test_2016_flickr", "test_2017_flickr", "test_2017_mscoco"):
    rows = [(f"{a} {b}", f"{c} {d}") for a, c in zip(WORDS, ENGLISH)
            for b, d in zip(WORDS, ENGLISH)]
    DATA[f"data/multi30k/tok/{split}.lc.norm.tok.de"] = "\n".join(r[0] for r in rows) + "\n"
    DATA[f"data/multi30k/tok/{split}.lc.norm.tok.en"] = "\n".join(r[1] for r in rows) + "\n"


def pages():
    """README.md, then every docs/*.md page it links, in the order of their first link."""
    linked = re.findall(r"\]\((docs/[\w.-]+\.md)(?:#[^)]*)?\)", README.read_text(encoding="utf-8"))
    return [README] + [ROOT / name for name in dict.fromkeys(linked)]


def blocks(language):
    return [block for page in pages() for block in
            re.findall(rf"```{language}\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)]


def commands():
    """Every command of the pages' shell blocks, in order, each once."""
    found = []
    for block in blocks("sh"):
        for line in block.splitlines():
            line = re.split(r"\s{2,}#", line)[0].strip()
            if line.startswith("#"):                             # a comment: what it gave
                continue
            for part in (p.strip() for p in line.split("&&")):
                bare = re.sub(r"^(\w+=\S+\s+)+", "", part)       # after VAR=value prefixes
                if bare and not bare.startswith(NOT_RUN) and part not in found:
                    found.append(part)
    return found


@pytest.mark.slow   # about a minute (every command of the README and its pages, in order): CI's -m slow pass runs it
def test_every_readme_command_runs_as_printed(tmp_path):
    for name, text in DATA.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    shutil.copytree(ROOT / "configs", tmp_path / "configs")     # a clone's configs/
    listed = commands()
    assert any("train --task reverse" in c for c in listed) and len(listed) >= 10
    for command in listed:
        argv = shlex.split(command)
        env = dict(os.environ)
        while "=" in argv[0]:                                    # NUMPY_TRANSFORMER_BACKEND=...
            name, value = argv.pop(0).split("=", 1)
            env[name] = value
        if argv[:2] == ["mpiexec", "-n"]:
            argv = argv[3:]
        assert argv[:3] == ["python", "-m", "numpy_transformer"], command
        argv = shortened(argv)
        done = subprocess.run([sys.executable, *argv[1:]], cwd=tmp_path, capture_output=True,
                              text=True, timeout=600, stdin=subprocess.DEVNULL, env=env)
        expected = (0, 1) if argv[3:5] == ["assignment", "grade"] else (0,)
        assert done.returncode in expected, f"{command}\n{done.stdout}\n{done.stderr}"
        assert "Traceback" not in done.stderr, done.stderr
    assert (tmp_path / "runs" / "reverse" / "figures" / "loss.png").is_file() or \
        "figures skipped" in done.stdout


QUICK_RUNS = {"runs/reverse": ["train", "--task", "reverse"],
              "runs/lm": ["train-lm", "--text", "data/tinyshakespeare.txt"]}


def quick_runs(code, folder):
    """A block that loads runs/reverse or runs/lm (load_trained) finds a --quick run there."""
    for run, argv in QUICK_RUNS.items():
        if run in code:
            (folder / "data").mkdir(exist_ok=True)
            (folder / "data/tinyshakespeare.txt").write_text(DATA["data/tinyshakespeare.txt"])
            subprocess.run([sys.executable, "-m", "numpy_transformer", *argv, "--quick",
                            "--no-figures", "--out", run], cwd=folder, check=True,
                           capture_output=True, timeout=600, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("index", range(len(blocks("python"))))
def test_every_readme_python_block_runs_and_prints_what_it_says(index, tmp_path):
    code = blocks("python")[index]
    quick_runs(code, tmp_path)
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    promised = [m.group(1).strip() for m in re.finditer(r"print\(.*\)\s+# (.*)", code)]
    printed = done.stdout.splitlines()
    if "Trainer(" not in code:          # a Trainer also logs a line per evaluation
        assert len(printed) == len(promised), (printed, promised)
    if get_backend() == "numpy":        # on a device the dropout masks come from its generator
        lines = iter(printed)           # each promise, in order (`in` consumes the iterator)
        assert all(line in lines for line in promised), (printed, promised)
