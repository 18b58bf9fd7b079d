"""The grader's promises: honest points, and each mistake in its own part.

- A blank but well-shaped submission (every solution region returns zeros or does
  nothing) scores 0 in every part.
- Each part runs only its own solution regions (traced in this process), so a
  mistake cannot cost points elsewhere; graded end to end in two batches too.
- The harness files the worker loads import nothing of the package, and the worker
  imports nothing of the student's but the modules under test.
(Forged, crashing and hostile submissions: test_assignment_grader_forgery.py.)
"""

import ast
import shutil
import sys
from pathlib import Path

import pytest

from numpy_transformer.course.parts import PARTS
from numpy_transformer.course.classroom.grade import grade
from numpy_transformer.course.copies.make import PACKAGE, package_regions
from numpy_transformer.course.copies.markers import write_region_bodies
from numpy_transformer.course.selftest.mistakes import MISTAKES
from numpy_transformer.course.grading.scoring import Read, reference_results, run_task
from numpy_transformer.course.sandbox.runner import HARNESS_FILES
from numpy_transformer.course.grading.standins import StandIns

BLANK = {     # qualname -> the body of a blank answer: zeros of the right shape, or nothing
    "GELU.backward": "return xp.zeros_like(dy)",
    "scaled_dot_product_attention_backward":
        "return xp.zeros_like(q), xp.zeros_like(k), xp.zeros_like(v)",
    "MultiHeadAttentionBase.backward":
        "return tuple(xp.zeros_like(merge_heads(a)) for a in self.saved)",
    "MultiHeadAttention.project_backward":
        "return xp.zeros_like(dQ), xp.zeros_like(dK), xp.zeros_like(dV)",
    "Dropout.backward": "return xp.zeros_like(dy)",
    "Dropout.reapply": "return xp.zeros_like(x)",
    "Embedding.backward": "return None",
    "FeedForward.backward": "return xp.zeros_like(dy)",
    "MultiHeadLatentAttention.project_backward":
        "return xp.zeros_like(dQ), xp.zeros_like(dK), xp.zeros_like(dK)",
    "Linear.backward": "return xp.zeros_like(self.saved)",
    "TiedLinear.backward": "return xp.zeros_like(self.saved)",
    "LayerNorm.backward": "return xp.zeros_like(dy)",
    "sinusoidal_table": "return xp.zeros((max_len, d_model), dtype=get_default_dtype())",
    "PositionalEncoding.backward": "return xp.zeros_like(dy)",
    "softmax_backward": "return xp.zeros_like(dp)",
    "CrossEntropyLoss.backward": "return xp.zeros(shape, dtype=p.dtype)",
    "DecoderBlock.backward":
        "return xp.zeros_like(dout), xp.zeros_like(self.cross_attn.saved[1])",
    "Decoder.backward":
        "return xp.zeros_like(dout), xp.zeros_like(self.layers[0].cross_attn.saved[1])",
    "EncoderBlock.backward": "return xp.zeros_like(dout)",
    "Encoder.backward": "return xp.zeros_like(dout)",
    "Adam._update": "pass",
    "AdamW.decay": "pass",
}


def fresh(copy, tmp_path, name="copy"):
    return shutil.copytree(copy, tmp_path / name, ignore=shutil.ignore_patterns("notebooks"))


def replace_regions(root, bodies):
    """Replace the body of every solution region whose qualname is in `bodies`."""
    package = Path(root) / "numpy_transformer"
    regions = [r for r in package_regions(package) if r.qualname in bodies]
    write_region_bodies(package, regions, [bodies[r.qualname] for r in regions])


def add_import(root, path, line):
    file = Path(root) / "numpy_transformer" / path
    text = file.read_text()
    first = text.index("\nfrom ")
    file.write_text(text[:first] + "\n" + line + text[first:])


@pytest.mark.slow
def test_blank_submission_scores_zero_everywhere(solution_copy, tmp_path):
    copy = fresh(solution_copy, tmp_path)
    assert {r.qualname for r in package_regions()} == set(BLANK)
    replace_regions(copy, BLANK)
    for path in ("layers/attention.py", "layers/feedforward.py", "models/decoder.py",
                 "models/encoder.py"):
        add_import(copy, path, "from ..backend import xp")
    report = grade(copy)
    assert {r.part: r.points for r in report.parts} == {p: 0 for p in PARTS}, report.table()
    for result in report.parts:          # graded (no crash, no stub): the arrays are wrong
        assert not result.message.startswith(("crashed", "not implemented", "timed out")), result


