"""Data-parallel training (training/distributed.py): N ranks equal one process.

Two kinds of ranks:
- threads (thread_ranks.py), always run: the same code path in one process;
- MPI processes, `mpiexec -n 2`: this file is also the worker script they run
  (`python tests/library/test_mpi.py KIND DTYPE STEPS RESULT`), and the commands are run as a
  user types them. These skip, saying why, where mpi4py or mpiexec is missing
  (`pip install -e ".[mpi]"` brings both).

The equivalence: float64, dropout off, 20 steps with label smoothing and the gradient
norm clipped on every step; an encoder-decoder on `reverse` (shards of different
lengths, so weighting by n_k / n matters) and a GPT with tied embeddings and a batch
of 7 (shards of 3 and 4 rows). Weights agree to 1e-12, losses in float32 to 1e-5.
"""

import argparse
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

if __name__ == "__main__":          # a rank started by mpiexec on this file: no conftest.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from doors import raises_naming, shortened  # noqa: E402

from numpy_transformer.backend import get_backend
from numpy_transformer.checkpoint import load_checkpoint
from numpy_transformer.cli.config_file import read_config

pytestmark = [pytest.mark.slow, pytest.mark.skipif(     # slow: each starts mpiexec ranks
    get_backend() != "numpy", reason="data-parallel training runs on the NumPy backend only: "
    "it all-reduces the gradients through one host buffer (DataParallelTrainer refuses others)")]

STEPS, TOLERANCE_64, TOLERANCE_32 = 20, 1e-12, 1e-5
README = Path(__file__).resolve().parents[2] / "README.md"


# The runs: one per kind, any number of ranks.

def build(kind):
    """(model, stream) of a tiny run of `kind`, in the default dtype, dropout off."""
    from numpy_transformer.data import get_task
    from numpy_transformer.models import GPT, GPTConfig, TransformerConfig, build_transformer
    from numpy_transformer.training import PairStream, TextStream
    if kind == "seq2seq":
        task = get_task("reverse")
        tok = task.tokenizer()
        config = TransformerConfig(src_vocab_size=tok.vocab_size, tgt_vocab_size=tok.vocab_size,
                                   d_model=32, num_heads=4, d_ff=64, num_encoder_layers=2,
                                   num_decoder_layers=2, dropout=0.0, max_len=64, seed=0)
        return build_transformer(config), PairStream.from_task(task, tok, batch_size=16, seed=0)
    text = np.random.default_rng(1).integers(1, 40, 3000)        # ids 1..39; 0 is <pad>
    config = GPTConfig(vocab_size=40, d_model=32, num_heads=4, d_ff=64, num_layers=2,
                       dropout=0.0, max_len=16, seed=0)
    return GPT(config), TextStream(text, batch_size=7, block_size=16, seed=0)


def train(kind, steps, comm=None, out=None, resume=None):
    """A Trainer (a DataParallelTrainer for comm) after `steps` steps: (losses, weights)."""
    from numpy_transformer.training import Checkpointer, TrainConfig, Trainer
    from numpy_transformer.training.distributed import DataParallelTrainer
    model, stream = build(kind)
    config = TrainConfig(steps=steps, lr=3e-3, warmup=4, schedule="noam", clip_norm=0.1,
                         label_smoothing=0.1, eval_every=0, checkpoint_every=0, log_every=0,
                         progress=False, batch_size=stream.batch_size)
    if comm is None:
        trainer = Trainer(model, stream, config, checkpointer=Checkpointer(out), log=None)
    else:
        trainer = DataParallelTrainer(model, stream, config, comm=comm,
                                      checkpointer=Checkpointer(out), log=None)
    if resume:
        trainer.resume(resume)
    result = trainer.fit()
    return [r["loss"] for r in result.history.train], model.state_dict()


