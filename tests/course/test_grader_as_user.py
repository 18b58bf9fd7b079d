"""As root where the kernel gives no private root (Gradescope's case), the workers run as the
unprivileged user NT_GRADER_USER: the grader says so, or says why it cannot.

The end-to-end test needs root and a user (`nobody`) who can run this Python with NumPy;
it is skipped elsewhere (here, for instance, when Python lives under a closed /root).
"""

import os
import subprocess
import sys

import pytest

from doors import NT
from numpy_transformer.course.sandbox.namespaces import Sandbox, as_user
from test_assignment_grader import fresh
from test_grader_survives import prepend, rows

as_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                             reason="only root can run the workers as another user")


@as_root
def test_a_missing_user_is_named(monkeypatch):
    monkeypatch.setenv("NT_GRADER_USER", "nt-no-such-user")
    box = as_user(Sandbox("none", "unshare refused"), sys.executable)
    assert box.level == "none" and "no user nt-no-such-user" in box.line


@as_root
def test_the_user_is_used_where_it_can_run_python_or_the_line_says_why(monkeypatch):
    monkeypatch.setenv("NT_GRADER_USER", "nobody")
    box = as_user(Sandbox("none", "unshare refused"), sys.executable)
    if box.level == "user":
        assert "the unprivileged user nobody" in box.line
    else:
        assert "the user nobody cannot run Python here" in box.line, box.line


def without_namespaces(tmp_path):
    """An environment whose `unshare` refuses, the workers to run as `nobody`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "unshare").write_text("#!/bin/sh\necho 'unshare: refused' >&2\nexit 1\n")
    (bin_dir / "unshare").chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "NT_GRADER_USER": "nobody"}


@as_root
def test_as_a_user_the_worker_reads_no_closed_folder(solution_copy, tmp_path):
    """Protection: the unprivileged user (no namespaces at all)."""
    env = without_namespaces(tmp_path)
    level = subprocess.run([sys.executable, "-c", "from numpy_transformer.course.sandbox."
                            "namespaces import isolation; print(isolation().line)"],
                           env=env, capture_output=True, text=True, timeout=300).stdout
    if "unprivileged user nobody" not in level:
        pytest.skip(level.strip() or "no line")
    secret = tmp_path / "source"
    secret.mkdir(mode=0o700)
    (secret / "reference.py").write_text("answers\n")
    os.chmod(tmp_path, 0o755)
    folders = [fresh(solution_copy, tmp_path, name) for name in "ab"]
    prepend(tmp_path / "b", "GELU.backward",
            f"try:\n    open({str(secret / 'reference.py')!r}).read()\n"
            "except OSError:\n    pass\nelse:\n    raise RuntimeError('READ the reference')")
    done = subprocess.run([*NT, "assignment", "grade", *map(str, folders), "--parts", "gelu",
                           "--csv", str(tmp_path / "class.csv")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert "unprivileged user nobody" in done.stdout, done.stdout + done.stderr
    assert [rows(tmp_path / "class.csv")[s]["gelu"] for s in "ab"] == ["10", "10"], done.stdout
