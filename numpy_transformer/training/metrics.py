"""Evaluation metrics: exact match, token accuracy, BLEU, loss and perplexity.

    sequence_accuracy([[5, 6], [7]], [[5, 6], [8]])    # 0.5: one sequence of two is exactly right
    token_accuracy([[5, 6], [7]], [[5, 6], [8]])       # 0.8: 4 of 5 positions (EOS counted)
    token_accuracy([[3, 6]], [[3, 6]])                  # 2/3: an <unk> (id 3) is never right
    perplexity(1.2)                                     # exp(1.2) = 3.32

`evaluate_seq2seq` decodes held-out sources greedily and scores the outputs;
`evaluate_lm` measures a language model's mean next-token loss in nats on
held-out text and its perplexity, exp(loss): "as unsure as a uniform choice
among that many tokens".
"""

import math

import numpy as np

from ..backend import to_numpy, xp
from ..validation import check_aligned, check_integer, message
from ..data.batching import make_batch
from ..data.bleu import text_bleu
from ..data.tokenizers import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from ..losses import CrossEntropyLoss
from ..errors import InputError

_END = object()     # the end-of-sequence position, compared like a token


def _check_pairs(predictions, references):
    return check_aligned(predictions, references, "predictions", "prediction")


def sequence_accuracy(predictions, references, *, unk_id=UNK_ID):
    """Fraction of predictions equal to their reference, token for token and in length.

    A reference holding `unk_id` (a symbol outside the vocabulary) is never matched: the
    model cannot have produced the symbol it stands for, so predicting <unk> is no answer.
    """
    predictions, references = _check_pairs(predictions, references)
    return sum(list(p) == list(r) and unk_id not in list(r)
               for p, r in zip(predictions, references)) / len(references)


def token_accuracy(predictions, references, *, unk_id=UNK_ID):
    """Fraction of reference positions, the end-of-sequence position included, predicted right.

    Each reference r is compared position by position with its prediction p,
    over len(r) + 1 positions: the last one is "the sequence ends here", so
    stopping early or late costs one position, and a prediction cut short
    misses every position after its end. A reference position holding `unk_id` is
    never predicted right (see sequence_accuracy).
    """
    predictions, references = _check_pairs(predictions, references)
    correct = total = 0
    for p, r in zip(predictions, references):
        p, r = list(p) + [_END], list(r) + [_END]
        correct += sum(a == b and b != unk_id for a, b in zip(p, r))
        total += len(r)
    return correct / total


def perplexity(loss):
    """exp(loss) for a mean loss in nats (inf if it would overflow)."""
    return math.exp(loss) if loss < 700 else math.inf


def _length_sorted_chunks(seqs, batch_size):
    """Index chunks of `seqs`, sorted by length so each batch pads little."""
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    return [order[k:k + batch_size] for k in range(0, len(order), batch_size)]


def decode_batches(model, src_seqs, *, batch_size=256, max_len=None, beam_size=1,
                   length_penalty=0.6):
    """Outputs (lists of ids, without BOS/EOS) for a list of source id sequences.

    Greedy decoding, or beam search when beam_size > 1 (ranked with the length penalty
    alpha = length_penalty); the order of `src_seqs` is kept. max_len None: each
    method's default (source length + 10 greedy, + 50 beam, capped by the model).
    """
    from ..decoding import greedy_decode, strip_special
    check_integer(batch_size, "batch_size")
    check_integer(beam_size, "beam_size")
    outputs = [None] * len(src_seqs)
    for chunk in _length_sorted_chunks(src_seqs, batch_size):
        src = make_batch([src_seqs[i] for i in chunk], [[] for _ in chunk]).src   # (B, S)
        if beam_size > 1:
            from ..decoding import beam_search
            rows = beam_search(model, src, beam_size=beam_size, max_len=max_len,
                               length_penalty=length_penalty, bos_id=BOS_ID, eos_id=EOS_ID)
        else:
            ids = greedy_decode(model, src, max_len, bos_id=BOS_ID, eos_id=EOS_ID)  # (B, T)
            rows = strip_special(ids, eos_id=EOS_ID, pad_id=PAD_ID)
        for i, row in zip(chunk, rows):
            outputs[i] = [int(t) for t in row]
    return outputs


def seq2seq_loss(model, pairs, *, label_smoothing=0.0, batch_size=256):
    """Mean teacher-forced cross-entropy per target token over encoded (src, tgt) pairs."""
    loss_fn = CrossEntropyLoss(ignore_index=PAD_ID, label_smoothing=label_smoothing)
    was_training = model.training
    model.eval()
    total = count = 0
    for chunk in _length_sorted_chunks([p[0] for p in pairs], batch_size):
        b = make_batch([pairs[i][0] for i in chunk], [pairs[i][1] for i in chunk])
        logits = model.forward(b.src, b.tgt_in, b.src_mask, b.tgt_mask)      # (B, T, V)
        total += loss_fn.forward(logits, b.tgt_out, num_tokens=b.ntokens) * b.ntokens
        count += b.ntokens
    model.train(was_training)
    return float(total) / max(count, 1)                  # one wait for the device, at the end


