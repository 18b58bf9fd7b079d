"""The grading process: runs the checks of some parts against a student's copy.

Started by grade.py as

    python runner.py RESULTS_FILE TIMEOUT PART...     (cwd and PYTHONPATH = the student's DIR)

so that `import numpy_transformer` is the student's package. This file also
loads the grader's own package (the reference solution) under another name,
and while part P is checked, every OTHER part's solution functions in the
student's package are swapped for the reference ones: a mistake (or a stub) in
one part can then only cost points in that part. Results go to RESULTS_FILE,
one JSON line per event, so that a crash loses only the part that was running.
"""

import importlib
import importlib.util
import json
import signal
import sys
import types
from pathlib import Path

REFERENCE = "_numpy_transformer_reference"


class PartTimeout(BaseException):
    """Raised by the alarm when a part runs out of time (not an Exception: no check eats it)."""


def load_reference(package_dir):
    """The package in `package_dir` imported under the name REFERENCE."""
    if REFERENCE in sys.modules:
        return sys.modules[REFERENCE]
    spec = importlib.util.spec_from_file_location(
        REFERENCE, Path(package_dir) / "__init__.py",
        submodule_search_locations=[str(package_dir)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[REFERENCE] = module
    spec.loader.exec_module(module)
    return module


def _lookup(package, region):
    """(owner, attribute name, current value) for the function a region lies in."""
    module = importlib.import_module(f"{package}.{region.module}")
    *classes, name = region.qualname.split(".")
    owner = module
    for cls in classes:
        owner = getattr(owner, cls)
    value = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
    return owner, name, value


def substitute(parts, regions, student="numpy_transformer"):
    """Swap the student's functions of `parts` for the reference ones; return an undo list."""
    undo, loaded = [], [m for n, m in list(sys.modules.items())
                        if isinstance(m, types.ModuleType) and n.split(".")[0] == student]
    for region in regions:
        if region.part not in parts or not region.qualname:
            continue
        try:
            owner, name, mine = _lookup(student, region)
            _, _, theirs = _lookup(REFERENCE, region)
        except (AttributeError, KeyError, ImportError):
            continue                          # renamed by the student: nothing to swap
        if isinstance(owner, type):
            undo.append((owner, name, mine))
            setattr(owner, name, theirs)
            continue
        for module in loaded:                 # a function may be imported by name elsewhere
            for key, value in list(vars(module).items()):
                if value is mine:
                    undo.append((module, key, mine))
                    setattr(module, key, theirs)
    return undo


def restore(undo):
    for owner, name, value in reversed(undo):
        setattr(owner, name, value)


def fatal(results_path, message):
    """Record that no part can be graded (the package does not import); exit status 1."""
    with open(results_path, "a", encoding="utf-8") as results:
        results.write(json.dumps({"event": "fatal", "message": message}) + "\n")
    return 1


def grade_parts(results_path, timeout, parts, reference_dir):
    make = importlib.import_module(f"{REFERENCE}.assignment.make")
    grading = importlib.import_module(f"{REFERENCE}.assignment.parts")
    regions = make.package_regions(reference_dir)
    pkg = grading.Package("numpy_transformer")
    # Import every module first: a module imported while another part's functions are
    # swapped would keep the swapped ones after the swap is undone.
    try:
        for dotted in sorted({r.module for r in regions} | set(grading.Package.NAMES.values())):
            pkg.module(dotted)
    except Exception as err:                                        # noqa: BLE001
        return fatal(results_path, f"numpy_transformer.{dotted} does not import: "
                     f"{type(err).__name__}: {err}")
    use_alarm = hasattr(signal, "SIGALRM")

    def on_alarm(signum, frame):
        raise PartTimeout()

    if use_alarm:
        signal.signal(signal.SIGALRM, on_alarm)
    with open(results_path, "a", encoding="utf-8") as results:
        def emit(event):
            results.write(json.dumps(event) + "\n")
            results.flush()

        for part in parts:
            emit({"event": "start", "part": part})
            others = [p for p in grading.PARTS if p != part]
            undo = substitute(others, regions)
            try:
                if use_alarm:
                    signal.setitimer(signal.ITIMER_REAL, timeout)
                result = grading.run_part(part, pkg)
            except PartTimeout:
                result = grading.PartResult(part, 0, grading.max_points(part), None,
                                            f"timed out after {timeout:g} s")
            except (Exception, SystemExit) as crash:                # noqa: BLE001
                result = grading.PartResult(part, 0, grading.max_points(part), None,
                                            f"crashed: {type(crash).__name__}: {crash}")
            finally:
                if use_alarm:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                restore(undo)
            emit({"event": "result", **result.to_dict()})
    return 0


def main(argv):
    """Entry point of the grading process (see the module docstring)."""
    results_path, timeout, parts = argv[0], float(argv[1]), argv[2:]
    reference_dir = Path(__file__).resolve().parents[1]
    student_root = Path.cwd().resolve()
    try:
        import numpy_transformer
        where = Path(numpy_transformer.__file__).resolve().parent
        if where != student_root / "numpy_transformer":
            raise ImportError(f"imported numpy_transformer from {where}, not from {student_root}")
        load_reference(reference_dir)
    except Exception as err:                                        # noqa: BLE001
        return fatal(results_path, f"the package does not import: {type(err).__name__}: {err}")
    runner = importlib.import_module(f"{REFERENCE}.assignment.runner")
    return runner.grade_parts(results_path, timeout, parts, reference_dir)


if __name__ == "__main__":
    sys.path.pop(0)               # this script's folder: the grader's own files stay out of sight
    sys.exit(main(sys.argv[1:]))
