"""Solution regions: finding them in the sources and turning them into stubs.

A region is a run of lines between two one-line comments,

    # BEGIN SOLUTION linear
    # HINT: one line that becomes the NotImplementedError message (optional)
    ...the reference code...
    # END SOLUTION

inside one function (or a notebook cell). The name after BEGIN is the
assignment part the region belongs to (a part may own several regions); a
region without a name is a lesson exercise. A lesson's region may name several
parts, `# BEGIN SOLUTION encoder_stack decoder_stack`, when its lines answer
each of them: a copy stubs it when it stubs any of them (`stubbed_as`). A
region of the package is a graded body, one part's: it names one
(`find_regions` refuses more). In a student copy the lines between the markers
become

    raise NotImplementedError("<function>: <hint> [assignment part <part>]")

indented like the markers, which stay so that students see where to write.
The part's name in the message tells whoever runs into the stub (a lesson, a
layer's gradient check, a model) which part of the assignment it needs.
"""

import ast
import re
import textwrap
from dataclasses import dataclass, replace
from pathlib import Path

from ...errors import InputError
from ...system.files import read_regular

BEGIN = re.compile(r"^(?P<indent>[ \t]*)# BEGIN SOLUTION(?: (?P<name>\w+(?: \w+)*))?[ \t]*$")
END = re.compile(r"^(?P<indent>[ \t]*)# END SOLUTION(?: (?P<name>\w+(?: \w+)*))?[ \t]*$")
HINT = re.compile(r"^[ \t]*# HINT: (?P<hint>.+?)[ \t]*$")


class MarkerError(InputError):
    """A malformed solution region (where and what is wrong)."""


@dataclass
class Region:
    part: str       # the name on the BEGIN line ("" when there is none)
    path: str       # file path relative to the scanned root, with "/" separators
    begin: int      # 0-based line index of the BEGIN marker
    end: int        # 0-based line index of the END marker
    indent: str     # the markers' indentation
    hint: str       # the HINT text, or "" when there is none
    qualname: str   # the enclosing function, e.g. "Linear.backward" ("" outside any)
    others: tuple = ()   # a lesson's region naming several parts: the names after the first

    @property
    def parts(self):
        """Every part the region names (none for a lesson's exercise)."""
        return (self.part, *self.others) if self.part else ()

    @property
    def module(self):
        """Dotted module path inside the package, e.g. "layers.linear"."""
        return self.path[:-len(".py")].replace("/", ".")

    @property
    def where(self):
        return f"{self.path}:{self.begin + 1} ({self.qualname or 'module level'})"


def parse_regions(lines, path="<source>"):
    """[(part, begin, end, indent, hint)] for the marker lines in `lines` (part: the BEGIN
    line's names, "encoder_stack decoder_stack" for two); raises MarkerError."""
    regions, open_ = [], None
    for i, line in enumerate(lines):
        begin, end = BEGIN.match(line), END.match(line)
        if begin:
            if open_ is not None:
                raise MarkerError(f"{path}:{i + 1}: BEGIN SOLUTION inside the region opened "
                                  f"at line {open_[1] + 1} (regions do not nest)")
            open_ = (begin["name"] or "", i, begin["indent"])
        elif end:
            if open_ is None:
                raise MarkerError(f"{path}:{i + 1}: END SOLUTION without a BEGIN SOLUTION")
            part, start, indent = open_
            if end["indent"] != indent:
                raise MarkerError(f"{path}:{i + 1}: END SOLUTION is not indented like its "
                                  f"BEGIN SOLUTION at line {start + 1}")
            if end["name"] and end["name"] != part:
                raise MarkerError(f"{path}:{i + 1}: END SOLUTION {end['name']} closes "
                                  f"BEGIN SOLUTION {part or '(no name)'} of line {start + 1}")
            hint = HINT.match(lines[start + 1]) if start + 1 < i else None
            body = lines[start + 1 + bool(hint):i]
            if not any(s.strip() and not s.strip().startswith("#") for s in body):
                raise MarkerError(f"{path}:{start + 1}: the region has no code")
            regions.append((part, start, i, indent, hint["hint"] if hint else ""))
            open_ = None
        elif "BEGIN SOLUTION" in line or "END SOLUTION" in line:
            raise MarkerError(f"{path}:{i + 1}: a marker must be a line of its own: "
                              f"'# BEGIN SOLUTION name' or '# END SOLUTION'")
    if open_ is not None:
        raise MarkerError(f"{path}:{open_[1] + 1}: BEGIN SOLUTION without an END SOLUTION")
    return regions


