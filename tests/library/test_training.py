"""The training loop: learning, metrics, checkpoints, exact resume, NaN guard, Ctrl-C, history."""

import json
import math
import os
import shutil
import signal

import numpy as np
import pytest

from numpy_transformer.backend import to_numpy, xp
from numpy_transformer.checkpoint import load_checkpoint
from numpy_transformer.data import encode_pairs, get_task
from numpy_transformer.training.metrics import (evaluate_lm, evaluate_seq2seq, perplexity,
                                       sequence_accuracy, token_accuracy)
from numpy_transformer.models import TransformerConfig, build_transformer
from numpy_transformer.training import Checkpointer, TrainConfig, Trainer, TrainingDiverged
from numpy_transformer.training import PairStream, TextStream
from numpy_transformer.training import History

from doors import raises_naming


def tiny_model(tok, dropout=0.1, seed=3):
    return build_transformer(TransformerConfig(
        src_vocab_size=tok.vocab_size, tgt_vocab_size=tok.vocab_size, d_model=16, num_heads=2,
        d_ff=32, num_encoder_layers=1, num_decoder_layers=1, dropout=dropout, max_len=32,
        seed=seed))


def tiny_trainer(out=None, steps=12, dropout=0.1, callbacks=(), **config):
    """A Trainer on the copy task (short strings) with a 16-wide model."""
    task = get_task("copy", max_len=5)
    tok = task.tokenizer()
    held_out = encode_pairs(task.sample(np.random.default_rng(9), 20, split="test"), tok)
    stream = PairStream.from_task(task, tok, batch_size=8, seed=1, pool_batches=3)
    settings = dict(steps=steps, warmup=2, eval_every=4, checkpoint_every=4, progress=False,
                    best_metric="exact_match")
    settings.update(config)
    return Trainer(tiny_model(tok, dropout), stream, TrainConfig(**settings),
                   evaluate=lambda m: evaluate_seq2seq(m, held_out, max_len=7),
                   checkpointer=Checkpointer(out, tokenizers={"src": tok, "tgt": tok}),
                   callbacks=callbacks, log=None)


def weights(model):
    return {name: p.copy() for name, p, _ in model.named_parameters()}


def assert_same_weights(a, b):
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_short_training_run_reduces_the_loss():
    trainer = tiny_trainer(steps=60, dropout=0.0, lr=3e-3, eval_every=0, checkpoint_every=0)
    result = trainer.fit()
    losses = [r["loss"] for r in result.history.train]
    assert len(losses) == 60 and result.step == 60 and not result.interrupted
    assert np.mean(losses[-10:]) < 0.8 * np.mean(losses[:10])
    assert set(result.metrics) >= {"exact_match", "token_accuracy", "loss"}
    vocab = trainer.model.config.tgt_vocab_size         # held-out loss below a uniform guess's
    assert result.metrics["loss"] < 0.9 * math.log(vocab) and result.checkpoint is None


def test_sequence_and_token_accuracy_on_hand_made_cases():
    preds, refs = [[5, 6], [7], [8, 9, 9]], [[5, 6], [8], [8, 9]]
    assert sequence_accuracy(preds, refs) == pytest.approx(1 / 3)
    # positions incl. the end: [5,6,END] 3/3, [8,END] vs [7,END] 1/2, [8,9,END] vs [8,9,9] 2/3
    assert token_accuracy(preds, refs) == pytest.approx(6 / 8)
    assert token_accuracy([[]], [[4, 4]]) == pytest.approx(0 / 3)
    assert sequence_accuracy([[]], [[]]) == 1.0
    assert perplexity(0.0) == 1.0 and perplexity(math.log(7)) == pytest.approx(7)
    with pytest.raises(ValueError, match="references"):
        sequence_accuracy([[1]], [[1], [2]])


