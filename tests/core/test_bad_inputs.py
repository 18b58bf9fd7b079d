"""The bad-input matrix: every public entry point refuses wrong input with a clear error.

Each row is (what, call, error type, words the message must contain). The message format
lives in one place, `numpy_transformer.validation.message`: "NAME: expected WHAT, got VALUE".
Layers and models are called as a user calls them, `layer(x)`: Module.__call__ runs their
`check_inputs`, then `forward`.
The command line's bad inputs are in tests/test_cli.py.
"""

import numpy as np
import pytest

from numpy_transformer.data import CharTokenizer, WordTokenizer, get_task, load_parallel, load_text
from numpy_transformer.layers import (Dropout, Embedding, FeedForward, LayerNorm, Linear,
                                      MultiHeadAttention, MultiHeadLatentAttention,
                                      PositionalEncoding)
from numpy_transformer.losses import CrossEntropyLoss
from numpy_transformer.masks import make_causal_mask, make_padding_mask
from numpy_transformer.models import TransformerConfig, build_transformer
from numpy_transformer.optim import SGD, Adam, AdamW, NoamSchedule, clip_grad_norm

rng = np.random.default_rng(0)
x = rng.normal(size=(2, 3, 8)).astype(np.float32)
ids = rng.integers(1, 10, (2, 3))
mha = MultiHeadAttention(8, 2, rng=rng)
mla = MultiHeadLatentAttention(8, 2, rng=rng)
tiny = dict(src_vocab_size=10, tgt_vocab_size=10, d_model=8, num_heads=2, d_ff=16,
            num_encoder_layers=1, num_decoder_layers=1, max_len=6)
model = build_transformer(TransformerConfig(**tiny))


def config(**overrides):
    return TransformerConfig(**{**tiny, **overrides})


