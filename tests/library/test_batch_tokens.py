"""Token-budget batches (PairStream(batch_tokens=N), `train --batch-tokens N`): pairs of
similar length within N tokens per side, deterministic under the seed, exact under resume,
and the same under data-parallel ranks."""

import json

import numpy as np
import pytest
from doors import error, nt, ok, raises_naming

from numpy_transformer.backend import get_backend, to_numpy
from numpy_transformer.data import encode_pairs, get_task
from numpy_transformer.models import TransformerConfig, build_transformer
from numpy_transformer.training import Checkpointer, PairStream, TrainConfig, Trainer
from numpy_transformer.training.streams import padding_of, pair_widths, token_chunks


def corpus(n=300, seed=0):
    """Encoded pairs, ids 3..9: sources of 1..20 tokens, targets up to 5 longer (as a
    translation's lengths follow its source's)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 21, n)
    return [(list(rng.integers(3, 10, S)), list(rng.integers(3, 10, S + rng.integers(0, 6))))
            for S in lengths]


def sources(stream, count):
    """The next `count` batches' source arrays, as lists (comparable, JSON-able)."""
    return [to_numpy(stream.next_batch()[0][0]).tolist() for _ in range(count)]


def test_chunks_cover_every_pair_once_within_the_budget_and_pad_little():
    pairs, N = corpus(), 120
    chunks = token_chunks(pairs, N, np.random.default_rng(0))
    assert sorted(np.concatenate(chunks).tolist()) == list(range(len(pairs)))
    S, T = pair_widths(pairs)
    for c in chunks:
        assert len(c) * S[c].max() <= N and len(c) * T[c].max() <= N
    rows, padding = padding_of(pairs, chunks)
    assert rows == pytest.approx(len(pairs) / len(chunks))
    fixed = [np.arange(k, min(k + 8, len(pairs))) for k in range(0, len(pairs), 8)]
    assert padding < 0.5 * padding_of(pairs, fixed)[1]          # similar lengths share a batch
    other = token_chunks(pairs, N, np.random.default_rng(1))
    assert [c.tolist() for c in other] != [c.tolist() for c in chunks]   # the seed decides


def test_a_stream_is_the_same_under_its_seed_and_resumes_at_the_same_batch():
    pairs = corpus(60)
    a = PairStream(4, seed=3, pairs=pairs, batch_tokens=60)
    first = sources(a, 5)
    assert first == sources(PairStream(4, seed=3, pairs=pairs, batch_tokens=60), 5)
    assert first != sources(PairStream(4, seed=4, pairs=pairs, batch_tokens=60), 5)
    assert max(len(b) * len(b[0]) for b in first) <= 60
    b = PairStream(4, seed=3, pairs=pairs, batch_tokens=60)
    b.load_state_dict(json.loads(json.dumps(a.state_dict())))
    assert sources(a, 30) == sources(b, 30)                     # crosses epoch boundaries
    assert a.epoch >= 1
    assert "tokens: " in a.summary() and "% padding" in a.summary()


def test_too_small_a_budget_names_the_longest_pair():
    with raises_naming(ValueError, "batch_tokens", "26", "20"):
        PairStream(4, pairs=corpus(), batch_tokens=20).next_batch()
    task = get_task("reverse")
    with raises_naming(ValueError, "batch_tokens", "11", "reverse"):
        PairStream.from_task(task, task.tokenizer(), 8, batch_tokens=10)


def test_train_checkpoint_resume_sees_the_same_batches_as_an_uninterrupted_run(tmp_path):
    full, seen_full = recording_trainer(tmp_path / "a")
    full.fit()
    assert sorted(p.name for p in (tmp_path / "a").glob("step-*.npz")) == \
        ["step-6.npz", "step-8.npz"]                             # keep_last=2
    resumed, seen_resumed = recording_trainer(tmp_path / "b")
    resumed.resume(str(tmp_path / "a" / "step-6.npz"))
    resumed.fit()
    assert seen_resumed == seen_full[6:] and len(seen_full) == 8
    assert len({len(b[0]) for b in seen_full}) > 1               # batches of several widths
    for name, p, _ in full.model.named_parameters():
        np.testing.assert_array_equal(p, dict(
            (n, q) for n, q, _ in resumed.model.named_parameters())[name], err_msg=name)