def test_harness_imports_nothing_of_the_package():
    """The worker loads these files by path: no import of numpy_transformer (nor `..x`)."""
    files = {name: folder / name for folder, names in HARNESS_FILES.items() for name in names}
    local = {name[:-3] for name in files}
    for name, path in files.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert node.level in (0, 1), (name, node.module)
                assert node.level == 0 or (node.module or "") in local | {""}, (name, node.module)
                assert node.level == 1 or node.module.split(".")[0] in ("numpy", "importlib")
            elif isinstance(node, ast.Import) and name != "worker.py":    # the worker imports
                assert all(a.name.split(".")[0] != "numpy_transformer"       # the student's
                           for a in node.names), name


def test_grading_needs_no_helper_of_the_copy(solution_copy, tmp_path):
    """The worker imports the modules under test and nothing else of the student's: a copy
    whose gradient checker (gradcheck.py, in no part) does not even import gets full marks."""
    copy = fresh(solution_copy, tmp_path)
    (copy / "numpy_transformer" / "gradcheck.py").write_text("raise ImportError('broken')\n")
    report = grade(copy, parts=["linear", "attention", "encoder_stack"])
    assert all(r.points == r.max_points for r in report.parts), report.table()


def regions_run_by(part):
    """(path, qualname) of every solution region whose lines run while `part`'s tasks run."""
    regions = package_regions()
    by_file = {}
    for r in regions:
        by_file.setdefault(str(PACKAGE / r.path), []).append(r)
    hit = set()

    def tracer(frame, event, arg):
        for r in by_file.get(frame.f_code.co_filename, ()):
            if event == "line" and r.begin + 1 < frame.f_lineno <= r.end:
                hit.add((r.part, r.qualname))
        return tracer

    ref = reference_results(part)
    sys.settrace(tracer)
    try:
        for spec in ref.tasks:
            prefix = spec["id"] + "."
            arrays = {k[len(prefix):]: v for k, v in ref.inputs.items() if k.startswith(prefix)}
            run_task("numpy_transformer", spec, Read(arrays), StandIns)
    finally:
        sys.settrace(None)
    return hit


@pytest.mark.parametrize("part", PARTS)
def test_each_part_runs_its_own_regions_only(part):
    """Isolation by design: grading `part` executes every region of `part` and no line of
    another part's, so a mistake anywhere else cannot change its score."""
    hit = regions_run_by(part)
    assert {p for p, _ in hit} == {part}, hit
    assert {q for _, q in hit} == {r.qualname for r in package_regions() if r.part == part}


@pytest.mark.slow
@pytest.mark.parametrize("half", [0, 1])
def test_mistakes_in_half_the_parts_leave_the_other_half_full(solution_copy, tmp_path, half):
    """End to end: one catalogue mistake in every other part; graded parts without a mistake
    keep full marks and every part with one loses points."""
    broken = PARTS[half::2]
    copy = fresh(solution_copy, tmp_path)
    for part in broken:
        next(m for m in MISTAKES if m.part == part).apply(copy)
    scores = {r.part: r.points for r in grade(copy).parts}
    assert all(scores[p] < 10 for p in broken), scores
    assert all(scores[p] == 10 for p in PARTS if p not in broken), scores


def test_grading_computes_with_numpy_whatever_the_backend():
    """Under NUMPY_TRANSFORMER_BACKEND=cupy or simulator the tasks still run on NumPy (their
    arrays are NumPy's), in the teacher's process and in the workers (runner.py sets it)."""
    from numpy_transformer.course.grading.scoring import run_part
    from numpy_transformer.backend import get_backend, set_backend
    before = get_backend()
    set_backend("simulator")
    try:
        for part in ("linear", "attention", "adam"):
            assert run_part(part).points == 10
        assert get_backend() == "simulator"
    finally:
        set_backend(before)