def worker(argv):
    """Under mpiexec or not: train, and rank 0 saves the losses and weights to RESULT."""
    p = argparse.ArgumentParser()
    p.add_argument("kind")
    p.add_argument("dtype")
    p.add_argument("steps", type=int)
    p.add_argument("result")
    p.add_argument("--out")
    p.add_argument("--resume")
    args = p.parse_args(argv)
    from numpy_transformer.backend import set_default_dtype
    from numpy_transformer.training.mpi_world import world
    set_default_dtype(args.dtype)
    comm = world()
    losses, weights = train(args.kind, args.steps, comm, args.out, args.resume)
    if comm is None or comm.Get_rank() == 0:
        np.savez(args.result, losses=np.array(losses), **weights)


def largest_difference(a, b):
    """max |a - b| over the weights of two results, and the name where it is."""
    gaps = {name: float(np.abs(a[name] - b[name]).max()) for name in b if name != "losses"}
    name = max(gaps, key=gaps.get)
    return gaps[name], name


# Threads as ranks: always run.

@pytest.mark.parametrize("kind, ranks", [("seq2seq", 3), ("lm", 2)])
def test_thread_ranks_equal_one_process_in_float64(float64, kind, ranks):
    from numpy_transformer.training.thread_ranks import run_ranks
    losses, weights = train(kind, 8)
    results = run_ranks(lambda comm: train(kind, 8, comm), ranks)
    for rank_losses, rank_weights in results:
        gap, name = largest_difference(rank_weights, weights)
        assert gap < TOLERANCE_64, f"{kind}, {ranks} ranks: {name} differs by {gap:.1e}"
        assert np.abs(np.subtract(rank_losses, losses)).max() < TOLERANCE_64
    first = results[0][1]
    assert all(np.array_equal(r[1][k], first[k]) for r in results for k in first)  # bit for bit


def test_shards_cover_the_batch_and_weigh_by_tokens(float64):
    from numpy_transformer.training.distributed import DataParallelTrainer
    from numpy_transformer.training.thread_ranks import run_ranks
    model, stream = build("seq2seq")
    inputs, targets, ntokens = stream.next_batch()

    def shard(comm):
        trainer = DataParallelTrainer(*build("seq2seq"), comm=comm, log=None)
        shard_inputs, shard_targets, _, weight = trainer.gradient_sync.shard(
            inputs, targets, ntokens, trainer.loss_fn.ignore_index)
        return shard_inputs, shard_targets, weight

    shards = run_ranks(shard, 3)
    assert [len(s[1]) for s in shards] == [5, 5, 6]                 # B = 16 over 3 ranks
    assert np.array_equal(np.concatenate([s[1] for s in shards]), targets)
    for k in range(4):
        assert np.array_equal(np.concatenate([s[0][k] for s in shards]), inputs[k])
    weights = [s[2] for s in shards]
    counts = [int((s[1] != 0).sum()) for s in shards]
    assert np.isclose(sum(weights), 1.0) and sum(counts) == ntokens
    assert np.allclose(weights, np.array(counts) / ntokens)
    assert not np.allclose(weights, 1 / 3)                 # averaging would weigh them wrong


def test_a_stop_on_one_rank_stops_every_rank_after_the_same_step():
    from numpy_transformer.training import TrainConfig
    from numpy_transformer.training.distributed import DataParallelTrainer
    from numpy_transformer.training.thread_ranks import run_ranks

    def run(comm):
        stop_at_3 = [lambda t: t.step == 3 and t.request_stop("SIGTERM")] if comm.Get_rank() else []
        trainer = DataParallelTrainer(*build("lm"), TrainConfig(steps=20, warmup=2, progress=False),
                                      comm=comm, log=None, callbacks=stop_at_3)
        result = trainer.fit()
        return result.step, result.interrupted, result.stop_reason

    # rank 1 asks after step 3; its request rides step 4's all-reduce
    assert run_ranks(run, 2) == [(4, True, "SIGTERM")] * 2


def test_an_error_on_one_rank_reaches_the_caller_instead_of_a_hang():
    from numpy_transformer.training import TrainConfig
    from numpy_transformer.training.distributed import DataParallelTrainer
    from numpy_transformer.training.thread_ranks import run_ranks

    def fail(trainer):
        if trainer.rank == 1 and trainer.step == 2:
            raise MemoryError("rank 1 ran out of memory")

    def run(comm):
        DataParallelTrainer(*build("lm"), TrainConfig(steps=20, warmup=2, progress=False),
                            comm=comm, log=None, callbacks=[fail]).fit()

    with pytest.raises(MemoryError, match="rank 1"):
        run_ranks(run, 2)


