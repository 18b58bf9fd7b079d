"""Nothing to copy: a full student copy holds no line of any reference solution.

The scan makes a student copy with every part stubbed and reads every file in it
(code, docstrings, notebooks with their outputs, README, manifest) against

- every line of every solution region of the reference: the package's regions
  (one per part, new parts included automatically) and the lessons' (named
  ones, a cell computing a part's answer, and the unnamed exercises);
- every line of the grader that the copy must not carry: every module of
  assignment/ (the checks, the catalogue of mistakes, the runner, ...) but
  parts.py, which the copy carries, and make.py, installable.py,
  student_course.py and derivations.py, which hold the text of the copy's own
  small modules, pyproject.toml and derivation questions;
- every line of the answer keys of the think questions (notebooks/answers/).

Lines are compared with their whitespace normalised and a trailing comment
dropped. A line is trivial, and not looked for, only when it says nothing about
an answer: blank, a comment, a lone keyword (`pass`, `else:`, `try:`), lone
brackets, `return` of bare names (`return dx`), an import, a decorator, a
`def`/`class` header (a stub keeps every signature), unpacking what forward
saved (`xhat, r = self.saved`: the docstrings say what is saved), or the
`raise NotImplementedError(...)` of a stub. Lines that the reference shows
outside every region (package code, lesson cells, notebooks/README.md) are in
every copy whatever the regions hold, so they are not looked for when they
cannot reveal an answer: any such line of a lesson's exercise region (no part
name: the exercise reuses the lessons' scaffolding), and such lines under 30
characters of a part's region (`if eps:`, `p -= s2`); a longer line of a part's
solution that shows up outside the regions is a leak. Of the grader's files,
every line that the reference does not show elsewhere is looked for (what it
shares with the package, such as `except InputError as err:`, is not the
grader's, nor what it shares with parts.py, which a copy carries). In the
copy, the stub lines (which show the hints on purpose) are not searched. A line
of a solution is a hit when a line of the copy equals it, or, for a line of 30
characters or more, contains it (a docstring quoting the code). A hit names the
file, line, and where the solution line comes from.
"""

import json
import re
from pathlib import Path

import pytest

from numpy_transformer.course.copies.formulas import FORMULAS, formula_hits
from numpy_transformer.course.copies.strip import output_text, strip_notebook
from numpy_transformer.course.copies.make import make
from numpy_transformer.course.parts import LESSONS, PARTS
from numpy_transformer.course.copies.make import (ANSWERS, PACKAGE, STUDENT_GRADING,
                                                  TEACHER_ROOMS, notebook_regions,
                                                  package_regions)

ROOT = PACKAGE.parent
NOTEBOOKS = ROOT / "notebooks"
LONG = 30                       # solution lines this long are also found inside longer lines
COPY_WRITERS = ("make.py", "installable.py", "student_course.py",
                "derivations.py")                      # the copy's own files' text
COURSE = PACKAGE / "course"
STUDENT_SIDE = [COURSE / "parts.py", *(COURSE / "grading" / name for name in STUDENT_GRADING)]
GRADER_FILES = sorted(p for room in (*TEACHER_ROOMS, "grading") for p in (COURSE / room).glob("*.py"))
KEYWORDS = {"pass", "else:", "try:", "finally:", "break", "continue", "return", "return None"}


def normalise(line):
    """The code of a line: a trailing comment (one with no quote after its #) dropped,
    whitespace runs made one space."""
    return " ".join(re.sub(r"\s*#[^\"']*$", "", line).split())


def trivial(code):
    """True for a normalised line that tells nothing about any answer (see the docstring)."""
    return (not code or code in KEYWORDS or code.startswith(("import ", "from ", "@"))
            or re.fullmatch(r"[()\[\]{},:]+", code) is not None
            or re.fullmatch(r"return \w+(, \w+)*", code) is not None
            or re.fullmatch(r"(async )?(def|class) \w+.*:", code) is not None
            or re.fullmatch(r"\w+(, \w+)* = self\.saved(_for_backward\(\))?", code) is not None
            or code.startswith("raise NotImplementedError("))


def region_lines(lines, regions):
    """The code lines strictly inside each region, less its HINT (the stub shows the hint)."""
    for r in regions:
        for line in lines[r.begin + 1:r.end]:
            if not line.strip().startswith("# HINT:"):
                yield line


