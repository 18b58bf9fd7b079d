"""Course-site outputs of the assignment grader, through the command line as a teacher types it:
`assignment grade --gradescope/--visibility/--csv` and `assignment autograder`, whose zip is
unpacked into a fake Gradescope layout (AUTOGRADER_ROOT) where `run_autograder` runs as a
subprocess. Every results.json is checked against Gradescope's schema (assert_gradescope)."""

import csv
import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from doors import error, nt, ok
from numpy_transformer.course.copies.make import make
from numpy_transformer.course.classroom.autograder import NUMPY_REQUIREMENT
from numpy_transformer.course.classroom.gradescope import checks_of
from numpy_transformer.course.sandbox.namespaces import isolation

ROOT = Path(__file__).resolve().parents[2]
VISIBILITIES = {"visible", "hidden", "after_due_date", "after_published"}
TOP_KEYS = {"score", "execution_time", "output", "output_format", "test_output_format",
            "test_name_format", "visibility", "stdout_visibility", "extra_data", "tests",
            "leaderboard"}
TEST_KEYS = {"score", "max_score", "status", "name", "name_format", "number", "output",
             "output_format", "tags", "visibility", "extra_data"}


def check(part, index=0):
    """The test name "part/check" of a part's check number `index`."""
    return f"{part}/{checks_of([part])[part][index][0]}"


def assert_gradescope(results):
    """`results` follows Gradescope's results.json schema (and our own: score = sum of tests)."""
    number = (int, float)
    assert set(results) <= TOP_KEYS, set(results) - TOP_KEYS
    assert isinstance(results["score"], number) and not isinstance(results["score"], bool)
    assert isinstance(results.get("output", ""), str)
    assert results.get("stdout_visibility", "hidden") in VISIBILITIES
    assert isinstance(results.get("execution_time", 0), number)
    assert isinstance(results["tests"], list)
    for test in results["tests"]:
        assert set(test) <= TEST_KEYS, set(test) - TEST_KEYS
        assert isinstance(test["name"], str) and isinstance(test["output"], str)
        assert isinstance(test["score"], number) and isinstance(test["max_score"], number)
        assert 0 <= test["score"] <= test["max_score"]
        assert test["visibility"] in VISIBILITIES
        assert test.get("status", "passed") in ("passed", "failed")
        assert isinstance(test.get("number", ""), str)
    assert results["score"] == sum(t["score"] for t in results["tests"])
    return results


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    """A solution copy (full marks) and a fresh student copy (0), made once."""
    base = tmp_path_factory.mktemp("copies")
    make(base / "reference", solutions=True)
    make(base / "blank")
    return base


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory):
    """The zip, built through the command line with one hidden check and a default."""
    base = tmp_path_factory.mktemp("autograder")
    visibility = base / "visibility.json"
    visibility.write_text(json.dumps({"default": "after_published", "linear": "visible",
                                      check("adam"): "hidden"}))
    ok(nt("assignment", "autograder", "--out", base / "autograder.zip",
          "--visibility", visibility, cwd=ROOT))
    return base / "autograder.zip"


# assignment grade --gradescope / --csv

@pytest.mark.slow
def test_gradescope_results_of_the_reference_follow_the_schema(copies, tmp_path):
    visibility = tmp_path / "visibility.json"
    visibility.write_text(json.dumps({"default": "hidden", "softmax": "after_published",
                                      check("linear"): "visible"}))
    out = tmp_path / "results.json"
    ok(nt("assignment", "grade", copies / "reference", "--gradescope", out,
          "--visibility", visibility))
    results = assert_gradescope(json.loads(out.read_text()))
    assert results["score"] == sum(t["max_score"] for t in results["tests"]) > 0
    seen = {t["name"]: t["visibility"] for t in results["tests"]}
    assert seen[check("linear")] == "visible"
    assert seen[check("linear", 1)] == "hidden"
    assert {v for n, v in seen.items() if n.startswith("softmax/")} == {"after_published"}
    assert str(tmp_path.parent) not in out.read_text()          # no absolute path


