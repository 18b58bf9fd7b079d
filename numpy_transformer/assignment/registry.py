"""The assignment's parts and the registry of their checks (filled by checks_*.py).

`check(part, points, expect)` registers a function(pkg) as a check of a part;
parts.py runs and scores them. Kept apart from parts.py so that the checks
import the registry and parts.py imports the checks, without a cycle.
"""

from dataclasses import dataclass

from ..errors import InputError

PARTS = ("linear", "layernorm", "softmax", "attention", "multihead_attention", "mla",
         "feedforward", "embedding", "cross_entropy", "adam", "encoder_stack", "decoder_stack")

TITLES = {
    "linear": "Linear and TiedLinear backward",
    "layernorm": "LayerNorm backward",
    "softmax": "softmax backward (Jacobian-vector product)",
    "attention": "scaled dot-product attention backward",
    "multihead_attention": "multi-head attention backward (heads, projections)",
    "mla": "multi-head latent attention: project_backward",
    "feedforward": "position-wise feed-forward backward",
    "embedding": "embedding backward (scatter-add)",
    "cross_entropy": "cross-entropy backward (ignore_index, label smoothing)",
    "adam": "one Adam / AdamW update",
    "encoder_stack": "encoder block and stack backward",
    "decoder_stack": "decoder block and stack backward (memory gradient)",
}

CHECKS = {part: [] for part in PARTS}


class CheckFailed(AssertionError):
    """A check's verdict: what is wrong, and the largest relative error seen (or None)."""

    def __init__(self, message, max_rel_error=None):
        super().__init__(message)
        self.max_rel_error = max_rel_error


@dataclass
class Check:
    part: str
    name: str
    points: int
    expect: str      # what a correct answer reaches, e.g. "max rel err ~1e-9 (pass <= 1e-7)"
    run: object      # function(pkg) -> max relative error or None


def check(part, points, expect):
    """Decorator: register `function(pkg)` as a check of `part` worth `points`."""
    if part not in CHECKS:
        raise InputError(f"unknown part {part!r}")

    def register(function):
        CHECKS[part].append(Check(part, function.__name__, points, expect, function))
        return function
    return register


def validate_parts(parts):
    """The list of part names, in the order of PARTS; ValueError naming the valid ones."""
    if parts is None:
        return list(PARTS)
    if isinstance(parts, str):
        parts = [parts]
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        raise InputError(f"unknown part{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(map(repr, unknown))}; valid parts: {', '.join(PARTS)}")
    return [p for p in PARTS if p in parts]
