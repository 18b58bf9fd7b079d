"""Answers that are not derivations: a reading of each graded function of a copy, and what
the grading workers saw of it while it ran.

Output tests cannot tell every shortcut from a derived backward. Complex-step
differentiation, `f(x + 1j*h).imag / h`, is exact to rounding and passes the
1e-12 rule; an answer read from a file passes wherever the file holds it. So
the grader also reads the code of each part (nothing of it runs here):

    review(root, parts)          -> {part: [Flag]} for the copy in `root`: the reading's
                                    flags and those of what ran (below)
    flag_results(results, flags, refuse=False)   the flags put on the PartResults

A graded function is the one around each solution region of the reference
(markers.py; the whole function of that name in the student's file, so that
deleting the markers hides nothing), with the functions the student ADDED to
that file (names the reference's file does not define) that it calls. A flag
is one line of it that

    complex   evaluates on complex numbers: a complex literal (1j), complex(...), a
              complex dtype (np.complex128, "c16", astype("D")), np.emath
    imag      reads the imaginary or real part (.imag, .real, np.imag, np.real)
    file      loads a file or data: open, np.load, pickle, read_text, an import of a
              file or network module, a path such as "expected.npz"
    forward   in a backward, calls its own part's forward (self.forward, self(...),
              `softmax` inside `softmax_backward`)

The flags go to the teacher (the grade table, the JSON, a hidden Gradescope test),
each with its file, line and source line; with `refuse` (`assignment grade
--refuse-flagged`) a flagged part scores 0. The catalogue's right bodies and the
correct alternative forms raise no flag (tests/course/test_assignment_honesty.py).

What a reading cannot see: code the graded function reaches other than by a name
of its file (a helper in another module of the student's, `getattr(x, "im" +
"ag")`, exec, a method swapped in at import). So the worker also watches each part's
forward and backward while they run (sandbox/observe.py, which says how) and reports
with its results; `ran_flags` turns the reports into Flags of the same shape, at the
nearest line of the student's package (the graded function's `def` line when there is
none), with these kinds:

    ran_forward    a forward of the package ran inside a backward (any forward or
                   __call__ of a class of the package, F inside F_backward), or a forward
                   inside itself: found by code object, whatever the route
    ran_complex    a complex value was made (a number, an array, a dtype, a constant)
    ran_precision  a Decimal, a Fraction or an object array was made
    ran_arith      a value of a class of the student's that defines arithmetic (duals)
    tamper         the trace hook was switched off or replaced
    replaced       the backward the harness called is not the graded function of the
                   student's file (a method swapped in at import, a stub left while a
                   module-level object does the work)
    cost           the events of the backward (Python calls, lines of the student's) at
                   4 times the widths exceed GROWTH times those at the task's widths plus
                   SLACK: an evaluation per element or column, not a derivation
    unwatched      a watched task ran without a report

The reference, the catalogue's right bodies and the correct alternative forms raise none
(tests/course/test_honesty_runtime.py). Code that goes after the watch itself (ctypes,
a frame's f_trace rewritten, the status file written by hand) can hide from it, and a
numerical derivative elementwise in a layer without parameters, with the forward's
formula retyped (no forward run, flat cost) looks like a derivation to both readings.
The flags are a teacher's lead, not a proof; the output tests stay the grade.
"""

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from ...errors import InputError

COMPLEX_NAMES = {"complex", "complex64", "complex128", "complex256", "complex_", "cdouble",
                 "csingle", "clongdouble", "cfloat", "clongfloat", "emath", "scimath"}
COMPLEX_DTYPE = re.compile(r"^[<>=|]?(complex\d*|c\d+|[DFG])$")
FILE_CALLS = {"open", "load", "loads", "loadtxt", "genfromtxt", "fromfile", "memmap",
              "read_text", "read_bytes", "read", "readlines", "urlopen", "exec", "eval",
              "__import__"}
