"""Gradient-check every layer and model on small random inputs, in float64.

Used by `python -m numpy_transformer gradcheck` and by the gradient-checking
lesson. The cases themselves (one list, shared with the tests and the
assignment grader) are in gradcheck_cases.py.
"""

import time
from dataclasses import replace

from .backend import default_dtype
from .gradcheck_cases import LAYER_CASES, MODEL_CASES, STACK_CASES, Package


def run_report(models=True, seed=0, max_coords=60, out=print):
    """Print a gradient-check report for every layer, stack (and model); True if all pass.

    seed: offsets every case's own seed (0: the cases as the tests run them);
    max_coords: coordinates sampled per tensor of a model.
    """
    cases = LAYER_CASES + STACK_CASES + (MODEL_CASES if models else [])
    pkg, all_passed = Package(), True
    with default_dtype("float64"):
        for case in cases:
            sampled = max_coords if case in MODEL_CASES else case.max_coords
            case = replace(case, seed=case.seed + seed, max_coords=sampled)
            start = time.perf_counter()
            report = case.run(pkg)
            all_passed &= report.passed
            status = "ok  " if report.passed else "FAIL"
            out(f"{status} {case.name:<60} max rel err {report.max_rel_error:9.2e}  "
                f"({sum(r.checked for r in report.rows)} coords, "
                f"{time.perf_counter() - start:.1f} s)")
            if not report.passed:
                out(str(report))
    out("all gradients agree with finite differences" if all_passed else "SOME CHECKS FAILED")
    return all_passed
