"""What a teacher needs for a class (issue 37, section 6).

A class is made from ONE student copy (`assignment make --parts linear softmax`, the
cheap parts), copied once per student, with planted solutions: the catalogue's right
bodies, correct alternative forms (each written once, by one student), catalogue
mistakes, stubs left as they are, and one solution copied with its names changed and
its lines reformatted (ada's, by bob). Graded with --jobs 2 it writes the CSV (the
same bytes as --jobs 1), class.json with every check's message and the sandbox line,
and the summary page with its figures, the causes per part and the similar pairs:
ada and bob, and no pair of independent right bodies.
"""

import json
import os
import shutil
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from numpy_transformer.course.classroom import class_run as classrun, similarity
from numpy_transformer.course.classroom.class_report import part_causes
from numpy_transformer.course.classroom.grade import GradeReport
from numpy_transformer.course.grading.scoring import CheckResult, PartResult
from numpy_transformer.course.classroom.grade_command import grade_command
from numpy_transformer.course.copies.make import make, package_regions
from numpy_transformer.course.copies.markers import write_region_bodies
from numpy_transformer.course.selftest.mistakes import MISTAKES
from numpy_transformer.course.parts import LESSONS
from numpy_transformer.course.selftest.right_bodies import RIGHT
from numpy_transformer.errors import InputError

pytest.importorskip("copydetect")
pytest.importorskip("matplotlib")

PARTS = ["linear", "softmax"]
LINEAR, SOFTMAX = "Linear.backward", "softmax_backward"
ALTERNATIVES = {      # correct forms other than the reference's, each one student's own
    LINEAR: ['''
x = self.saved_for_backward()
flat_x = x.reshape(-1, x.shape[-1])
flat_dy = dy.reshape(-1, dy.shape[-1])
dW = flat_x.T @ flat_dy
self.grads["weight"] += dW
if "bias" in self.params:
    self.grads["bias"] += flat_dy.sum(axis=0)
dx = flat_dy @ self.params["weight"].T
return dx.reshape(x.shape)''', '''
inp = self.saved_for_backward()
a = inp.reshape(-1, self.in_features)
b = dy.reshape(-1, self.out_features)
grad = xp.einsum("ni,no->io", a, b)
self.grads["weight"] += grad
if "bias" in self.params:
    self.grads["bias"] += b.sum(axis=0)
out = b @ self.params["weight"].T
return out.reshape(inp.shape)'''],
    SOFTMAX: ['''
s = (dp * p).sum(axis=axis, keepdims=True)
return p * dp - p * s''', '''
inner = fast.sum(p * dp, axis=axis, keepdims=True)
return (dp - inner) * p'''],
}
ADA = {LINEAR: '''
x = self.saved_for_backward()
W = self.params["weight"]
lead = tuple(range(x.ndim - 1))
g = xp.tensordot(x, dy, axes=(lead, lead))
self.grads["weight"] += g
if "bias" in self.params:
    self.grads["bias"] += dy.reshape(-1, dy.shape[-1]).sum(0)
return dy @ W.T''', SOFTMAX: '''
weighted = dp * p
total = weighted.sum(axis=axis, keepdims=True)
return weighted - p * total'''}
BOB = {LINEAR: '''
saved = self.saved_for_backward()      # what forward kept
M = self.params["weight"]
axes_ = tuple(
    range(saved.ndim - 1)
)
grad_w = xp.tensordot(saved, dy, axes=(axes_, axes_))

self.grads["weight"] += grad_w
if "bias" in self.params:
    self.grads["bias"] += dy.reshape(-1, dy.shape[-1]).sum(0)   # the bias
return dy @ M.T''', SOFTMAX: '''
prod = dp * p
tot = prod.sum(axis=axis,
               keepdims=True)
return prod - p * tot'''}


def plant(copy, bodies):
    """Write `bodies` ({function: text}) between the markers of those functions."""
    package = copy / "numpy_transformer"
    regions = [r for r in package_regions(package) if r.qualname in bodies]
    write_region_bodies(package, regions, [bodies[r.qualname] for r in regions])


def mistake(name):
    return next(m for m in MISTAKES if m.name == name)


