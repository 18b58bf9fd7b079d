"""The benchmark scripts run (smoke mode, no timing claims) and count FLOPs right."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)        # benchmarks/ is not installed with the package

from benchmarks.flops import Matmul, count_step_flops, forward_matmuls, time_matmuls  # noqa: E402
from benchmarks.harness import Setup  # noqa: E402
from numpy_transformer.backend import get_default_dtype, set_default_dtype  # noqa: E402
from numpy_transformer.models import TransformerConfig  # noqa: E402


@pytest.fixture(autouse=True)
def restore_dtype():
    """The benchmark helpers set the default dtype; put it back after each test."""
    saved = get_default_dtype()
    yield
    set_default_dtype(saved)


def hand_config(attention="mha"):
    return TransformerConfig(src_vocab_size=7, tgt_vocab_size=5, d_model=4, num_heads=2,
                             d_ff=8, num_encoder_layers=1, num_decoder_layers=1, dropout=0.0,
                             attention=attention, latent_dim=2)


def test_flop_count_matches_hand_computation():
    # B=1, S=2, T=3, D=4, H=2 (Dh=2), F=8, V=5; one encoder and one decoder layer.
    # A product (m, k) @ (k, n) costs 2 m k n; batch B*H for the attention products.
    enc = (4 * 2 * 2 * 4 * 4          # w_q, w_k, w_v, w_o on Ns = 2 tokens: 4 x 64
           + 2 * 2 * 2 * 2 * 2        # scores (2 heads) (S, Dh) @ (Dh, S)
           + 2 * 2 * 2 * 2 * 2        # weights @ values (S, S) @ (S, Dh)
           + 2 * (2 * 2 * 4 * 8))     # FFN D -> F and F -> D
    assert enc == 576
    dec_self = 4 * 2 * 3 * 4 * 4 + 2 * (2 * 2 * 3 * 2 * 3)           # Nt = 3, (T, Dh)(Dh, T)
    dec_cross = (2 * (2 * 3 * 4 * 4) + 2 * (2 * 2 * 4 * 4)           # w_q, w_o on T; w_k, w_v on S
                 + 2 * (2 * 2 * 3 * 2 * 2))                          # (T, Dh)(Dh, S), (T, S)(S, Dh)
    dec_ffn = 2 * (2 * 3 * 4 * 8)
    output_projection = 2 * 3 * 4 * 5
    forward = enc + dec_self + dec_cross + dec_ffn + output_projection
    assert forward == 2024
    assert count_step_flops(hand_config(), 1, 2, 3) == {
        "forward": 2024, "backward": 2 * 2024, "total": 3 * 2024}


def test_flop_count_of_latent_attention():
    # MLA replaces w_k, w_v (D -> D each) by w_kv_compress (D -> L) and two L -> D maps.
    # Encoder self-attention (Ns = 2): 2*2*4*4 -> 2*2*4*2 + 2 * 2*2*2*4, i.e. 2*64 -> 96.
    # Decoder self-attention (Nt = 3): 2*96 -> 48 + 96; cross-attention keys on Ns: 2*64 -> 96.
    mla = count_step_flops(hand_config("mla"), 1, 2, 3)["forward"]
    assert mla == 2024 - (128 - 96) - (192 - 144) - (128 - 96)
    names = [mm.name for mm in forward_matmuls(hand_config("mla"), 1, 2, 3)]
    assert "decoder.cross_attn.w_kv_compress" in names and "encoder.self_attn.w_k" not in names


def test_flops_scale_with_layer_count():
    one = forward_matmuls(hand_config(), 2, 5, 7)
    cfg = hand_config()
    cfg.num_encoder_layers = cfg.num_decoder_layers = 3
    three = forward_matmuls(cfg, 2, 5, 7)
    gen = [mm.flops for mm in one if mm.name == "output_projection"][0]
    assert sum(mm.flops for mm in three) - gen == 3 * (sum(mm.flops for mm in one) - gen)


def test_time_matmuls_reports_a_limit():
    r = time_matmuls([Matmul("a", 1, 8, 4, 6, count=3), Matmul("b", 2, 5, 3, 4)],
                     repeats=1, min_time=0.0)
    assert r["flops"] == 3 * 2 * 8 * 4 * 6 + 2 * 2 * 5 * 3 * 4
    assert r["seconds"] > 0 and r["gflops"] > 0 and len(r["shapes"]) == 2


def run_smoke(*extra):
    """train_step.main in this process, with one thread (it sets torch's thread count)."""
    from benchmarks.train_step import main
    try:
        import torch
        saved = torch.get_num_threads()
    except ImportError:
        torch = None
    try:
        return main(["--smoke", "--threads", "1", *extra])
    finally:
        if torch is not None:
            torch.set_num_threads(saved)


def test_smoke_without_torch(tmp_path):
    out = tmp_path / "smoke.json"
    assert run_smoke("--no-torch", "--json", str(out)) == 0
    (result,) = json.loads(out.read_text())["results"]
    assert result["config"] == "tiny" and np.isfinite(result["smoke_loss"])
    assert "parity" not in result


@pytest.mark.torch
@pytest.mark.parametrize("dtype, loss_tol, variant", [
    ("float32", 1e-4, []),
    ("float64", 1e-10, ["--norm-first", "--attention", "mla"])],
    ids=["float32-post-norm-mha", "float64-pre-norm-mla"])
def test_smoke_matches_torch(tmp_path, dtype, loss_tol, variant):
    pytest.importorskip("torch")
    out = tmp_path / "smoke.json"
    assert run_smoke("--dtype", dtype, *variant, "--json", str(out)) == 0
    parity = json.loads(out.read_text())["results"][0]["parity"]
    assert parity["ok"]
    assert parity["loss_rel_diff"] < loss_tol and parity["loss2_rel_diff"] < loss_tol


def test_smoke_command_line():
    """The script as a user runs it: thread variables set from argv, exit code 0."""
    proc = subprocess.run([sys.executable, "benchmarks/train_step.py", "--smoke", "--no-torch",
                           "--threads", "1"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "smoke: one step" in proc.stdout and "threads 1" in proc.stdout


def test_decode_benchmark_cache_agrees():
    from benchmarks.decode import bench
    for kind in ("mha", "mla"):
        r = bench(Setup("tiny", attention=kind), steps=3, repeats=1)
        assert r["same_tokens"] and r["generated"] == 3
        assert r["cache_bytes_live"] == r["cache_bytes_formula"]
