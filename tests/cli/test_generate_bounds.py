"""`generate`'s sizes: --num-samples and --max-new-tokens are refused at the start, with an
estimate, where they cannot fit in memory (a `ulimit -v` included), as --beam is; one sample
is printed as it is drawn, so `generate ... | head` ends at once, quietly."""

import os
import resource
import subprocess
import sys

import pytest

from doors import NT, error, nt, ok

QUICK = ["--quick", "--no-figures", "--no-progress"]


@pytest.fixture(scope="module")
def lm(tmp_path_factory):
    """A tiny `train-lm` checkpoint."""
    folder = tmp_path_factory.mktemp("lm")
    (folder / "text.txt").write_text("to be or not to be, that is the question.\n" * 60)
    ok(nt("train-lm", "--text", "text.txt", *QUICK, "--steps", "6", "--out", "lm", cwd=folder))
    return folder / "lm" / "best.npz"


def test_sample_counts_and_lengths_that_cannot_fit_are_refused_at_the_start(lm):
    # refused before any sampling: a command that started sampling would not end (nt's
    # timeout catches that hang), and no time is measured
    error(nt("generate", "--checkpoint", lm, "--num-samples", "100000000"),
          2, "--num-samples", "100,000,000", "at most", "estimate", "available")
    error(nt("generate", "--checkpoint", lm, "--num-samples", "2", "--max-new-tokens",
             "1000000000000"), 2, "--max-new-tokens", "1,000,000,000,000", "at most", "estimate")


def _address_space(limit):
    def set_limit():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return set_limit


@pytest.mark.skipif(os.environ.get("NUMPY_TRANSFORMER_BACKEND", "numpy") == "cupy",
                    reason="CUDA cannot start under a 3 GiB address-space limit (it reserves more): the limit counted is the host's")
def test_a_memory_limit_is_counted_before_sampling(lm):
    # One million samples fit in this machine's memory, not in 3 GiB of address space.
    done = subprocess.run([*NT, "generate", "--checkpoint", str(lm), "--num-samples",
                           "1000000"], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, preexec_fn=_address_space(3 * 2**30))
    error(done, 2, "--num-samples", "1,000,000", "at most", "estimate", "available")