def cell_lines(book):
    """{cell index: source lines} of a notebook's code cells."""
    cells = json.loads(book.read_text(encoding="utf-8"))["cells"]
    return {i: "".join(c["source"]).split("\n") for i, c in enumerate(cells)
            if c["cell_type"] == "code"}


def lesson_cells():
    """[(notebook, cell index, source lines, [its Regions])] of every lesson's code cells."""
    lessons, found = notebook_regions(NOTEBOOKS), []
    for book in sorted(NOTEBOOKS.glob("*.ipynb")):
        for index, lines in cell_lines(book).items():
            found.append((book, index, lines,
                          [r for b, i, r in lessons if b == book and i == index]))
    return found


def outside_regions(lines, regions):
    inside = {i for r in regions for i in range(r.begin, r.end + 1)}
    return [line for i, line in enumerate(lines) if i not in inside]


def solution_lines():
    """{normalised line: where it comes from} for every region, grader file and answer key."""
    found, regions, cells = {}, package_regions(), lesson_cells()
    files = {path: (PACKAGE / path).read_text(encoding="utf-8").split("\n") for path in
             sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")
                    if p not in GRADER_FILES and p != COURSE / "parts.py")}
    shown = [(NOTEBOOKS / "README.md").read_text(encoding="utf-8").split("\n")]
    shown += [path.read_text(encoding="utf-8").split("\n") for path in STUDENT_SIDE]
    shown += [outside_regions(lines, [r for r in regions if r.path == path])
              for path, lines in files.items()]
    shown += [outside_regions(lines, mine) for _, _, lines, mine in cells]
    given = {normalise(line) for lines in shown for line in lines}

    def add(lines, where, exempt=lambda code: False):
        for line in lines:
            code = normalise(line)
            if not (trivial(code) or exempt(code)):
                found.setdefault(code, where)

    short_and_shown = lambda code: code in given and len(code) < LONG     # noqa: E731
    for path in sorted({r.path for r in regions}):
        add(region_lines(files[path], [r for r in regions if r.path == path]),
            f"solution region of {path}", short_and_shown)
    for book, index, lines, mine in cells:
        for r in mine:
            add(region_lines(lines, [r]), f"solution region of {r.path}",
                short_and_shown if r.part else given.__contains__)
    for path in GRADER_FILES:
        if path not in STUDENT_SIDE and path.name not in COPY_WRITERS:     # the copy's own text
            add(path.read_text(encoding="utf-8").split("\n"),
                f"grader file {path.relative_to(COURSE).as_posix()}", given.__contains__)
    for path in sorted((NOTEBOOKS / ANSWERS).glob("*.md")):
        add(path.read_text(encoding="utf-8").split("\n"), f"answer key {path.name}")
    return found


