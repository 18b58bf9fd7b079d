"""One exact training step end to end, and a small model memorising one batch."""

import numpy as np

from numpy_transformer.losses import CrossEntropyLoss
from numpy_transformer.models import TransformerConfig, build_transformer
from numpy_transformer.optim import Adam


def test_small_model_overfits_one_batch():
    rng = np.random.default_rng(0)
    config = TransformerConfig(src_vocab_size=20, tgt_vocab_size=20, d_model=32, num_heads=4,
                               d_ff=64, num_encoder_layers=2, num_decoder_layers=2,
                               dropout=0.0, max_len=32, seed=1)
    model = build_transformer(config)
    src = rng.integers(3, 20, (8, 7))
    tgt = rng.integers(3, 20, (8, 6))
    tgt_in = np.concatenate([np.ones((8, 1), dtype=tgt.dtype), tgt], axis=1)    # BOS + target
    tgt_out = np.concatenate([tgt, np.full((8, 1), 2, dtype=tgt.dtype)], axis=1)  # target + EOS
    loss_fn = CrossEntropyLoss(ignore_index=0)
    optimizer = Adam(model, lr=3e-3)
    losses = []
    for _ in range(300):
        model.zero_grad()
        losses.append(loss_fn.forward(model.forward(src, tgt_in), tgt_out))
        model.backward(loss_fn.backward())
        optimizer.step()
        if losses[-1] < 0.01:
            break
    # A fresh model guesses about uniformly: log(V) = 3.0. It then memorises the batch
    # in ~70 steps (measured: 72); a slower descent (a wrong gradient that still points
    # downhill, a broken Adam) would need more than the 150 allowed here.
    assert abs(losses[0] - np.log(20)) < 0.5, f"first loss {losses[0]:.3f}"
    assert losses[-1] < 0.01, f"loss after {len(losses)} steps: {losses[-1]:.4f}"
    assert len(losses) <= 150, f"memorising took {len(losses)} steps (measured: 72)"
    model.eval()
    prediction = model.forward(src, tgt_in).argmax(-1)
    np.testing.assert_array_equal(prediction, tgt_out)


def test_one_training_step_matches_a_manual_update(float64):
    """The loss gradient, backward and Adam compose: Adam's first step has m_hat = g and
    v_hat = g^2, so every parameter moves by exactly lr * g / (|g| + eps), and the loss drops."""
    rng = np.random.default_rng(1)
    config = TransformerConfig(src_vocab_size=9, tgt_vocab_size=7, d_model=8, num_heads=2,
                               d_ff=16, num_encoder_layers=1, num_decoder_layers=1,
                               dropout=0.0, max_len=16)
    model = build_transformer(config)
    src, tgt_in, tgt_out = (rng.integers(1, 9, (2, 5)), rng.integers(1, 7, (2, 4)),
                            rng.integers(1, 7, (2, 4)))
    loss_fn = CrossEntropyLoss(label_smoothing=0.1)
    before = {name: p.copy() for name, p, _ in model.named_parameters()}
    model.zero_grad()
    loss = loss_fn.forward(model.forward(src, tgt_in), tgt_out)
    model.backward(loss_fn.backward())
    grads = {name: g.copy() for name, _, g in model.named_parameters()}
    lr, eps = 1e-4, 1e-8
    Adam(model, lr=lr, eps=eps).step()
    for name, p, _ in model.named_parameters():
        g = grads[name]
        np.testing.assert_allclose(p, before[name] - lr * g / (np.abs(g) + eps),
                                   rtol=0, atol=1e-15, err_msg=name)
    assert loss_fn.forward(model.forward(src, tgt_in), tgt_out) < loss
