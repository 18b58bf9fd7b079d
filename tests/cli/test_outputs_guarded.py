"""Issue 52, A and D: no output option replaces what is not a regular file, even with
--overwrite; "-" and /dev/stdout are standard output; of two writers of one file the second
fails; every output is checked before the work; a full standard output is named."""

import errno
import json
import os
import stat
import subprocess

import pytest
from doors import NT, blocked_places, error, names, nt, ok, raises_naming

from numpy_transformer.errors import InputError
from numpy_transformer.system.files import atomic_write, declare_output
from numpy_transformer.system.owned import owned_prefix, remove_stale

QUICK = ("--task", "reverse", "--quick", "--steps", "6", "--no-progress", "--no-figures")


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    """best.npz and last.npz of a finished tiny run."""
    out = tmp_path_factory.mktemp("run") / "r"
    ok(nt("train", *QUICK, "--out", out))
    return out


def _writers(ckpt, path):
    """The three output options, each writing `path`."""
    return {"--json": ("evaluate", "--checkpoint", ckpt / "best.npz", "--examples", "3",
                       "--json", path),
            "--output": ("translate", "--checkpoint", ckpt / "best.npz", "abc", "--output",
                         path),
            "--out": ("average", ckpt / "best.npz", ckpt / "last.npz", "--out", path)}


def test_no_output_replaces_a_fifo_or_a_symbolic_link_even_with_overwrite(ckpt, tmp_path):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "null").symlink_to(os.devnull)
    (tmp_path / "mine.txt").write_text("mine")
    (tmp_path / "link").symlink_to(tmp_path / "mine.txt")      # refused too: named, kept
    kinds = {"fifo": "a FIFO", "null": "a symbolic link", "link": "a symbolic link"}
    for name, kind in kinds.items():
        for option, args in _writers(ckpt, tmp_path / name).items():
            for extra in (("--overwrite",), ()) if name == "fifo" else (("--overwrite",),):
                first = error(nt(*args, *extra), 2, option, name, kind, "refusing")
                assert "--overwrite" not in first.split("refusing")[1], first
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)
    assert os.readlink(tmp_path / "null") == os.devnull
    assert os.path.islink(tmp_path / "link") and (tmp_path / "mine.txt").read_text() == "mine"
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".tmp-")]


def test_a_character_device_is_named_as_one(ckpt):
    error(nt("evaluate", "--checkpoint", ckpt / "best.npz", "--json", "/dev/null",
             "--overwrite"), 2, "--json", "/dev/null", "a character device")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_dash_and_dev_stdout_are_standard_output_written_through(ckpt, tmp_path):
    for name in ("-", "/dev/stdout"):
        shown = ok(nt("evaluate", "--checkpoint", ckpt / "best.npz", "--examples", "3",
                      "--json", name, cwd=tmp_path))
        assert json.loads(shown[shown.index("{"):])["scores"]
        said = ok(nt("translate", "--checkpoint", ckpt / "best.npz", "abc", "cba",
                     "--output", name, cwd=tmp_path))
        assert len(said.splitlines()) == 2
    assert not list(tmp_path.iterdir())                       # no file named "-"
    error(nt("average", ckpt / "best.npz", ckpt / "last.npz", "--out", "-"), 2, "--out",
          "standard output")


def test_the_second_of_two_writers_of_one_file_fails(tmp_path):
    """The name is free when checked, taken (by another command) before the link."""
    out = tmp_path / "av.npz"
    declare_output(out, "--out", replace=False)
    with raises_naming(InputError, "--out", str(out), "already"):
        with atomic_write(out) as f:
            f.write(b"second")
            out.write_bytes(b"first")                          # the other writer wins
    assert out.read_bytes() == b"first"
    assert sorted(os.listdir(tmp_path)) == ["av.npz"]
    declare_output(out, "--out", replace=True)                 # --overwrite: replaced
    with atomic_write(out) as f:
        f.write(b"second")
    assert out.read_bytes() == b"second"


def test_a_fifo_made_while_writing_is_not_replaced_with_overwrite(tmp_path):
    out = tmp_path / "o.json"
    declare_output(out, "--json", replace=True)
    with raises_naming(InputError, "--json", "a FIFO"):
        with atomic_write(out, "w") as f:
            f.write("{}")
            os.mkfifo(out)
    assert stat.S_ISFIFO(os.lstat(out).st_mode) and os.listdir(tmp_path) == ["o.json"]


