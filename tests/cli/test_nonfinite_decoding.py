"""A checkpoint whose weights are finite but overflow float32 in the first layer (all 3e38)
stops decoding with one error naming the checkpoint, exit 2, and no raw RuntimeWarning:
not empty lines and exit 0 (decoding/common.py `finite`, issue 52)."""

import pytest

from numpy_transformer.checkpoint import load_checkpoint, save_checkpoint
from doors import error, nt, ok


def overflowing(path, out):
    """A copy of the checkpoint `path` at `out` with every weight 3e38 (finite in float32)."""
    ckpt = load_checkpoint(path)
    for _, param, _ in ckpt.model.named_parameters():
        param[...] = 3e38
    save_checkpoint(out, ckpt.model, **ckpt.metadata)
    return out


@pytest.mark.parametrize("kind", ["seq2seq", "lm"])
def test_overflowing_weights_stop_decoding_naming_the_checkpoint(tmp_path, kind):
    if kind == "lm":
        (tmp_path / "text.txt").write_text("First Citizen:\nBefore we proceed.\n" * 40)
        ok(nt("train-lm", "--text", "text.txt", "--quick", "--steps", "2", "--no-figures",
              "--out", "run", cwd=tmp_path))
        commands = [("generate", "--max-new-tokens", "5"),
                    ("generate", "--max-new-tokens", "5", "--num-samples", "2")]
    else:
        ok(nt("train", "--task", "reverse", "--quick", "--steps", "2", "--no-figures",
              "--out", "run", cwd=tmp_path))
        commands = [("translate", "abc"), ("translate", "--beam", "2", "abc"), ("evaluate",)]
    overflowing(tmp_path / "run" / "last.npz", tmp_path / "big.npz")
    for command in commands:
        done = nt(command[0], "--checkpoint", "big.npz", *command[1:], cwd=tmp_path)
        error(done, 2, "checkpoint big.npz:", "not finite")
        assert "RuntimeWarning" not in done.stderr, done.stderr
