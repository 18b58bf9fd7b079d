"""Three-way weight tying (share_embeddings): one matrix E serves as the source embedding,
the target embedding and the output projection (W_out = E^T); its gradient is the sum of
the three, the model counts and saves it once, and the config refuses what cannot share."""

import numpy as np
import pytest

from doors import nt, ok

from numpy_transformer import load_checkpoint, save_checkpoint
from numpy_transformer.checkpoint import load_run
from numpy_transformer.errors import InputError, InputTypeError
from numpy_transformer.gradcheck import assert_gradients_close, perturb
from numpy_transformer.models import TransformerConfig, build_transformer

V, D = 7, 6


def tiny(**fields):
    return TransformerConfig(V, V, d_model=D, num_heads=2, d_ff=10, num_encoder_layers=1,
                             num_decoder_layers=1, dropout=0.0, max_len=8, **fields)


def ids(rng):
    src, tgt = rng.integers(1, V, (2, 5)), rng.integers(1, V, (2, 4))   # B=2, S=5, T=4
    src[1, 3:] = 0                                                       # source padding
    return src, tgt


def test_one_matrix_is_shared_counted_and_saved_once(tmp_path):
    shared = build_transformer(tiny(tie_embeddings=True, share_embeddings=True))
    E = shared.src_embed.params["weight"]
    assert shared.tgt_embed.params["weight"] is E
    assert shared.output_projection.params["weight"] is E
    assert shared.tgt_embed.grads["weight"] is shared.src_embed.grads["weight"]
    two_way = build_transformer(tiny(tie_embeddings=True))
    assert two_way.num_parameters() - shared.num_parameters() == V * D
    names = [name for name, _, _ in shared.named_parameters()]
    assert "src_embed.weight" in names and not any(n.startswith("tgt_embed") for n in names)
    shared.src_embed.params["weight"] += 1.0                 # the loaded copy must show it
    ckpt = load_checkpoint(save_checkpoint(tmp_path / "shared.npz", shared))
    loaded = ckpt.model
    assert ckpt.config["share_embeddings"] is True
    assert loaded.tgt_embed.params["weight"] is loaded.src_embed.params["weight"]
    assert loaded.output_projection.params["weight"] is loaded.src_embed.params["weight"]
    np.testing.assert_array_equal(loaded.src_embed.params["weight"], E)


def test_the_shared_gradient_is_the_sum_of_the_three(float64, rng):
    """With E copied into the source and target embeddings and W_out = E^T of an untied
    model, the shared model's dE equals dE_src + dE_tgt + dW_out^T of the untied one."""
    shared = perturb(build_transformer(tiny(tie_embeddings=True, share_embeddings=True)), rng)
    free = build_transformer(tiny())
    state = shared.state_dict()
    E = state.pop("src_embed.weight")
    free.load_state_dict({**state, "src_embed.weight": E, "tgt_embed.weight": E,
                          "output_projection.weight": E.T.copy()})
    src, tgt = ids(rng)
    dlogits = rng.normal(size=(2, 4, V))
    logits = []
    for model in (shared, free):
        model.zero_grad()
        logits.append(model.forward(src, tgt))                          # (B, T, V)
        model.backward(dlogits)
    np.testing.assert_allclose(logits[0], logits[1], rtol=1e-12)        # the same function
    total = free.src_embed.grads["weight"] + free.tgt_embed.grads["weight"] + \
        free.output_projection.grads["weight"].T
    np.testing.assert_allclose(shared.src_embed.grads["weight"], total, rtol=1e-12)


def test_three_way_tying_passes_a_full_float64_gradient_check(float64, rng):
    model = perturb(build_transformer(tiny(tie_embeddings=True, share_embeddings=True,
                                           norm_first=False)), rng)
    report = assert_gradients_close(model, *ids(rng), rtol=1e-7, eps=1e-4)
    row = next(r for r in report.rows if r.name == "src_embed.weight")
    assert row.checked == V * D                              # every entry, not a sample


@pytest.mark.parametrize("fields, error, words", [
    (dict(share_embeddings=1), InputTypeError, "share_embeddings: expected True or False"),
    (dict(share_embeddings=True), InputError,
     "share_embeddings: expected False when tie_embeddings is False"),
    (dict(share_embeddings=True, tie_embeddings=True, tgt_vocab_size=V + 1), InputError,
     f"share_embeddings: expected one joint vocabulary (src_vocab_size == tgt_vocab_size), "
     f"got True with src_vocab_size={V}, tgt_vocab_size={V + 1}"),
])
def test_config_refuses_what_cannot_share(fields, error, words):
    with pytest.raises(error) as caught:
        TransformerConfig(**{"src_vocab_size": V, "tgt_vocab_size": V, **fields})
    assert words in str(caught.value)


def test_train_shares_one_matrix_on_a_joint_word_vocabulary(tmp_path):
    """`train --joint-vocab --share-embeddings` (words, no BPE): one vocabulary, one matrix."""
    (tmp_path / "train.src").write_text("le chat dort\nun chien court\n" * 10)
    (tmp_path / "train.tgt").write_text("the cat sleeps\na dog runs\n" * 10)
    ok(nt("train", "--src", "train.src", "--tgt", "train.tgt", "--joint-vocab",
          "--share-embeddings", "--quick", "--steps", "4", "--no-figures", "--no-progress",
          "--out", "run", cwd=tmp_path))
    model, toks, _ = load_run(str(tmp_path / "run" / "last.npz"))
    assert toks["src"].symbols == toks["tgt"].symbols and "chat" in toks["tgt"].symbols
    assert model.output_projection.params["weight"] is model.src_embed.params["weight"]
