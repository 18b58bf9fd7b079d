"""Honesty judged by what runs (observe.py in the worker, honesty.ran_flags on the teacher's
side), beside the reading of the code (honesty.py's static flags).

- Every forgery of runtime_forgeries.py, each hidden from the reading in its own way (a
  helper module, names built at run time, dual numbers, 50-digit decimal, fractions, the
  derivative taken in the ungraded forward, a method swapped in from __init__.py with the
  stub left, a module-level object in the method's place, exec, central differences with
  the formula rewritten inline, Richardson extrapolation, the forward under another
  name), is flagged, none by the reading; most get points from the output tests alone.
- The reference, the catalogue's right bodies, the correct alternative forms of
  test_one_judgement.ALTERNATIVES and of the attention backward (test_assignment_diagnosis)
  raise no flag while they run, and their cost does not grow with the width.
- Through the real sandboxed grader: the flags are in the grade, and --refuse-flagged
  scores the forged parts 0 (slow).

The fast tests run the worker's own loop (worker.run_tasks, with observe.Observer) in this
process on the copy's package imported under a name of its own: no sandbox, no process.
"""

import importlib.util
import itertools
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from numpy_transformer.course.classroom.grade import grade
from numpy_transformer.course.classroom.honesty import _graded, part_ran_flags, review
from numpy_transformer.course.copies.make import PACKAGE, package_regions
from numpy_transformer.course.grading import harness, scenarios_layers, scenarios_models
from numpy_transformer.course.grading.scoring import reference_results, score_part
from numpy_transformer.course.grading.standins import StandIns
from numpy_transformer.course.parts import PARTS
from numpy_transformer.course.sandbox import worker
from numpy_transformer.course.sandbox.observe import Observer
from numpy_transformer.course.selftest.right_bodies import RIGHT
from runtime_forgeries import FORGERIES, apply
from test_assignment_diagnosis import ATTENTION, VARIANTS
from test_assignment_grader import replace_regions
from test_one_judgement import ALTERNATIVES

SEED = 1
NAMES = itertools.count()
PART_OF = {r.qualname: r.part for r in package_regions(PACKAGE)}


def fresh(copy, tmp_path, name):
    return shutil.copytree(copy, tmp_path / name, ignore=shutil.ignore_patterns("notebooks"))


def graded_in_process(copy, parts, seed=SEED):
    """{part: (PartResult, status)} of `parts` of the copy at `copy`, each run by the worker's
    loop with the observer, in this process: the copy's package imported as a package of
    its own name (its relative imports stay inside it), forgotten after. Known slips are
    left out, as the worker has none."""
    alias = f"_nt_observed_{next(NAMES)}"
    package = Path(copy) / "numpy_transformer"
    spec = importlib.util.spec_from_file_location(alias, package / "__init__.py",
                                                  submodule_search_locations=[str(package)])
    sys.modules[alias] = importlib.util.module_from_spec(spec)
    slips = scenarios_layers.known_slips, scenarios_models.known_slips
    scenarios_layers.known_slips = scenarios_models.known_slips = lambda *a, **k: {}
    found = {}
    try:
        spec.loader.exec_module(sys.modules[alias])
        observer = Observer(package, Path(harness.__file__).parent, pkg=alias)
        for part in parts:
            ref = reference_results(part, seed)
            outputs, status = worker.run_tasks(harness, ref.tasks, ref.inputs, observer, alias,
                                               StandIns)
            found[part] = (score_part(part, outputs, status, seed), status)
        observer.close()
    finally:
        scenarios_layers.known_slips, scenarios_models.known_slips = slips
        sys.settrace(None)
        worker.forget_modules(set(), alias)
    return found


def ran(copy, parts):
    """{part: [Flag]}: the flags of what ran (the reading's own left out)."""
    runs = [(sorted({t["kind"] for t in reference_results(part, SEED).tasks}),
             {t["id"]: t["kind"] for t in reference_results(part, SEED).tasks}, status)
            for part, (_, status) in graded_in_process(copy, parts).items()]
    static = review(copy, parts, observed=[])
    both = review(copy, parts, observed=runs)
    return {part: [f for f in found if f not in static.get(part, [])]
            for part, found in both.items()}, static