def test_evaluate_lm_reports_perplexity_of_the_loss():
    from numpy_transformer.models.gpt import GPT, GPTConfig
    model = GPT(GPTConfig(vocab_size=11, d_model=8, num_heads=2, d_ff=16, num_layers=1,
                          dropout=0.0, max_len=6))
    ids = np.random.default_rng(0).integers(3, 11, 40)
    scores = evaluate_lm(model, ids, block_size=6, batch_size=4)
    assert scores["perplexity"] == pytest.approx(math.exp(scores["loss"]))
    assert 1.0 < scores["perplexity"] < 30   # near uniform over 11 at initialisation


class Bigram:
    """A stand-in language model whose logits depend on the current token alone, so the
    loss of each next-token prediction is the same whatever window it is scored in."""
    training = False

    def __init__(self, vocab_size, seed=0):
        self.table = np.random.default_rng(seed).normal(size=(vocab_size, vocab_size))

    def eval(self):
        return self

    def train(self, mode=True):
        self.training = mode

    def forward(self, x):
        return xp.asarray(self.table[to_numpy(x)])                          # (B, T, V)

    def losses(self, ids):
        """The loss of every prediction ids[i] -> ids[i + 1], each once."""
        logits = self.table[ids[:-1]]
        logz = np.log(np.exp(logits).sum(-1))
        return logz - logits[np.arange(len(ids) - 1), ids[1:]]


@pytest.mark.parametrize("length", [7, 13, 40, 41])     # remainders 0, 0, 3 and 4 (block 6)
def test_evaluate_lm_scores_every_prediction_once_the_tail_included(length):
    model = Bigram(11)
    ids = np.random.default_rng(length).integers(0, 11, length)
    scores = evaluate_lm(model, ids, block_size=6, batch_size=4)
    assert scores["loss"] == pytest.approx(model.losses(ids).mean(), rel=1e-12)


def test_evaluate_lm_stopped_by_max_batches_scores_whole_windows_only():
    model, ids = Bigram(11), np.random.default_rng(1).integers(0, 11, 40)
    scores = evaluate_lm(model, ids, block_size=6, batch_size=2, max_batches=1)
    assert scores["loss"] == pytest.approx(model.losses(ids)[:12].mean(), rel=1e-12)


def test_pair_stream_resumes_at_the_same_batch():
    task = get_task("reverse", max_len=4)
    tok = task.tokenizer()
    a = PairStream.from_task(task, tok, batch_size=4, seed=2, pool_batches=2)
    for _ in range(3):
        a.next_batch()
    state = json.loads(json.dumps(a.state_dict()))
    b = PairStream.from_task(task, tok, batch_size=4, seed=2, pool_batches=2)
    b.load_state_dict(state)
    for _ in range(4):                                   # crosses an epoch boundary
        (src_a, *_), out_a, _ = a.next_batch()
        (src_b, *_), out_b, _ = b.next_batch()
        np.testing.assert_array_equal(src_a, src_b)
        np.testing.assert_array_equal(out_a, out_b)


def test_text_stream_state_round_trips_through_json():
    a = TextStream(np.arange(3, 50), batch_size=2, block_size=5, seed=4)
    a.next_batch()
    b = TextStream(np.arange(3, 50), batch_size=2, block_size=5, seed=4)
    b.load_state_dict(json.loads(json.dumps(a.state_dict())))
    np.testing.assert_array_equal(a.next_batch()[0][0], b.next_batch()[0][0])


def test_checkpoints_every_n_steps_and_resume_is_bit_identical(tmp_path):
    """With dropout on, resuming from the step-8 checkpoint gives exactly the
    weights and losses of the run that never stopped."""
    saved = tmp_path / "step8.npz"

    def keep_step_8(trainer):
        if trainer.step == 8:
            shutil.copy(tmp_path / "a" / "last.npz", saved)

    full = tiny_trainer(tmp_path / "a", callbacks=[keep_step_8])
    full.fit()
    assert load_checkpoint(str(saved)).metadata["step"] == 8
    assert {"last.npz", "best.npz", "history.json", "src_tokenizer.json"} <= \
        set(os.listdir(tmp_path / "a"))

    resumed = tiny_trainer(tmp_path / "b")
    resumed.resume(str(saved))
    assert resumed.step == 8
    resumed.fit()
    assert_same_weights(weights(full.model), weights(resumed.model))
    losses = [r["loss"] for r in full.history.train]
    assert [r["loss"] for r in resumed.history.train] == losses[8:]


