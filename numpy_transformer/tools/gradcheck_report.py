"""Gradient-check every layer and model on small random inputs, in float64.

Used by `python -m numpy_transformer gradcheck` and by the gradient-checking
lesson. The cases themselves (one list, shared with the tests) are the core's
proof table, gradcheck_cases.py beside the checker.

In a student copy of the assignment some backward passes are stubs that raise
NotImplementedError("... [assignment part <part>]"): such a case is reported
as `todo ... not implemented` with its message, and the report goes on with
the next case, so a student sees at once which layers already agree.
"""

import re
import time
from dataclasses import replace

from ..backend import default_dtype
from ..gradcheck_cases import LAYER_CASES, MODEL_CASES, STACK_CASES

PART = re.compile(r"\[assignment part (\w+)\]")


def _summary(all_passed, stubs):
    """The report's last line: the verdict, and the parts still to write."""
    if not stubs:
        return ("all gradients agree with finite differences" if all_passed
                else "SOME CHECKS FAILED")
    parts = sorted({m[1] for m in map(PART.search, stubs) if m})
    verdict = "the others agree" if all_passed else "SOME OTHER CHECKS FAILED"
    return (f"{len(stubs)} case{'s' * (len(stubs) > 1)} not implemented"
            f"{' (assignment parts: ' + ', '.join(parts) + ')' if parts else ''}; {verdict}")


def run_report(models=True, seed=0, max_coords=60, out=print):
    """Print a gradient-check report for every layer, stack (and model); True if all pass.

    seed: offsets every case's own seed (0: the cases as the tests run them);
    max_coords: coordinates sampled per tensor of a model.
    A case whose code raises NotImplementedError (a stub) is reported and skipped;
    it makes the result False.
    """
    cases = LAYER_CASES + STACK_CASES + (MODEL_CASES if models else [])
    all_passed, stubs = True, []
    with default_dtype("float64"):
        for case in cases:
            sampled = max_coords if case in MODEL_CASES else case.max_coords
            case = replace(case, seed=case.seed + seed, max_coords=sampled)
            start = time.perf_counter()
            try:
                report = case.run()
            except NotImplementedError as stub:
                stubs.append(str(stub) or "NotImplementedError")
                out(f"todo {case.name:<60} not implemented: {stubs[-1]}")
                continue
            all_passed &= report.passed
            status = "ok  " if report.passed else "FAIL"
            out(f"{status} {case.name:<60} max rel err {report.max_rel_error:9.2e}  "
                f"({sum(r.checked for r in report.rows)} coords, "
                f"{time.perf_counter() - start:.1f} s)")
            if not report.passed:
                out(str(report))
    out(_summary(all_passed, stubs))
    return all_passed and not stubs
