"""A Gradescope autograder zip: the teacher's grader packed to grade one submission.

    build_autograder(out, parts=None, visibility=None, timeout=60.0, seed=None,
                     refuse_flagged=False)         writes the zip

Gradescope unpacks the zip into /autograder/source, runs `setup.sh` there once
when it builds the image, and copies `run_autograder` to /autograder, which it
runs for every submission (the student's files in /autograder/submission);
the score is what /autograder/results/results.json says. The zip holds:

    setup.sh          installs NumPy (the grader's only dependency) with pip3
    run_autograder    runs autograder_run.py and guarantees a results.json
    autograder.json   the parts, the time limit per part, the visibility of each check,
                      refuse_flagged (a part honesty.py flags scores 0; the flags are
                      always in a test hidden from students), the grading seed (null: each
                      submission graded on inputs drawn from a
                      new random secret; a number: the teacher's secret, closed to the
                      student's code like all of source/ and in no student copy) and
                      the manifest (assignment.json) of a student copy of those parts, from
                      make(), with what each written derivation is worth (graded by hand,
                      gradescope.py); not a file of its own, which would mark source/ a
                      student copy
    numpy_transformer/  the teacher's package, grader included; it stays in
                        /autograder/source and is not installed; the grader runs from an
                        empty working directory, and its workers in a private root
                        (namespaces.py), or, where the kernel refuses that, as the
                        unprivileged user `student` (made with useradd if absent) to whom
                        source/ and results/ are closed (chmod 700)

AUTOGRADER_ROOT (default /autograder) and AUTOGRADER_PYTHON (default python3)
let the tests run `run_autograder` on a fake layout.
"""

import json
import tempfile
import zipfile
from pathlib import Path

from ...errors import InputError
from ...system.files import atomic_write
from .gradescope import read_visibility
from ..sandbox.runner import TOTAL_TIMEOUT

PACKAGE = Path(__file__).resolve().parents[2]          # the teacher's numpy_transformer/
NUMPY_REQUIREMENT = "numpy>=1.24"                      # as in pyproject.toml
NOT_PACKED = {"__pycache__", ".ipynb_checkpoints", "lessons"}
FIXED_TIME = (2020, 1, 1, 0, 0, 0)                     # the same zip from the same sources

SETUP_SH = f"""#!/usr/bin/env bash
# Gradescope runs this once, in /autograder/source, when it builds the autograder's image.
# The grader needs Python 3 and NumPy only; its own code stays in /autograder/source.
set -eu
if ! command -v python3 >/dev/null || ! command -v pip3 >/dev/null; then
    apt-get update
    apt-get install -y python3 python3-pip
fi
pip3 install --no-cache-dir "{NUMPY_REQUIREMENT}" \\
    || pip3 install --no-cache-dir --break-system-packages "{NUMPY_REQUIREMENT}"
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission: grade $ROOT/submission with the teacher's grader
# in $ROOT/source and write $ROOT/results/results.json, a score of 0 with the reason when the
# submission cannot be graded. AUTOGRADER_ROOT and AUTOGRADER_PYTHON serve local tests.
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PYTHON="${AUTOGRADER_PYTHON:-python3}"
RESULTS="$ROOT/results/results.json"
mkdir -p "$ROOT/results"
rm -f "$RESULTS"
if [ "$(id -u)" = 0 ]; then
    # Where the kernel gives no private root, the workers run as this unprivileged user,
    # to whom source/ (the reference) and results/ are closed.
    NT_GRADER_USER="${NT_GRADER_USER:-student}"
    id "$NT_GRADER_USER" >/dev/null 2>&1 \\
        || useradd --system --no-create-home --shell /usr/sbin/nologin "$NT_GRADER_USER" \\
        >/dev/null 2>&1 || true
    export NT_GRADER_USER
    chmod 700 "$ROOT/source" "$ROOT/results"
fi
WORK="$(mktemp -d)"       # the grader's working directory: no reference there
cd "$WORK" && PYTHONPATH="$ROOT/source" PYTHONDONTWRITEBYTECODE=1 \\
    "$PYTHON" -m numpy_transformer.course.classroom.autograder_run "$ROOT"
status=$?
rm -rf "$WORK"
if [ "$status" -ne 0 ] || [ ! -s "$RESULTS" ]; then
    why="The autograder failed (exit status $status) before it could grade this submission"
    printf '{"score": 0, "tests": [], "stdout_visibility": "hidden", "output": "%s"}\\n' \\
        "$why; please tell your teacher." > "$RESULTS"
fi
exit 0
"""