def test_ctrl_c_saves_a_checkpoint_and_resuming_finishes_the_same_run(tmp_path):
    def press_ctrl_c(trainer):
        if trainer.step == 5:
            os.kill(os.getpid(), signal.SIGINT)     # the handler asks to stop after this step

    before = signal.getsignal(signal.SIGINT)        # default_int_handler; SIG_IGN in an xdist worker
    interrupted = tiny_trainer(tmp_path / "run", callbacks=[press_ctrl_c])
    result = interrupted.fit()
    assert result.interrupted and result.step == 5
    assert load_checkpoint(str(tmp_path / "run" / "last.npz")).metadata["step"] == 5
    assert signal.getsignal(signal.SIGINT) is before                       # handler restored

    resumed = tiny_trainer(tmp_path / "run")
    resumed.resume(str(tmp_path / "run" / "last.npz"))
    resumed.fit()
    full = tiny_trainer(tmp_path / "full")
    full.fit()
    assert_same_weights(weights(full.model), weights(resumed.model))
    assert [r["loss"] for r in resumed.history.train] == [r["loss"] for r in full.history.train]


def test_keyboard_interrupt_raised_inside_a_step_keeps_a_consistent_checkpoint(tmp_path):
    trainer = tiny_trainer(tmp_path)
    original = trainer.stream.next_batch
    calls = []

    def interrupted_next_batch():
        calls.append(1)
        if len(calls) == 4:                 # while fetching step 4's batch
            original()                      # the data was consumed: must be undone
            raise KeyboardInterrupt
        return original()

    trainer.stream.next_batch = interrupted_next_batch
    result = trainer.fit()
    assert result.interrupted and result.step == 3
    meta = load_checkpoint(str(tmp_path / "last.npz")).metadata
    assert meta["step"] == 3 and meta["data_state"]["index"] == 3


def test_nan_loss_stops_with_a_clear_message_and_keeps_the_last_good_checkpoint(tmp_path):
    def poison(trainer):
        if trainer.step == 6:
            trainer.model.output_projection.params["weight"][...] = np.nan

    trainer = tiny_trainer(tmp_path, callbacks=[poison])
    with raises_naming(TrainingDiverged, "step 7", "nan", "last.npz", "step 4"):
        trainer.fit()
    ckpt = load_checkpoint(str(tmp_path / "last.npz"))
    assert ckpt.metadata["step"] == 4
    assert all(np.isfinite(p).all() for p in ckpt.model.state_dict().values())
    history = History.load(tmp_path / "history.json")
    assert [r["step"] for r in history.train] == list(range(1, 7))


def test_history_json_holds_steps_lr_speed_and_evaluations(tmp_path):
    trainer = tiny_trainer(tmp_path, steps=8)
    trainer.fit()
    data = json.loads((tmp_path / "history.json").read_text())
    assert [r["step"] for r in data["train"]] == list(range(1, 9))
    assert set(data["train"][0]) == {"step", "loss", "lr", "tokens_per_s", "grad_norm"}
    assert data["train"][0]["grad_norm"] > 0                   # before clipping
    assert data["train"][0]["lr"] < data["train"][1]["lr"]          # warm-up
    assert [r["step"] for r in data["eval"]] == [4, 8]
    assert {"loss", "exact_match", "token_accuracy"} <= set(data["eval"][0])
    assert History.load(tmp_path / "history.json").truncate(5).train[-1]["step"] == 5


def test_train_config_rejects_bad_values():
    with pytest.raises(ValueError, match="warmup"):
        TrainConfig(steps=10, warmup=10)
    with pytest.raises(ValueError, match="schedule"):
        TrainConfig(schedule="linear")
    with pytest.raises(ValueError, match="label_smoothing"):
        TrainConfig(label_smoothing=1.5)
    assert TrainConfig(schedule="noam", warmup=4, lr=1e-3).make_schedule(64)(4) == \
        pytest.approx(1e-3)