def text_lines(path):
    """Every line of a copied file: a notebook's sources and every output of every cell
    (streams, results and displays in every form, errors with their tracebacks), any other
    text file."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return []
    if path.suffix != ".ipynb":
        return text.split("\n")
    lines = []
    for cell in json.loads(text)["cells"]:
        lines += "".join(cell.get("source", [])).split("\n")
        for output in cell.get("outputs", []):      # printed, displayed, raised: all shown
            lines += output_text(output).split("\n")
    return lines


def leaks(copy, solutions):
    """[(file:line, line, where the solution line comes from)] for every hit in `copy`."""
    long_lines = [(code, where) for code, where in solutions.items() if len(code) >= LONG]
    hits = []
    for path in sorted(p for p in Path(copy).rglob("*") if p.is_file()):
        for number, line in enumerate(text_lines(path), start=1):
            code = " ".join(line.split())
            if code.startswith("raise NotImplementedError("):
                continue                                  # a stub: its hint is shown on purpose
            where = solutions.get(normalise(line))
            where = where or next((w for s, w in long_lines if s in code), None)
            if where:
                hits.append((f"{path.relative_to(copy)}:{number}", line.strip(), where))
    return hits


@pytest.fixture(scope="module")
def solutions():
    return solution_lines()


def test_the_scan_knows_the_solutions(solutions):
    """The scan has something to look for: every part's regions, the lessons', the checks,
    the answer keys; and it finds them in a solution copy, where they are all in place."""
    sources = set(solutions.values())
    assert any("layers/linear.py" in s for s in sources)
    assert any(".ipynb cell" in s for s in sources)
    assert any("checks_training.py" in s for s in sources)
    assert any(s.startswith("answer key") for s in sources)
    assert "self.grads[\"weight\"] += x2.T @ dy2" in solutions


def test_the_scan_finds_a_planted_leak(tmp_path, solutions):
    (tmp_path / "numpy_transformer").mkdir()
    (tmp_path / "numpy_transformer" / "helper.py").write_text(
        'def f(x2, dy2):\n    """Hint: self.grads["weight"] += x2.T @ dy2."""\n    return dx\n')
    assert leaks(tmp_path, solutions) == [
        ("numpy_transformer/helper.py:2", '"""Hint: self.grads["weight"] += x2.T @ dy2."""',
         "solution region of layers/linear.py")]


def test_trivial_lines_are_few_and_say_nothing():
    assert all(trivial(normalise(line)) for line in
               ["", "    # undo (3)", "pass", "    return dx", "return dq, dk, dv", ")",
                "    ]", "import numpy as np", "@check('linear', 2, '')", "else:"])
    assert not any(trivial(normalise(line)) for line in
                   ["return dy @ W.T", "dx = dout", "d = 2 * x", "return self.w.backward(d)"])


@pytest.mark.slow
def test_full_student_copy_holds_no_solution_grader_or_answer_key(student_copy, solutions):
    hits = leaks(student_copy, solutions)
    assert not hits, "solution lines in the student copy:\n" + "\n".join(
        f"  {where}: {line!r}  (from {source})" for where, line, source in hits)


def test_student_copy_has_no_grader_and_no_answers(student_copy):
    course = student_copy / "numpy_transformer" / "course"
    assert sorted(p.name for p in course.iterdir()) == ["__init__.py", "grading", "lessons",
                                                       "parts.py"]
    assert sorted(p.name for p in (course / "grading").iterdir()) == sorted(
        ["expected.npz", *STUDENT_GRADING])
    assert not (student_copy / "notebooks" / ANSWERS).exists()
    assert "textbook_adam" not in "\n".join(
        p.read_text(encoding="utf-8", errors="replace")
        for p in student_copy.rglob("*") if p.is_file())


def test_every_think_question_has_an_answer_key():
    """Each lesson asking a "(think)" question has notebooks/answers/<lesson>.md answering it."""
    asked = [book for book in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
             if "(think)" in book.read_text(encoding="utf-8")]
    assert len(asked) >= 14
    for book in asked:
        key = NOTEBOOKS / ANSWERS / f"{book.stem}.md"
        assert key.is_file(), f"{book.name}: its think question has no answer key {key}"
        assert "exercise 3 (think)" in key.read_text(encoding="utf-8").splitlines()[0]


def test_teacher_copy_carries_the_answer_keys(tmp_path):
    manifest = make(tmp_path / "teacher", solutions=True, teacher=True)
    keys = sorted(p.name for p in (tmp_path / "teacher" / "notebooks" / ANSWERS).iterdir())
    assert keys == sorted(p.name for p in (NOTEBOOKS / ANSWERS).iterdir())
    assert manifest["stubbed"] == []
    readme = (tmp_path / "teacher" / "README.md").read_text(encoding="utf-8")
    assert "notebooks/answers/ holds the answer keys" in readme


def formula_leaks(copy):
    """[(file:line, parts, line)] for every line of `copy` holding a part's key formula."""
    return [(f"{path.relative_to(copy)}:{number}", parts, line.strip())
            for path in sorted(p for p in Path(copy).rglob("*") if p.is_file())
            for number, line in enumerate(text_lines(path), start=1)
            for parts in [formula_hits(line)] if parts]


@pytest.mark.slow
def test_full_student_copy_states_no_part_formula(student_copy):
    """Docstrings, comments, hints, lessons (prose and code) and README: no key formula of
    any part (formulas.py, read by meaning) is left; the derivations say what to derive and
    where (over two lines and in the grader's messages: test_assignment_meaning.py)."""
    hits = formula_leaks(student_copy)
    assert not hits, "key formulas in the student copy:\n" + "\n".join(
        f"  {where} {parts}: {line!r}" for where, parts, line in hits)
    norm = (student_copy / "numpy_transformer" / "layers" / "normalization.py").read_text()
    assert "Backward: derive it yourself (assignment part layernorm: lesson 4)." in norm
    assert "y = gamma * xhat + beta" in norm and "Saved: xhat and r" in norm    # forward stays
    linear = (student_copy / "numpy_transformer" / "layers" / "linear.py").read_text()
    assert (f"Linear.backward: write this part (see {LESSONS['linear']} and the docstrings in "
            "this file) [assignment part linear]") in linear


