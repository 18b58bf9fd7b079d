"""Greedy decoding speed with and without the KV cache, MHA against MLA.

    python benchmarks/decode.py --config small
    python benchmarks/decode.py --all --threads 1 --json decode.json

For each configuration and attention kind, the same (randomly initialised, seeded)
model greedily decodes the benchmark batch for a fixed number of tokens (EOS is
disabled so every run has the same length), once re-running the decoder on the whole
prefix at every step (use_cache=False, O(T^2)) and once feeding only the newest token
(use_cache=True, O(T)). Runs alternate between the two modes; the median of
`--repeats` runs is reported as generated tokens per second (batch x steps / time).
Both modes must produce the same tokens. The cache size is measured on the live
cache (KVCache.nbytes) and compared with numpy_transformer's kv_cache_bytes formula.
"""

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from benchmarks.threads import apply_thread_env_from_argv
    apply_thread_env_from_argv(sys.argv)

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.harness import CONFIGS, Setup, make_batch  # noqa: E402

NO_EOS = None       # no end token: every run decodes the same number of tokens


def decode_once(model, src, steps, use_cache):
    """(tokens (B, steps), seconds, live cache bytes or None) of one greedy decoding run."""
    from numpy_transformer.decoding import KVCache, greedy_decode
    cache = KVCache() if use_cache else None
    t0 = time.perf_counter()
    out = greedy_decode(model, src, steps, eos_id=NO_EOS, use_cache=use_cache, cache=cache)
    seconds = time.perf_counter() - t0
    return out, seconds, (cache.nbytes()["total"] if cache is not None else None)


def bench(setup, steps, repeats):
    """Decode `steps` tokens for the setup's batch, with and without cache; a result dict."""
    from numpy_transformer.backend import set_default_dtype
    from numpy_transformer.decoding import kv_cache_bytes
    from numpy_transformer.models import build_transformer
    set_default_dtype(setup.dtype)
    cfg = setup.model_config()
    model = build_transformer(cfg).eval()
    src, _, _ = make_batch(setup)
    B = src.shape[0]
    times = {False: [], True: []}
    outputs = {}
    decode_once(model, src, 2, True)                                   # warm-up
    for r in range(repeats):
        for use_cache in ((False, True) if r % 2 == 0 else (True, False)):
            out, seconds, nbytes = decode_once(model, src, steps, use_cache)
            times[use_cache].append(seconds)
            outputs[use_cache] = out
            if use_cache:
                live = nbytes
    generated = outputs[True].shape[1]
    # The cache holds every fed position: BOS and all generated tokens but the last.
    formula = kv_cache_bytes(cfg, B, generated, setup.dtype, src_len=src.shape[1])
    result = {"setup": setup.label(), "config": setup.name, "attention": setup.attention,
              "dtype": setup.dtype, "batch_size": B, "src_len": int(src.shape[1]),
              "generated": int(generated), "same_tokens": bool(np.array_equal(outputs[False],
                                                                               outputs[True])),
              "cache_bytes_live": live, "cache_bytes_formula": formula[setup.attention],
              "cache_bytes_formula_all": formula}
    for use_cache, key in ((False, "no_cache"), (True, "cache")):
        med = statistics.median(times[use_cache])
        result[key] = {"median_s": med, "tokens_per_s": B * generated / med,
                       "runs_s": times[use_cache]}
    result["speedup"] = result["no_cache"]["median_s"] / result["cache"]["median_s"]
    return result


def print_results(results):
    print(f"{'setup':28s} {'tokens':>6s} {'no cache tok/s':>14s} {'cache tok/s':>12s} "
          f"{'speedup':>8s} {'cache MiB':>10s} {'formula MiB':>12s}  same tokens")
    for r in results:
        print(f"{r['setup']:28s} {r['generated']:6d} {r['no_cache']['tokens_per_s']:14.0f} "
              f"{r['cache']['tokens_per_s']:12.0f} {r['speedup']:7.1f}x "
              f"{r['cache_bytes_live'] / 2**20:10.2f} {r['cache_bytes_formula'] / 2**20:12.2f}"
              f"  {'yes' if r['same_tokens'] else 'NO'}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", choices=sorted(CONFIGS), default="small")
    p.add_argument("--all", action="store_true", help="every configuration")
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    p.add_argument("--attention", choices=["mha", "mla", "both"], default="both")
    p.add_argument("--tokens", type=int, default=None,
                   help="tokens to generate (default: the configuration's length)")
    p.add_argument("--repeats", type=int, default=3, help="runs per mode (median reported)")
    p.add_argument("--threads", type=int, default=os.cpu_count(),
                   help="BLAS threads (set before numpy is imported)")
    p.add_argument("--json", metavar="OUT", help="write the results to this JSON file")
    args = p.parse_args(argv)
    names = ["tiny", "small", "base"] if args.all else [args.config]
    kinds = ["mha", "mla"] if args.attention == "both" else [args.attention]
    print(f"numpy {np.__version__}; {os.cpu_count()} cores; threads {args.threads}")
    results = []
    for name in names:
        for kind in kinds:
            setup = Setup(name, args.dtype, False, kind)
            results.append(bench(setup, args.tokens or setup.length, args.repeats))
    print_results(results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"threads": args.threads, "results": results}, f, indent=1)
    return 0 if all(r["same_tokens"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
