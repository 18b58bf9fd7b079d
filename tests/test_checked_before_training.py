"""Bad input is refused with one `error:` line naming the option or the file, exit 2, before
the first training step: no run loses its training to a check that could have run at the
start, and no command hangs on a FIFO or reads a device without end (issue 26)."""

import os

import pytest

from doors import error, nt, ok

QUICK = ("--quick", "--steps", "6", "--warmup", "1", "--no-progress")
WAIT = 30                     # seconds: a command that hangs fails the test instead


@pytest.fixture
def fifo(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("needs os.mkfifo")
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


# Every path the package reads goes through one regular-file check (files.open_regular).

def test_a_fifo_or_a_device_as_the_data_manifest_is_refused(tmp_path, fifo):
    for path, kind in ((fifo, "a FIFO"), ("/dev/zero", "a device")):
        error(nt("data", "shakespeare", "--out", tmp_path / "d", "--manifest", path,
                 cwd=tmp_path, timeout=WAIT), 2, "--manifest", kind)


@pytest.mark.parametrize("name", ["tinyshakespeare.txt", "tinyshakespeare.txt.part"])
def test_a_fifo_under_a_data_file_name_is_refused(tmp_path, name):
    if not hasattr(os, "mkfifo"):
        pytest.skip("needs os.mkfifo")
    (tmp_path / "d").mkdir()
    os.mkfifo(tmp_path / "d" / name)
    error(nt("data", "shakespeare", "--out", "d", "--base-url", "http://127.0.0.1:9",
             cwd=tmp_path, timeout=WAIT), 2, name, "a FIFO")


def test_a_fifo_as_the_gradescope_visibility_is_refused(tmp_path, fifo):
    error(nt("assignment", "grade", tmp_path, "--gradescope", tmp_path / "results.json",
             "--visibility", fifo, cwd=tmp_path, timeout=WAIT), 2, "--visibility", "a FIFO")
