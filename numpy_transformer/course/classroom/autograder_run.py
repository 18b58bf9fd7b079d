"""What `run_autograder` runs on Gradescope: grade one submission, write results.json.

    python -m numpy_transformer.course.classroom.autograder_run ROOT

ROOT is /autograder: ROOT/source holds the unpacked zip (autograder.py),
ROOT/submission the student's upload, and ROOT/results/results.json receives
the grade. A submission may be the student's numpy_transformer/ folder (its
files at the top, or in one folder), a whole student copy, or either inside a
zip's extra folder: the shallowest folder named numpy_transformer with an
__init__.py is the student's package (or the top itself when it holds the
package's files). That package is copied, without symbolic links, beside the
teacher's manifest (the student's own assignment.json is ignored; a FIFO, a device or
a file over MAX_FILE_MB is refused, named relative to the submission), and graded
with the teacher's parts and time limit, on inputs drawn from the zip's seed or,
where it has none, from a new random secret for this submission. Whatever goes wrong (no package, two
packages, a grader error) still ends in a valid results.json: score 0 and the
reason. The exit status is 0 once results.json is written.

The written derivations (derivations.py) travel beside the package: the submission's
derivations/ folder beside the student's numpy_transformer/ (a whole copy), or else
the shallowest one anywhere in it; its plain .md files (no links) are copied into the
assembled copy, and a part without one is "not answered".
"""

import json
import os
import shutil
import stat
import sys
import tempfile
import time
from pathlib import Path

from ...errors import InputError
from ...system.files import read_json
from ..copies.derivations import FOLDER as DERIVATIONS
from .gradescope import gradescope_results, not_graded_results, read_visibility, write_json
from ..sandbox.runner import TOTAL_TIMEOUT

PACKAGE_NAME = "numpy_transformer"
SKIPPED = ("__MACOSX", "__pycache__", ".git", ".ipynb_checkpoints")
MAX_DEPTH = 4
MAX_FILE_MB = 64             # the largest file of a submission (a package's files are small)


def _looks_like_package(folder, reference):
    """`folder` holds an __init__.py and one of the reference package's sub-packages."""
    subpackages = {p.name for p in reference.iterdir() if (p / "__init__.py").is_file()}
    return (folder / "__init__.py").is_file() and any((folder / name).is_dir()
                                                      for name in subpackages)


def find_package(submission, reference):
    """The folder of the student's package inside `submission`; InputError saying what was
    found when there is none or more than one at the shallowest depth."""
    submission = Path(submission)
    if not submission.is_dir():
        raise InputError(f"no submission folder {submission.name}/ was found")
    level = [submission]
    for _ in range(MAX_DEPTH + 1):
        found = [f for f in level if f.name == PACKAGE_NAME and (f / "__init__.py").is_file()]
        if not found and level == [submission] and _looks_like_package(submission, reference):
            found = [submission]
        if len(found) == 1:
            return found[0]
        if found:
            names = ", ".join(str(f.relative_to(submission)) for f in found)
            raise InputError(f"the submission holds {len(found)} {PACKAGE_NAME}/ folders "
                             f"({names}); submit exactly one")
        level = [child for f in level for child in sorted(f.iterdir())
                 if child.is_dir() and not child.is_symlink() and child.name not in SKIPPED]
    raise InputError(f"no {PACKAGE_NAME}/ package was found in the submission: upload your "
                     f"{PACKAGE_NAME}/ folder (with its __init__.py) or your whole student copy")


def copy_package(package, into, submission):
    """Copy the folder `package` to `into`: its folders and regular files, no links, no
    caches; InputError naming the entry relative to `submission` (never a path of this
    machine) for a FIFO, a device, a socket or a file over MAX_FILE_MB."""
    into.mkdir()
    for entry in sorted(Path(package).iterdir()):
        if entry.name in SKIPPED or entry.name.endswith(".pyc") or entry.is_symlink():
            continue
        name = entry.relative_to(submission).as_posix()
        mode = entry.lstat()
        if stat.S_ISDIR(mode.st_mode):
            copy_package(entry, into / entry.name, submission)
        elif not stat.S_ISREG(mode.st_mode):
            raise InputError(f"the submission's {name} is {kind_of(mode.st_mode)}, not a "
                             f"file; submit regular files only")
        elif mode.st_size > MAX_FILE_MB * 2**20:
            raise InputError(f"the submission's {name} holds {mode.st_size / 2**20:.0f} MiB; "
                             f"a file may hold at most {MAX_FILE_MB} MiB")
        else:
            shutil.copyfile(entry, into / entry.name)