def test_the_reference_runs_unflagged_at_a_flat_cost(solution_copy):
    graded = graded_in_process(solution_copy, PARTS)
    runs = [(sorted({t["kind"] for t in reference_results(p, SEED).tasks}),
             {t["id"]: t["kind"] for t in reference_results(p, SEED).tasks}, status)
            for p, (_, status) in graded.items()]
    assert review(solution_copy, observed=runs) == {}
    for part, (result, status) in graded.items():
        assert result.points == result.max_points, (part, result)
        for entry in status.values():
            if "observed" in entry:
                assert entry["observed"]["windows"] and not entry["observed"]["notes"], entry
            if "cost" in entry:
                small, wide = entry["cost"]
                assert wide <= small + 10, (part, entry["cost"])    # a derivation: flat


def test_the_right_bodies_and_the_correct_alternative_forms_run_unflagged(solution_copy,
                                                                          tmp_path):
    copy = fresh(solution_copy, tmp_path, "right")
    replace_regions(copy, RIGHT)
    flags, _ = ran(copy, PARTS)
    assert flags == {}, flags
    for name, body in VARIANTS.items():
        copy = fresh(solution_copy, tmp_path, name)
        replace_regions(copy, {ATTENTION: body})
        assert ran(copy, ["attention"])[0] == {}, name
    by_part = {}
    for name, (qualname, body) in ALTERNATIVES.items():
        by_part.setdefault(qualname, []).append((name, body))
    for qualname, forms in by_part.items():
        for name, body in forms:
            copy = fresh(solution_copy, tmp_path, name)
            replace_regions(copy, {qualname: "import numpy as np\n" + textwrap.dedent(body)})
            part = PART_OF[qualname]
            [(result, _)] = graded_in_process(copy, [part]).values()
            assert result.points == result.max_points, (name, result)
            assert ran(copy, [part])[0] == {}, name


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_each_forgery_is_flagged_by_what_runs_not_by_the_reading(solution_copy, tmp_path, name):
    copy = fresh(solution_copy, tmp_path, "forged")
    part = apply(copy, name)
    flags, static = ran(copy, [part])
    assert static == {}, static                # hidden from the reading...
    assert flags.get(part), name               # ...not from the watch
    expected = KINDS[FORGERIES[name]["category"]]
    assert expected & {k for f in flags[part] for k in f.kinds}, (name, flags[part])


KINDS = {"complex": {"ran_complex"}, "dual": {"ran_arith"}, "precision": {"ran_precision"},
         "in forward": {"ran_complex", "ran_forward"}, "replaced": {"replaced"},
         "exec": {"ran_forward", "ran_complex"}, "differences": {"cost"},
         "Richardson": {"ran_forward", "cost"}, "tamper": {"tamper"}}


def test_a_watched_task_without_a_report_is_flagged(solution_copy):
    """A worker whose report went missing (the student's code took the status file's
    writing in hand, say) is flagged, as is one that saw no window."""
    functions = _graded(solution_copy, ["gelu"], None)["gelu"]
    ok = {"state": "ok", "message": ""}
    for entry in ({**ok}, {**ok, "observed": {"windows": 0, "notes": [], "entries": []}}):
        [flag] = part_ran_flags("gelu", functions, {"c0t0": "gelu"}, {"c0t0": entry})
        assert flag.kinds == ("unwatched",) and flag.path == "layers/activations.py"
    assert part_ran_flags("gelu", functions, {"c0t0": "gelu"},
                          {"c0t0": {"state": "error", "message": "x"}}) == []


@pytest.mark.slow          # two sandboxed grades of three parts: ~5 s on 2 cores
def test_the_real_grader_flags_what_ran_and_refuses_it(solution_copy, tmp_path):
    copy = fresh(solution_copy, tmp_path, "forged")
    for name in ("method swapped in from __init__.py, stub left",
                 "central differences, the formula rewritten inline",
                 "module-level object doing the work after the class"):
        apply(copy, name)
    parts = ["gelu", "layernorm", "linear", "softmax"]
    reported = grade(copy, parts=parts, seed=SEED, teacher=True).by_part()
    assert reported["gelu"].points == reported["gelu"].max_points    # output tests: full marks
    assert reported["linear"].points == reported["linear"].max_points
    assert not reported["softmax"].flags, reported["softmax"].flags
    kinds = {part: {k for f in reported[part].flags for k in f["kinds"]} for part in parts}
    assert kinds["gelu"] == {"replaced"} and "__init__.py" in reported["gelu"].flags[0]["path"]
    assert kinds["linear"] == {"replaced"} and kinds["layernorm"] == {"cost"}, kinds
    refused = grade(copy, parts=parts, seed=SEED, refuse_flagged=True).by_part()
    for part in ("gelu", "layernorm", "linear"):
        assert refused[part].points == 0 and refused[part].message.startswith("refused: ")
    assert refused["softmax"].points == refused["softmax"].max_points