def test_too_small_a_batch_for_the_ranks_is_refused():
    from numpy_transformer.errors import InputError
    from numpy_transformer.training.distributed import DataParallelTrainer
    from numpy_transformer.training.thread_ranks import run_ranks
    model, stream = build("lm")
    stream.batch_size = 2
    with raises_naming(InputError, "batch_size", "3", "2"):
        run_ranks(lambda comm: DataParallelTrainer(model, stream, comm=comm), 3)


def test_without_a_launcher_there_is_no_world(monkeypatch):
    from numpy_transformer.training.mpi_world import SIZE_VARIABLES, launched_size, world
    for name in SIZE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert launched_size() == 1 and world() is None
    monkeypatch.setenv("PMI_SIZE", "1")                  # `mpiexec -n 1`: nothing changes
    assert world() is None


def test_a_launcher_without_mpi4py_is_a_clear_error(monkeypatch):
    from numpy_transformer.errors import InputError
    from numpy_transformer.training.mpi_world import world
    monkeypatch.setenv("PMI_SIZE", "2")
    monkeypatch.setitem(sys.modules, "mpi4py", None)                  # as if not installed
    with raises_naming(InputError, "MPI", "2", "mpi4py", "pip install"):
        world()


def test_a_plain_run_never_imports_mpi4py(tmp_path):
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "numpy_transformer",
                           "train", "--task", "copy", "--quick", "--steps", "4", "--no-figures",
                           "--no-progress", "--out", str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "numpy_transformer.training.distributed" in done.stderr     # the import log works
    assert "mpi4py" not in done.stderr


# MPI processes: mpiexec -n 2.

def find_mpiexec():
    """The mpiexec installed beside this Python (the mpich wheel's), else one on PATH."""
    for folder in (os.path.dirname(sys.executable), sysconfig.get_path("scripts")):
        path = os.path.join(folder, "mpiexec")
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return shutil.which("mpiexec")


MPIEXEC = find_mpiexec()
HAVE_MPI4PY = importlib.util.find_spec("mpi4py") is not None
needs_mpi = pytest.mark.skipif(
    MPIEXEC is None or not HAVE_MPI4PY,
    reason=f"MPI is missing ({'no mpiexec' if MPIEXEC is None else 'no mpi4py'}): "
           "pip install -e '.[mpi]' (mpi4py and MPICH) to run the mpiexec -n 2 tests")
ENV = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def run(*argv, ranks=None, cwd=None):
    """Run argv (under `mpiexec -n ranks` if given); the CompletedProcess (text)."""
    command = ([MPIEXEC, "-n", str(ranks)] if ranks else []) + [str(a) for a in argv]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300,
                          env=ENV, stdin=subprocess.DEVNULL)


def ok(done):
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout


def result(tmp_path, kind, dtype, steps=STEPS, ranks=None, name=None, **options):
    """Run this file as the worker; the saved losses and weights."""
    path = tmp_path / f"{name or f'{kind}-{dtype}-{ranks}'}.npz"
    extra = [x for k, v in options.items() for x in (f"--{k}", v)]
    ok(run(sys.executable, __file__, kind, dtype, steps, path, *extra, ranks=ranks))
    return dict(np.load(path))


@needs_mpi
@pytest.mark.parametrize("kind", ["seq2seq", "lm"])
def test_two_mpi_ranks_equal_one_process(tmp_path, kind):
    one = result(tmp_path, kind, "float64")
    two = result(tmp_path, kind, "float64", ranks=2)
    gap, name = largest_difference(two, one)
    print(f"{kind} float64, {STEPS} steps: largest weight difference {gap:.1e} ({name}), "
          f"losses {np.abs(two['losses'] - one['losses']).max():.1e}")
    assert len(two["losses"]) == STEPS and gap < TOLERANCE_64, f"{name}: {gap:.1e}"
    one32 = result(tmp_path, kind, "float32")
    two32 = result(tmp_path, kind, "float32", ranks=2)
    gap32 = np.abs(two32["losses"] - one32["losses"]).max()
    print(f"{kind} float32: largest loss difference {gap32:.1e}")
    assert gap32 < TOLERANCE_32