def make_class(base, folder, size):
    """`size` copies of `base`: ada and bob (a renamed, reformatted copy of ada's), the
    alternative forms, mistakes, right bodies and stubs. Returns the folders in order."""
    names = ["ada", "bob"] + [f"s{i:02d}" for i in range(size - 2)]
    dirs = [shutil.copytree(base, folder / name) for name in names]
    plant(dirs[0], ADA)
    plant(dirs[1], BOB)
    once = [{LINEAR: ALTERNATIVES[LINEAR][0], SOFTMAX: ALTERNATIVES[SOFTMAX][0]},
            {LINEAR: ALTERNATIVES[LINEAR][1], SOFTMAX: ALTERNATIVES[SOFTMAX][1]}]
    again = [{LINEAR: RIGHT[LINEAR]}, "linear_overwrites", None, "softmax_elementwise"]
    for i, copy in enumerate(dirs[2:]):
        plan = once[i] if i < len(once) else again[i % len(again)]
        if isinstance(plan, str):
            mistake(plan).apply(copy)
        elif plan:
            plant(copy, plan)
    return dirs


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """ONE student copy of the cheap parts, without its lessons (not graded)."""
    out = tmp_path_factory.mktemp("class") / "base"
    make(out, parts=PARTS)
    shutil.rmtree(out / "notebooks", ignore_errors=True)
    return out


def run_class(dirs, folder, jobs, report=None):
    said = []
    status = grade_command(dirs, csv_out=folder / "class.csv", parts=PARTS, jobs=jobs,
                           report=report, out=said.append, seed=7)
    return status, said


def check_class(dirs, folder, report):
    """What every class run must have written (see the module)."""
    rows = (folder / "class.csv").read_text().splitlines()
    assert [r.split(",")[0] for r in rows] == ["student"] + [d.name for d in dirs]
    data = json.loads((folder / "class.json").read_text())
    assert [s["student"] for s in data["students"]] == [d.name for d in dirs]
    assert data["sandbox"].startswith("sandbox: ")
    for student in data["students"]:
        assert [p["part"] for p in student["parts"]] == PARTS
        assert all(c["message"] for p in student["parts"] for c in p["checks"])
    assert str(folder) not in (folder / "class.json").read_text()       # no absolute path
    assert [p["students"] for p in data["similar_pairs"]] == [["ada", "bob"]]
    assert data["similar_pairs"][0]["similarity"] >= 0.9
    page = (report / "index.html").read_text()
    assert page.count('src="data:image/png;base64,') == 2
    assert (report / "scores.png").read_bytes()[:4] == b"\x89PNG"
    assert (report / "pass_rates.png").stat().st_size > 1000
    assert "<td>ada and bob</td>" in page and "not implemented (" in page
    assert "assigned (=) instead of accumulated" in page      # linear_overwrites' cause
    assert page.count("assigned (=) instead of accumulated") == 1     # in 2 arrays: 1 cause
    return rows


@pytest.mark.slow
@pytest.mark.parametrize("size", [8, 30])
def test_a_class_grades_with_two_jobs_as_with_one(base, tmp_path, size):
    """The issue's class: 30 copies (8 in the quick run: every kind of copy once), --jobs 2
    then --jobs 1: the same tables in the same order, the same CSV and class.json (30 copies:
    about 8 s and 18 s on the 2-core CI machine)."""
    dirs = make_class(base, tmp_path / "hw", size)
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir(), two.mkdir()
    status, said = run_class(dirs, two, jobs=2, report=two / "summary")
    assert status == 1
    assert [line for line in said if line.startswith("== ")] == [f"== {d.name}" for d in dirs]
    check_class(dirs, two, two / "summary")
    assert not any("similar" in line for line in said[:-3])      # no table names a pair
    _, alone = run_class(dirs, one, jobs=1, report=one / "summary")
    assert alone[:-3] == said[:-3]                              # all but the files' paths
    assert (one / "class.csv").read_bytes() == (two / "class.csv").read_bytes()
    assert (one / "class.json").read_text() == (two / "class.json").read_text()


def test_a_report_without_copydetect_says_how_to_install_it(base, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "copydetect", None)          # as if not installed
    with pytest.raises(InputError, match=r"pip install copydetect .*\[course\]"):
        grade_command([base], csv_out=tmp_path / "c.csv", report=tmp_path / "r", parts=PARTS,
                      out=print)
    assert not list(tmp_path.iterdir())                            # nothing graded or written


