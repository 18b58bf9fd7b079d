"""The course around the core: its rooms answer their commands, and it is tied to the core by
code, not by retyped text.

The grader's right bodies and the catalogue's mistakes are read from the core's graded
regions (selftest/right_bodies.py), and a student copy leaves out a fast form because the
core's file declares it one (`FAST_FORM_OF`), so editing a graded body in the core needs
no edit in the course: here every graded region of a scratch copy of the package is
written in another layout (every token spaced apart, other quotes, comments between the
lines), and from that copy the course still builds its catalogue, makes copies, grades
and catches its mistakes.
"""

import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
import tokenize

import pytest

from numpy_transformer.course.copies.make import PACKAGE, package_regions
from numpy_transformer.course.selftest.right_bodies import RIGHT, canonical


@pytest.mark.parametrize("command", [["assignment", "--help"], ["figures", "--help"]])
def test_the_course_still_answers_its_own_commands(command, tmp_path):
    out = subprocess.run([sys.executable, "-m", "numpy_transformer", *command], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "COLUMNS": "200"})
    assert out.returncode == 0, out.stderr
    if command[0] == "assignment":
        assert "Parts: linear" in out.stdout


def relaid(body):
    """`body` (a region's lines, dedented) in another layout with the same code: each token
    spaced apart, double quotes made single, a comment line before each line."""
    out, row = [], 0
    for tok in tokenize.generate_tokens(io.StringIO(body).readline):
        if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                        tokenize.DEDENT, tokenize.ENDMARKER):
            continue
        text = tok.string
        if tok.type == tokenize.STRING and text.startswith('"') and "'" not in text:
            text = "'" + text[1:-1] + "'"
        if tok.start[0] != row:               # a new line: its own indentation, a comment
            row = tok.start[0]
            line = body.split("\n")[row - 1]
            indent = line[:len(line) - len(line.lstrip())]
            out.append(f"\n{indent}# (another layout)\n{indent}{text}")
        else:
            out.append("  " + text)
    return "".join(out).lstrip("\n")


def relay_regions(package):
    """Write every solution region under `package` in another layout; the number changed."""
    changed = 0
    for path in sorted({r.path for r in package_regions(package)}):
        file = package / path
        lines = file.read_text(encoding="utf-8").split("\n")
        for r in sorted((r for r in package_regions(package) if r.path == path),
                        key=lambda r: -r.begin):       # from the bottom: indices stay true
            body = textwrap.dedent("\n".join(lines[r.begin + 1:r.end]))
            new = textwrap.indent(relaid(body), r.indent).split("\n")
            lines[r.begin + 1:r.end] = new
            changed += 1
        file.write_text("\n".join(lines), encoding="utf-8")
    return changed


def test_relaid_is_the_same_code_in_another_layout():
    body = 'x = f(a,\n      b)   # sum\nif "w" in d:\n    d["w"] += x\n'
    new = relaid(body)
    assert new != body and '"' not in new and canonical(new) == canonical(body)


SELFTEST = """
import json, sys
from pathlib import Path
from numpy_transformer.course.copies.make import PACKAGE, make
from numpy_transformer.course.classroom.grade import grade
from numpy_transformer.course.selftest.mistakes import MISTAKES
from numpy_transformer.course.selftest.right_bodies import RIGHT
assert PACKAGE == Path.cwd() / "numpy_transformer", PACKAGE
out = Path(sys.argv[1])
make(out / "student", parts=["linear", "adam"])
make(out / "solution", solutions=True)
mistakes = {m.name: m for m in MISTAKES}
scores = {}
for name in ("linear_overwrites", "layernorm_missing_term"):
    make(out / name, solutions=True)
    mistakes[name].apply(out / name)
for name in ("solution", "linear_overwrites", "layernorm_missing_term"):
    report = grade(out / name, parts=["linear", "layernorm"])
    scores[name] = {r.part: [r.points, r.max_points] for r in report.parts}
print(json.dumps({"right": RIGHT, "mistakes": len(MISTAKES), "scores": scores,
                  "fast_form": (out / "student/numpy_transformer/optim/fast.py").exists()}))
"""


@pytest.mark.slow
def test_the_course_follows_a_core_in_another_layout(tmp_path):
    scratch = tmp_path / "scratch"
    shutil.copytree(PACKAGE, scratch / "numpy_transformer",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    assert relay_regions(scratch / "numpy_transformer") == len(package_regions(PACKAGE))
    done = subprocess.run([sys.executable, "-c", SELFTEST, str(tmp_path / "out")], cwd=scratch,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().split("\n")[-1])
    assert seen["right"] == RIGHT                   # the same right bodies, read anew
    assert seen["mistakes"] >= 62 and not seen["fast_form"]
    full = {"linear": 0, "layernorm": 0}
    for name, scores in seen["scores"].items():
        lost = {part: points < most for part, (points, most) in scores.items()}
        assert lost == {**{p: False for p in full}, **(
            {"linear": True} if name == "linear_overwrites" else
            {"layernorm": True} if name == "layernorm_missing_term" else {})}, (name, scores)