def evaluate_seq2seq(model, pairs, *, tgt_tokenizer=None, bleu=False, max_len=None,
                     label_smoothing=0.0, batch_size=256, beam_size=1, references=None,
                     lowercase=False, length_penalty=0.6, bleu_tokenize="13a"):
    """Scores of `model` on encoded held-out pairs [(src_ids, tgt_ids)].

    Returns {"loss", "exact_match", "token_accuracy"} (fractions in [0, 1]), and
    "perplexity" = exp(loss) when the loss is the plain cross-entropy (label_smoothing 0),
    plus "bleu" (0-100) when `bleu` is True, and "predictions" (the decoded id lists,
    in the order of `pairs`). Decoding is greedy, or beam search with beam_size > 1
    and the length penalty alpha = length_penalty (decode_batches).

    BLEU compares the decoded output text with `references`, the reference lines as
    written (one string per pair), the way sacreBLEU does (data.bleu.text_bleu): the
    number to quote. Without `references` the references are decoded from their ids,
    where a word outside the vocabulary has become <unk> (and can match a predicted
    <unk>), which reads higher.
    """
    if not pairs:
        raise InputError(message("pairs", "at least one held-out (src, tgt) pair", "none"))
    refs = [list(t) for _, t in pairs]
    preds = decode_batches(model, [s for s, _ in pairs], batch_size=batch_size, max_len=max_len,
                           beam_size=beam_size, length_penalty=length_penalty)
    scores = {"loss": seq2seq_loss(model, pairs, label_smoothing=label_smoothing,
                                   batch_size=batch_size),
              "exact_match": sequence_accuracy(preds, refs),
              "token_accuracy": token_accuracy(preds, refs)}
    if label_smoothing == 0.0:
        scores["perplexity"] = perplexity(scores["loss"])
    if bleu:
        if references is None:
            references = [tgt_tokenizer.decode(r) for r in refs]
        scores["bleu"] = text_bleu([tgt_tokenizer.decode(p) for p in preds], references,
                                   lowercase=lowercase, tokenize=bleu_tokenize)
    scores["predictions"] = preds
    return scores


def evaluate_lm(model, ids, *, block_size, batch_size=32, max_batches=None):
    """{"loss": mean next-token loss in nats, "perplexity": exp(loss)} on held-out `ids`.

    The text is cut into consecutive, non-overlapping windows of block_size
    tokens (each predicting the next); the r = (len(ids) - 1) % block_size targets
    after the last whole window are scored by one more window, the last block_size + 1
    tokens, counting only its last r predictions. So every token after the first is
    scored once (all of them unless max_batches stops early), and the result does not
    depend on any random draw.
    """
    check_integer(block_size, "block_size")
    ids = to_numpy(xp.asarray(ids)).astype("int64").ravel()
    n = (len(ids) - 1) // block_size
    if n < 1:
        raise InputError(message("ids", f"at least block_size + 1 = {block_size + 1} held-out "
                                 "tokens", len(ids)))
    starts = list(range(0, n * block_size, block_size))
    loss_fn = CrossEntropyLoss()
    was_training = model.training
    model.eval()
    total = count = 0
    for k, first in enumerate(range(0, len(starts), batch_size)):
        if max_batches is not None and k >= max_batches:
            break
        rows = np.array([ids[s:s + block_size + 1] for s in starts[first:first + batch_size]])
        x, y = xp.asarray(rows[:, :-1]), xp.asarray(rows[:, 1:])            # (B, T) each
        total += loss_fn.forward(model.forward(x), y, num_tokens=y.size) * y.size
        count += y.size
    rest = len(ids) - 1 - n * block_size            # targets after the last whole window
    if rest and count == n * block_size:            # every whole window was scored
        row = ids[-(block_size + 1):]                                    # (T + 1,)
        x, y = xp.asarray(row[None, :-1]), xp.asarray(row[None, -rest:])  # (1, T), (1, r)
        logits = model.forward(x)[:, -rest:]                             # (1, r, V)
        total += loss_fn.forward(logits, y, num_tokens=rest) * rest
        count += rest
    model.train(was_training)
    loss = float(total) / count                          # one wait for the device, at the end
    return {"loss": loss, "perplexity": perplexity(loss)}


def format_metrics(metrics):
    """'loss 0.412  exact_match 97.2%  ...': fractions as percentages."""
    parts = []
    for key, value in metrics.items():
        if key in ("exact_match", "token_accuracy"):
            parts.append(f"{key} {100 * value:.1f}%")
        elif key == "bleu":
            parts.append(f"bleu {value:.2f}")
        else:
            parts.append(f"{key} {value:.4g}")
    return "  ".join(parts)
