"""Checkpoints: exact round trip, atomic saves, refusing pickles and corrupted files."""

import io
import os
import zipfile

import numpy as np
import pytest

from numpy_transformer import load_checkpoint, save_checkpoint
from numpy_transformer.losses import CrossEntropyLoss
from numpy_transformer.models import TransformerConfig, build_transformer
from numpy_transformer.optim import Adam


def make_model(**overrides):
    fields = dict(src_vocab_size=13, tgt_vocab_size=11, d_model=16, num_heads=2, d_ff=24,
                  num_encoder_layers=1, num_decoder_layers=1, dropout=0.0, max_len=32)
    return build_transformer(TransformerConfig(**{**fields, **overrides}))


def train_step(model, optimizer, src, tgt_in, tgt_out):
    loss_fn = CrossEntropyLoss(ignore_index=0, label_smoothing=0.1)
    model.zero_grad()
    loss = loss_fn.forward(model.forward(src, tgt_in), tgt_out)
    model.backward(loss_fn.backward())
    optimizer.step()
    return loss


@pytest.fixture
def batch(rng):
    return rng.integers(1, 13, (3, 6)), rng.integers(1, 11, (3, 5)), rng.integers(1, 11, (3, 5))


def test_round_trip_gives_identical_logits_and_next_step(tmp_path, batch):
    model = make_model(tie_embeddings=True)
    optimizer = Adam(model, lr=1e-3)
    for _ in range(3):
        train_step(model, optimizer, *batch)
    path = save_checkpoint(tmp_path / "ckpt.npz", model, optimizer, step=3, note="hello")
    ckpt = load_checkpoint(path)
    assert ckpt.metadata == {"step": 3, "note": "hello"}
    assert ckpt.config["tie_embeddings"] is True
    restored = ckpt.model
    assert restored.output_projection.params["weight"] is restored.tgt_embed.params["weight"]
    np.testing.assert_array_equal(model.forward(*batch[:2]), restored.forward(*batch[:2]))

    restored_optimizer = Adam(restored, lr=1e-3)
    restored_optimizer.load_state_dict(ckpt.optimizer_state)
    loss_a = train_step(model, optimizer, *batch)
    loss_b = train_step(restored, restored_optimizer, *batch)
    assert loss_a == loss_b
    for (name, p, _), (_, q, _) in zip(model.named_parameters(), restored.named_parameters()):
        np.testing.assert_array_equal(p, q, err_msg=name)


def test_float64_model_round_trips_in_float64(tmp_path, float64):
    model = make_model(attention="mla", norm_first=True)
    ckpt = load_checkpoint(save_checkpoint(tmp_path / "m.npz", model))
    assert ckpt.optimizer_state is None
    assert all(p.dtype == np.float64 for p in ckpt.model.parameters())
    assert ckpt.config["attention"] == "mla"


def test_interrupted_save_keeps_previous_checkpoint(tmp_path, monkeypatch):
    model = make_model()
    path = tmp_path / "ckpt.npz"
    save_checkpoint(path, model, step=1)
    before = path.read_bytes()

    def crash(*args, **kwargs):
        raise KeyboardInterrupt("killed mid-save")
    monkeypatch.setattr(np, "savez", crash)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(path, model, step=2)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.npz"]      # no temporary left
    monkeypatch.undo()
    assert load_checkpoint(path).metadata == {"step": 1}


def test_loading_into_a_different_shape_raises(tmp_path):
    path = save_checkpoint(tmp_path / "c.npz", make_model(d_model=16))
    other = make_model(d_model=32, num_heads=4)
    with pytest.raises(ValueError, match="expected shape"):
        other.load_state_dict(load_checkpoint(path).model.state_dict())


def test_truncated_file_is_refused(tmp_path):
    path = save_checkpoint(tmp_path / "c.npz", make_model())
    data = path.read_bytes() if hasattr(path, "read_bytes") else open(path, "rb").read()
    cut = tmp_path / "cut.npz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="corrupted or truncated"):
        load_checkpoint(cut)


def test_flipped_byte_in_an_array_is_detected(tmp_path):
    path = tmp_path / "c.npz"
    save_checkpoint(path, make_model())
    # Rewrite one stored array with a changed value, keeping the header.
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k].copy() for k in npz.files}
    name = next(k for k in arrays if k.startswith("model/"))
    arrays[name].flat[0] += 1
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    with pytest.raises(ValueError, match="checksum mismatch"):
        load_checkpoint(path)


def test_pickled_object_is_refused(tmp_path):
    path = tmp_path / "evil.npz"
    buffer = io.BytesIO()
    np.save(buffer, np.array([{"run": "code"}], dtype=object), allow_pickle=True)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("__header__.npy", buffer.getvalue())
    with pytest.raises(ValueError, match="pickled object"):
        load_checkpoint(path)


def test_missing_file_and_foreign_npz(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing.npz"):
        load_checkpoint(tmp_path / "nothing.npz")
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, a=np.zeros(3))
    with pytest.raises(ValueError, match="not a numpy_transformer checkpoint"):
        load_checkpoint(foreign)
    assert not os.path.exists(tmp_path / "nothing.npz")