def _add(archive, name, data, executable=False):
    info = zipfile.ZipInfo(name, date_time=FIXED_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (0o100755 if executable else 0o100644) << 16
    archive.writestr(info, data)


def _package_files(package=PACKAGE):
    """The package's files to pack, as (path, name in the zip), without caches or lessons."""
    for path in sorted(package.rglob("*")):
        relative = path.relative_to(package)
        if path.is_file() and not path.is_symlink() and path.suffix != ".pyc" \
                and not NOT_PACKED & set(relative.parts):
            yield path, f"numpy_transformer/{relative.as_posix()}"


def _manifest_of(parts, derivation_points=0):
    """The assignment.json of a student copy of `parts` (make() writes it), as a dict."""
    from ..copies.make import make
    with tempfile.TemporaryDirectory() as tmp:
        make(Path(tmp) / "copy", parts, derivation_points=derivation_points)
        return json.loads((Path(tmp) / "copy" / "assignment.json").read_text(encoding="utf-8"))


def build_autograder(out, parts=None, visibility=None, timeout=60.0, seed=None,
                     refuse_flagged=False, reveal_after=None, total_timeout=TOTAL_TIMEOUT,
                     derivation_points=0):
    """Write the Gradescope autograder zip to `out`; returns its configuration (a dict).

    parts       the parts to grade (default: all); InputError for unknown ones
    visibility  a visibility file's path or dict (see gradescope.py); default all visible
    timeout     seconds each part may take
    total_timeout  seconds the whole submission may take (parts not run then score 0)
    seed        the grading secret (an int >= 0) every submission is graded with; None: a
                new random one for each submission
    refuse_flagged  a part whose code honesty.py flags scores 0 (default: reported only)
    reveal_after    an ISO date: the checks that would be visible stay hidden until then
                (gradescope.py: after_due_date when graded before it)
    derivation_points  what each part's written derivation is worth, graded by hand in
                Gradescope's manual grading (its results.json test scores 0 of 0)
    """
    from ..grading.scoring import validate_parts, validate_seed
    parts, seed = validate_parts(parts), validate_seed(seed)
    out = Path(out)
    if out.suffix != ".zip":
        raise InputError(f"--out: expected a file name ending in .zip, got {str(out)!r}")
    if out.is_dir():
        raise InputError(f"--out {out}: is a folder; expected a .zip file name")
    if not out.parent.is_dir():
        raise InputError(f"--out {out}: its folder {out.parent} does not exist")
    config = {"format": 1, "parts": parts, "timeout": timeout, "total_timeout": total_timeout,
              "seed": seed,
              "refuse_flagged": bool(refuse_flagged),
              "visibility": read_visibility(visibility).to_dict(),
              "reveal_after": None if reveal_after is None
              else read_visibility(None, reveal_after).reveal_after.isoformat(),
              "manifest": _manifest_of(parts, derivation_points)}   # InputError: a student copy
    with atomic_write(out, "wb", suffix=".zip") as file:   # never half a zip, nor over
        with zipfile.ZipFile(file, "w") as archive:          # a device or another's zip
            _add(archive, "setup.sh", SETUP_SH, executable=True)
            _add(archive, "run_autograder", RUN_AUTOGRADER, executable=True)
            _add(archive, "autograder.json", json.dumps(config, indent=2) + "\n")
            for path, name in _package_files():
                _add(archive, name, path.read_bytes())
    return config


def make_autograder(out, parts=None, visibility=None, timeout=60.0, out_fn=print, seed=None,
                    refuse_flagged=False, reveal_after=None, total_timeout=TOTAL_TIMEOUT,
                    derivation_points=0):
    """`assignment autograder --out ZIP`: write the zip and say how to use it."""
    config = build_autograder(out, parts, visibility, timeout, seed, refuse_flagged,
                              reveal_after, total_timeout, derivation_points)
    worst = min(len(config["parts"]) * config["timeout"], config["total_timeout"])
    hidden = sorted({v for v in config["visibility"].values()} - {"visible"})
    out_fn(f"wrote {out}: a Gradescope autograder for parts {', '.join(config['parts'])}"
           f" ({config['timeout']:g} s per part, {config['total_timeout']:g} s in all"
           f"{'; some checks ' + ' / '.join(hidden) if hidden else ''}). Upload it as the "
           "programming assignment's autograder (Ubuntu base image) with a time limit above "
           f"{worst:g} s (the worst case); students submit "
           "their numpy_transformer/ folder or their whole copy.")
    points = config["manifest"].get("derivation_points", 0)
    out_fn(f"Each part's written derivation (derivations/<part>.md) shows as a 0-point test; "
           "grade it by hand: turn on the assignment's manual grading and add a question per "
           f"part{f' worth {points} points' if points else ''}.")
    if config["reveal_after"]:
        out_fn(f"The visible checks stay hidden until {config['reveal_after']}: set the "
               "assignment's due date to it, and regrade after it to show them at once.")
    return 0
