"""The grading worker: runs one part's tasks on a student's package, in a process of its own.

The teacher's process (runner.py) copies the harness files (this file, harness.py,
steps.py, scenarios_*.py, standins.py, forgiving_loader.py, private_root.py) into a fresh folder and
starts, once per part,

    python -I -B HARNESS/worker.py STUDENT_DIR TASKS.json INPUTS.npz OUTPUTS.npz STATUS.json

on a scratch copy of the student's package (STUDENT_DIR, also its working directory), with
time, memory, process and disk limits, in the private root of namespaces.py where Linux allows it
(then the paths are /nt/harness, /nt/student and /nt/part, NumPy is at /nt/site, and
nothing of the teacher's is there to be found).
Before importing anything of the student's, the worker makes sure that no
other `numpy_transformer` can be imported: `-I` keeps PYTHONPATH, the user's
site-packages and the script's folder out, and `isolate()` drops the
editable-install finders and puts first a finder that finds numpy_transformer
in the student's folder only (even where the grader is installed beside NumPy,
in site-packages). The harness is loaded from its copy as the package
`_nt_harness`; no reference code is ever imported here. The student's package is
reached by plain imports of the modules under test (steps.load), and no helper
of theirs, so a student who breaks one loses only what uses it. The student's files
are loaded with forgiving_loader.py's loader, so that a syntax error inside a solution
region costs that region's part only, and the modules a failed task left
half-imported are dropped before the next task.

Each task (harness.py) runs on the teacher's arrays from INPUTS.npz; its
output arrays go to OUTPUTS.npz and a short status per task (ok, not
implemented, or the error) to STATUS.json, with what observe.py saw while the
task's forward and backward ran and the cost of its backward on wider arrays
(for honesty.py, on the teacher's side: flags, never points). The teacher compares the arrays
with its own reference results: nothing printed, written elsewhere or faked
here can raise a score, only arrays equal to the right ones.
"""

import importlib.machinery
import importlib.util
import json
import os
import sys

HARNESS = "_nt_harness"
NUMPY_IN_ROOT = "/nt/site"        # where namespaces.py's private root holds NumPy


class StudentPackageOnly:
    """A finder, first on sys.meta_path: `numpy_transformer` is found in the student's folder
    or nowhere, whatever sys.path says (a grader installed into site-packages stays out)."""

    def __init__(self, root):
        self.root = root
        self.loader = None            # the loader of the student's files (forgiving_loader.py), if set

    def find_spec(self, fullname, path=None, target=None):
        top_level = "." not in fullname
        if fullname.split(".")[0] != "numpy_transformer" or top_level != (path is None):
            return None
        # Submodules follow the package's __path__; the package is the student's or none.
        spec = importlib.machinery.PathFinder.find_spec(fullname, path or [self.root])
        if spec is None and path is None:
            raise ModuleNotFoundError(f"no numpy_transformer in {self.root}", name=fullname)
        if spec is not None and self.loader is not None and isinstance(
                spec.loader, importlib.machinery.SourceFileLoader):
            spec.loader = self.loader(fullname, spec.origin)
        return spec


def isolate(student_root):
    """Only the student's numpy_transformer is importable: the editable-install finders and
    path hooks of the teacher's package dropped, a finder that looks in the student's folder
    only put first, that folder first on sys.path, no numpy_transformer module loaded."""
    finder = StudentPackageOnly(student_root)
    sys.meta_path[:] = [finder] + [f for f in sys.meta_path if "editable" not in repr(f).lower()]
    sys.path_hooks[:] = [h for h in sys.path_hooks if "editable" not in repr(h).lower()]
    sys.path[:] = [student_root] + [e for e in sys.path if "editable" not in e.lower()]
    sys.path_importer_cache.clear()
    forget_modules(set())
    return finder


def forget_modules(keep, pkg="numpy_transformer"):
    """Drop every module of `pkg` not in `keep` (half-imported ones included)."""
    for name in [n for n in sys.modules if n.split(".")[0] == pkg]:
        if name not in keep:
            del sys.modules[name]


