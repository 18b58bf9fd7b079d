"""Making a student copy: the package with the chosen parts' solutions turned into stubs.

    make(out, parts=None, solutions=False, teacher=False)   -> the manifest, writes the copy
    make_assignment(out, parts=None, ...)   the command line's `assignment make --out DIR`

The copy holds numpy_transformer/, notebooks/ when this package sits in a
source checkout, a README for students and assignment.json, which lists the
parts and tells `grade` that DIR is a student copy. Every file keeps its
place, its imports and its docstrings; only the lines between the markers of
the chosen parts change, and their key formulas (formulas.py) go from every
docstring, comment, hint and lesson of the copy (strip.py): a derivation gives
way to a sentence saying what to derive and which lesson teaches it. In the
notebooks, the lessons' exercise regions (markers without a part name) are
always stubbed, and named ones (a lesson cell that computes a part's answer)
when their part is chosen.

Nothing to copy: the grader (checks, stand-ins, scoring; the rooms copies/,
classroom/, sandbox/ and selftest/) stays in the teacher's package. The copy's course/
holds the part names (parts.py), the lessons' site (lessons/) and, in grading/, the
local check (local_check.py, diagnose.py, expected.npz) with the grader's scenarios
(harness.py, steps.py, scenarios_*.py: inputs and calls, no reference); its
course/__init__.py, written here, makes every module it lacks a stand-in that says
where grading runs, so `assignment make|grade` in a copy ends with that message.
The think questions' keys (notebooks/answers/) go only into a teacher copy.
Each chosen part also gets its written derivation, derivations/<part>.md (derivations.py):
a question the student answers in prose, graded by hand, worth `derivation_points` each
(recorded in assignment.json; 0: read, not scored) apart from the autograded points.
"""

import json
import shutil
from pathlib import Path

from .derivations import FOLDER as DERIVATIONS, write_templates
from .markers import (MarkerError, find_regions, regions_in_source, stub_lines, stubbed_as,
                      write_region_bodies)
from .installable import finish_copy
from .strip import strip_copy, where_hint
from .student_course import STUDENT_COURSE_INIT
from ..grading.local_check import write_expected
from ..grading.scoring import CHECKS, PARTS, TITLES, max_points, validate_parts
from ..parts import LESSONS
from ...errors import InputError
from ...system.files import read_regular

MANIFEST = "assignment.json"
PACKAGE = Path(__file__).resolve().parents[2]          # the reference numpy_transformer/
NOT_COPIED = ("__pycache__", "*.pyc", ".ipynb_checkpoints")
ANSWERS = "answers"              # notebooks/answers/: the think questions' keys, teacher only
STUDENT_GRADING = ("__init__.py", "local_check.py", "judgement.py", "diagnose.py", "harness.py",
                   "steps.py", "scenarios_layers.py", "scenarios_models.py")   # a copy's grading/
TEACHER_ROOMS = ("copies", "classroom", "sandbox", "selftest")       # rooms a copy leaves out
ANSWER_EACH_OTHER = {"encoder_stack", "decoder_stack"}      # parts alike enough to copy