def _functions(tree):
    """(qualname, first line, last line) of every function, 1-based lines."""
    found = []

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    found.append((name, child.lineno, child.end_lineno))
                walk(child, name + ".")
    walk(tree, "")
    return found


def regions_in_source(text, path="<source>"):
    """The Regions of one source text (a file, or a notebook cell); raises MarkerError."""
    lines = text.splitlines()
    found = parse_regions(lines, path)
    try:
        functions = _functions(ast.parse(text)) if found else []
    except SyntaxError:                   # e.g. a notebook cell with IPython magics
        functions = []
    regions = []
    for names, begin, end, indent, hint in found:
        # The END comment may follow the function's last statement (comments are not
        # in the syntax tree), so compare the region's last line of code instead.
        code = [i + 1 for i in range(begin, end)
                if lines[i].strip() and not lines[i].strip().startswith("#")]
        inside = [(first, name) for name, first, last in functions
                  if first < begin + 1 and code[-1] <= last]
        qualname = max(inside)[1] if inside else ""          # the innermost function
        part, *others = names.split() or [""]
        regions.append(Region(part, path, begin, end, indent, hint, qualname, tuple(others)))
    return regions


def find_regions(root, files=None):
    """Every solution region in the .py files under `root` (sorted by file and line); a
    MarkerError for one naming several parts (a graded body is one part's)."""
    root = Path(root)
    paths = files if files is not None else sorted(root.rglob("*.py"))
    regions = []
    for path in paths:
        text = read_regular(path, str(path)).decode("utf-8")   # a student's: no FIFO
        if "SOLUTION" in text:
            regions += regions_in_source(text, Path(path).relative_to(root).as_posix())
    for r in regions:
        if r.others:
            raise MarkerError(f"{r.where}: names parts {', '.join(r.parts)}; a region of the "
                              "package is one part's graded body (only a lesson's may name "
                              "several)")
    return regions


def stubbed_as(region, parts):
    """The region as a copy stubbing `parts` stubs it, or None when the copy keeps it: a
    lesson's exercise always; a region naming parts when it names one of `parts`, as the
    first of them (its stub's message names a part the copy assigns)."""
    if not region.part:
        return region
    mine = [p for p in region.parts if p in parts]
    return replace(region, part=mine[0], others=()) if mine else None


def stub_lines(lines, regions, hint=None):
    """`lines` with the body of each region replaced by a NotImplementedError stub; `hint`,
    when given, gives the hint of a region (default: its HINT line)."""
    out, last = [], 0
    for r in sorted(regions, key=lambda r: r.begin):
        message = f"{r.qualname or r.path}: {(hint(r) if hint else r.hint) or 'write this part'}"
        if r.part:
            message += f" [assignment part {r.part}]"
        out += lines[last:r.begin + 1]
        out.append(f"{r.indent}raise NotImplementedError({message!r})")
        last = r.end
    return out + lines[last:]


def replace_region_bodies(lines, regions, bodies):
    """`lines` with the lines between the markers of each region set to `bodies[i]`."""
    out, last = [], 0
    for r, body in sorted(zip(regions, bodies), key=lambda pair: pair[0].begin):
        out += lines[last:r.begin + 1] + list(body)
        last = r.end
    return out + lines[last:]


def indented(body, indent):
    """The lines of the text `body`, dedented, then indented by `indent` (blank lines empty)."""
    lines = textwrap.dedent(body).strip("\n").split("\n")
    return [indent + line if line.strip() else "" for line in lines]


def write_region_bodies(root, regions, bodies):
    """In the files under `root`, set the lines between the markers of each of `regions`
    to the text `bodies[i]`, indented like the region's markers."""
    for path in sorted({r.path for r in regions}):
        mine = [(r, body) for r, body in zip(regions, bodies) if r.path == path]
        file = Path(root) / path
        lines = read_regular(file, str(file)).decode("utf-8").split("\n")
        lines = replace_region_bodies(lines, [r for r, _ in mine],
                                      [indented(body, r.indent) for r, body in mine])
        file.write_text("\n".join(lines), encoding="utf-8")