def load_harness(folder):
    """The harness files beside this script, as the package `_nt_harness`."""
    spec = importlib.util.spec_from_file_location(
        HARNESS, os.path.join(folder, "__init__.py"), submodule_search_locations=[folder])
    package = importlib.util.module_from_spec(spec)
    sys.modules[HARNESS] = package
    spec.loader.exec_module(package)
    return importlib.import_module(f"{HARNESS}.harness")


def describe(error):
    text = f"{type(error).__name__}: {error}"
    return text if len(text) <= 300 else text[:297] + "..."


def run_tasks(harness, tasks, inputs, observer=None, pkg="numpy_transformer", standins=None):
    """Run every task on the student's package (named `pkg`), each part alone (stand-ins
    for the other parts' children); returns ({"<task id>.<name>": array}, {task id:
    status}). `inputs`: {"<task id>.<name>": array}. With an `observer` (observe.py) each
    watched task is watched while it runs, its report in its status ("observed"), and the
    first task of each watched kind runs again, wider, for its cost ("cost": the two
    counts), once every task's outputs are in."""
    if standins is None:
        standins = importlib.import_module(f"{HARNESS}.standins").StandIns
    outputs, status = {}, {}
    for task in tasks:
        prefix = task["id"] + "."
        arrays = {k[len(prefix):]: v for k, v in inputs.items() if k.startswith(prefix)}
        loaded = set(sys.modules)
        watching = observer is not None and observer.watched(task["kind"])
        if watching:
            observer.watch()
        try:
            found = harness.run_task(pkg, task, harness.Read(arrays), standins)
        except NotImplementedError as stub:
            status[task["id"]] = {"state": "not implemented",
                                  "message": (str(stub) or "NotImplementedError")[:300]}
        except Exception as error:                                  # noqa: BLE001
            status[task["id"]] = {"state": "error", "message": describe(error)}
            forget_modules(loaded, pkg)     # a module that failed to import is tried afresh
        else:
            outputs.update({prefix + name: value for name, value in found.items()})
            status[task["id"]] = {"state": "ok", "message": ""}
        if watching:
            status[task["id"]]["observed"] = observer.stop()
    if observer is not None:
        for tid, counts in observer.costs(harness, tasks, standins).items():
            status[tid]["cost"] = counts
    return outputs, status


def own_session():
    """A session of its own: in a PID namespace (namespaces.py) the worker starts in the group
    of `unshare`, outside, which `os.kill(0, ...)` would reach; already a leader elsewhere."""
    try:
        os.setsid()
    except (AttributeError, OSError):
        pass


def write_results(outputs_path, outputs, status_path, status):
    """Both result files, written in place (in a private root each is a file bound writable
    in a read-only folder: nothing can be created beside it), the status last: the grader
    reads an empty or half-written status as no results."""
    import numpy as np
    with open(outputs_path, "wb") as file:
        np.savez(file, **outputs)
    with open(status_path, "w", encoding="utf-8") as file:
        json.dump(status, file)


def main(argv):
    student_root, tasks_path, inputs_path, outputs_path, status_path = argv
    folder = os.path.dirname(os.path.abspath(__file__))
    student_root = os.path.realpath(student_root)
    own_session()
    finder = isolate(student_root)
    if os.path.isdir(NUMPY_IN_ROOT):          # NumPy alone, in a private root (namespaces.py)
        sys.path.append(NUMPY_IN_ROOT)
    import numpy as np
    harness = load_harness(folder)
    finder.loader = importlib.import_module(f"{HARNESS}.forgiving_loader").RepairingLoader
    with open(tasks_path, encoding="utf-8") as file:
        tasks = json.load(file)
    with np.load(inputs_path, allow_pickle=False) as arrays:
        inputs = {name: arrays[name] for name in arrays.files}
    try:
        import numpy_transformer
        where = os.path.realpath(os.path.dirname(numpy_transformer.__file__))
        if where != os.path.join(student_root, "numpy_transformer"):
            raise ImportError(f"numpy_transformer came from {where}, not from {student_root}")
        observer = importlib.import_module(f"{HARNESS}.observe").Observer(where, folder)
        outputs, status = run_tasks(harness, tasks, inputs, observer)
    except Exception as error:                                      # noqa: BLE001
        outputs, status = {}, {"fatal": {"state": "error", "message": describe(error)}}
    write_results(outputs_path, outputs, status_path, status)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