def kind_of(mode):
    """'a FIFO', 'a device', ... : what a file that is not regular is."""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"


def find_derivations(submission, package):
    """The submission's derivations/ folder: beside the student's package, or else the
    shallowest one (None when there is none; links are never followed)."""
    submission, beside = Path(submission), Path(package).parent / DERIVATIONS
    if beside.is_dir() and not beside.is_symlink() and submission in (beside.parent,
                                                                      *beside.parents):
        return beside
    level = [submission]
    for _ in range(MAX_DEPTH + 1):
        found = [f for f in level if f.name == DERIVATIONS and f != submission]
        if found:
            return found[0]
        level = [child for f in level for child in sorted(f.iterdir())
                 if child.is_dir() and not child.is_symlink() and child.name not in SKIPPED]
    return None


def assemble(package, manifest, into, derivations=None, submission=None):
    """A student copy in `into`: the student's package (copy_package: errors name its files
    relative to `submission`, by default the folder above the package), the teacher's
    manifest, and the plain .md files of the student's `derivations` folder (where there is
    one; at most MAX_FILE_MB each)."""
    into = Path(into)
    into.mkdir(parents=True, exist_ok=True)
    copy_package(package, into / PACKAGE_NAME, submission or Path(package).parent)
    if derivations is not None:
        (into / DERIVATIONS).mkdir()
        for path in sorted(Path(derivations).glob("*.md")):
            if path.is_file() and not path.is_symlink() and \
                    path.stat().st_size <= MAX_FILE_MB * 2**20:
                shutil.copyfile(path, into / DERIVATIONS / path.name)
    (into / "assignment.json").write_text(json.dumps(manifest, indent=2) + "\n",
                                          encoding="utf-8")
    return into


def grade_submission(root):
    """The results.json dict for ROOT/submission (never raises for a bad submission)."""
    from .grade import grade
    start, source = time.monotonic(), Path(root) / "source"
    try:                                  # a regular file only: a FIFO would hang here
        config = read_json(source / "autograder.json", "autograder.json")
    except (OSError, InputError) as err:
        return not_graded_results(f"the autograder's configuration is unreadable ({err}); "
                                  "tell your teacher", None, None, time.monotonic() - start)
    parts = config["parts"]
    visibility = read_visibility(config["visibility"], config.get("reveal_after"))
    try:
        package = find_package(Path(root) / "submission", source / PACKAGE_NAME)
        with tempfile.TemporaryDirectory() as tmp:
            copy = assemble(package, config["manifest"], Path(tmp) / "copy",
                            find_derivations(Path(root) / "submission", package),
                            Path(root) / "submission")
            report = grade(copy, parts=parts, timeout=config["timeout"],
                           total_timeout=config.get("total_timeout", TOTAL_TIMEOUT),
                           seed=config.get("seed"),
                           refuse_flagged=config.get("refuse_flagged", False))
    except InputError as err:
        return not_graded_results(str(err), parts, visibility, time.monotonic() - start)
    except Exception as err:                                # noqa: BLE001
        return not_graded_results(f"the grader failed: {type(err).__name__}: {err}", parts,
                                  visibility, time.monotonic() - start)
    return gradescope_results(report, visibility, time.monotonic() - start)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    root = Path(argv[0] if argv else "/autograder")
    results = grade_submission(root)
    (root / "results").mkdir(parents=True, exist_ok=True)
    write_json(root / "results" / "results.json", results)
    print(f"score {results['score']}: {results['output']}")
    for test in results["tests"]:
        print(f"  {test['name']:<50} {test['score']:>3}/{test['max_score']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
