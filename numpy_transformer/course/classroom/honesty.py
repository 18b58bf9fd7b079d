"""Answers that are not derivations: a static reading of each graded function of a copy.

Output tests cannot tell every shortcut from a derived backward. Complex-step
differentiation, `f(x + 1j*h).imag / h`, is exact to rounding and passes the
1e-12 rule; an answer read from a file passes wherever the file holds it. So
the grader also reads the code of each part (nothing of it runs here):

    review(root, parts)          -> {part: [Flag]} for the copy in `root`
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
"ag")`, a reference function the student changed). The flags are a teacher's
lead, not a proof; the output tests stay the grade.
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
       "file": "loads a file or data", "forward": "calls its own forward in its backward"}


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


def review(root, parts=None, reference=None):
    """{part: [Flag]} for the copy in `root` (its numpy_transformer/ package), each part's
    graded functions read as the reference's regions (in `reference`, default this
    package) name them. A file that does not parse is no flag (the part fails anyway)."""
    from ..copies.make import PACKAGE, package_regions
    from ...system.files import read_regular
    reference = Path(reference or PACKAGE)
    package = Path(root) / "numpy_transformer"
    wanted = set(parts) if parts is not None else None
    flags = {}
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
                flags.setdefault(r.part, []).extend(
                    scan_function(theirs[r.qualname], r.qualname, lines, r.part, path, added))
    return {part: sorted(set(found), key=lambda f: (f.path, f.line))
            for part, found in flags.items() if found}


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
