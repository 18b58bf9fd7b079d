"""Parameter groups (issue #27): `decay_groups` (matrices decay; biases, LayerNorm gamma and
beta do not; embeddings optional; a tied matrix counted once) and AdamW with groups, step
for step the same as torch.optim.AdamW with the same param_groups (float64, 1e-12)."""

import numpy as np
import pytest

from numpy_transformer.backend import to_numpy, xp
from numpy_transformer.models import GPT, GPTConfig, Transformer, TransformerConfig
from numpy_transformer.optim import SGD, AdamW, decay_groups


def small_gpt():
    return GPT(GPTConfig(vocab_size=11, d_model=8, num_heads=2, d_ff=16, num_layers=2,
                         dropout=0.0, max_len=16, seed=3))


def small_transformer(**kwargs):
    return Transformer(TransformerConfig(src_vocab_size=9, tgt_vocab_size=9, d_model=8,
                                         num_heads=2, d_ff=16, num_encoder_layers=1,
                                         num_decoder_layers=1, dropout=0.0, max_len=16,
                                         **kwargs))


def names_by_group(groups):
    return [set(group["params"]) for group in groups]


@pytest.mark.parametrize("decay_embeddings", [False, True])
def test_matrices_decay_vectors_do_not_tied_matrix_once(float64, decay_embeddings):
    model = small_gpt()                                 # embedding tied to the output layer
    decay, keep = names_by_group(decay_groups(model, 0.1, decay_embeddings=decay_embeddings))
    shapes = {name: p.shape for name, p, _ in model.named_parameters()}
    assert decay | keep == set(shapes) and not decay & keep
    assert sum(map(len, (decay, keep))) == len(shapes)  # every name once
    assert "embed.weight" in (decay if decay_embeddings else keep)
    assert all(len(shapes[n]) == 1 for n in keep - {"embed.weight"})
    assert all(len(shapes[n]) == 2 for n in decay)
    assert {"norm.gamma", "norm.beta", "output_projection.bias"} <= keep
    assert "layers.0.feed_forward.linear_1.weight" in decay


def test_untied_encoder_decoder_embeddings(float64):
    model = small_transformer()
    decay, keep = names_by_group(decay_groups(model, 0.1))
    ndim = {name: p.ndim for name, p, _ in model.named_parameters()}
    embeddings = {n for n in keep if ndim[n] == 2}
    assert len(embeddings) == 2                         # source and target tables
    assert "output_projection.weight" in decay          # untied: an ordinary matrix
    shared = small_transformer(share_embeddings=True, tie_embeddings=True)
    _, keep_shared = names_by_group(decay_groups(shared, 0.1))
    assert len([n for n in keep_shared if n.endswith("embed.weight")]) == 1


def test_zero_gradients_decay_matrices_only(float64):
    model = small_gpt()
    before = {n: to_numpy(p).copy() for n, p, _ in model.named_parameters()}
    model.zero_grad()
    groups = decay_groups(model, 0.5, decay_embeddings=False)
    AdamW(model, lr=0.1, param_groups=groups).step()  # m = v = 0: only the decay moves p
    decay = set(groups[0]["params"])
    for name, p, _ in model.named_parameters():
        factor = 1 - 0.1 * 0.5 if name in decay else 1.0
        np.testing.assert_array_equal(to_numpy(p), before[name] * factor)


def random_steps(model, optimizer, steps, seed):
    rng = np.random.default_rng(seed)
    history = []
    for _ in range(steps):
        for _, _, grad in model.named_parameters():
            grad[...] = xp.asarray(rng.normal(size=grad.shape))
        history.append({name: to_numpy(g).copy() for name, _, g in model.named_parameters()})
        optimizer.step()
    return history


def test_old_call_is_one_group_and_weight_decay_is_left_alone(float64):
    models = [small_gpt(), small_gpt()]
    names = [n for n, _, _ in models[1].named_parameters()]
    plain = AdamW(models[0], lr=1e-2, weight_decay=0.2)
    grouped = AdamW(models[1], lr=1e-2, weight_decay=0.2, param_groups=[{"params": names}])
    assert plain.param_groups == [{"params": names}]
    for model, optimizer in zip(models, (plain, grouped)):
        random_steps(model, optimizer, 3, seed=1)
    for (_, a, _), (_, b, _) in zip(*(m.named_parameters() for m in models)):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b))
    grouped_zero = AdamW(models[1], lr=1e-2, weight_decay=0.2,
                         param_groups=[{"params": names, "weight_decay": 0.0}])
    random_steps(models[1], grouped_zero, 1, seed=2)
    assert grouped_zero.weight_decay == 0.2            # the group's value goes to each update


@pytest.mark.torch
@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("decay_embeddings", [False, True])
def test_adamw_groups_match_pytorch(float64, decay_embeddings, fast):
    torch = pytest.importorskip("torch")
    model = small_gpt()
    init = {n: to_numpy(p).copy() for n, p, _ in model.named_parameters()}
    groups = decay_groups(model, 0.3, decay_embeddings=decay_embeddings)
    groups[1].pop("weight_decay")                       # this group: the optimizer's 0.05
    optimizer = AdamW(model, lr=5e-3, betas=(0.8, 0.95), weight_decay=0.05,
                      param_groups=groups, fast=fast)
    history = random_steps(model, optimizer, 6, seed=4)
    tensors = {n: torch.tensor(v, dtype=torch.float64) for n, v in init.items()}
    torch_groups = [{**g, "params": [tensors[n] for n in g["params"]]} for g in groups]
    torch_optimizer = torch.optim.AdamW(torch_groups, lr=5e-3, betas=(0.8, 0.95),
                                        weight_decay=0.05)
    for grads in history:
        for name, t in tensors.items():
            t.grad = torch.tensor(grads[name], dtype=torch.float64)
        torch_optimizer.step()
    for name, p, _ in model.named_parameters():
        np.testing.assert_allclose(to_numpy(p), tensors[name].numpy(), rtol=1e-12, atol=1e-12)


def test_groups_by_array_and_other_optimizers(float64):
    model = small_gpt()
    named = list(model.named_parameters())
    optimizer = SGD(model, lr=0.1, weight_decay=0.1,
                    param_groups=[{"params": [p for _, p, _ in named[:3]]},
                                  {"params": [n for n, _, _ in named[3:]], "weight_decay": 0}])
    assert optimizer.param_groups[0]["params"] == [n for n, _, _ in named[:3]]
    state = optimizer.state_dict()                      # the checkpoint format is unchanged
    assert sorted(state["hyperparameters"]) == sorted(optimizer.hyperparameters())
    optimizer.load_state_dict(state)


@pytest.mark.parametrize("kwargs, error, fragment", [
    (dict(weight_decay=-0.1), ValueError, "weight_decay: expected a number >= 0"),
    (dict(weight_decay=0.1, decay_embeddings=1), TypeError, "decay_embeddings: expected True"),
])
def test_decay_groups_bad_arguments(float64, kwargs, error, fragment):
    with pytest.raises(error, match=fragment):
        decay_groups(small_gpt(), **kwargs)


def test_trainer_decays_matrices_and_embeddings_not_biases_or_norms(float64):
    from numpy_transformer.training import TrainConfig, Trainer
    model = small_gpt()
    optimizer = Trainer(model, None, TrainConfig(weight_decay=0.1), log=None).optimizer
    assert isinstance(optimizer, AdamW) and optimizer.fast          # the scratch-buffer form
    assert optimizer.param_groups == decay_groups(model, 0.1, decay_embeddings=True)
    assert "embed.weight" in optimizer.param_groups[0]["params"]