def recording_trainer(out, steps=8, batch_tokens=30, dropout=0.1):
    """A Trainer on a token-budget stream whose batches' sources are recorded in `seen`."""
    task = get_task("reverse", max_len=6)
    tok = task.tokenizer()
    model = build_transformer(TransformerConfig(
        src_vocab_size=tok.vocab_size, tgt_vocab_size=tok.vocab_size, d_model=16, num_heads=2,
        d_ff=32, num_encoder_layers=1, num_decoder_layers=1, dropout=dropout, max_len=16, seed=2))
    pairs = encode_pairs(task.sample(np.random.default_rng(5), 40, split="train"), tok)
    stream, seen = PairStream(8, seed=1, pairs=pairs, batch_tokens=batch_tokens), []
    draw = stream.next_batch

    def next_batch():
        batch = draw()
        seen.append(to_numpy(batch[0][0]).tolist())
        return batch
    stream.next_batch = next_batch
    config = TrainConfig(steps=steps, warmup=2, eval_every=0, checkpoint_every=2, keep_last=2,
                         progress=False)
    return Trainer(model, stream, config, log=None, checkpointer=Checkpointer(
        out, tokenizers={"src": tok, "tgt": tok})), seen


ON_NUMPY = pytest.mark.skipif(get_backend() != "numpy", reason="data-parallel training runs "
                              "on the NumPy backend only (test_mpi.py)")


@ON_NUMPY
def test_data_parallel_ranks_equal_one_process_even_with_fewer_rows_than_ranks(float64):
    from numpy_transformer.training.distributed import DataParallelTrainer
    from numpy_transformer.training.thread_ranks import run_ranks

    def run(comm=None):
        trainer, seen = recording_trainer(None, steps=6, batch_tokens=14, dropout=0.0)
        if comm is not None:
            trainer = DataParallelTrainer(trainer.model, trainer.stream, trainer.config,
                                          comm=comm, log=None)
        trainer.fit()
        return seen, {n: to_numpy(p).copy() for n, p, _ in trainer.model.named_parameters()}

    seen, weights = run()
    assert min(len(b) for b in seen) < 3                       # a rank gets no row
    # (sums in another order: Adam scales the rounding of near-zero gradients up to ~1e-12)
    for rank_seen, rank_weights in run_ranks(run, 3):
        assert rank_seen == seen
        for name in weights:
            np.testing.assert_allclose(rank_weights[name], weights[name], rtol=0, atol=1e-9)


def test_the_train_command_prints_how_full_its_batches_are_and_resumes(tmp_path):
    out = ok(nt("train", "--task", "reverse", "--quick", "--no-figures", "--no-progress",
                "--batch-tokens", "300", "--steps", "6", "--out", "r", cwd=tmp_path))
    assert "batches of up to 300 tokens: " in out and "% padding" in out
    out = ok(nt("train", "--resume", "r/last.npz", "--steps", "8", "--no-figures",
                "--no-progress", cwd=tmp_path))
    assert "batches of up to 300 tokens: " in out and "resuming at step 6" in out
    error(nt("train", "--task", "reverse", "--quick", "--batch-tokens", "5", "--out", "s",
             cwd=tmp_path), 2, "--batch-tokens", "11", "5")


@ON_NUMPY
def test_mpiexec_shards_token_batches_by_rows(tmp_path):
    from test_mpi import ENV, HAVE_MPI4PY, MPIEXEC
    if MPIEXEC is None or not HAVE_MPI4PY:
        pytest.skip("MPI is missing: pip install -e '.[mpi]' (mpi4py and MPICH)")
    import subprocess
    import sys
    done = subprocess.run([MPIEXEC, "-n", "2", sys.executable, "-m", "numpy_transformer",
                           "train", "--task", "reverse", "--quick", "--steps", "6",
                           "--batch-tokens", "24", "--no-figures", "--no-progress", "--out",
                           "r"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=ENV, stdin=subprocess.DEVNULL)
    out = ok(done)                                  # batches of 2 to 24 rows
    assert "each takes 1/2 of the rows of every batch" in out and "6 steps in" in out
