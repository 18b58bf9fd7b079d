"""The assignment's parts, and what a check of a part is (the checks: checks_*.py).

A check is worth points in one part and consists of tasks (harness.py): plain
data naming a scenario, its arguments and the seed of its arrays. The grader
runs each task on the reference package (drawing the arrays) and, in a worker
process, on the student's (reading the same arrays), and compares the returned
arrays. A check scores its points only when every compared array agrees.
Each checks_*.py holds a list CHECKS of them; scoring.py puts the lists together.
"""

from dataclasses import dataclass

from ..errors import InputError

PARTS = ("linear", "layernorm", "softmax", "gelu", "dropout", "attention",
         "multihead_attention", "mla", "feedforward", "embedding", "positional_encoding",
         "cross_entropy", "adam", "adamw", "encoder_stack", "decoder_stack")

TITLES = {
    "linear": "Linear and TiedLinear backward",
    "layernorm": "LayerNorm backward",
    "softmax": "softmax backward (Jacobian-vector product)",
    "gelu": "GELU backward (tanh form)",
    "dropout": "dropout backward (the kept mask and its scale)",
    "attention": "scaled dot-product attention backward",
    "multihead_attention": "multi-head attention backward (heads, projections)",
    "mla": "multi-head latent attention: project_backward",
    "feedforward": "position-wise feed-forward backward",
    "embedding": "embedding backward (repeated token ids)",
    "positional_encoding": "sinusoidal table and positional-encoding backward",
    "cross_entropy": "cross-entropy backward (ignore_index, label smoothing)",
    "adam": "one Adam update (moments, bias correction, L2 decay)",
    "adamw": "AdamW's decoupled weight decay",
    "encoder_stack": "encoder block and stack backward",
    "decoder_stack": "decoder block and stack backward (memory gradient)",
}

# Where a student reads up on each part (the copy's hints and docstrings point there).
# Linear's backward is derived in lesson 1's section 7 (lesson 16, which compares it with
# autograd, is skipped without PyTorch; lesson 3 only names Linear in passing).
LESSONS = {
    "linear": "lesson 1, section 7", "layernorm": "lesson 4", "softmax": "lesson 2", "gelu": "lesson 4",
    "dropout": "lesson 4", "attention": "lessons 2 and 3", "multihead_attention": "lesson 3",
    "mla": "lesson 5", "feedforward": "lesson 4", "embedding": "lesson 1",
    "positional_encoding": "lesson 1", "cross_entropy": "lesson 7", "adam": "lesson 7",
    "adamw": "lesson 13", "encoder_stack": "lesson 6", "decoder_stack": "lesson 6",
}

TOLERANCE = 1e-12   # full marks: float64 round-off (correct forms measured at <= 2.2e-16)
EXACT = ("the reference's arrays to rounding, rel err ~1e-15 (pass <= 1e-12)")


@dataclass
class Check:
    part: str
    name: str
    points: int
    tasks: list        # [{"kind", "args", "seed"}]
    why: str           # what a failure means, in a sentence
    keys: tuple = ()   # compare only outputs whose name starts with one of these (all if empty)
    tolerance: float = TOLERANCE
    expect: str = EXACT


def task(kind, seed, **args):
    """A task: the scenario `kind` with `args`, its arrays drawn with `seed`."""
    return {"kind": kind, "seed": seed, "args": args}


def check(part, name, points, tasks, why, keys=()):
    """A check of `part` worth `points`; InputError for an unknown part."""
    if part not in PARTS:
        raise InputError(f"unknown part {part!r}")
    return Check(part, name, points, list(tasks), why, tuple(keys))


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
