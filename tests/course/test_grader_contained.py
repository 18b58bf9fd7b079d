"""A submission that goes after the grader, the teacher or the classmates finds nothing
and changes nothing (namespaces.py's private root; skipped where the kernel refuses it).

Each forgery is one the red team of issue 30 scored above 0 with before:
- looking for the teacher's package through the paths in the worker's arguments, its
  environment and sys.path; through a child Python started without -I (which would load
  the installed package); through /proc (the grader's working directory, as on Gradescope
  /autograder/source, is the parent's /proc/PID/cwd);
- knowing the teacher's paths (they are no secret): reading the reference, writing into
  the teacher's package and beside NumPy, editing and deleting a classmate's copy,
  deleting the grader's temporary folders, overwriting the class table, killing the
  grader's processes: the class run is complete, every other copy keeps its points;
- a daemon that outlives its part to rewrite the output files once grading is over.
Every test says which protection it exercises; the grade output names them in one line.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy
import pytest

from doors import needs_pip_installed, nt
from numpy_transformer.course.classroom.grade import grade
from numpy_transformer.course.copies.make import PACKAGE
from numpy_transformer.course.sandbox.namespaces import DISK_MB
from test_assignment_grader import fresh, replace_regions
from test_grader_survives import (BOX, class_of, grade_class, prepend, processes_holding, rows,
                                 still_running)

pytestmark = pytest.mark.slow      # each test starts sandboxed graders: the slow pass

needs_private_root = pytest.mark.skipif(BOX.level != "root", reason=BOX.line)
BOX_HARNESS = PACKAGE / "course" / "sandbox"      # holds private_root.py, as the copy does

HUNT = '''

def _hunt(channel):
    """A path to the teacher's linear.py found through `channel`, or None."""
    import glob, os, subprocess, sys
    mine = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))

    def teacher(folder):
        path = os.path.join(folder, "numpy_transformer", "layers", "linear.py")
        try:
            if os.path.isfile(path) and not os.path.realpath(path).startswith(mine + os.sep):
                return path
        except OSError:
            pass
        return None

    if channel == "argv":
        for start in sys.argv + sys.path + list(os.environ.values()):
            folder = start
            while folder and folder != os.path.dirname(folder):
                if teacher(folder):
                    return teacher(folder)
                folder = os.path.dirname(folder)
    elif channel == "child":
        done = subprocess.run([sys.executable, "-c", "import os, numpy_transformer as p; "
                               "print(os.path.dirname(os.path.dirname(p.__file__)))"],
                              cwd="/", capture_output=True, text=True)
        return teacher(done.stdout.strip()) if done.returncode == 0 else None
    else:
        for link in sorted(glob.glob("/proc/[0-9]*/cwd") + glob.glob("/proc/[0-9]*/root")):
            if teacher(link):
                return teacher(link)
    return None
'''

HUNTING_LINEAR = '''where = _hunt({channel!r})
if where is not None:
    raise RuntimeError("FOUND the teacher's package at " + where)
raise RuntimeError("nothing found through {channel}")'''


@needs_private_root
@pytest.mark.parametrize("channel", ["argv", pytest.param("child", marks=needs_pip_installed),
                                     "proc"])
def test_the_teachers_package_cannot_be_found(student_copy, tmp_path, channel):
    """Protection: the private root holds no teacher's package, and its /proc only the
    worker's own processes."""
    copy = fresh(student_copy, tmp_path)
    replace_regions(copy, {"Linear.backward": HUNTING_LINEAR.format(channel=channel)})
    linear = copy / "numpy_transformer" / "layers" / "linear.py"
    linear.write_text(linear.read_text() + HUNT)
    if channel != "argv":           # outside the grader the channel does find the package
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        probe = subprocess.run([sys.executable, "-c", "from numpy_transformer.layers.linear "
                                f"import _hunt; print(_hunt({channel!r}))"],
                               cwd=copy, capture_output=True, text=True, timeout=300, env=env)
        assert probe.stdout.strip().endswith("linear.py"), probe.stdout + probe.stderr
    [result] = grade(copy, parts=["linear"]).parts
    assert result.points == 0 and f"nothing found through {channel}" in result.message, result


def attack(targets, token):
    """GELU.backward code that knows the teacher's paths (`targets`) and tries everything."""
    return f'''import glob, os, shutil, signal
targets = {targets!r}
for folder in targets["write"]:
    try:
        open(os.path.join(folder, {token!r}), "w").write("backdoor")
    except OSError:
        pass