@pytest.mark.slow
def test_every_part_has_formulas_that_the_reference_states():
    """Each part names its key formulas, and the reference (package and lessons) holds
    some of them: the scan above looks for something real."""
    assert sorted(FORMULAS) == sorted(PARTS)
    found = {part for path in list(PACKAGE.rglob("*.py")) + list(NOTEBOOKS.glob("*.ipynb"))
             if "assignment" not in path.parts
             for line in text_lines(path) for part in formula_hits(line)}
    assert found == set(PARTS)


@pytest.mark.slow
def test_a_copy_keeps_the_formulas_of_the_parts_it_does_not_stub_and_a_teachers_all(tmp_path):
    make(tmp_path / "solution", solutions=True, teacher=True)
    make(tmp_path / "linear", parts=["linear"])
    make(tmp_path / "teacher", parts=["linear"], teacher=True)
    assert {p for _, parts, _ in formula_leaks(tmp_path / "solution") for p in parts} == set(PARTS)
    left = {p for _, parts, _ in formula_leaks(tmp_path / "linear") for p in parts}
    assert "linear" not in left and {"layernorm", "attention", "adam"} <= left
    kept = {p for _, parts, _ in formula_leaks(tmp_path / "teacher") for p in parts}
    assert "linear" in kept                     # a teacher's copy keeps the derivations