def read_manifest(root, required=True):
    """The assignment.json of a student copy; ValueError when `root` is not one."""
    root = Path(root)
    path = root / MANIFEST
    if not (root / "numpy_transformer" / "__init__.py").is_file() or not path.exists():
        if not required:
            return None
        raise InputError(f"{root} is not a student copy: it needs numpy_transformer/ and "
                         f"{MANIFEST} (make one with `assignment make --out DIR`)")
    try:
        manifest = json.loads(read_regular(path, str(path)).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise InputError(f"{path} is damaged: it is not valid JSON ({err}); make the copy "
                         "again or restore the file") from None
    parts = manifest.get("parts") if isinstance(manifest, dict) else None
    if not isinstance(parts, list) or not all(isinstance(p, str) for p in parts):
        raise InputError(f"{path} is damaged: expected a JSON object whose \"parts\" is a "
                         "list of part names; make the copy again or restore the file")
    return manifest


def package_regions(package=PACKAGE):
    """Every solution region of the package; MarkerError if one names no known part."""
    files = [f for f in sorted(Path(package).rglob("*.py"))
             if f.relative_to(package).parts[0] != "course"]   # the grader's own text
    regions = find_regions(package, files)
    for r in regions:
        if r.part not in PARTS:
            raise MarkerError(f"{r.where}: region of unknown part {r.part or '(no name)'!r}; "
                              f"valid parts: {', '.join(PARTS)}")
        if not r.qualname:
            raise MarkerError(f"{r.where}: a solution region must lie inside a function")
    return regions


def notebook_regions(notebooks):
    """Every solution region of the lessons' code cells, as (notebook path, cell index, Region);
    MarkerError if a named one names no known part."""
    found = []
    for path in sorted(Path(notebooks).glob("*.ipynb")):
        for index, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            text = "".join(cell.get("source", []))
            if cell.get("cell_type") != "code" or "SOLUTION" not in text:
                continue
            for r in regions_in_source(text, f"{path.name} cell {index}"):
                for part in (p for p in r.parts if p not in PARTS):
                    raise MarkerError(f"{r.path}: region of unknown part {part!r}; "
                                      f"valid parts: {', '.join(PARTS)}")
                found.append((path, index, r))
    return found


def _left_out(folder, names):
    """shutil.copytree's `ignore`: the grader's rooms and files stay in the teacher's package."""
    folder = Path(folder)
    left = set(shutil.ignore_patterns(*NOT_COPIED)(folder, names))
    if folder == PACKAGE / "course":
        left |= set(TEACHER_ROOMS) & set(names)
    if folder == PACKAGE / "course" / "grading":
        left |= {n for n in names if n.endswith(".py") and n not in STUDENT_GRADING}
    return left


def _stub_notebook(path, parts):
    """Stub the marked regions in a notebook's code cells (unnamed regions always)."""
    book = json.loads(path.read_text(encoding="utf-8"))
    for cell in book.get("cells", []):
        source = cell.get("source", [])
        text = "".join(source) if isinstance(source, list) else source
        if cell.get("cell_type") != "code" or "SOLUTION" not in text:
            continue
        regions = [s for r in regions_in_source(text, path.name) if (s := stubbed_as(r, parts))]
        lines = stub_lines(text.split("\n"), regions,
                           lambda r: where_hint(r, parts))
        cell["source"] = [line + "\n" for line in lines[:-1]] + [lines[-1]]
        cell["outputs"], cell["execution_count"] = [], None
    path.write_text(json.dumps(book, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _readme(parts, regions, solutions, notebooks, teacher=False, derivation_points=0):
    lines = ["# Backward-pass assignment", "",
             "Each part below is a backward pass (or an optimizer step) whose body has been",
             "replaced by `raise NotImplementedError(...)`, between the lines",
             "`# BEGIN SOLUTION <part>` and `# END SOLUTION`. Replace the `raise` with your",
             "code; keep the markers. The docstrings give the forward, the shapes and what",
             "is saved; the derivation is yours (the lessons teach how).", "",
             "| part | points | what | where | read |", "|---|---|---|---|---|"]
    for part in parts:
        where = "<br>".join(f"`{r.path}` `{r.qualname}`" for r in regions if r.part == part)
        lines.append(f"| {part} | {max_points(part)} | {TITLES[part]} | {where} | "
                     f"{LESSONS[part]} |")
    lines += ["", "Install this copy, in a virtual environment of its own: `pip install -e .`",
              "(the lessons use this copy's package either way: their first cell says which).",
              "", "## Check your work", "",
              "From this folder (it imports the package here), check each part as the",
              "grader would, before you submit:", "",
              "    python -m numpy_transformer assignment check [PART ...]", "",
              "It runs the grader's kind of checks on public inputs and compares with",
              "expected outputs (numbers, not code: the teacher's reference run, in",
              "numpy_transformer/course/grading/expected.npz): per part `pass`, or what",
              "is wrong. Check your gradients against finite differences too:", "",
              "    python -m numpy_transformer gradcheck --layers-only", "",
              "Both report a part you have not written yet as `not implemented`",
              "(naming the part) and go on with the others. Grading runs from your teacher's",
              "installed package on inputs of its own; this copy holds no grader, and",
              "`assignment grade` here points back to `assignment check`.", "",
              "`gradcheck` compares every backward with float64 finite differences: a correct",
              "answer agrees to about 1e-9 relative, a wrong one is off by 1e-2 or more.",
              "The grader runs each part in a process of its own on inputs it draws, and",
              "compares your outputs and gradients with its reference results (1e-12",
              "relative; a correct answer agrees to about 1e-15). It also tests what finite",
              "differences cannot see: gradients must be ADDED into `grads` (+=, never =),",
              "repeated token ids and tied weights must receive every contribution, fully",
              "masked rows must stay finite. Composite parts run your code with simple",
              "stand-ins for the other parts' layers: call the children's backward."]
    worth = (f"worth {derivation_points} point{'s' * (derivation_points != 1)} each, graded "
             "by hand, apart from the points above" if derivation_points
             else "read by your teacher, apart from the points above")
    lines += ["", "## Written derivations", "",
              f"`{DERIVATIONS}/<part>.md` asks, for each part, a short derivation: the",
              "question, a table of shapes to fill in, and `## Your answer`, where you write",
              f"yours (Markdown; LaTeX between `$...$`). They are {worth}.",
              f"Submit `{DERIVATIONS}/` with your `numpy_transformer/` folder (or the whole",
              "copy): a file left as it came is graded `not answered`."]
    if notebooks:
        lines += ["", "The lessons in notebooks/ have exercises stubbed the same way; each check",
                  "after an exercise states the error a correct answer reaches. A lesson stops",
                  "at the first cell that needs a part you have not written, and the",
                  "NotImplementedError names that part."]
    if solutions:
        lines += ["", "(This is a solution copy: the reference code is still in place.)"]
    if teacher:
        lines += ["", "(A teacher copy: notebooks/answers/ holds the answer keys of the lessons'",
                  "think questions. Do not hand it out.)"]
    return "\n".join(lines) + "\n"


def make(out, parts=None, solutions=False, teacher=False, derivation_points=0):
    """Write a student copy into `out` (new or empty); returns its manifest.

    parts      the parts to stub (default: all, see PARTS); ValueError for unknown names
    solutions  keep the reference code in place (a solution copy, to check the grader)
    teacher    also copy the answer keys of the lessons' think questions (notebooks/answers/),
               and keep the parts' formulas in docstrings and lessons
    derivation_points  what each part's written derivation is worth, graded by hand apart
               from the autograded points (0: read by the teacher, not scored)
    """
    parts = validate_parts(parts)
    derivation_points = check_derivation_points(derivation_points)
    own = read_manifest(PACKAGE.parent, required=False)
    if own and own.get("stubbed"):
        raise InputError(f"{PACKAGE} belongs to a student copy; make assignments from the "
                         "reference package")
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"{out} already exists and is not an empty folder; choose a new one")
    regions = package_regions()
    notebooks = PACKAGE.parent / "notebooks"
    lessons = notebook_regions(notebooks) if notebooks.is_dir() else []   # checks their names
    target = out / "numpy_transformer"
    shutil.copytree(PACKAGE, target, ignore=_left_out)
    (target / "course" / "__init__.py").write_text(STUDENT_COURSE_INIT, encoding="utf-8")
    write_expected(target / "course" / "grading" / "expected.npz",
                   [c for part in PARTS for c in CHECKS[part]])
    stubbed = [] if solutions else parts
    for path in sorted({r.path for r in regions if r.part in stubbed}):
        file = target / path
        mine = [r for r in regions if r.path == path and r.part in stubbed]
        lines = stub_lines(file.read_text(encoding="utf-8").split("\n"), mine,
                           lambda r: where_hint(r, stubbed))
        file.write_text("\n".join(lines), encoding="utf-8")
    if notebooks.is_dir():
        keys = () if teacher else (ANSWERS,)
        shutil.copytree(notebooks, out / "notebooks",
                        ignore=shutil.ignore_patterns(*NOT_COPIED, *keys))
        for book in sorted({path.name for path, _, _ in lessons} if not solutions else []):
            _stub_notebook(out / "notebooks" / book, parts)
    strip_copy(out, [] if teacher else stubbed)      # a teacher's copy keeps the formulas
    finish_copy(out)                  # pyproject.toml; the lessons import this copy
    write_templates(out, parts, derivation_points)     # questions only: checked for formulas
    readme = _readme(parts, regions, solutions, notebooks.is_dir(),
                     teacher and notebooks.is_dir(), derivation_points)
    (out / "README.md").write_text(readme, encoding="utf-8")
    manifest = {"format": 1, "parts": parts, "stubbed": stubbed,
                "max_points": {p: max_points(p) for p in parts},
                "derivation_points": derivation_points}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def check_derivation_points(points):
    """`points` as a whole number >= 0; InputError otherwise."""
    if isinstance(points, bool) or not isinstance(points, int) or points < 0:
        raise InputError(f"--derivation-points: expected a whole number of at least 0, "
                         f"got {points!r}")
    return points


def derivation_points_of(manifest):
    """What each derivation of a copy is worth (its assignment.json; 0 in copies made before
    derivations, or when the entry is not a whole number >= 0)."""
    points = manifest.get("derivation_points", 0)
    return points if isinstance(points, int) and not isinstance(points, bool) \
        and points >= 0 else 0


def reveal(directory, parts):
    """Put the reference solution of `parts` back into a student copy (e.g. after a deadline),
    replacing whatever is between those parts' markers."""
    parts, root = validate_parts(parts), Path(directory)
    manifest = read_manifest(root)
    reference = [r for r in package_regions() if r.part in parts]
    paths = sorted({r.path for r in reference})
    theirs = [r for r in package_regions(root / "numpy_transformer")
              if r.part in parts and r.path in paths]
    for path in paths:
        if ([r.qualname for r in reference if r.path == path]
                != [r.qualname for r in theirs if r.path == path]):
            raise MarkerError(f"{root / 'numpy_transformer' / path}: its regions of "
                              f"{', '.join(parts)} do not match the reference's")
    sources = {path: (PACKAGE / path).read_text(encoding="utf-8").split("\n") for path in paths}
    write_region_bodies(root / "numpy_transformer", theirs,
                        ["\n".join(sources[r.path][r.begin + 1:r.end]) for r in reference])
    manifest["stubbed"] = [p for p in manifest["stubbed"] if p not in parts]
    (root / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def make_assignment(out, parts=None, solutions=False, out_fn=print, teacher=False,
                    derivation_points=0):
    """`assignment make --out DIR [--parts ...] [--solutions] [--teacher]
    [--derivation-points N]`: write the copy and say what it holds (teacher: with the answer
    keys of the think questions)."""
    manifest = make(out, parts, solutions=solutions, teacher=teacher,
                    derivation_points=derivation_points)
    what = "solution copy" if solutions else "student copy"
    keys = " with the answer keys (notebooks/answers/: not for students)" if teacher else ""
    out_fn(f"wrote a {what}{keys} to {out}: parts {', '.join(manifest['parts'])} "
           f"({sum(manifest['max_points'].values())} points), a derivation per part in "
           f"{Path(out) / DERIVATIONS} ({_worth_each(derivation_points)}); see "
           f"{Path(out) / 'README.md'}")
    alone = ANSWER_EACH_OTHER - set(manifest["parts"])
    if not solutions and len(alone) == 1:
        given, = alone
        out_fn(f"note: {given}'s backward is in this copy, and it nearly answers "
               f"{' and '.join(sorted(ANSWER_EACH_OTHER - alone))} (the two stacks' backward "
               "passes are alike): assign both stacks, or neither")
    return 0


def _worth_each(points):
    return f"{points} points each, graded by hand" if points else "graded by hand, no points"