for path in targets["read"]:
    try:
        open(path).read()
        open(os.path.join(os.getcwd(), "LEAKED-" + os.path.basename(path)), "w").write("x")
    except OSError:
        pass
for path in targets["overwrite"]:
    try:
        open(path, "w").write("FORGED")
    except OSError:
        pass
for folder in targets["delete"] + glob.glob(os.path.join(targets["tmp"], "nt-grader-*")):
    shutil.rmtree(folder, ignore_errors=True)
for link in glob.glob("/proc/[0-9]*/cmdline"):
    try:
        if b"assignment" in open(link, "rb").read():
            os.kill(int(link.split("/")[2]), signal.SIGKILL)
    except (OSError, ValueError):
        pass'''


@needs_private_root
def test_a_submission_that_knows_the_paths_reaches_nothing(solution_copy, tmp_path):
    """Protection: the private root (no path outside is there), the read-only mounts and
    the PID namespace (no grader process is visible)."""
    token = f"nt-backdoor-{os.getpid()}-{time.time_ns()}"
    site = os.path.dirname(os.path.dirname(numpy.__file__))
    targets = {"write": [str(PACKAGE), str(PACKAGE / "course" / "grading"), site,
                         str(tmp_path), str(tmp_path / "a")],
               "read": [str(PACKAGE / "layers" / "linear.py"),
                        str(tmp_path / "a" / "assignment.json")],
               "overwrite": [str(tmp_path / "a" / "numpy_transformer" / "layers" / "linear.py")],
               "delete": [str(tmp_path / "c" / "numpy_transformer"), str(tmp_path / "a" / "notes")],
               "tmp": tempfile.gettempdir()}
    folders = class_of(solution_copy, tmp_path, code=attack(targets, token))
    (tmp_path / "a" / "notes").mkdir()
    classmate = Path(targets["overwrite"][0]).read_text()       # a is graded before b
    try:
        done = grade_class(folders, tmp_path, "gelu", "linear")
        table = rows(tmp_path / "class.csv")
        assert [table[s]["total"] for s in "abc"] == ["20", "20", "20"], done.stdout
        assert "sandbox: user+mount+pid+network namespaces, private root" in done.stdout
        assert (tmp_path / "c" / "numpy_transformer").is_dir()
        assert (tmp_path / "a" / "notes").is_dir()
        assert Path(targets["overwrite"][0]).read_text() == classmate
        assert not list((tmp_path / "b").rglob("LEAKED-*")), "the grader's files were readable"
    finally:
        planted = [os.path.join(f, token) for f in targets["write"]
                   if os.path.exists(os.path.join(f, token))]
        for path in planted:
            os.remove(path)
    assert planted == [], f"the submission wrote {planted}"


def daemon_rewriting(paths, token):
    """GELU.backward code that leaves a daemon rewriting `paths` until it is killed."""
    script = ("import time\nwhile True:\n    time.sleep(0.25)\n"
              f"    for p in {paths!r}:\n        try:\n"
              "            open(p, 'w').write('FORGED')\n        except OSError:\n"
              "            pass\n")
    return ("import os, sys\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
            f"        os.execv(sys.executable, [sys.executable, '-c', {script!r}, {token!r}])\n"
            "    os._exit(0)\nos.wait()")


@pytest.mark.skipif(BOX.level == "none", reason=BOX.line)
def test_a_daemon_cannot_rewrite_the_grade_after_grading(solution_copy, tmp_path):
    """Protection: the PID namespace (its daemon dies with the part) and, with a private
    root, no output file to be seen at all."""
    token = f"nt-rewriter-{os.getpid()}-{time.time_ns()}"
    outputs = [str(tmp_path / name) for name in ("grade.json", "results.json")]
    copy = fresh(solution_copy, tmp_path)
    prepend(copy, "GELU.backward", daemon_rewriting(outputs, token))
    try:
        done = nt("assignment", "grade", copy, "--parts", "gelu", "--json", outputs[0],
                  cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        nt("assignment", "grade", copy, "--parts", "gelu", "--gradescope", outputs[1], cwd=tmp_path)
        assert still_running(token) == [], "a daemon outlived its part"
        assert json.loads(open(outputs[0]).read())["points"] == 10
        assert json.loads(open(outputs[1]).read())["score"] == 10
    finally:
        for pid in processes_holding(token):
            os.kill(pid, 9)


def test_the_grade_output_names_the_protections(solution_copy, tmp_path):
    copy = fresh(solution_copy, tmp_path)
    done = nt("assignment", "grade", copy, "--parts", "softmax", "--json",
              tmp_path / "grade.json", cwd=tmp_path)
    assert done.stdout.count("sandbox: ") == 1, done.stdout
    level = BOX.line.split(" (")[0]             # the reason of a fallback names a temporary path
    assert level in done.stdout
    said = json.loads((tmp_path / "grade.json").read_text())["sandbox"]
    assert said.split(" (")[0] == level and said in done.stdout


INSIDE_VIEW = '''import json, os, sys
sys.path.append("/nt/site")
import numpy
def writable(path):
    try:
        open(path, "w").close()
        return True
    except OSError:
        return False
