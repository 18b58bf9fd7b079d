"""`assignment grade --json/--csv` write their files atomically (files.atomic_write).

An interrupted grader never leaves half a file: when the last step of a write (the rename
over the old file) fails, the previous file is still there, whole, and no temporary file
is left beside it. Grading itself is replaced by a stand-in here; only the writing is tested.
"""

import importlib
import os

import pytest

from numpy_transformer.course.classroom.grade import GradeReport
from numpy_transformer.course.classroom.grade_command import grade_command

OLD = "the previous grade\n"
grade_module = importlib.import_module("numpy_transformer.course.classroom.grade")  # not the function


@pytest.fixture
def interrupted(monkeypatch):
    """Grading returns an empty report at once; every os.replace fails (as if killed)."""
    monkeypatch.setattr(grade_module, "grade",
                        lambda directory, **_: GradeReport(str(directory), []))

    def replace(*args):
        raise KeyboardInterrupt("interrupted before the rename")
    monkeypatch.setattr(os, "replace", replace)


def assert_intact(path):
    assert path.read_text(encoding="utf-8") == OLD
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".tmp-")] == []


@pytest.mark.parametrize("option", ["--json", "--csv", "both"])
def test_an_interrupted_write_leaves_the_previous_file_whole(tmp_path, interrupted, option):
    written = {"--json": tmp_path / "grade.json", "--csv": tmp_path / "class.csv"}
    chosen = written if option == "both" else {option: written[option]}
    for path in chosen.values():
        path.write_text(OLD, encoding="utf-8")
    with pytest.raises(KeyboardInterrupt):
        grade_command([tmp_path / "copy"], json_out=chosen.get("--json"),
                      csv_out=chosen.get("--csv"), out=lambda *a: None)
    for path in chosen.values():
        assert_intact(path)


def test_a_finished_write_replaces_the_file(tmp_path, monkeypatch):
    monkeypatch.setattr(grade_module, "grade",
                        lambda directory, **_: GradeReport(str(directory), []))
    (tmp_path / "grade.json").write_text(OLD, encoding="utf-8")
    grade_command([tmp_path / "copy"], json_out=tmp_path / "grade.json",
                  csv_out=tmp_path / "class.csv", out=lambda *a: None)
    assert '"points": 0' in (tmp_path / "grade.json").read_text(encoding="utf-8")
    assert (tmp_path / "class.csv").read_bytes().startswith(b"student,total,max_points")
