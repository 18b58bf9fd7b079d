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


def run_report(models=True, seed=0, max_coords=60, out=print, markdown=False):
    """Print a gradient-check report for every layer, stack (and model); True if all pass.

    seed: offsets every case's own seed (0: the cases as the tests run them);
    max_coords: coordinates sampled per tensor of a model;
    markdown: print the report as docs/gradcheck.md's table (`gradcheck --markdown`), each
    error to the digits the page shows (MARKDOWN_DIGITS), and no verdict line.
    A case whose code raises NotImplementedError (a stub) is reported and skipped;
    it makes the result False.
    """
    cases = LAYER_CASES + STACK_CASES + (MODEL_CASES if models else [])
    all_passed, stubs = True, []
    if markdown:
        out("| case | max relative error |")
        out("| --- | ---: |")
    with default_dtype("float64"):
        for case in cases:
            sampled = max_coords if case in MODEL_CASES else case.max_coords
            case = replace(case, seed=case.seed + seed, max_coords=sampled)
            start = time.perf_counter()
            try:
                report = case.run()
            except NotImplementedError as stub:
                stubs.append(str(stub) or "NotImplementedError")
                out(f"| {case.name} | not implemented |" if markdown else
                    f"todo {case.name:<60} not implemented: {stubs[-1]}")
                continue
            all_passed &= report.passed
            out(_line(case, report, time.perf_counter() - start, markdown))
            if not report.passed and not markdown:
                out(str(report))
    if not markdown:
        out(_summary(all_passed, stubs))
    return all_passed and not stubs


MARKDOWN_DIGITS = 2       # significant digits of the page's errors: those this machine's
#                           runs reproduce; another BLAS may round the last one otherwise


def _line(case, report, seconds, markdown):
    """One case's line of the report (or row of the markdown table)."""
    if markdown:
        error = f"{report.max_rel_error:.{MARKDOWN_DIGITS - 1}e}"
        return f"| {case.name} | {error if report.passed else '**FAIL** ' + error} |"
    status = "ok  " if report.passed else "FAIL"
    return (f"{status} {case.name:<60} max rel err {report.max_rel_error:9.2e}  "
            f"({sum(r.checked for r in report.rows)} coords, {seconds:.1f} s)")