def test_jobs_must_be_a_whole_positive_number(base, tmp_path):
    copies = [shutil.copytree(base, tmp_path / n) for n in ("a", "b")]
    with pytest.raises(InputError, match="--jobs: expected a whole number of at least 1, got 0"):
        grade_command(copies, csv_out=tmp_path / "c.csv", jobs=0, parts=PARTS)


def test_the_copy_points_to_assignment_check(base):
    readme = (base / "README.md").read_text()
    assert "    python -m numpy_transformer assignment check [PART ...]" in readme
    assert "| linear | 10 | Linear and TiedLinear backward |" in readme
    assert readme.count("| lesson 1, section 7 |") == 1           # where to read up
    done = subprocess.run([sys.executable, "-m", "numpy_transformer", "assignment", "grade", "."],
                          cwd=base, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": ""})
    assert done.returncode == 2
    assert "python -m numpy_transformer assignment check [PART ...]" in done.stderr


def test_the_lesson_of_part_linear_has_a_section_on_linear():
    number, section = LESSONS["linear"].removeprefix("lesson ").split(", section ")
    [book] = (Path(__file__).resolve().parents[2] / "notebooks").glob(f"{int(number):02d}_*")
    headings = [line for cell in json.loads(book.read_text())["cells"]
                if cell["cell_type"] == "markdown"
                for line in "".join(cell["source"]).splitlines() if line.startswith("## ")]
    assert any(h.startswith(f"## {section}.") and "Linear" in h for h in headings), headings


def test_a_parts_section_runs_without_optional_modules():
    """The section a part points to derives it and runs everywhere: none of its code uses a
    module the lesson treats as optional (lesson 16's, PyTorch, is skipped without it)."""
    from numpy_transformer.course.lessons.needs import optional_modules
    notebooks = Path(__file__).resolve().parents[2] / "notebooks"
    for part, where in LESSONS.items():
        if ", section " not in where:
            continue
        number, section = where.removeprefix("lesson ").split(", section ")
        [book] = notebooks.glob(f"{int(number):02d}_*")
        optional = optional_modules(book)
        inside, code = False, []
        for cell in json.loads(book.read_text())["cells"]:
            text = "".join(cell["source"])
            if cell["cell_type"] == "markdown" and text.startswith("## "):
                inside = text.startswith(f"## {section}.")
            elif inside and cell["cell_type"] == "code":
                code.append(text)
        assert code, (part, where)
        used = [m for m in optional if re.search(rf"\b{m}\b", "\n".join(code))]
        assert not used, (part, where, used)


STOP = '''
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)   # as in a terminal, wherever run
from numpy_transformer.course.classroom.grade_command import grade_command
grade_command(sys.argv[1:3], csv_out=sys.argv[3], parts=["linear"], jobs=2, timeout=3600)
'''


def test_ctrl_c_stops_every_grader_and_writes_nothing(base, tmp_path):
    """Two copies whose part sleeps: SIGINT to the class run ends it, its grader processes
    and their workers, and no CSV or JSON is written. (The parts sleep an hour, within the
    grader's limit: only the SIGINT ends them; the waits only guard against a hang.)"""
    dirs = [shutil.copytree(base, tmp_path / name) for name in ("ann", "ben")]
    for copy in dirs:
        plant(copy, {LINEAR: "import time\ntime.sleep(3600)\nreturn dy"})
    run = subprocess.Popen([sys.executable, "-c", STOP, *map(str, dirs), str(tmp_path / "c.csv")],
                           cwd=Path(__file__).resolve().parents[2], start_new_session=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(_workers(run.pid)) < 2:
        time.sleep(0.5)
    workers = _workers(run.pid)
    assert len(workers) == 2, "the two parts never ran at once"
    os.kill(run.pid, signal.SIGINT)                 # to the class run alone, not its group
    _, err = run.communicate(timeout=300)
    assert run.returncode != 0 and "KeyboardInterrupt" in err
    deadline = time.monotonic() + 300             # those being ended: looked for again
    while [pid for pid in workers if _running(pid)] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [pid for pid in workers if _running(pid)], err
    assert not list(tmp_path.glob("c.*"))


def _running(pid):
    """Whether process `pid` still runs (a zombie is dead: only its parent's wait is left)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _workers(root):
    """The grading workers among the descendants of process `root` (their own Python, past
    `unshare` and the sandbox's set-up)."""
    parent, lines = {}, {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            lines[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        parent[pid] = stat.rsplit(")", 1)[1].split()[1]
    family, grew = {str(root)}, True
    while grew:
        more = {pid for pid, up in parent.items() if up in family} - family
        family, grew = family | more, bool(more)
    return [pid for pid in family if "worker.py" in lines.get(pid, "")
            and "unshare" not in lines[pid] and "namespaces.py" not in lines[pid]]


def test_the_command_line_keeps_the_class_files_of_before(base, tmp_path):
    """--csv's JSON and --report's page are output files: none is replaced without
    --overwrite, and the refusal comes before any grading."""
    copies = [str(shutil.copytree(base, tmp_path / n)) for n in ("a", "b")]
    (tmp_path / "class.json").write_text("{}")
    command = [sys.executable, "-m", "numpy_transformer", "assignment", "grade", *copies,
               "--csv", str(tmp_path / "class.csv"), "--jobs", "2", "--parts", *PARTS]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--csv's JSON" in done.stderr and "--overwrite" in done.stderr
    (tmp_path / "class.json").unlink()
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "index.html").write_text("mine")
    done = subprocess.run(command + ["--report", str(tmp_path / "report")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--report's index.html" in done.stderr
    assert (tmp_path / "report" / "index.html").read_text() == "mine"


def test_renaming_and_reformatting_change_no_token_and_the_threshold_has_room():
    """bob's bodies are ada's renamed and reformatted: the same normalised tokens. Every
    pair of independent correct bodies of one function (the catalogue's right bodies, the
    alternative forms above) stays at least 0.2 below the threshold; ada and bob reach 1."""
    for function in (LINEAR, SOFTMAX):
        assert similarity.tokens(ADA[function]) == similarity.tokens(BOB[function])
        assert similarity.tokens(ADA[function]) != similarity.tokens(RIGHT.get(function, ""))
    part = {LINEAR: "linear", SOFTMAX: "softmax"}
    worst = 0.0
    for function, forms in ALTERNATIVES.items():
        bodies = [*forms, ADA[function]] + ([RIGHT[function]] if function in RIGHT else [])
        solutions = {f"form{i}": {part[function]: body} for i, body in enumerate(bodies)}
        pairs = similarity.scored_pairs(solutions, [part[function]])
        worst = max([worst] + [p["similarity"] for p in pairs])
    assert 0.5 < worst <= similarity.THRESHOLD - 0.2
    [pair] = similarity.scored_pairs({"ada": {"linear": ADA[LINEAR]},
                                      "bob": {"linear": BOB[LINEAR]}}, ["linear"])
    assert pair["similarity"] == 1.0 and pair["shared_tokens"] >= similarity.MIN_SHARED


ASSIGNED = "the expected one minus what it held before: assigned (=) instead of accumulated (+=)?"


def wrong(*arrays, cause=ASSIGNED):
    """A failed check's message (scoring.py's form) naming `cause` in each of `arrays`."""
    problems = "; ".join(f"the gradient of {a} (rel err 1.0e+00): your gradient of {a} is "
                         f"{cause}" for a in arrays)
    return f"{problems}. Expected: every contribution [a correct answer: rel err ~1e-15]"


def linear_report(*messages):
    checks = [CheckResult(f"check {i}", 0, 5, False, 1.0, m) for i, m in enumerate(messages)]
    return GradeReport("hw", [PartResult("linear", 0, 5 * len(checks), 1.0, messages[0],
                                         checks)])


def test_the_common_causes_count_each_cause_once_per_student():
    """A student with one slip seen in three arrays (over two checks) counts once for it,
    as does one who shows it in one array; a cause is worded without its array."""
    graded = [("ada", linear_report(wrong("weight", "bias"), wrong("weight"))),
              ("bob", linear_report(wrong("input 1"))),
              ("cy", linear_report(wrong("weight", cause="the transpose of the expected one"))),
              ("dan", "not graded: a damaged assignment.json")]
    assert part_causes(graded, "linear") == [(f"your array is {ASSIGNED}", 2),
                                             ("your array is the transpose of the expected one",
                                              1)]
