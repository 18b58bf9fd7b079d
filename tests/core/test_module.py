"""Module: walking children, shared parameters, zero_grad, train/eval, state_dict."""

import numpy as np
import pytest

from numpy_transformer.layers.dropout import Dropout
from numpy_transformer.layers.linear import Linear
from numpy_transformer.module import Module

from doors import raises_naming


class Block(Module):
    def __init__(self, rng):
        super().__init__()
        self.ff = Linear(3, 4, rng=rng)
        self.drop = Dropout(0.1, rng=rng)


class Net(Module):
    """embed-like Linear, a list of blocks, a head: names like layers.1.ff.weight."""

    def __init__(self, rng, tie=False):
        super().__init__()
        self.inp = Linear(2, 3, rng=rng)
        self.layers = [Block(rng), Block(rng)]
        self.head = Linear(3, 4, bias=False, rng=rng)
        if tie:                                           # share one array between two modules
            self.head.params["weight"] = self.layers[0].ff.params["weight"]
            self.head.grads["weight"] = self.layers[0].ff.grads["weight"]


def test_named_parameters_dotted_names(rng):
    names = [name for name, _, _ in Net(rng).named_parameters()]
    assert names == ["inp.weight", "inp.bias", "layers.0.ff.weight", "layers.0.ff.bias",
                     "layers.1.ff.weight", "layers.1.ff.bias", "head.weight"]
    modules = [name for name, _ in Net(rng).named_modules()]
    assert modules == ["", "inp", "layers.0", "layers.0.ff", "layers.0.drop", "layers.1",
                       "layers.1.ff", "layers.1.drop", "head"]


def test_named_parameters_yields_the_grad_arrays(rng):
    net = Net(rng)
    for name, param, grad in net.named_parameters():
        assert grad.shape == param.shape and grad is not param
    assert net.parameters()[0] is net.inp.params["weight"]


def test_shared_array_listed_once(rng):
    net = Net(rng, tie=True)
    names = [name for name, _, _ in net.named_parameters()]
    assert "head.weight" not in names and names.count("layers.0.ff.weight") == 1
    assert net.num_parameters() == (2 * 3 + 3) + 2 * (3 * 4 + 4)


def test_num_parameters(rng):
    assert Net(rng).num_parameters() == (2 * 3 + 3) + 2 * (3 * 4 + 4) + 3 * 4
    assert Module().num_parameters() == 0


def test_zero_grad_in_place(rng):
    net = Net(rng)
    grads = [g for _, _, g in net.named_parameters()]
    for g in grads:
        g += 1.0
    net.zero_grad()
    after = [g for _, _, g in net.named_parameters()]
    assert all(a is b for a, b in zip(grads, after))
    assert all(np.all(g == 0) for g in after)


def test_train_eval_propagates(rng):
    net = Net(rng)
    assert net.eval() is net
    assert all(not m.training for _, m in net.named_modules())
    assert not net.layers[1].drop.training
    net.train()
    assert all(m.training for _, m in net.named_modules())


def test_state_dict_round_trip(rng, tmp_path):
    net, other = Net(rng), Net(np.random.default_rng(1))
    state = net.state_dict()
    assert list(state) == [name for name, _, _ in net.named_parameters()]
    assert all(isinstance(v, np.ndarray) for v in state.values())
    state["inp.bias"] += 5.0                              # a copy: the model is untouched
    assert np.all(net.inp.params["bias"] == 0)
    np.savez(tmp_path / "ckpt.npz", **net.state_dict())
    with np.load(tmp_path / "ckpt.npz", allow_pickle=False) as f:
        loaded = {k: f[k] for k in f.files}
    target = other.layers[1].ff.params["weight"]
    other.load_state_dict(loaded)
    assert other.layers[1].ff.params["weight"] is target  # loaded in place
    for (name, a, _), (_, b, _) in zip(net.named_parameters(), other.named_parameters()):
        np.testing.assert_array_equal(a, b, err_msg=name)


def test_load_state_dict_wrong_shape(rng):
    net = Net(rng)
    state = net.state_dict()
    state["head.weight"] = np.zeros((4, 3))
    with raises_naming(ValueError, "state_dict['head.weight']", "(3, 4)", "(4, 3)"):
        net.load_state_dict(state)


def test_load_state_dict_missing_and_unexpected_keys(rng):
    net = Net(rng)
    state = net.state_dict()
    del state["inp.bias"]
    with pytest.raises(ValueError, match=r"missing \['inp.bias'\]"):
        net.load_state_dict(state)
    state = net.state_dict()
    state["extra.weight"] = np.zeros(2)
    with pytest.raises(ValueError, match=r"unexpected \['extra.weight'\]"):
        net.load_state_dict(state)


def test_base_forward_backward_not_implemented():
    with pytest.raises(NotImplementedError, match="Module.forward"):
        Module()(np.zeros(2))
    with pytest.raises(NotImplementedError, match="Module.backward"):
        Module().backward(np.zeros(2))


