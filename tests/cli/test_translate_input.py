"""The doors of `translate` on many sentences (--input FILE, standard input, --output) and
of `generate --num-samples`: one output line per input line, in order, batched decoding
equal to one-at-a-time decoding, warnings on stderr only, a closed pipe ending quietly."""

import subprocess

import pytest

from doors import NT, blocked_places, error, nt, ok

QUICK = ["--quick", "--no-figures", "--no-progress"]
LINES = ["abc", "", "hello", "zyxwvut", "a", "qwertyuio", "mm", "", "abcdefgh", "xyz"] * 3


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    folder = tmp_path_factory.mktemp("translate_input")
    (folder / "in.txt").write_text("".join(line + "\n" for line in LINES))
    (folder / "text.txt").write_text("to be or not to be, that is the question.\n" * 60)
    ok(nt("train", "--task", "reverse", *QUICK, "--out", "runs/reverse", cwd=folder))
    return folder


def translate(work, *args, stdin=None):
    """`translate --checkpoint runs/reverse/best.npz ARGS`, `stdin` piped in when given."""
    return subprocess.run([*NT, "translate", "--checkpoint", "runs/reverse/best.npz", *args],
                          cwd=work, capture_output=True, text=True, timeout=300,
                          input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL)


def test_batched_greedy_output_equals_one_at_a_time(work):
    batched = ok(translate(work, "--input", "in.txt", "--batch-size", "8")).split("\n")[:-1]
    alone = ok(translate(work, "--input", "in.txt", "--batch-size", "1")).split("\n")[:-1]
    assert batched == alone and len(batched) == len(LINES)
    assert [out for line, out in zip(LINES, batched) if not line] == [""] * LINES.count("")
    texts = ok(translate(work, *[line for line in LINES if line])).split("\n")[:-1]
    assert texts == [out for line, out in zip(LINES, batched) if line]


def test_standard_input_and_beam_options(work):
    piped = ok(translate(work, stdin="abc\n\nhello\n"))
    assert ok(translate(work, "--input", "-", stdin="abc\n\nhello\n")) == piped
    assert piped.split("\n")[:-1] == ok(translate(work, "--input", "in.txt")).split("\n")[:3]
    beam = ok(translate(work, "--beam", "3", "--alpha", "1.0", "--input", "-",
                        stdin="abc\r\n\nhello\n"))
    assert len(beam.split("\n")) == 4 and beam.split("\n")[1] == ""


def test_output_file_is_refused_if_it_exists_unless_overwrite(work):
    ok(translate(work, "--input", "in.txt", "--output", "out.txt"))
    assert (work / "out.txt").read_text().split("\n")[:-1] == \
        ok(translate(work, "--input", "in.txt")).split("\n")[:-1]
    error(translate(work, "--input", "in.txt", "--output", "out.txt"), 2, "--output",
          "already exists", "--overwrite")
    ok(translate(work, "abc", "--output", "out.txt", "--overwrite"))
    assert len((work / "out.txt").read_text().splitlines()) == 1
    error(translate(work, "--input", "in.txt", "--output", "in.txt", "--overwrite"), 2,
          "--output", "--input")


@pytest.mark.slow
def test_an_output_that_cannot_be_written_is_refused_before_any_work(work):
    """A file, a dangling symbolic link or a link loop where --output's folder should be (or
    a folder without write permission, for a user other than root, who may write anywhere)
    is refused naming --output, before the checkpoint is even loaded: no decoding is lost."""
    places = {f"{place}/out.txt": why for place, why in blocked_places(work).items()}
    places["a_file/sub/out.txt"] = "is a file"
    for path, why in places.items():
        done = translate(work, "--input", "in.txt", "--output", path)
        error(done, 2, "--output", repr(path), why)
        assert "written" not in done.stderr
        error(nt("translate", "--checkpoint", "missing.npz", "abc", "--output", path,
                 cwd=work), 2, "--output", repr(path), why)        # checked before loading
    assert (work / "a_file").read_text() == "kept\n"
    ok(translate(work, "abc", "--output", "new/folder/out.txt"))    # missing folders are made
    assert (work / "new" / "folder" / "out.txt").read_text().count("\n") == 1


def test_nothing_to_translate_and_both_inputs_are_refused(work):
    error(translate(work), 2, "TEXT", "--input")
    error(translate(work, "abc", "--input", "in.txt"), 2, "--input", "TEXT")
    error(translate(work, "--input", "missing.txt"), 2, "missing.txt")
    error(translate(work, "--input", "-", stdin="abc\n" + "x" * 500 + "\n"), 2,
          "--input line 2", "500 tokens")


def test_unknown_symbols_and_long_inputs_warn_once_on_stderr(work):
    done = translate(work, "--input", "-", stdin="ABC\nabc\nabcdefghijklmnopqrstu\nabé\n")
    out = ok(done)
    assert len(out.split("\n")) == 5 and "warning" not in out
    unknown = [line for line in done.stderr.splitlines() if "vocabulary" in line]
    assert len(unknown) == 1 and all(f"'{c}'" in unknown[0] for c in "ABCé")
    long_ = [line for line in done.stderr.splitlines() if "longer than any" in line]
    assert len(long_) == 1, done.stderr
    assert "--input line 3, has 21 tokens" in long_[0] and "at most 10 characters" in long_[0]
    assert "longer than any" not in translate(work, "abc").stderr


def test_a_closed_pipe_ends_quietly(work):
    (work / "many.txt").write_text("abcdefgh\n" * 3000)
    proc = subprocess.Popen([*NT, "translate", "--checkpoint", "runs/reverse/best.npz",
                             "--input", "many.txt"], cwd=work, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    assert proc.stdout.readline()
    proc.stdout.close()                                              # as `| head -1` does
    stderr = proc.stderr.read()
    assert proc.wait(timeout=300) in (0, 141)           # 141: EXIT_STATUS["closed output"]
    assert "Traceback" not in stderr and "error" not in stderr, stderr


def test_generate_num_samples(work):
    ok(nt("train-lm", "--text", "text.txt", *QUICK, "--out", "runs/lm", cwd=work))
    args = ["generate", "--checkpoint", "runs/lm/best.npz", "--prompt", "to",
            "--max-new-tokens", "40", "--seed", "3"]
    out = ok(nt(*args, "--num-samples", "3", cwd=work))
    assert out == ok(nt(*args, "--num-samples", "3", cwd=work))          # seeded
    parts = out.split("--- sample ")
    assert parts[0] == "" and [p.split(" ---\n")[0] for p in parts[1:]] == ["1", "2", "3"]
    texts = [p.split(" ---\n", 1)[1] for p in parts[1:]]
    assert all(t.startswith("to") and len(t) == 2 + 40 + 1 for t in texts)
    assert len(set(texts)) > 1
    assert ok(nt(*args, "--num-samples", "1", cwd=work)) == ok(nt(*args, cwd=work))
    error(nt(*args, "--num-samples", "0", cwd=work), 2, "--num-samples")