# The lines that testers found where a student reads (issue 49, item 5), as the reference
# held them before this change: (where, the part whose answer it gives, the line). The
# formula scan read by meaning found none of them then; it must find each now.
QUOTED = [
    ("notebooks/03_multi_head_attention_backward.ipynb cell 9", "softmax",
     "J = np.diag(a) - np.outer(a, a)                    # (Tk, Tk) the softmax Jacobian "
     "(symmetric)"),
    ("notebooks/03_multi_head_attention_backward.ipynb cell 9", "softmax",
     'print("J @ da == a * (da - a.da);  J costs Tk^2 =", J.size, "numbers, the JVP Tk =", '
     'a.size)'),
    ("notebooks/04_layernorm_feedforward_residual.ipynb cell 11", "encoder_stack",
     "    dx_identity, df = sub.exit_backward(dy)         # (B, S, D) each"),
    ("notebooks/04_layernorm_feedforward_residual.ipynb cell 11", "encoder_stack",
     "    dx = dx_identity + sub.enter_backward(ffn.backward(df))    # x fed two paths: add"),
    ("numpy_transformer/layers/residual.py", "encoder_stack",
     "        dx, df = exit_backward(dy)     dx: the gradient of x through the identity path"),
    ("numpy_transformer/layers/residual.py", "encoder_stack",
     "        dh = sublayer backward of df   (the block's call)"),
    ("numpy_transformer/layers/residual.py", "encoder_stack",
     "        dx = dx + enter_backward(dh)   x fed two paths, the identity and the sublayer: add"),
    ("numpy_transformer/layers/residual.py", "encoder_stack",
     "        post-norm: dz = norm.backward(dy);  dx = dz + dh        df = dropout.backward(dz)"),
    ("numpy_transformer/layers/residual.py", "encoder_stack",
     "        pre-norm:  dz = dy;                 dx = dz + norm.backward(dh)"),
    ("numpy_transformer/layers/fast.py", "embedding",
     "    a[index[i]] += values[i] for every i, a repeated index adding every time."),
]
# More of the same, found around them: lesson 4's table and paragraph of cell 10, the
# gradient-check case that joined a SublayerConnection's halves (gradcheck_cases.py), lesson
# 3's sum of a row of dS, lesson 8's first bug (the correct dx less LayerNorm's third term).
AROUND = [
    ("notebooks/04_layernorm_feedforward_residual.ipynb cell 10", "encoder_stack",
     r"| post-norm (paper) | $z = x + f(x),\quad y = \mathrm{LN}(z)$ | $dz = \mathrm{LN}'(dy),"
     r"\quad dx = dz + f'(dz)$ |"),
    ("notebooks/04_layernorm_feedforward_residual.ipynb cell 10", "encoder_stack",
     r"| pre-norm | $y = x + f(\mathrm{LN}(x))$ | $dx = dy + \mathrm{LN}'\big(f'(dy)\big)$ |"),
    ("notebooks/04_layernorm_feedforward_residual.ipynb cell 10", "encoder_stack",
     "the sublayer's backward and `sub.enter_backward` bring back the other path's, and the "
     "two add:"),
    ("numpy_transformer/gradcheck_cases.py", "encoder_stack",
     "            dx, df = self.exit_backward(dout)"),
    ("numpy_transformer/gradcheck_cases.py", "encoder_stack",
     "            return dx + self.enter_backward(self.ff.backward(df))"),
    ("notebooks/03_multi_head_attention_backward.ipynb cell 14", "softmax",
     r"$\sum_k dS_{ik} = a\cdot da - (a\cdot da)\sum_k a_k = 0$. Hence $db_k = s\sum_i Q_i "
     r"\sum_k dS_{ik} = 0$."),
    ("notebooks/08_gradient_checking.ipynb cell 9", "layernorm",
     '        return dx + r * xhat * (dy * self.params["gamma"] * xhat).mean(axis=-1, '
     'keepdims=True)   # BUG: the term through sigma is gone'),
]
# The rest of item 5: log-softmax's backward (one step from softmax's answer, dz = dp p, and
# from cross-entropy's, dz = -q) and the key bias's zero gradient (softmax ignores a constant
# added to a row: lesson 3's question, part multihead_attention), in the docstrings, lessons
# and the grader's text a copy carries; the lessons' index naming the embedding's backward a
# scatter-add; lesson 13 giving the L2 term's gradient (half of its adamw question); GPT's
# docstring giving a stack's backward. Two sentences wrapped over two lines are quoted joined.
REST = [
    ("numpy_transformer/layers/softmax.py", "softmax",
     "Backward: dx = dz - softmax(x) * sum_j dz_j."),
    ("numpy_transformer/layers/softmax.py", "cross_entropy",
     "Backward: dx = dz - softmax(x) * sum_j dz_j."),
    ("numpy_transformer/layers/softmax.py", "cross_entropy",
     "    dx = dz - softmax(x) * sum(dz) for z = log_softmax(x)."),
    ("numpy_transformer/layers/attention.py", "multihead_attention",
     "    Note: b_k adds q . b_k to a whole row of scores, which softmax ignores, so its"),
    ("numpy_transformer/gradcheck_cases.py", "multihead_attention",
     "(w_k.bias: softmax ignores a constant added to a row), at 1e-3 a correct"),
    ("numpy_transformer/course/grading/judgement.py", "multihead_attention",
     "arithmetic comes out as rounding noise: the gradient of the key projection's bias in "
     "multi-head attention (a softmax ignores a shift of its row, so the sum of dK over the"),
    ("notebooks/15_data_parallel_by_hand.ipynb cell 10", "multihead_attention",
     "exactly 0 (adding $b_k$ shifts a whole row of scores, which softmax ignores: lesson 3), "
     "so both runs hand"),
    ("notebooks/03_multi_head_attention_backward.ipynb cell 14", "multihead_attention",
     r"the gradient: it is zero up to rounding. The key bias adds $Q_i\cdot b_k$ to *every* "
     r"score of row $i$ — the same number for all keys — and softmax ignores a constant added to"),
    ("notebooks/README.md", "embedding",
     "| [01_embeddings_and_positional_encoding](01_embeddings_and_positional_encoding.ipynb) | "
     "token embeddings and the `sqrt(D)` scale, the embedding's scatter-add backward, the "
     "sinusoidal encoding"),
    ("numpy_transformer/models/gpt.py", "encoder_stack",
     "    Backward: the same path in reverse: projection, the stack (final norm, the blocks"),
    ("notebooks/13_adamw_and_weight_decay.ipynb cell 8", "adamw",
     r"decay acts on it. With L2, Adam sees the gradient $\tilde g = \lambda\theta$ and divides by "
     "its own size:"),
]


