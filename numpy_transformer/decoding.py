"""Turning a trained model into output sequences: greedy search (more to come)."""

from .backend import to_numpy, xp
from .masks import make_causal_mask, make_padding_mask


def greedy_decode(model, src, max_len=None, *, bos_id=1, eos_id=2):
    """Most likely next token at every step, until EOS or `max_len` tokens.

    src (B, S) ids -> (B, T_out) ids without BOS; after a sequence's EOS the
    rest of its row is padding (config.pad_id).
    """
    was_training = model.training
    model.eval()
    pad_id = model.config.pad_id
    max_len = max_len or src.shape[1] + 10
    src_mask = make_padding_mask(src, pad_id)                        # (B, 1, 1, S)
    memory = model.encode(src, src_mask)                             # (B, S, D)
    B = src.shape[0]
    out = xp.full((B, 1), bos_id, dtype=xp.int64)                     # (B, 1)
    done = xp.zeros(B, dtype=bool)
    for _ in range(max_len):
        tgt_mask = make_causal_mask(out.shape[1])
        h = model.decode(memory, src_mask, out, tgt_mask)            # (B, t, D)
        logits = model.project(h[:, -1:])                           # (B, 1, V)
        next_id = xp.where(done, pad_id, logits[:, 0].argmax(-1))     # (B,)
        out = xp.concatenate([out, next_id[:, None]], axis=1)
        done |= next_id == eos_id
        if bool(done.all()):
            break
    model.train(was_training)
    return out[:, 1:]


def strip_special(ids, eos_id=2, pad_id=0):
    """Rows of ids -> lists of ints, cut at the first EOS, without padding."""
    rows = []
    for row in to_numpy(ids).tolist():
        if eos_id in row:
            row = row[:row.index(eos_id)]
        rows.append([t for t in row if t != pad_id])
    return rows