def _dead_pid():
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def test_temporary_files_of_dead_processes_are_removed_at_the_next_write(tmp_path):
    dead = f".tmp-{_dead_pid()}-12345-abcd.npz"
    locked = f".tmp-{_dead_pid()}-12345-held.npz"           # locked: another machine's
    mine = owned_prefix(".tmp-") + "live.json"
    unowned = ".tmp-q1w2e3.npz"                               # no pid: never touched
    for name in (dead, locked, mine, unowned):
        (tmp_path / name).write_bytes(b"x")
    import fcntl
    with open(tmp_path / locked, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with atomic_write(tmp_path / "out.json", "w") as f:
            f.write("{}")
    assert sorted(os.listdir(tmp_path)) == sorted([locked, mine, unowned, "out.json"])
    assert remove_stale(tmp_path, ".tmp-") == [locked]        # the lock is gone now


def test_grader_folders_of_dead_processes_are_removed_at_the_next_grade(tmp_path,
                                                                         monkeypatch):
    from numpy_transformer.system.owned import OwnedFolder
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    dead = tmp_path / f"nt-grader-{_dead_pid()}-12345-zz"
    (dead / "harness").mkdir(parents=True)
    other = tmp_path / "nt-grader-plain"                      # not ours to judge
    other.mkdir()
    folder = OwnedFolder("nt-grader-")
    assert not dead.exists() and other.exists()
    assert os.path.basename(folder.name).startswith(owned_prefix("nt-grader-"))
    remove_stale(tmp_path, "nt-grader-")                      # alive: kept
    assert os.path.isdir(folder.name)
    folder.cleanup()
    assert not os.path.exists(folder.name)


def test_outputs_under_which_nothing_can_be_made_are_refused_before_the_work(ckpt, tmp_path):
    for i, (place, says) in enumerate(blocked_places(tmp_path).items()):   # 3 or 4 places:
        option, args = list(_writers(ckpt, tmp_path / place / "x.out").items())[i % 3]
        done = nt(*args)                                       # each of the 3 writers
        error(done, 2, option, place, says)
        assert done.stdout == "", done.stdout                  # no scores, no outputs


def test_a_full_standard_output_is_named(ckpt):
    with open("/dev/full", "w") as full:
        done = subprocess.run([*NT, "evaluate", "--checkpoint", str(ckpt / "best.npz"),
                               "--examples", "3"], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: standard output: No space left on device"], done.stderr


@pytest.mark.parametrize("link", ["dangling", "loop"])
def test_train_out_a_broken_symbolic_link_names_it(tmp_path, link):
    (tmp_path / "dangling").symlink_to("nowhere")
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "t.txt").write_text("to be or not to be, that is the question. " * 20)
    says = "missing target" if link == "dangling" else "link loop"
    error(nt("train", *QUICK, "--out", link, cwd=tmp_path), 2, "--out", link, says)
    error(nt("train-lm", "--text", "t.txt", "--quick", "--steps", "6", "--no-figures",
             "--out", link, cwd=tmp_path), 2, "--out", link, says)


def test_a_run_folder_one_cannot_write_in_is_named_with_a_way_on(tmp_path, monkeypatch):
    from numpy_transformer.training import run_folder

    def refused(path, flags):
        raise PermissionError(errno.EACCES, "Permission denied", path)
    monkeypatch.setattr(run_folder, "_open_lock", refused)
    with raises_naming(InputError, "out", str(tmp_path / "r"), "Permission denied") as info:
        run_folder.RunFolder(tmp_path / "r").claim(resuming=True)
    assert ".lock" not in str(info.value)
    names(info.value, "NEWDIR")


def test_folders_of_outputs_replace_no_fifo_either(tmp_path):
    """`train --figures DIR` and `lessons --out DIR` write files of known names: one of them
    that is a FIFO is refused before any work (reading it to compare would block too)."""
    (tmp_path / "figs").mkdir()
    os.mkfifo(tmp_path / "figs" / "loss.png")
    done = nt("train", *QUICK[:-1], "--out", tmp_path / "r", "--figures", tmp_path / "figs",
              "--overwrite", timeout=120)
    error(done, 2, "--figures", "loss.png", "a FIFO")
    assert not (tmp_path / "r").exists()
    (tmp_path / "lessons").mkdir()
    os.mkfifo(tmp_path / "lessons" / "README.md")
    error(nt("lessons", "--out", tmp_path / "lessons", "--overwrite", timeout=120), 2,
          "--out", "README.md", "a FIFO")
    assert stat.S_ISFIFO(os.lstat(tmp_path / "lessons" / "README.md").st_mode)
