"""Write tests/data/torch_reference_tiny.npz: PyTorch's answers for three tiny models.

As llm.c's `test_gpt2.c` reads a state file written once by PyTorch, our test suite
reads this dump (tests/core/test_torch_reference.py), so parity with PyTorch is checked in
every run, with or without PyTorch installed. The reference model is
`torch_reference.py`'s (plain PyTorch ops, our weights, our parameter names).

For each case, in float64, with fixed seeds:
    weights   our model built from its config (seeded), then every vector parameter
              moved off its 0/1 default (`gradcheck.perturb`, seeded), so none hides a bug
    inputs    token ids, some rows padded (id 0) at the end: source and target (GPT: text)
    PyTorch   logits = model(inputs) with masks built from the ids (source: padding;
              target: causal and padding; GPT: causal), loss = cross-entropy(logits, targets,
              ignore padding, label smoothing 0.1), loss.backward()
The file holds `header` (JSON: versions, date, every case's config and seeds) and, per
case `<case>/`: the inputs, `logits`, `loss`, `param/<name>` and `grad/<name>` for every
parameter (our dotted names). About 215 KiB.

Usage (PyTorch needed, run from anywhere):
    python benchmarks/write_torch_reference.py [--out tests/data/torch_reference_tiny.npz]
"""

import argparse
import json
import os
import sys
from datetime import datetime, timezone

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)        # benchmarks/ is not installed with the package
DEFAULT_OUT = os.path.join(ROOT, "tests", "data", "torch_reference_tiny.npz")

PAD = 0                         # BOS = 1, EOS = 2 in the ids below
LABEL_SMOOTHING = 0.1
PERTURB_SEED = 1

TINY = dict(d_model=8, num_heads=2, d_ff=12, dropout=0.0, max_len=16, pad_id=PAD, seed=0)
# Every axis its own size (B=3, S=7, T=6, V=13 / 11) so a swapped axis shows. The
# first target token is BOS, never padding, so no attention row is fully masked.
SOURCE = [[5, 9, 3, 12, 7, 4, 8],
          [6, 3, 11, 4, 0, 0, 0],           # padded source
          [10, 7, 5, 9, 3, 0, 0]]
TARGET = [[1, 4, 9, 3, 7, 10, 2],           # BOS ... EOS: tgt_in = [:, :-1], tgt_out = [:, 1:]
          [1, 8, 5, 2, 0, 0, 0],            # padded target
          [1, 3, 6, 10, 2, 0, 0]]

CASES = {   # name: (kind, config fields)
    "transformer": ("transformer", dict(TINY, src_vocab_size=13, tgt_vocab_size=11,
                                        num_encoder_layers=2, num_decoder_layers=2)),
    "transformer_prenorm_mla_tied": ("transformer", dict(
        TINY, src_vocab_size=13, tgt_vocab_size=11, num_encoder_layers=1,
        num_decoder_layers=2, norm_first=True, attention="mla", latent_dim=4,
        tie_embeddings=True)),
    "gpt": ("gpt", dict(TINY, vocab_size=11, num_layers=2, norm_first=True,
                        tie_embeddings=True)),
}


def case_inputs(kind):
    """{name: int64 array} of the case's inputs and targets."""
    if kind == "gpt":   # the target rows as a language model's text: predict ids[:, 1:]
        ids = np.array(TARGET, dtype=np.int64)                               # (B, T + 1)
        return {"ids": ids[:, :-1], "targets": ids[:, 1:]}
    tgt = np.array(TARGET, dtype=np.int64)
    return {"src": np.array(SOURCE, dtype=np.int64), "tgt_in": tgt[:, :-1],
            "tgt_out": tgt[:, 1:]}


