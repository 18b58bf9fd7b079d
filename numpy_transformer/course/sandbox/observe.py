"""Watching the student's code while it runs, in the grading worker: honesty by what runs.

honesty.py reads each graded function; a reading misses what is reached other than by a
name of the file (a helper module, getattr with a name built at run time, exec, a method
swapped in at import). So the worker (worker.py) also watches each task while it runs,
with a trace hook (sys.settrace) that acts only inside a WINDOW: a call the harness makes
into the student's code at a line of the harness that calls a backward (`module.backward(
dout)`, `softmax_backward(...)`, `layer.reapply(...)`) or a forward (`module.forward(...)`,
`softmax(...)`). The harness's own lines say which: they are the teacher's code, the
student's names decide nothing. Inside a window it notes

    ran_forward    a backward window ran a forward of the package: any `forward` or
                   `__call__` of a class of the package, or the module-level function F
                   whose F_backward is the entry; a forward window ran its own forward
                   again, inside itself (a numerical derivative taken in forward). Found by
                   code object (the classes' and modules' functions as they are after
                   import), so an alias, getattr, exec or a helper module changes nothing
    ran_complex    a complex value: a Python or NumPy complex, a complex array or dtype, a
                   complex constant in code that ran
    ran_precision  a Decimal, a Fraction or an object array
    ran_arith      a value of a class that defines arithmetic (__add__, __mul__, ...) and is
                   neither Python's nor NumPy's: dual numbers, a class of high precision
    tamper         the trace hook was replaced or switched off

in every local variable of the student's frames at each line, in every argument of every
Python function called and every value a Python function returns, wherever its code
lives (the student's files, exec'd strings, the standard library, NumPy's Python
functions). Each note is (kind, path, line) at the nearest line of the student's package.
The entry of each backward window is reported too, (path, first line, qualname) of the
code that ran: the teacher checks that it is the graded function's own (honesty.py),
not a method swapped in at import or a module-level object in the stub's place.

COST. A derivation's work does not depend on the width of the arrays (NumPy does it);
a numerical derivative needs one evaluation per input element or column. `costs` runs
the first task of each watched kind again on its own arrays, at the task's widths
(d_model, vocab, ... and the last axis of `shape`) and at WIDER times them, and counts
the events in the windows: calls of Python functions and lines run in the student's
frames (never time). The teacher compares the two counts (honesty.py).

Harness code: the standard library and NumPy only (worker.py loads it by path).
"""

import decimal
import fractions
import linecache
import os
import sys
import sysconfig
import threading

import numpy as np

UNWATCHED = frozenset({"adam", "adamw_decay"})   # optimizer steps: nothing to derive
WIDTHS = ("d_in", "d_out", "d_model", "d_ff", "vocab", "latent")   # task args, scaled
WIDER = 4
BACKWARD_SITES = ("backward(", ".reapply(")          # harness lines calling a backward
FORWARD_SITES = ("forward(", "softmax(", "scaled_dot_product_attention(",
                 "sinusoidal_table(", ".project(")
ARITHMETIC = ("__add__", "__radd__", "__mul__", "__rmul__", "__sub__", "__truediv__",
              "__pow__", "__array_ufunc__")
MAX_NOTES = 30              # notes kept per task (the status file stays small)
BUDGET = 400_000            # events of a cost run past which it stops: it grows anyway


class TooCostly(Exception):
    """A cost run went past its budget (raised from the trace hook)."""


def watched(kind):
    """Whether tasks of `kind` are watched (and their cost counted)."""
    return kind not in UNWATCHED


def wider(task, k):
    """`task` with its widths times `k` (the last axis of `shape`, `shape_q` too)."""
    args = dict(task.get("args", {}))
    for name in WIDTHS:
        if isinstance(args.get(name), int):
            args[name] *= k
    for name in ("shape", "shape_q"):
        if name in args:
            args[name] = [*args[name][:-1], args[name][-1] * k]
    return {**task, "args": args}


def _real(path):
    return os.path.realpath(path) + os.sep