@needs_mpi
@pytest.mark.parametrize("kind, first, second", [("seq2seq", 2, None), ("lm", None, 2)])
def test_a_run_resumes_on_another_number_of_ranks(tmp_path, kind, first, second):
    whole = result(tmp_path, kind, "float64", name="whole")
    folder = tmp_path / "run"
    result(tmp_path, kind, "float64", STEPS // 2, first, "first", out=folder)
    resumed = result(tmp_path, kind, "float64", STEPS, second, "second", out=folder,
                     resume=folder / "last.npz")
    gap, name = largest_difference(resumed, whole)
    assert gap < TOLERANCE_64, f"{name}: {gap:.1e}"
    assert np.abs(resumed["losses"] - whole["losses"]).max() < TOLERANCE_64


@needs_mpi
def test_mpiexec_train_writes_one_run_that_one_process_resumes(tmp_path):
    quick = ["--task", "copy", "--quick", "--no-figures", "--no-progress"]
    out = ok(run(sys.executable, "-m", "numpy_transformer", "train", *quick, ranks=2,
                 cwd=tmp_path))
    assert out.count("training a Transformer") == 1 and out.count("next:") == 1   # rank 0 only
    assert "data-parallel on 2 MPI ranks: each takes 32 of the 64 sequences" in out
    assert os.listdir(tmp_path) == ["runs"] and os.listdir(tmp_path / "runs") == ["copy"]
    history = json.loads((tmp_path / "runs" / "copy" / "history.json").read_text())
    assert [r["step"] for r in history["train"]] == list(range(1, 41))
    typed = "mpiexec -n 2 python -m numpy_transformer train " + shlex.join(quick)
    results = json.loads((tmp_path / "runs" / "copy" / "results.json").read_text())
    assert results["command"] == typed and results["sessions"][0]["command"] == typed
    assert load_checkpoint(str(tmp_path / "runs" / "copy" / "last.npz")).metadata[
        "sessions"][0]["command"] == typed                # the launcher is recorded too
    again = run(sys.executable, "-m", "numpy_transformer", "train", *quick, ranks=2,
                cwd=tmp_path)                       # the folder holds a run: every rank stops
    assert again.returncode == 2 and again.stderr.count("error: ") == 1, again.stderr
    assert "already holds a run" in again.stderr
    ok(run(sys.executable, "-m", "numpy_transformer", "train", "--resume",
           "runs/copy/last.npz", "--steps", "50", "--no-figures", cwd=tmp_path))
    history = json.loads((tmp_path / "runs" / "copy" / "history.json").read_text())
    assert [r["step"] for r in history["train"]] == list(range(1, 51))
    sessions = json.loads((tmp_path / "runs" / "copy" / "results.json").read_text())["sessions"]
    assert [s["command"].startswith("mpiexec -n 2 ") for s in sessions] == [True, False]


def readme_commands():
    """The commands of the README's MPI page, docs/mpi.md (its bash block), but the install."""
    section = (README.parent / "docs" / "mpi.md").read_text().split(
        "# Data-parallel training on MPI\n", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section.split("\n## ", 1)[0], flags=re.S).group(1)
    lines = [re.split(r"\s{2,}#", line)[0].strip() for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("pip install")]


@needs_mpi
def test_the_readme_mpi_commands_run_as_printed(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "tinyshakespeare.txt").write_text("First Citizen:\nBefore we "
                                                           "proceed any further.\n" * 40)
    commands = readme_commands()
    assert sum(c.startswith("mpiexec -n 2 python -m numpy_transformer") for c in commands) == 2
    for command in commands:
        argv = shlex.split(command)
        ranks = int(argv[2]) if argv[0] == "mpiexec" else None
        argv = argv[3:] if ranks else argv
        assert argv[:3] == ["python", "-m", "numpy_transformer"], command
        ok(run(sys.executable, *shortened(argv)[1:], "--no-figures", ranks=ranks,
               cwd=tmp_path))
    assert (tmp_path / "runs" / "lm" / "last.npz").is_file()


def recipe_page_lines():
    """The `mpiexec -n 2 ... train --config` lines of docs/multi30k_recipe.md."""
    recipe = README.parent / "docs" / "multi30k_recipe.md"
    return [line for line in recipe.read_text().splitlines()
            if line.startswith("mpiexec -n 2 python -m numpy_transformer train --config")]


def test_the_recipe_page_prints_four_two_rank_runs():
    assert [shlex.split(line)[-1] for line in recipe_page_lines()] == [
        "configs/multi30k.toml", "configs/multi30k_en_de.toml", "configs/multi30k_en_de_tiny.toml",
        "configs/multi30k_de_en_tiny.toml"]


@needs_mpi
# The recipe German -> English (0) in the quick run; the other three in the slow pass.
@pytest.mark.parametrize("index", [0, *(pytest.param(i, marks=pytest.mark.slow) for i in (1, 2, 3))])
def test_the_readme_multi30k_recipe_trains_on_two_ranks_and_averages(tmp_path, index):
    """The README's other `mpiexec -n 2` commands (the paper's recipe, both directions, and the
    published tiny shape, on docs/multi30k_recipe.md, their options in configs/), shortened, on
    a small stand-in corpus; then the `average` of the checkpoints kept."""
    lines = recipe_page_lines()[index:index + 1]
    shutil.copytree(README.parent / "configs", tmp_path / "configs")   # as in a clone
    given = [read_config(tmp_path / shlex.split(line)[-1]) for line in lines]
    assert len(lines) == 1 and all(options["bpe"] for options in given)
    words = [("ein", "a"), ("mann", "man"), ("hund", "dog"), ("rot", "red"), ("klein", "small")]
    for line, options in zip(lines, given):
        argv = shlex.split(line)[3:]
        for path in (v for k, v in options.items() if k.endswith(("src", "tgt"))):
            side = 0 if path.endswith(".de") else 1
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / path).write_text("".join(f"{a[side]} {b[side]}\n"
                                                 for a in words for b in words))
        ok(run(sys.executable, *shortened(argv)[1:], "--no-figures", "--checkpoint-every", "3",
               ranks=2, cwd=tmp_path))
        folder = options["out"]
        assert sorted(p.name for p in (tmp_path / folder).glob("step-*.npz")) == \
            ["step-3.npz", "step-6.npz"]
        ok(run(sys.executable, "-m", "numpy_transformer", "average", f"{folder}/step-*.npz",
               "--out", f"{folder}/avg.npz", cwd=tmp_path))


@needs_mpi
def test_a_launcher_of_another_mpi_is_refused(tmp_path):
    done = subprocess.run([sys.executable, "-m", "numpy_transformer", "train", "--task", "copy",
                           "--quick", "--no-figures"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env={**ENV, "PMI_SIZE": "3"},
                          stdin=subprocess.DEVNULL)     # a launcher's 3, but MPI sees 1 process
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: the MPI launcher started 3 processes, but mpi4py sees "
                                  "1: mpiexec and mpi4py come from different MPI installations")
    assert not (tmp_path / "runs").exists()


@needs_mpi
def test_the_speed_benchmark_runs_on_two_ranks():
    out = ok(run(sys.executable, "benchmarks/data_parallel.py", "--config", "tiny", "--steps",
                 "2", ranks=2, cwd=README.parent))
    timing = json.loads(next(x for x in out.splitlines() if x.startswith("@@"))[2:])
    assert timing["ranks"] == 2 and timing["parameters"] > 0
    assert 0 < timing["allreduce_s"] < timing["step_s"] and timing["transfer_s"] > 0


if __name__ == "__main__":
    worker(sys.argv[1:])