def build_ours(kind, config):
    """Our model in float64 from the config's seed, vector parameters perturbed (seeded)."""
    from numpy_transformer.backend import set_default_dtype
    from numpy_transformer.gradcheck import perturb
    from numpy_transformer.models import GPT, GPTConfig, TransformerConfig, build_transformer
    set_default_dtype(np.float64)
    model = GPT(GPTConfig(**config)) if kind == "gpt" else build_transformer(
        TransformerConfig(**config))
    return perturb(model, np.random.default_rng(PERTURB_SEED))


def gpt_names(name):
    """A GPT parameter's name as the reference's decoder side names it: a GPT is a
    decoder without cross-attention (embed -> tgt_embed, layers/norm -> decoder.*)."""
    head, _, rest = name.partition(".")
    new = {"embed": "tgt_embed", "layers": "decoder.layers", "norm": "decoder.norm"}
    return f"{new.get(head, head)}.{rest}"


def run_torch(kind, config, state, inputs):
    """(logits, loss, {our name: gradient}) of the PyTorch reference, as NumPy arrays."""
    from types import SimpleNamespace

    import torch

    from benchmarks.torch_reference import TorchTransformer, cross_entropy
    t = {k: torch.from_numpy(v) for k, v in inputs.items()}
    if kind == "gpt":
        names = {gpt_names(n): n for n in state}
        ref = TorchTransformer(SimpleNamespace(**config, num_decoder_layers=config["num_layers"]),
                               {k: state[n] for k, n in names.items()}, torch.float64)
        T = t["ids"].shape[1]
        causal = torch.ones(T, T, dtype=torch.bool).tril()                   # (T, T)
        h = ref.stack("decoder", config["num_layers"], ref.embed("tgt_embed", t["ids"]),
                      lambda p, x: ref.attention(f"{p}.self_attn", x, x, causal),
                      lambda p, x: ref.feed_forward(f"{p}.feed_forward", x))
        logits, targets = ref.project(h), t["targets"]                       # (B, T, V)
    else:
        names = {n: n for n in state}
        ref = TorchTransformer(SimpleNamespace(**config), state, torch.float64)
        logits, targets = ref.forward(t["src"], t["tgt_in"]), t["tgt_out"]   # (B, T, V)
    loss = cross_entropy(logits, targets, PAD, LABEL_SMOOTHING)
    loss.backward()
    grads = {names[k]: g for k, g in ref.grads().items()}
    return logits.detach().numpy(), loss.detach().numpy(), grads


def reference_arrays():
    """(header dict, {key: array}) for every case."""
    import torch
    arrays, cases = {}, {}
    for case, (kind, config) in CASES.items():
        model, inputs = build_ours(kind, config), case_inputs(kind)
        state, config = model.state_dict(), model.config.to_dict()     # every field
        logits, loss, grads = run_torch(kind, config, state, inputs)
        cases[case] = {"kind": kind, "config": config, "perturb_seed": PERTURB_SEED}
        arrays.update({f"{case}/{k}": v for k, v in inputs.items()})
        arrays.update({f"{case}/logits": logits, f"{case}/loss": loss})
        arrays.update({f"{case}/param/{n}": np.asarray(v) for n, v in state.items()})
        arrays.update({f"{case}/grad/{n}": g for n, g in grads.items()})
    header = {"format": 1, "written": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "script": "benchmarks/write_torch_reference.py", "torch": torch.__version__,
              "numpy": np.__version__, "dtype": "float64", "pad_id": PAD,
              "label_smoothing": LABEL_SMOOTHING, "cases": cases}
    return header, arrays


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=DEFAULT_OUT, help="the .npz to write")
    args = parser.parse_args(argv)
    header, arrays = reference_arrays()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    text = json.dumps(header, indent=1, sort_keys=True)
    with open(args.out, "wb") as f:
        np.savez_compressed(f, header=np.array(text), **arrays)
    print(f"wrote {args.out}: {len(header['cases'])} cases, {len(arrays)} arrays, "
          f"{os.path.getsize(args.out) / 1024:.0f} KiB (torch {header['torch']})")


if __name__ == "__main__":
    main()
