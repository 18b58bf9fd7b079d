"""The tables train_step.py prints: the parity line and one configuration's timings."""


def print_parity(check):
    """One line: losses and gradients of ours against PyTorch, and the verdict."""
    print(f"parity vs PyTorch: loss {check['loss']:.6f} / {check['torch_loss']:.6f} "
          f"(rel {check['loss_rel_diff']:.1e}), step-2 loss rel "
          f"{check['loss2_rel_diff']:.1e}, grads max rel err "
          f"{check['grad_max_rel_err']:.1e} ({check['grad_worst_param']}) -> "
          f"{'OK' if check['ok'] else 'MISMATCH'}")


def print_result(r):
    print(f"{'':18s} {'step ms':>8s} {'[q1, q3]':>16s} {'tokens/s':>9s} {'GFLOP/s':>8s} "
          f"{'fwd/bwd/opt %':>14s} {'peak RSS (- import)':>20s}  roofline")
    for kind, name in (("ours", "numpy_transformer"), ("torch", "pytorch")):
        if kind not in r:
            continue
        s = r[kind]
        sh = s["shares"]
        roof = ""
        if "roofline" in s:
            lib = "torch" if kind == "torch" else "numpy"
            roof = (f"{100 * s['roofline_share']:.0f}% of the {lib} matmul limit "
                    f"({1e3 * s['roofline']['seconds']:.1f} ms at "
                    f"{s['roofline']['gflops']:.0f} GFLOP/s)")
        print(f"{name:18s} {1e3 * s['median_s']:8.1f} "
              f"[{1e3 * s['q1_s']:6.1f}, {1e3 * s['q3_s']:6.1f}] {s['tokens_per_s']:9.0f} "
              f"{s['gflops']:8.1f} {100 * sh['forward']:4.0f}/{100 * sh['backward']:3.0f}/"
              f"{100 * sh['optimizer']:3.0f}   {s['peak_rss_mb']:6.0f} MB "
              f"({s['peak_above_import_mb']:5.0f} MB)  {roof}")
    if "ratio" in r:
        print(f"ours / pytorch = {r['ratio']:.2f}x (median of interleaved pairs "
              f"{r['ratio_paired_median']:.2f}x); > 1 means we are slower")