@pytest.mark.slow
def test_gradescope_results_of_a_blank_copy_score_zero_with_reasons(copies, tmp_path):
    out = tmp_path / "results.json"
    done = nt("assignment", "grade", copies / "blank", "--gradescope", out)
    assert done.returncode == 1, done.stderr                   # below full marks
    results = assert_gradescope(json.loads(out.read_text()))
    checks = [t for t in results["tests"] if "derivation" not in t.get("tags", ())]
    assert results["score"] == 0 and checks
    assert all(t["status"] == "failed" and t["output"] for t in checks)
    assert {t["visibility"] for t in results["tests"]} == {"visible"}   # the default
    written = [t for t in results["tests"] if t not in checks]        # graded by hand
    assert len(written) == len(checks_of()) and all(
        t["output"].endswith("not answered") and t["max_score"] == 0 for t in written)


@pytest.mark.parametrize("visibility, words", [
    ({"linaer": "hidden"}, ["'linaer'", "valid names", "linear"]),
    ({"linear/no_such_check": "hidden"}, ["'linear/no_such_check'", "part/check"]),
    ({"linear": "secret"}, ["'secret'", "after_published", "hidden"]),
    ({"default": "later"}, ["'later'", "valid visibilities"]),
    (["linear"], ["JSON object", "list"]),
])
def test_bad_visibility_files_are_named(copies, tmp_path, visibility, words):
    path = tmp_path / "visibility.json"
    path.write_text(json.dumps(visibility))
    error(nt("assignment", "grade", copies / "reference", "--gradescope",
             tmp_path / "results.json", "--visibility", path), 2, "--visibility", *words)
    assert not (tmp_path / "results.json").exists()


def test_grade_options_that_do_not_fit_together(copies, tmp_path):
    error(nt("assignment", "grade", copies / "reference", "--visibility", tmp_path / "v.json"),
          2, "--visibility", "--gradescope")
    error(nt("assignment", "grade", copies / "reference", copies / "blank", "--gradescope",
             tmp_path / "r.json"), 2, "--gradescope", "2 folders", "--csv")
    error(nt("assignment", "grade", copies / "reference", copies / "reference", "--csv",
             tmp_path / "c.csv"), 2, "twice")


def test_class_csv_has_a_row_per_copy_and_keeps_going_past_a_bad_one(copies, tmp_path):
    shutil.copytree(copies / "reference", tmp_path / "class" / "ada")
    shutil.copytree(copies / "blank", tmp_path / "class" / "bob")
    (tmp_path / "class" / "eve").mkdir()                          # not a student copy
    table = tmp_path / "class.csv"
    folders = [tmp_path / "class" / name for name in ("ada", "bob", "eve")]
    done = nt("assignment", "grade", *folders, "--csv", table, "--parts", "linear", "softmax")
    assert done.returncode == 1, done.stderr
    assert "== ada" in done.stdout and "wrote" in done.stdout
    rows = list(csv.DictReader(table.open()))
    assert [r["student"] for r in rows] == ["ada", "bob", "eve"]
    assert list(rows[0]) == ["student", "linear", "softmax", "total", "max_points", "message"]
    assert rows[0]["linear"] == "10" and rows[0]["total"] == rows[0]["max_points"] == "20"
    assert rows[1]["total"] == "0" and rows[1]["message"] == ""
    assert rows[2]["total"] == "" and "eve is not a student copy" in rows[2]["message"]
    assert str(tmp_path) not in table.read_text()