class Observer:
    """The trace hook of one worker; `watch()` around each task, `report` after it."""

    def __init__(self, package, harness, pkg="numpy_transformer"):
        self.package, self.harness, self.pkg = _real(package), _real(harness), pkg
        paths = sysconfig.get_paths()
        self.system = tuple({_real(os.path.dirname(np.__file__)), _real(paths["stdlib"]),
                             _real(paths["platstdlib"])})
        self._places, self._sites, self._consts, self._types = {}, {}, {}, {}
        self._hook, self._settrace = self._call, sys.settrace
        sys.settrace = self._guard              # a student's sys.settrace is noted
        self.budget, self.report, self.window = None, None, None

    # -- the task -----------------------------------------------------------------------
    def watch(self, budget=None):
        """Start watching a task: a fresh report, the hook set in this thread and in new ones."""
        self.budget, self.window, self._depth, self._lines = budget, None, {}, {}
        self.report = {"windows": 0, "cost": 0, "notes": [], "entries": []}
        self._seen = set()
        threading.settrace(self._hook)
        self._settrace(self._hook)

    def stop(self):
        """Stop watching; the report of the task (a note if the hook was taken away)."""
        if sys.gettrace() != self._hook:
            self._note("tamper", None)
        self._settrace(None)
        threading.settrace(None)
        self.window = None
        return self.report

    def close(self):
        """Give sys.settrace back (the worker never needs to: its process ends)."""
        sys.settrace = self._settrace

    def _guard(self, function):
        """sys.settrace as the student sees it: calling it while watching is noted."""
        if self.report is not None and self.window is not None:
            self._note("tamper", sys._getframe(1))
        return self._settrace(function)

    # -- where code lives -----------------------------------------------------------------
    def _place(self, filename):
        """"harness", "system" (NumPy, the standard library, frozen modules) or "student"
        (the package, exec'd strings, anything else)."""
        place = self._places.get(filename)
        if place is None:
            real = _real(filename) if not filename.startswith("<") else filename
            place = ("harness" if real.startswith(self.harness) else
                     "system" if filename.startswith("<frozen") or real.startswith(self.system)
                     else "student")
            self._places[filename] = place
        return place

    def _site(self, frame):
        """"backward", "forward" or None: what the harness's line at `frame` calls."""
        key = (frame.f_code.co_filename, frame.f_lineno)
        if key not in self._sites:
            line = linecache.getline(*key)
            self._sites[key] = ("backward" if any(s in line for s in BACKWARD_SITES) else
                                "forward" if any(s in line for s in FORWARD_SITES) else None)
        return self._sites[key]

    def _where(self, frame):
        """(path in the package, line) of the innermost frame of the package from `frame`."""
        while frame is not None:
            name = frame.f_code.co_filename
            if not name.startswith("<") and _real(name).startswith(self.package):
                return os.path.relpath(os.path.realpath(name), self.package).replace(
                    os.sep, "/"), frame.f_lineno
            frame = frame.f_back
        return "", 0

    def _note(self, kind, frame, line=None):
        """Note `kind` at the nearest line of the package from `frame` (`line`: the frame's
        line to name, if not its current one): the first of each kind in each file."""
        path, where = self._where(frame)
        own = frame is not None and path and where == frame.f_lineno   # frame is the package's
        if line is not None and own:
            where = line
        if (kind, path) not in self._seen and len(self._seen) < MAX_NOTES:
            self._seen.add((kind, path))
            self.report["notes"].append([kind, path, where])

    # -- the package's forwards -------------------------------------------------------------
    def _forwards(self):
        """({code: "forward" or "call"} of every forward and __call__ of a class of the
        package that has a forward (a Module, a loss), {code of F_backward: code of F} of its
        module-level pairs), as they are now."""
        codes, pairs = {}, {}
        for name, module in list(sys.modules.items()):
            if name.split(".")[0] != self.pkg or module is None:
                continue
            functions = {}
            for attribute, value in list(vars(module).items()):
                if isinstance(value, type) and getattr(value, "__module__", None) == name \
                        and callable(getattr(value, "forward", None)):
                    for method, role in (("forward", "forward"), ("__call__", "call")):
                        code = getattr(value.__dict__.get(method), "__code__", None)
                        if code is not None:
                            codes[code] = role
                elif hasattr(value, "__code__"):
                    functions[attribute] = value.__code__
            pairs.update({functions[a + "_backward"]: code for a, code in functions.items()
                          if a + "_backward" in functions})
        return codes, pairs

    # -- the hook -------------------------------------------------------------------------
    def _call(self, frame, event, arg):
        """The global trace function: opens a window, and watches each call inside one."""
        if self.window is None:
            caller = frame.f_back
            if (caller is None or self._place(caller.f_code.co_filename) != "harness"
                    or self._place(frame.f_code.co_filename) != "student"):
                return None
            kind = self._site(caller)
            if kind is None:
                return None
            self._open(frame, kind)
        return self._inside(frame)

    def _open(self, frame, kind):
        self.forwards, pairs = self._forwards()
        code = frame.f_code
        self.window, self.kind, self._depth = frame, kind, {}
        self.own = pairs.get(code)            # the module-level forward of this backward
        self.counted = kind == "backward" or self.forwards.get(code) == "forward"
        self.report["windows"] += 1
        if kind == "backward":
            self.report["entries"].append([*self._where(frame)[:1], code.co_firstlineno,
                                           code.co_qualname])

    def _count(self):
        self.report["cost"] += self.counted
        if self.budget is not None and self.report["cost"] > self.budget:
            raise TooCostly(f"more than {self.budget} events")

    def _inside(self, frame):
        code = frame.f_code
        self._count()
        role = self.forwards.get(code)
        if self.kind == "backward" and (role is not None or code is self.own):
            self._note("ran_forward", frame.f_back)
        if self.kind == "forward" and (role == "forward" or frame is self.window):
            depth = self._depth.get(code, 0)
            if depth:
                self._note("ran_forward", frame.f_back)      # a forward inside itself
            self._depth[code] = depth + 1
        self._scan(frame.f_locals.values(), frame.f_back)     # the caller made the arguments
        student = self._place(code.co_filename) == "student"
        if student and self._complex_constant(code):
            self._note("ran_complex", frame)
        if not student:
            frame.f_trace_lines = False
        self._lines[frame] = None
        return self._local

    def _local(self, frame, event, arg):
        """The local trace function of a frame in a window: its lines (the student's frames),
        its return. A value is noted at the line that ran before it was seen."""
        if event == "line":
            self._count()
            self._scan(frame.f_locals.values(), frame, self._lines.get(frame))
            self._lines[frame] = frame.f_lineno
        elif event == "return":
            self._scan((arg,), frame)
            self._lines.pop(frame, None)
            if frame.f_code in self._depth:
                self._depth[frame.f_code] -= 1
            if frame is self.window:
                self.window = None
        return self._local

    # -- values ---------------------------------------------------------------------------
    def _complex_constant(self, code):
        if code not in self._consts:
            self._consts[code] = any(isinstance(c, complex) for c in code.co_consts)
        return self._consts[code]

    def _scan(self, values, frame, line=None):
        for value in values:
            kind = self._kind(value)
            if kind is not None:
                self._note(kind, frame, line)

    def _kind(self, value, depth=0):
        """The note a value calls for, or None."""
        family = self._types.get(type(value))
        if family is None:
            family = self._types[type(value)] = _family(type(value))
        if family == "plain":
            return None
        if family == "numpy":
            dtype = getattr(value, "dtype", value)
            kind = getattr(dtype, "kind", "")
            return "ran_complex" if kind == "c" else "ran_precision" if kind == "O" else None
        if family == "container":
            if depth >= 2:
                return None
            items = list(value.values() if isinstance(value, dict) else value) \
                if len(value) <= 8 else [*list(value)[:4], list(value)[-1]]
            return next((k for k in (self._kind(v, depth + 1) for v in items) if k), None)
        if family == "class":
            return ("ran_complex" if issubclass(value, (complex, np.complexfloating)) else
                    "ran_precision" if issubclass(value, (decimal.Decimal, fractions.Fraction))
                    else None)
        return family


    watched = staticmethod(watched)

    def costs(self, harness, tasks, standins):
        """{task id: [events at the task's widths, events at WIDER times them]} of the first task
        of each watched kind, on arrays of its own (Draw, a fixed seed); a run past the budget
        counts as the budget, one that fails as None (the task's own status says why)."""
        found, kinds = {}, set()
        for task in tasks:
            if task["kind"] in kinds or not watched(task["kind"]) or any(
                    a in task.get("args", {}) for a in ("mask",)):
                continue
            kinds.add(task["kind"])
            counts = []
            for k in (1, WIDER):
                self.watch(budget=BUDGET)
                try:
                    harness.run_task(self.pkg, wider(task, k), harness.Draw(k), standins)
                except TooCostly:
                    self.report["cost"] = BUDGET
                except Exception:                                       # noqa: BLE001
                    self.stop()
                    counts = None
                    break
                counts.append(self.stop()["cost"])
            found[task["id"]] = counts
        return found


def _family(kind):
    """"plain", "numpy", "container", "class", or the note every value of type `kind` calls for."""
    if issubclass(kind, (np.ndarray, np.generic, np.dtype)):
        return "numpy"
    if issubclass(kind, complex):
        return "ran_complex"
    if issubclass(kind, (decimal.Decimal, fractions.Fraction)):
        return "ran_precision"
    if kind in (list, tuple, dict, set, frozenset):
        return "container"
    if issubclass(kind, type):
        return "class"
    for base in kind.__mro__[:-1]:
        home = (getattr(base, "__module__", "") or "").split(".")[0]
        if home not in ("builtins", "numpy") and any(m in vars(base) for m in ARITHMETIC):
            return "ran_arith"
    return "plain"