def test_print_shows_the_tree_with_settings_and_parameter_counts(rng):
    """print(model): each module with its settings and parameter count, indented as the tree;
    identical blocks of a list shown once; a shared array counted once in the total."""
    assert repr(Block(rng)).splitlines() == [
        "Block  # 16 parameters",
        "  (ff): Linear(in_features=3, out_features=4)  # 16",
        "  (drop): Dropout(p=0.1)"]
    assert repr(Net(rng)).splitlines() == [
        "Net  # 53 parameters",
        "  (inp): Linear(in_features=2, out_features=3)  # 9",
        "  (layers): 2 x Block  # 2 x 16",
        "    (ff): Linear(in_features=3, out_features=4)  # 16",
        "    (drop): Dropout(p=0.1)",
        "  (head): Linear(in_features=3, out_features=4)  # 12"]
    tied = repr(Net(rng, tie=True)).splitlines()
    assert tied[0] == "Net  # 41 parameters"         # head.weight is layers.0.ff.weight
    net = Net(rng)
    net.layers[1].drop.p = 0.2                        # no longer identical: each one shown
    assert [line for line in repr(net).splitlines() if "Block" in line] == [
        "  (layers.0): Block  # 16", "  (layers.1): Block  # 16"]
    assert repr(Module()) == "Module"


def test_print_shows_settings_never_state(rng):
    """What a forward leaves (dropout off, the kept mask) is not a setting: print(model) reads
    the same after one, and names nothing PyTorch spells with another meaning."""
    from numpy_transformer import layers
    from numpy_transformer.models import GPT, GPTConfig
    x = rng.normal(size=(2, 3, 8)).astype(np.float32)
    ids = np.zeros((2, 3), dtype=np.int64)
    for module, inputs in [
            (layers.Dropout(0.0), x), (layers.Dropout(0.1), x), (layers.ReLU(), x),
            (layers.FeedForward(8, 12, dropout=0.1), x),
            (layers.PositionalEncoding(8, 16, dropout=0.1), x),
            (GPT(GPTConfig(vocab_size=5, d_model=8, num_heads=2, d_ff=12, num_layers=1,
                           max_len=8, dropout=0.1)), ids)]:
        before = repr(module)
        for mode in (module.eval, module.train):
            mode()
            module.forward(inputs.copy())
            assert repr(module) == before, (before, repr(module))
        assert "inplace" not in before and "saved" not in before, before
    drop = layers.Dropout(0.0)
    drop.forward(x)
    assert repr(drop) == "Dropout(p=0.0)"
    assert repr(layers.FeedForward(8, 12)).splitlines()[2] == "  (activation): ReLU(overwrite=True)"


def every_layer(rng):
    """(module, a gradient its backward could take): every layer and block, fresh."""
    from numpy_transformer import layers
    from numpy_transformer.models import BlockConfig, Decoder, DecoderBlock, Encoder, EncoderBlock
    block = BlockConfig(d_model=8, num_heads=2, d_ff=12)
    x = rng.normal(size=(2, 3, 8)).astype(np.float32)
    return [
        (layers.Linear(8, 8, rng=rng), x), (layers.TiedLinear(layers.Embedding(8, 8)), x),
        (layers.Embedding(5, 8, rng=rng), x), (layers.LayerNorm(8), x), (layers.ReLU(), x),
        (layers.GELU(), x), (layers.Dropout(0.1), x), (layers.Dropout(0.0), x),
        (layers.Softmax(), x), (layers.LogSoftmax(), x), (layers.FeedForward(8, 12), x),
        (layers.PositionalEncoding(8, 16, dropout=0.1), x),
        (layers.MultiHeadAttention(8, 2), x), (layers.MultiHeadLatentAttention(8, 2), x),
        (EncoderBlock(block), x), (DecoderBlock(block), x),
        (Encoder(BlockConfig(d_model=8, num_heads=2, d_ff=12, norm_first=True), 1), x),
        (Decoder(block, 1), x),
    ]


def test_backward_before_forward_is_a_clear_input_error(rng):
    from numpy_transformer.errors import InputError
    for module, dout in every_layer(rng):
        with raises_naming(InputError, "forward"):
            module.backward(dout)


def test_backward_before_forward_names_the_layer(rng):
    from numpy_transformer import layers
    from numpy_transformer.errors import InputError
    for cls, args in ((layers.Linear, (4, 4)), (layers.LayerNorm, (4,)), (layers.Dropout, (0.2,)),
                      (layers.MultiHeadAttention, (4, 2)), (layers.Embedding, (5, 4))):
        with raises_naming(InputError, f"{cls.__name__}.backward", "forward"):
            cls(*args).backward(np.ones((2, 3, 4), dtype=np.float32))