def test_every_check_is_a_test_whatever_ran(tmp_path):
    """A stubbed part stops at its first check and a crashed one runs none: the other checks
    are still tests (0 points, the part's reason); unknown check names give one test."""
    from numpy_transformer.course.classroom.grade import GradeReport
    from numpy_transformer.course.classroom.gradescope import gradescope_results
    from numpy_transformer.course.grading.scoring import CheckResult, PartResult
    first, *rest = checks_of(["linear"])["linear"]
    total = first[1] + sum(points for _, points in rest)
    stub = PartResult("linear", 0, total, None, "not implemented: Linear.backward",
                      [CheckResult(first[0], 0, first[1], False, None, "Linear.backward")])
    crash = PartResult("softmax", 0, 10, None, f"crashed: File {tmp_path}/numpy_transformer/x.py")
    odd = PartResult("adam", 3, 10, None, "", [CheckResult("renamed", 3, 10, False, None, "")])
    results = assert_gradescope(gradescope_results(GradeReport(str(tmp_path), [stub, crash, odd])))
    names = [t["name"] for t in results["tests"]]
    assert names[:1 + len(rest)] == [f"linear/{name}" for name, _ in [first, *rest]]
    later = results["tests"][1:1 + len(rest)]
    assert later and all("not graded: not implemented" in t["output"] for t in later)
    softmax = [t for t in results["tests"] if t["name"].startswith("softmax/")]
    assert len(softmax) == len(checks_of(["softmax"])["softmax"]) and softmax[0]["score"] == 0
    assert "File numpy_transformer/x.py" in softmax[0]["output"]     # relative to the copy
    assert names[-1] == "adam/all" and results["score"] == 3


# assignment autograder

def unpack(zip_path, root):
    """Unzip as Gradescope does into ROOT/source, keeping the executable bits."""
    with zipfile.ZipFile(zip_path) as archive:
        archive.extractall(root / "source")
        for info in archive.infolist():
            mode = info.external_attr >> 16 & 0o777
            if mode:
                os.chmod(root / "source" / info.filename, mode)
    (root / "submission").mkdir()
    return root