def test_one_sample_streams_and_a_closed_pipe_ends_it_quietly(lm):
    proc = subprocess.Popen([*NT, "generate", "--checkpoint", str(lm), "--max-new-tokens",
                             "1000000000", "--prompt", "to"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        head = proc.stdout.read(50)                     # `| head -c 50`
        proc.stdout.close()
        _, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert head.startswith(b"to") and len(head) == 50
    assert proc.returncode == 141 and b"Traceback" not in err and b"rror" not in err, err


def test_the_printed_sample_is_the_python_apis(lm):
    args = ["generate", "--checkpoint", lm, "--max-new-tokens", "80", "--seed", "4",
            "--prompt", "to be"]
    streamed = ok(nt(*args))
    batched = ok(nt(*args, "--num-samples", "2")).split("--- sample 2 ---")[0]
    import numpy_transformer
    text = numpy_transformer.load_trained(lm).generate("to be", 80, seed=4)
    assert streamed == text + "\n"
    assert len(streamed) > len("to be") + 40 and batched.startswith("--- sample 1 ---\nto be")


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS and /proc are Linux's")
def test_the_limit_is_in_the_available_memory():
    code = ("from numpy_transformer.system.sizes import available_memory as a; "
            "print(a() < 2**31)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, preexec_fn=_address_space(2 * 2**30))
    assert done.stdout.strip() == "True", done.stderr


def test_running_out_of_gpu_memory_is_an_error_not_a_bug(capsys):
    """CuPy's pool raises a MemoryError subclass; a failed cudaMalloc raises CUDA's own
    CUDARuntimeError. Both are one-line errors, exit 1, not 'This is a bug'."""
    from numpy_transformer.cli import _report

    class OutOfMemoryError(MemoryError):              # as cupy.cuda.memory's
        __module__ = "cupy.cuda.memory"

    class CUDARuntimeError(RuntimeError):              # as cupy_backends.cuda.api.runtime's
        __module__ = "cupy_backends.cuda.api.runtime"

    for err in (OutOfMemoryError("Out of memory allocating 1,024 bytes"),
                CUDARuntimeError("cudaErrorMemoryAllocation: out of memory")):
        assert _report(err) == 1
        said = capsys.readouterr().err
        assert said.startswith("error: out of GPU memory; try smaller sizes") and "a bug" not in said
    assert _report(MemoryError()) == 1
    assert capsys.readouterr().err.startswith("error: out of memory; try smaller sizes")
    assert _report(RuntimeError("cudaErrorLaunchFailure")) == 1
    assert "This is a bug" in capsys.readouterr().err


def test_several_samples_stream_the_first_and_a_closed_pipe_ends_them(lm):
    """`generate --num-samples 2 --max-new-tokens <huge> | head -c 100` prints at once: the
    first sample as it is drawn (the others, held, when all are drawn). The timeout only
    catches a hang: today's code, holding both, printed nothing for hours."""
    proc = subprocess.Popen([*NT, "generate", "--checkpoint", str(lm), "--num-samples", "2",
                             "--max-new-tokens", "10000000", "--prompt", "to"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
    try:
        head = proc.stdout.read(100)
        proc.stdout.close()
        _, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert head.startswith(b"--- sample 1 ---\nto") and len(head) == 100
    assert proc.returncode == 141 and b"Traceback" not in err, err


def test_several_samples_print_the_python_apis_texts(lm):
    import numpy_transformer
    from numpy_transformer.decoding import generate_texts
    run = numpy_transformer.load_trained(lm)
    texts = generate_texts(run.model, run.tokenizers["text"], "to be", 30, 3, temperature=0.8,
                           top_k=5, top_p=0.9, seed=4)
    shown = ok(nt("generate", "--checkpoint", lm, "--max-new-tokens", "30", "--seed", "4",
                  "--prompt", "to be", "--num-samples", "3", "--top-k", "5", "--top-p", "0.9"))
    assert shown == "".join(f"--- sample {i + 1} ---\n{t}\n" for i, t in enumerate(texts))


@pytest.mark.slow
def test_top_p_from_the_command_line(lm):
    args = ["generate", "--checkpoint", lm, "--max-new-tokens", "40", "--seed", "3"]
    assert ok(nt(*args, "--top-p", "1")) == ok(nt(*args))          # p = 1: plain sampling
    import numpy_transformer
    text = numpy_transformer.load_trained(lm).generate("\n", 40, top_p=0.5, seed=3)
    assert ok(nt(*args, "--top-p", "0.5")) == text + "\n"
    for bad in ("0", "1.5", "-1", "nan", "x"):
        error(nt(*args, "--top-p", bad), 2, "--top-p", "0 < P <= 1")


@pytest.mark.slow
def test_prompt_file_is_continued_as_a_prompt(lm, tmp_path):
    (tmp_path / "start.txt").write_text("to be or", encoding="utf-8")
    args = ["generate", "--checkpoint", lm, "--max-new-tokens", "30", "--seed", "2"]
    assert ok(nt(*args, "--prompt-file", "start.txt", cwd=tmp_path)) == \
        ok(nt(*args, "--prompt", "to be or"))
    (tmp_path / "bad.txt").write_bytes(b"to \xff")
    (tmp_path / "empty.txt").write_bytes(b"")
    error(nt(*args, "--prompt-file", "bad.txt", cwd=tmp_path), 2, "--prompt-file", "UTF-8")
    error(nt(*args, "--prompt-file", "empty.txt", cwd=tmp_path), 2, "--prompt-file", "empty")
    error(nt(*args, "--prompt-file", "missing.txt", cwd=tmp_path), 2, "--prompt-file",
          "missing.txt")
    error(nt(*args, "--prompt-file", ".", cwd=tmp_path), 2, "--prompt-file", "directory")
    error(nt(*args, "--prompt-file", "start.txt", "--prompt", "x", cwd=tmp_path), 2,
          "--prompt", "not allowed with")