FILE_MODULES = {"pickle", "marshal", "shelve", "os", "io", "pathlib", "glob", "shutil",
                "zipfile", "tarfile", "gzip", "bz2", "lzma", "sqlite3", "urllib", "http",
                "socket", "subprocess", "requests"}
FILE_PATH = re.compile(r"\.(npz|npy|pkl|pickle|h5|mat)\b")      # a data file's name
WHY = {"complex": "computes on complex numbers", "imag": "reads .imag or .real",
       "file": "loads a file or data", "forward": "calls its own forward in its backward",
       # what the worker saw while the code ran (observe.py)
       "ran_forward": "ran a forward of the package inside its backward (or a forward "
                      "inside itself)",
       "ran_complex": "made complex numbers while it ran",
       "ran_precision": "made Decimal, Fraction or object values while it ran",
       "ran_arith": "computed with a class of its own that defines arithmetic (dual "
                    "numbers?)",
       "tamper": "switched the grader's watch off while it ran",
       "replaced": "the backward that ran is not the graded function (replaced at import?)",
       "cost": "does work that grows with the arrays' width (an evaluation per element: "
               "a numerical derivative?)",
       "unwatched": "ran without the grader's watch reporting on it"}
RAN = ("ran_forward", "ran_complex", "ran_precision", "ran_arith", "tamper")   # observe's notes
GROWTH, SLACK = 2, 50     # a cost flag: events at WIDER times the widths > GROWTH x + SLACK


@dataclass(frozen=True)
class Flag:
    part: str
    path: str        # in the package, e.g. "layers/activations.py"
    line: int        # 1-based
    kinds: tuple     # of complex, imag, file, forward (WHY)
    source: str      # the line, stripped

    @property
    def why(self):
        return ", ".join(WHY[k] for k in self.kinds)

    def to_dict(self):
        return {"path": self.path, "line": self.line, "kinds": list(self.kinds),
                "why": self.why, "source": self.source}

    def text(self):
        return f"{self.path}:{self.line}: {self.why}: {self.source}"


def _functions(tree):
    """{qualname: FunctionDef} of every function (methods as Class.name)."""
    found = {}

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    found[name] = child
                walk(child, name + ".")
    walk(tree, "")
    return found


def _forward_names(qualname):
    """What `qualname`'s forward is called: ("self", names) for a method, (None, names)."""
    owner, _, name = qualname.rpartition(".")
    if name != "backward" and not name.endswith("_backward"):
        return None, set()
    own = name[:-len("_backward")] if name.endswith("_backward") else "forward"
    return ("self" if owner else None), {own, "forward", "__call__"} if owner else {own}


def _dtype_text(node):
    return isinstance(node, ast.Constant) and isinstance(node.value, str) \
        and bool(COMPLEX_DTYPE.match(node.value))


def _call_kind(node, forward):
    """The kind of flag of the call `node`, or None."""
    func, (self_name, names) = node.func, forward
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    if isinstance(func, ast.Name) and func.id == "complex":
        return "complex"
    if name in ("astype", "view", "dtype", "asarray", "array", "zeros", "empty", "ones") and \
            any(_dtype_text(a) for a in [*node.args, *(k.value for k in node.keywords)]):
        return "complex"
    if any(k.arg == "dtype" and _dtype_text(k.value) for k in node.keywords):
        return "complex"
    if name in FILE_CALLS:
        return "file"
    owner = func.value if isinstance(func, ast.Attribute) else None
    if self_name and isinstance(owner, ast.Name) and owner.id == self_name and name in names:
        return "forward"                                        # self.forward(...)
    if self_name and isinstance(func, ast.Name) and func.id == self_name:
        return "forward"                                        # self(...)
    if not self_name and name in names:
        return "forward"                                        # softmax in softmax_backward
    return None