def run_autograder(root, python=sys.executable):
    """Run run_autograder (copied to ROOT as Gradescope does) from another folder."""
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=python)
    env.pop("PYTHONPATH", None)
    if os.geteuid() == 0:           # as on Gradescope, without adding a user to this machine
        env["NT_GRADER_USER"] = "nobody"
    done = subprocess.run([str(root / "run_autograder")], cwd="/", env=env, text=True,
                          capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return assert_gradescope(json.loads((root / "results" / "results.json").read_text()))


def test_zip_holds_executable_scripts_and_the_grader(autograder_zip):
    with zipfile.ZipFile(autograder_zip) as archive:
        names = set(archive.namelist())
        modes = {i.filename: i.external_attr >> 16 for i in archive.infolist()}
        config = json.loads(archive.read("autograder.json"))
    assert {"setup.sh", "run_autograder", "autograder.json",
            "numpy_transformer/course/classroom/grade.py"} <= names
    assert modes["setup.sh"] & stat.S_IXUSR and modes["run_autograder"] & stat.S_IXUSR
    assert not any("__pycache__" in n or n.endswith(".pyc") or n.startswith("/") for n in names)
    assert config["visibility"][check("adam")] == "hidden"
    assert "assignment.json" not in names and config["manifest"]["parts"] == config["parts"]


def test_setup_sh_installs_numpy_with_pip(autograder_zip, tmp_path):
    root = unpack(autograder_zip, tmp_path / "autograder")
    bin_dir, log = tmp_path / "bin", tmp_path / "pip.log"
    bin_dir.mkdir()
    for tool in ("pip3", "python3"):                     # fakes: nothing is installed
        (bin_dir / tool).write_text(f'#!/bin/sh\necho "{tool} $*" >> "{log}"\n')
        (bin_dir / tool).chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run(["bash", "setup.sh"], cwd=root / "source", env=env, text=True,
                          capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert log.read_text().splitlines() == [f"pip3 install --no-cache-dir {NUMPY_REQUIREMENT}"]
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f'dependencies = ["{NUMPY_REQUIREMENT}"]' in pyproject


@pytest.mark.slow
def test_autograder_grades_a_whole_student_copy(autograder_zip, copies, tmp_path):
    root = unpack(autograder_zip, tmp_path / "autograder")
    shutil.copytree(copies / "reference", root / "submission" / "my-copy")
    results = run_autograder(root)
    assert results["score"] == sum(t["max_score"] for t in results["tests"]) > 0
    seen = {t["name"]: t["visibility"] for t in results["tests"]}
    assert seen[check("adam")] == "hidden"
    assert seen[check("linear")] == "visible"
    assert seen[check("softmax")] == "after_published"
    assert str(tmp_path) not in json.dumps(results)


@pytest.mark.slow
def test_autograder_finds_a_package_uploaded_as_its_files(autograder_zip, copies, tmp_path):
    root = unpack(autograder_zip, tmp_path / "autograder")
    shutil.rmtree(root / "submission")
    shutil.copytree(copies / "reference" / "numpy_transformer", root / "submission")
    results = run_autograder(root)
    assert results["score"] == sum(t["max_score"] for t in results["tests"]) > 0


def forged(package, root):
    """A blank package whose import writes a perfect results.json where Gradescope reads it."""
    forgery = ("import json, os\n"
               f"_root = {str(root)!r}\n"
               "try:\n    os.makedirs(_root + '/results', exist_ok=True)\n"
               "    open(_root + '/results/results.json', 'w').write(json.dumps({'score': 999}))\n"
               "    open(_root + '/forgery_ran', 'w').write('yes')\nexcept OSError:\n    pass\n")
    init = package / "__init__.py"
    init.write_text(forgery + init.read_text())


@pytest.mark.parametrize("case, reason", [
    ("empty", "no numpy_transformer/ package was found"),
    ("two packages", "holds 2 numpy_transformer/ folders"),
    pytest.param("syntax error", "", marks=pytest.mark.slow),     # 4-5 s each: the
    pytest.param("blank", "", marks=pytest.mark.slow),            # slow pass
    pytest.param("forged results", "", marks=pytest.mark.slow),
])
def test_broken_submissions_score_zero_in_a_valid_results_json(autograder_zip, copies, tmp_path,
                                                               case, reason):
    root = unpack(autograder_zip, tmp_path / "autograder")
    package = root / "submission" / "a" / "numpy_transformer"
    if case != "empty":
        shutil.copytree(copies / "blank" / "numpy_transformer", package)
    if case == "two packages":
        shutil.copytree(package, root / "submission" / "b" / "numpy_transformer")
    if case == "syntax error":
        (package / "__init__.py").write_text("def broken(:\n")
    if case == "forged results":
        forged(package, root)
    results = run_autograder(root)
    reached = case == "forged results" and isolation().level != "root"   # no ROOT in there
    assert (root / "forgery_ran").exists() == reached
    assert results["score"] == 0 and reason in results["output"]
    assert results["tests"] and all(t["output"] for t in results["tests"])


def test_run_autograder_writes_results_even_when_python_fails(autograder_zip, tmp_path):
    root = unpack(autograder_zip, tmp_path / "autograder")
    results = run_autograder(root, python="false")             # exits 1 at once
    assert results["score"] == 0 and "autograder failed" in results["output"]


def test_autograder_command_rejects_bad_input(tmp_path):
    error(nt("assignment", "autograder", "--out", tmp_path / "grader.tar"), 2, "--out", ".zip")
    error(nt("assignment", "autograder", "--out", tmp_path / "g.zip", "--parts", "lineer"), 2,
          "lineer", "valid parts")
    (tmp_path / "v.json").write_text('{"linear": "sometimes"}')
    error(nt("assignment", "autograder", "--out", tmp_path / "g.zip", "--visibility",
             tmp_path / "v.json"), 2, "'sometimes'")
    assert not (tmp_path / "g.zip").exists()


@pytest.mark.slow
def test_autograder_total_timeout_caps_a_whole_submission(copies, tmp_path):
    """assignment autograder --total-timeout: kept in the zip, said in the command's message,
    and a submission that spends it gets 0 for the parts not run, saying why."""
    out = ok(nt("assignment", "autograder", "--out", tmp_path / "a.zip", "--parts", "linear",
                "softmax", "--total-timeout", "0.001", cwd=ROOT))
    assert "0.001 s in all" in out
    with zipfile.ZipFile(tmp_path / "a.zip") as archive:
        assert json.loads(archive.read("autograder.json"))["total_timeout"] == 0.001
    root = unpack(tmp_path / "a.zip", tmp_path / "autograder")
    shutil.copytree(copies / "reference", root / "submission" / "my-copy")
    results = run_autograder(root)
    assert results["score"] == 0
    assert "total time limit (0.001 s) was spent" in json.dumps(results)