CASES = [
    # Layers: rank, last dimension, dtype, ids, masks, lengths, sizes.
    ("linear: wrong last dim", lambda: Linear(4, 5)(x), ValueError, ["x", "4", "(2, 3, 8)"]),
    ("linear: int input", lambda: Linear(3, 5)(ids), TypeError, ["x", "floating", "int64"]),
    ("embedding: id out of range", lambda: Embedding(5, 8)(ids + 5), ValueError,
     ["ids", "[0, 5)"]),
    ("embedding: negative id", lambda: Embedding(5, 8)(-ids), ValueError, ["ids", "-"]),
    ("embedding: float ids", lambda: Embedding(5, 8)(x), TypeError, ["ids", "float32"]),
    ("embedding: zero vocab", lambda: Embedding(0, 8), ValueError, ["vocab_size", "0"]),
    ("positional: longer than max_len", lambda: PositionalEncoding(8, max_len=2)(x),
     ValueError, ["max_len=2", "3"]),
    ("positional: wrong last dim", lambda: PositionalEncoding(6)(x), ValueError,
     ["x", "6", "(2, 3, 8)"]),
    ("layernorm: wrong last dim", lambda: LayerNorm(5)(x), ValueError, ["x", "5"]),
    ("dropout: p = 1", lambda: Dropout(1.0), ValueError, ["p", "[0, 1)", "1.0"]),
    ("dropout: p < 0", lambda: Dropout(-0.1), ValueError, ["p", "-0.1"]),
    ("feedforward: unknown activation", lambda: FeedForward(8, 16, activation="tanh"),
     ValueError, ["activation", "tanh"]),
    ("feedforward: dropout 1.5", lambda: FeedForward(8, 16, dropout=1.5), ValueError,
     ["dropout", "1.5"]),
    ("mha: heads do not divide", lambda: MultiHeadAttention(10, 4), ValueError, ["10", "4"]),
    ("mha: rank 2 query", lambda: mha(x[0], x, x), ValueError, ["q", "3", "(3, 8)"]),
    ("mha: wrong last dim", lambda: mha(x[..., :4], x, x), ValueError, ["q", "8"]),
    ("mha: batch mismatch", lambda: mha(x, x[:1], x[:1]), ValueError, ["k", "2", "1"]),
    ("mha: k and v lengths differ", lambda: mha(x, x, x[:, :2]), ValueError, ["v", "3"]),
    ("mha: float mask", lambda: mha(x, x, x, np.ones((1, 1, 3, 3))), TypeError,
     ["mask", "bool", "float64"]),
    ("mha: mis-shaped mask", lambda: mha(x, x, x, np.ones((1, 1, 2, 3), bool)),
     ValueError, ["mask", "(1, 1, 2, 3)"]),
    ("mha: dropout 1", lambda: MultiHeadAttention(8, 2, dropout=1.0), ValueError, ["dropout"]),
    ("mla: latent_dim 0", lambda: MultiHeadLatentAttention(8, 2, latent_dim=0), ValueError,
     ["latent_dim", "0"]),
    ("mla: v is not k", lambda: mla(x, x, x.copy()), ValueError, ["v", "k"]),
    ("masks: float ids", lambda: make_padding_mask(x[..., 0], 0), TypeError, ["ids", "float"]),
    ("masks: causal of 0", lambda: make_causal_mask(0), ValueError, ["T", "0"]),
    # Models.
    ("config: d_model % heads", lambda: config(d_model=10, num_heads=4), ValueError,
     ["d_model=10", "num_heads=4"]),
    ("config: latent_dim 0", lambda: config(attention="mla", latent_dim=0), ValueError,
     ["latent_dim", "0"]),
    ("config: dropout 1", lambda: config(dropout=1.0), ValueError, ["dropout", "1.0"]),
    ("config: unknown attention", lambda: config(attention="linear"), ValueError,
     ["attention", "linear"]),
    ("model: source id too big", lambda: model(ids + 10, ids), ValueError,
     ["src", "[0, 10)"]),
    ("model: float target", lambda: model(ids, x[..., 0]), TypeError, ["tgt_in"]),
    ("model: 1-D source", lambda: model(ids[0], ids), ValueError, ["src", "2"]),
    ("model: over max_len", lambda: model(rng.integers(1, 10, (2, 7)), ids), ValueError,
     ["max_len=6", "7"]),
    ("model: zero-length source", lambda: model(ids[:, :0], ids), ValueError, ["src"]),
    # Loss.
    ("loss: float targets", lambda: CrossEntropyLoss()(x, x[..., 0]), TypeError,
     ["targets", "float32"]),
    ("loss: target out of range", lambda: CrossEntropyLoss()(x, ids + 8), ValueError,
     ["targets", "[0, 8)"]),
    ("loss: shape mismatch", lambda: CrossEntropyLoss()(x, ids[:, :2]), ValueError,
     ["targets", "(2, 3)", "(2, 2)"]),
    ("loss: smoothing 1", lambda: CrossEntropyLoss(label_smoothing=1.0), ValueError,
     ["label_smoothing", "1.0"]),
    # Optimizers and schedules.
    ("adam: lr 0", lambda: Adam(model, lr=0.0), ValueError, ["lr", "0.0"]),
    ("adam: negative lr", lambda: Adam(model, lr=-1e-3), ValueError, ["lr", "-0.001"]),
    ("adam: beta 1", lambda: Adam(model, betas=(1.0, 0.999)), ValueError, ["beta", "1.0"]),
    ("adamw: negative decay", lambda: AdamW(model, weight_decay=-1.0), ValueError,
     ["weight_decay", "-1.0"]),
    ("sgd: negative momentum", lambda: SGD(model, lr=0.1, momentum=-0.5), ValueError,
     ["momentum", "-0.5"]),
    ("optimizer of a non-module", lambda: Adam([1, 2, 3]), TypeError, ["model", "Module"]),
    ("noam: warmup 0", lambda: NoamSchedule(512, warmup_steps=0), ValueError,
     ["warmup_steps", "0"]),
    ("clip: max_norm 0", lambda: clip_grad_norm(model, 0.0), ValueError, ["max_norm", "0.0"]),
    # Data.
    ("task: unknown", lambda: get_task("translate"), ValueError, ["translate", "reverse"]),
    ("tokenizer: id out of range", lambda: CharTokenizer.from_texts(["ab"]).decode([99]),
     ValueError, ["ids", "99"]),
    ("tokenizer: non-text", lambda: WordTokenizer.from_texts(["a b"]).encode(42), TypeError,
     ["text", "str", "int"]),
]


@pytest.mark.parametrize("what,call,error,words", CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_a_clear_error(what, call, error, words):
    with pytest.raises(error) as info:
        call()
    text = str(info.value)
    for word in words:
        assert word in text, f"{what}: {word!r} not in message {text!r}"


@pytest.mark.parametrize("content,words", [
    (b"", ["some text"]),
    (b"caf\xe9 au lait\n", ["UTF-8", "byte"]),
])
def test_bad_text_files(tmp_path, content, words):
    path = tmp_path / "bad.txt"
    path.write_bytes(content)
    with pytest.raises(ValueError) as info:
        load_text(path)
    assert str(path) in str(info.value)
    for word in words:
        assert word in str(info.value)


def test_missing_and_mismatched_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing.txt"):
        load_text(tmp_path / "nothing.txt")
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    (tmp_path / "b.txt").write_text("eins\n")
    with pytest.raises(ValueError, match="same number of lines"):
        load_parallel(tmp_path / "a.txt", tmp_path / "b.txt")


def test_bad_tokenizer_file(tmp_path):
    path = tmp_path / "tok.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="valid JSON"):
        CharTokenizer.load(path)
