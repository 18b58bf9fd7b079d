"""Parity with PyTorch in every run, PyTorch installed or not: a committed reference dump.

tests/data/torch_reference_tiny.npz was written by benchmarks/write_torch_reference.py
with PyTorch (plain ops: benchmarks/torch_reference.py), as llm.c's `test_gpt2.c` reads
a state file PyTorch wrote once. For three tiny float64 models (an encoder-decoder
Transformer, post-norm, MHA; one pre-norm with latent attention and tied embeddings; a
pre-norm GPT with tied embeddings) it holds the weights, token ids with padding, and
PyTorch's logits, loss (cross-entropy, padding ignored, label smoothing 0.1) and every
parameter gradient. Our model, given the same weights and ids (its masks built from the
ids: padding in the source, causal and padding in the target), must agree to 1e-10
relative (||ours - torch|| / ||torch||, per array; measured worst: 2.3e-15). The key
biases' gradients are zero in exact arithmetic (adding q . b_k to every score of a row
changes no softmax), so both sides give rounding noise (~1e-17) there: a gradient's
error is measured against at least 1e-4 of the case's largest gradient norm.

With PyTorch installed, the script is run again and must write the same numbers. After a
deliberate change of the cases or of the models' initialisation, rewrite the dump:
`python benchmarks/write_torch_reference.py`.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from numpy_transformer.backend import to_numpy, xp
from numpy_transformer.losses import CrossEntropyLoss
from numpy_transformer.models import GPT, GPTConfig, TransformerConfig, build_transformer

# The repository root, wherever under tests/ this file lives.
ROOT = next(str(p) for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
sys.path.insert(0, ROOT)        # benchmarks/ is not installed with the package

from benchmarks.harness import relative_error  # noqa: E402

DUMP = os.path.join(ROOT, "tests", "data", "torch_reference_tiny.npz")
SCRIPT = os.path.join(ROOT, "benchmarks", "write_torch_reference.py")
RTOL = 1e-10


def load_dump(path):
    """(header dict, {key: array}) of a reference dump."""
    with np.load(path) as dump:
        arrays = {key: dump[key] for key in dump.files}
    return json.loads(str(arrays.pop("header"))), arrays


HEADER, ARRAYS = load_dump(DUMP)


def named(case, part):
    """{parameter name: array} of the dump's `<case>/<part>/<name>` arrays."""
    prefix = f"{case}/{part}/"
    return {key[len(prefix):]: value for key, value in ARRAYS.items() if key.startswith(prefix)}


def run_ours(case):
    """Our model on the dump's weights and ids: (logits, loss, {name: gradient}) on the host."""
    kind, config = HEADER["cases"][case]["kind"], HEADER["cases"][case]["config"]
    ids = {key: xp.asarray(ARRAYS[f"{case}/{key}"])
           for key in ("ids", "targets", "src", "tgt_in", "tgt_out") if f"{case}/{key}" in ARRAYS}
    if kind == "gpt":
        model = GPT(GPTConfig(**config))
        model.load_state_dict(named(case, "param"))
        logits, targets = model.forward(ids["ids"]), ids["targets"]          # (B, T, V)
    else:
        model = build_transformer(TransformerConfig(**config))
        model.load_state_dict(named(case, "param"))
        logits, targets = model.forward(ids["src"], ids["tgt_in"]), ids["tgt_out"]
    loss_fn = CrossEntropyLoss(ignore_index=HEADER["pad_id"],
                               label_smoothing=HEADER["label_smoothing"])
    loss = loss_fn.forward(logits, targets)
    model.zero_grad()
    model.backward(loss_fn.backward())
    grads = {name: to_numpy(grad) for name, _, grad in model.named_parameters()}
    return to_numpy(logits), float(loss), grads


def gradient_floor(case):
    """1e-4 of the case's largest gradient norm: the least norm an error is divided by."""
    return 1e-4 * max(np.linalg.norm(grad) for grad in named(case, "grad").values())


def worst_errors(case):
    """{array: relative error of ours against PyTorch's} for logits, loss, every gradient."""
    logits, loss, grads = run_ours(case)
    torch_grads = named(case, "grad")
    assert grads.keys() == torch_grads.keys(), "the two models name their parameters alike"
    errors = {"logits": relative_error(logits, ARRAYS[f"{case}/logits"]),
              "loss": relative_error(loss, ARRAYS[f"{case}/loss"])}
    floor = gradient_floor(case)
    errors.update({f"grad {name}": relative_error(grads[name], torch_grads[name], floor)
                   for name in grads})
    return errors


@pytest.mark.parametrize("case", sorted(HEADER["cases"]))
def test_ours_matches_the_pytorch_dump(float64, case):
    errors = worst_errors(case)
    worst = max(errors, key=errors.get)
    assert errors[worst] < RTOL, f"{case}: {worst} differs from PyTorch by {errors[worst]:.2e}"
    assert len(errors) > 2 + 10, "logits, loss and every parameter's gradient are compared"


def test_the_dump_is_small_and_covers_three_models():
    assert os.path.getsize(DUMP) < 300_000
    kinds = sorted(c["kind"] for c in HEADER["cases"].values())
    assert kinds == ["gpt", "transformer", "transformer"]
    assert HEADER["dtype"] == "float64" and HEADER["label_smoothing"] > 0
    assert any(np.any(ARRAYS[f"{case}/{key}"] == HEADER["pad_id"])   # padding to mask
               for case in HEADER["cases"] for key in ("src", "ids") if f"{case}/{key}" in ARRAYS)


@pytest.mark.torch
def test_the_script_writes_the_same_dump_again(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "again.npz"
    env = {**os.environ, "NUMPY_TRANSFORMER_BACKEND": "numpy"}   # PyTorch reads host arrays
    proc = subprocess.run([sys.executable, SCRIPT, "--out", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    header, arrays = load_dump(out)
    assert header["cases"] == HEADER["cases"]
    assert arrays.keys() == ARRAYS.keys()
    for key, value in arrays.items():
        if value.dtype.kind in "iub" or "/param/" in key:         # ids and weights: exact
            np.testing.assert_array_equal(value, ARRAYS[key], err_msg=key)
        else:                                     # PyTorch's numbers: to rounding
            case, part = key.split("/")[:2]
            floor = gradient_floor(case) if part == "grad" else 0.0
            assert relative_error(value, ARRAYS[key], floor) < 1e-12, key