status = dict(line.split(":\\t") for line in open("/proc/self/status").read().splitlines()
              if ":\\t" in line)
size = lambda path: os.statvfs(path).f_blocks * os.statvfs(path).f_frsize >> 20
print(json.dumps({"root": sorted(os.listdir("/")), "nt": sorted(os.listdir("/nt")),
                  "site": sorted(os.listdir("/nt/site")), "teacher": os.path.exists(TEACHER),
                  "installed": os.listdir(SITE) if os.path.isdir(SITE) else [],
                  "usr": writable("/usr/nt-probe"), "scratch": writable("/nt/student/x"),
                  "part": writable("/nt/part/x"), "result": writable("/nt/part/status.json"),
                  "copied": sorted(os.listdir("/nt/student")),
                  "sizes": [size("/nt/student"), size("/tmp")],
                  "processes": sorted(p for p in os.listdir("/proc") if p.isdigit()),
                  "caps": status["CapEff"].strip(), "bounding": status["CapBnd"].strip()}))'''


@needs_private_root
def test_inside_the_private_root(tmp_path):
    """Protection: what private_root.py mounts (the scratch copy copied into the size-limited
    tmpfs, the part folder read-only but for its result files), and the capabilities it
    leaves (none)."""
    for name in ("harness", "part", "student", "root"):
        (tmp_path / name).mkdir()
    (tmp_path / "student" / "mine.py").write_text("")
    (tmp_path / "part" / "status.json").write_text("")
    code = INSIDE_VIEW.replace("TEACHER", repr(str(PACKAGE / "layers" / "linear.py"))).replace(
        "SITE", repr(str(Path(numpy.__file__).parents[1])))
    argv = BOX.command(sys.executable, tmp_path / "root", {
        "harness": (BOX_HARNESS, False), "part": (tmp_path / "part", False),
        "part/status.json": (tmp_path / "part" / "status.json", True),
        "student": (tmp_path / "student", "copy")}, ["-I", "-c", code])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    seen = json.loads(done.stdout)
    assert seen["nt"] == ["harness", "part", "site", "student"], seen
    assert set(seen["root"]) <= {"usr", "bin", "lib", "lib64", "lib32", "sbin", "etc", "dev",
                                 "proc", "tmp", "nt", "root", "opt", "home"}, seen["root"]
    assert seen["site"] == sorted(n for n in ("numpy", "numpy.libs")
                                  if (Path(numpy.__file__).parents[1] / n).is_dir())
    assert not seen["teacher"] and not seen["usr"] and seen["scratch"], seen
    assert not seen["part"] and seen["result"] and seen["copied"] == ["mine.py", "x"], seen
    assert seen["sizes"] == [DISK_MB, DISK_MB], seen       # one tmpfs holds both
    assert seen["installed"] == [], seen      # site-packages is empty: no installed package
    assert seen["processes"] == ["1"], seen                  # the worker alone
    assert int(seen["caps"], 16) == 0 and int(seen["bounding"], 16) == 0, seen
    assert not (tmp_path / "student" / "x").exists()         # a copy: the grader's disk
    assert (tmp_path / "part" / "status.json").exists()        # is never written


def test_the_worker_inherits_no_variable_of_the_graders_environment(solution_copy, tmp_path):
    """Protection: the runner's environment list (every level, sandbox or none)."""
    copy = fresh(solution_copy, tmp_path)
    prepend(copy, "GELU.backward", "import os\nif 'NT_TEACHER_SECRET' in os.environ:\n"
                                   "    raise RuntimeError('the secret reached the worker')")
    done = subprocess.run([sys.executable, "-m", "numpy_transformer", "assignment", "grade",
                           str(copy), "--parts", "gelu"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "NT_TEACHER_SECRET": "x"})
    assert done.returncode == 0, done.stdout + done.stderr