def notebook(path, cells):
    """Write a notebook of `cells`: (cell type, source, [outputs]) each."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cells": [
        {"cell_type": kind, "metadata": {}, "source": source,
         **({"outputs": outputs, "execution_count": 1} if kind == "code" else {})}
        for kind, source, outputs in cells], "metadata": {}, "nbformat": 4,
        "nbformat_minor": 5}), encoding="utf-8")


def plant_quoted(root, quoted):
    """Each quoted line back in a file of its kind under `root`: a lesson's cell (code or
    markdown), a module's docstring. Returns {(file, line number): the quoted line}."""
    where = {}
    for i, (source, _, line) in enumerate(quoted):
        if ".ipynb" in source:
            kind = "markdown" if line.lstrip().startswith(("|", "the ", "$")) else "code"
            notebook(root / "notebooks" / f"{i:02d}.ipynb", [(kind, line, [])])
            where[(f"notebooks/{i:02d}.ipynb", 1)] = line
        else:
            path = root / "numpy_transformer" / f"quoted_{i:02d}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f'class Quoted:\n    """A layer.\n\n{line}\n    """\n',
                            encoding="utf-8")
            where[(f"numpy_transformer/{path.name}", 4)] = line
    return where


@pytest.mark.parametrize("quoted", [QUOTED, AROUND, REST], ids=["quoted", "around", "rest"])
def test_the_reader_finds_every_line_testers_quoted(tmp_path, quoted):
    """Each line, put back in a file of its kind, is found by the scan of a copy, with the
    part whose answer it gives (those of residual.py, also decoder_stack's)."""
    assert len(QUOTED) == 10
    where = plant_quoted(tmp_path, quoted)
    found = {(name, int(number)): parts for name, parts, _ in formula_leaks(tmp_path)
             for name, number in [name.rsplit(":", 1)]}
    missed = [line for spot, line in where.items() if spot not in found]
    assert not missed, "not found:\n" + "\n".join(missed)
    for (spot, line), (_, part, _) in zip(where.items(), quoted):
        assert part in found[spot], (line, found[spot])


def test_the_reader_reads_every_output_of_every_cell(tmp_path, solutions):
    """A lesson whose code is harmless but whose saved outputs print answers: a stream, a
    displayed result (text/plain and text/html) and an error's traceback, each found."""
    notebook(tmp_path / "notebooks" / "03_x.ipynb", [
        ("markdown", "One row, both ways:", []),
        ("code", "show(J, da)", [
            {"output_type": "stream", "name": "stdout",
             "text": ["checked: J @ da == a * (da - a.da)\n"]},
            {"output_type": "execute_result", "execution_count": 1, "metadata": {},
             "data": {"text/plain": ["'fine'"],
                      "text/html": ["<p>post-norm: dz = norm.backward(dy); dx = dz + dh</p>"]}},
            {"output_type": "error", "ename": "AssertionError", "evalue": "mismatch",
             "traceback": ["Traceback (most recent call last):",
                           '    self.grads["weight"] += x2.T @ dy2']}]),
        ("code", "print(D)", [{"output_type": "stream", "name": "stdout", "text": ["12\n"]}])])
    said = [(where, parts) for where, parts, _ in formula_leaks(tmp_path)]
    assert [parts for _, parts in said] == [["softmax"], ["encoder_stack", "decoder_stack"],
                                            ["linear"]]
    assert [line for _, line, _ in leaks(tmp_path, solutions)] == [
        'self.grads["weight"] += x2.T @ dy2']


def test_a_copy_leaves_out_the_outputs_that_print_an_answer(tmp_path):
    """strip_notebook clears a cell's outputs when one states a stubbed part's formula (the
    student runs the cell anyway) and keeps every other cell's."""
    path = tmp_path / "03_x.ipynb"
    notebook(path, [
        ("code", "check(J, da)", [{"output_type": "stream", "name": "stdout",
                                   "text": ["J @ da == a * (da - a.da)\n"]}]),
        ("code", "print(D)", [{"output_type": "stream", "name": "stdout", "text": ["12\n"]}])])
    strip_notebook(path, ["softmax"])
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    assert cells[0]["outputs"] == [] and cells[0]["execution_count"] is None
    assert cells[1]["outputs"][0]["text"] == ["12\n"]
    notebook(path, [("code", "check(J, da)", [{"output_type": "stream", "name": "stdout",
                                               "text": ["J @ da == a * (da - a.da)\n"]}])])
    strip_notebook(path, ["linear"])                   # softmax not stubbed: the output stays
    assert json.loads(path.read_text(encoding="utf-8"))["cells"][0]["outputs"]


def test_the_quoted_places_now_ask_instead(student_copy):
    """Where the quoted lines were, a full student copy asks: lesson 3's Jacobian, lesson
    4's backward and lesson 8's first bug are stubbed regions, residual.py and fast.py state
    what is computed."""
    books = {name: json.loads(next((student_copy / "notebooks").glob(f"{name}_*.ipynb"))
                              .read_text(encoding="utf-8"))["cells"] for name in ("03", "04")}
    jacobian = "".join(books["03"][9]["source"])
    assert "np.outer" not in jacobian and "[assignment part softmax]" in jacobian
    residual = "".join(books["04"][11]["source"])
    assert "exit_backward" not in residual and "[assignment part encoder_stack]" in residual
    assert "Given $dy$, what is $dx$ in each" in "".join(books["04"][10]["source"])
    bug = "".join(json.loads(next((student_copy / "notebooks").glob("08_*.ipynb")).read_text(
        encoding="utf-8"))["cells"][9]["source"])
    assert "xhat).mean" not in bug and "[assignment part layernorm]" in bug
    layers = student_copy / "numpy_transformer" / "layers"
    assert "exit_backward(dy) gives the gradients of x" in (layers / "residual.py").read_text()
    assert "Same as `xp.add.at(a, index, values)`" in (layers / "fast.py").read_text()


def test_the_rest_now_asks_in_every_copy_that_stubs_its_part(tmp_path, student_copy):
    """No copy stubbing a part of REST says what its lines said (their tell: log-softmax's
    backward, "softmax ignores" the key bias's shift, the scatter-add backward): the
    reference says it no more (gradcheck_cases.py, judgement.py and lesson 15 name lesson
    3's question, notebooks/README.md a repeated token, lesson 13 the decay term) or the
    copy strips the block (softmax.py's Backward lines, MultiHeadAttention's Note, GPT's
    Backward, lesson 3's section 4, which asks instead)."""
    tells = {"softmax": "dz - softmax(x)", "cross_entropy": "dz - softmax(x)",
             "multihead_attention": "softmax ignores", "embedding": "scatter-add backward",
             "adamw": "Adam sees the gradient", "encoder_stack": "(final norm, the blocks"}
    assert {part for _, part, _ in REST} == set(tells)
    assert all(tells[part] in line for _, part, line in REST)
    for part, tell in tells.items():
        make(tmp_path / part, parts=[part])
        for copy in (tmp_path / part, student_copy):
            held = [(path.relative_to(copy).as_posix(), line.strip())
                    for path in sorted(Path(copy).rglob("*")) if path.is_file()
                    for line in text_lines(path) if tell in line]
            assert not held, (part, held)
    attention = (tmp_path / "multihead_attention" / "numpy_transformer" / "layers" /
                 "attention.py").read_text(encoding="utf-8")
    assert "b_k adds q . b_k" not in attention and "Backward: derive it yourself" in attention
    book = next((tmp_path / "multihead_attention" / "notebooks").glob("03_*.ipynb"))
    section = "".join(json.loads(book.read_text(encoding="utf-8"))["cells"][14]["source"])
    assert "what does softmax do with a constant added to a row" in section
    softmax = (tmp_path / "cross_entropy" / "numpy_transformer" / "layers" /
               "softmax.py").read_text(encoding="utf-8")
    assert "dx = dz -" not in softmax and "dx, dz's shape, for z = log_softmax(x)" in softmax


def test_a_copy_of_one_stack_says_that_the_other_nearly_answers_it(tmp_path):
    """The two stacks' backward passes are alike: a copy stubbing one carries the other's,
    so `assignment make` says to assign both (a note, not a refusal)."""
    from numpy_transformer.course.copies.make import make_assignment
    said = []
    assert make_assignment(tmp_path / "one", ["decoder_stack"], out_fn=said.append) == 0
    assert any(line.startswith("note: encoder_stack's backward is in this copy")
               and "assign both stacks" in line for line in said), said
    said.clear()
    make_assignment(tmp_path / "both", ["encoder_stack", "decoder_stack"], out_fn=said.append)
    assert not [line for line in said if line.startswith("note:")], said