def _kind(node, forward):
    """The kind of flag of one syntax node, or None."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, complex):
            return "complex"
        if isinstance(node.value, str) and FILE_PATH.search(node.value):
            return "file"
    if isinstance(node, ast.Attribute) and node.attr in ("imag", "real"):
        return "imag"
    if isinstance(node, (ast.Attribute, ast.Name)) and \
            (node.attr if isinstance(node, ast.Attribute) else node.id) in COMPLEX_NAMES - {
                "complex"}:
        return "complex"
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) \
            else [node.module or ""]
        if any(m.split(".")[0] in FILE_MODULES for m in modules):
            return "file"
    if isinstance(node, ast.Call):
        return _call_kind(node, forward)
    return None


def scan_function(node, qualname, lines, part, path, added=None):
    """The Flags of the function `node` (named `qualname`) and of the functions of `added`
    ({name: FunctionDef}, the student's own) that it calls."""
    found, seen, todo = {}, set(), [(node, qualname)]
    while todo:
        fn, name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        forward = _forward_names(qualname)
        for sub in ast.walk(fn):
            kind = _kind(sub, forward)
            if kind is not None and hasattr(sub, "lineno"):
                found.setdefault(sub.lineno, set()).add(kind)
            if isinstance(sub, ast.Call) and added:
                called = getattr(sub.func, "id", None) or getattr(sub.func, "attr", None)
                if called in added:
                    todo.append((added[called], called))
    return [Flag(part, path, line, tuple(sorted(kinds)),
                 lines[line - 1].strip()[:200] if line <= len(lines) else "")
            for line, kinds in sorted(found.items())]


def _graded(root, parts, reference):
    """{part: [(path, qualname, FunctionDef, lines, added)]}: each part's graded functions as
    they are in the copy in `root` (read, never run), named by the reference's regions."""
    from ..copies.make import PACKAGE, package_regions
    from ...system.files import read_regular
    reference = Path(reference or PACKAGE)
    package = Path(root) / "numpy_transformer"
    wanted = set(parts) if parts is not None else None
    found = {}
    regions = [r for r in package_regions(reference) if wanted is None or r.part in wanted]
    for path in sorted({r.path for r in regions}):
        file = package / path
        if file.is_symlink():
            continue                           # read no file outside the copy
        try:
            text = read_regular(file, str(file)).decode("utf-8")
            tree, ours = ast.parse(text), ast.parse((reference / path).read_text("utf-8"))
        except (OSError, ValueError, SyntaxError, RecursionError, InputError):
            continue                           # missing, not a regular file, or no Python
        theirs, known = _functions(tree), _functions(ours)
        added = {q.rpartition(".")[2]: fn for q, fn in theirs.items() if q not in known}
        lines = re.split(r"\r\n|\r|\n", text)             # as the parser counts lines
        for r in (r for r in regions if r.path == path):
            if r.qualname in theirs:
                found.setdefault(r.part, []).append(
                    (path, r.qualname, theirs[r.qualname], lines, added))
    return found


def review(root, parts=None, reference=None, observed=None):
    """{part: [Flag]} for the copy in `root` (its numpy_transformer/ package): each part's
    graded functions read as the reference's regions (in `reference`, default this
    package) name them, and what the grading workers saw of them while they ran
    (`observed`: runner.observations's list; default, what the last grading of this copy
    left there, taken once). A file that does not parse is no flag (the part fails anyway)."""
    graded = _graded(root, parts, reference)
    flags = {}
    for part, functions in graded.items():
        for path, qualname, node, lines, added in functions:
            flags.setdefault(part, []).extend(
                scan_function(node, qualname, lines, part, path, added))
    if observed is None:
        from ..sandbox.runner import observations
        observed = observations(root)
    for part, found in ran_flags(graded, observed, parts, root).items():
        flags.setdefault(part, []).extend(found)
    return {part: sorted(set(found), key=lambda f: (f.path, f.line, f.kinds))
            for part, found in flags.items() if found}


def _part_of(kinds, parts):
    """The part (of `parts`, None: all) whose checks run exactly the task kinds `kinds`."""
    from ..grading.scoring import CHECKS
    for part in (parts if parts is not None else CHECKS):
        if sorted({t["kind"] for c in CHECKS.get(part, []) for t in c.tasks}) == list(kinds):
            return part
    return None


def ran_flags(graded, observed, parts=None, root=None):
    """{part: [Flag]} from what the workers saw (observe.py) of each part: `observed` is
    [(task kinds, {task id: kind}, status)] per part run; `graded` is _graded's; `root`,
    the copy, whose files give the source lines of flags outside the graded files."""
    flags, files = {}, {}

    def lines_of(path):
        if root is None or not path or path.startswith(("/", ".")) or ".." in path:
            return None
        if path not in files:
            from ...system.files import read_regular
            file = Path(root) / "numpy_transformer" / path
            try:
                files[path] = None if file.is_symlink() else re.split(
                    r"\r\n|\r|\n", read_regular(file, str(file)).decode("utf-8"))
            except (OSError, ValueError, InputError):
                files[path] = None
        return files[path]
    for kinds, tasks, status in observed:
        part = _part_of(kinds, parts)
        if part is not None and part in graded and isinstance(status, dict):
            flags.setdefault(part, []).extend(
                part_ran_flags(part, graded[part], tasks, status, lines_of))
    return flags


def part_ran_flags(part, functions, tasks, status, lines_of=lambda path: None):
    """The Flags of one part from its worker's status: the notes of each watched task, a
    backward that ran other than the graded function, a cost that grows with the width, a
    watched task that ran without a report."""
    from ..sandbox.observe import WIDER, watched
    path, _, node, lines, _ = functions[0]      # where a flag without a line of its own goes
    texts = {p: l for p, _, _, l, _ in functions}
    flags = set()

    def flag(kind, where, line, note=""):
        text = texts.get(where) or lines_of(where)
        if text is None or not 0 < line <= len(text):
            where, line, text = path, node.lineno, lines
        flags.add(Flag(part, where, line, (kind,), (text[line - 1].strip()[:200] + note)))
    for tid, kind in tasks.items():
        entry = status.get(tid)
        if not isinstance(entry, dict) or not watched(kind):
            continue
        ran, seen = entry.get("state") == "ok", entry.get("observed")
        if not isinstance(seen, dict):
            if ran:
                flag("unwatched", path, 0)
            continue
        if ran and not seen.get("windows"):
            flag("unwatched", path, 0)
        for note in _listed(seen.get("notes"), 3):
            if note[0] in RAN:
                flag(note[0], str(note[1]), _int(note[2]))
        for entry_path, first, qualname in _listed(seen.get("entries"), 3):
            inside = any(p == entry_path and fn.lineno <= _int(first) <= fn.end_lineno
                         for p, _, fn, _, _ in functions)
            if ran and not inside:
                flag("replaced", str(entry_path), _int(first),
                     f"  [ran {str(qualname)[:60]} of {entry_path or 'no file of the package'}]")
        cost = entry.get("cost")
        if isinstance(cost, list) and len(cost) == 2 and all(isinstance(c, int) for c in cost) \
                and cost[1] > GROWTH * cost[0] + SLACK:
            flag("cost", path, 0, f"  [{cost[0]} events at the task's widths, {cost[1]} at "
                                  f"{WIDER} times them]")
    return sorted(flags, key=lambda f: (f.path, f.line, f.kinds))


def _listed(value, width):
    """The entries of a worker's list that are lists of `width` items (others ignored)."""
    return [v for v in value if isinstance(v, list) and len(v) == width] \
        if isinstance(value, list) else []


def _int(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def flag_results(results, flags, refuse=False):
    """`results` (PartResults) with each part's flags attached; with `refuse`, a flagged
    part and each of its checks score 0, the reason in their messages."""
    for result in results:
        mine = flags.get(result.part, [])
        result.flags = [f.to_dict() for f in mine]
        if refuse and mine:
            why = (f"refused: the code was flagged for review ({mine[0].text()}"
                   + (f"; {len(mine) - 1} more" if len(mine) > 1 else "") + ")")
            result.points, result.message = 0, why
            for check in result.checks:
                check.points, check.passed, check.message = 0, False, why
    return results
