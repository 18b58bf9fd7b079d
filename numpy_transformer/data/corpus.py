"""Assembling a run's data from its DataConfig: a generated task, a parallel corpus or a text.

    data = seq2seq_data(DataConfig(task="reverse"))    # or src/tgt or tsv, val_*, test_*, ...
    data.task or data.train; data.val; data.test; data.dropped
    tok, train_ids, val_ids = text_data(DataConfig(text="shakespeare.txt", max_len=128))

A corpus is tokenised by words, or by byte-pair encoding with `bpe` merges
(data/bpe.py); `joint_vocab` fits one tokenizer on both sides, which
share_embeddings (one matrix for both embeddings and the output) requires.
A resumed run (of either kind) passes its saved tokenizers instead of fitting new
ones, so that every id keeps the meaning the model learned.

`max_len` is the model's max_len, the longest sequence it handles, in tokens.
A pair whose source or target (with <bos>) is longer than max_len cannot be
trained on; such pairs are dropped here, at load time, and counted in
`data.dropped` so the command line can say so. Errors name DataConfig's fields (first,
or in backquotes: the command line names its options there instead).
"""

from dataclasses import dataclass, field

import numpy as np

from ..validation import message
from ..errors import InputError
from .batching import encode_pairs
from .bpe import BPETokenizer
from .loaders import load_parallel, load_text, load_tsv, split_text
from .tasks import get_task
from .tokenizers import CharTokenizer, WordTokenizer


@dataclass
class Seq2SeqData:
    name: str            # "reverse", ..., or "translation"
    task: object         # the generated Task (fresh training pairs every epoch), or None
    train: list          # encoded training pairs of a corpus (None for a task)
    src_tok: object
    tgt_tok: object
    val: list            # encoded held-out pairs, evaluated during training
    test: list           # encoded test pairs (corpus only), evaluated at the end
    decode_len: int      # longest output when decoding (None: source length + 10)
    bleu: bool           # report BLEU (corpora)
    dropped: dict = field(default_factory=dict)   # split -> pairs longer than max_len
    val_refs: list = None    # the validation / test reference lines as written (corpora),
    test_refs: list = None   # aligned with val / test: BLEU is quoted against these
    notes: list = field(default_factory=list)     # what reading the corpus left out


def fits(pair, max_len):
    """True if the source and the target with <bos> (or <eos>) fit max_len tokens."""
    src, tgt = pair
    return len(src) <= max_len and len(tgt) + 1 <= max_len


def _fitting(pairs, texts, max_len, split, dropped):
    """(encoded pairs, their target lines) that fit max_len; the rest counted in dropped."""
    keep = [i for i, p in enumerate(pairs) if fits(p, max_len)]
    if len(keep) < len(pairs):
        dropped[split] = (len(pairs) - len(keep), len(pairs))
    return [pairs[i] for i in keep], [texts[i][1] for i in keep]


def read_pairs(src, tgt, tsv, what, names=("src", "tgt", "tsv"), notes=None):
    """[(source line, target line)] from two parallel files or a TSV file (None if none);
    `names`: the parameters the three paths are given as (named in errors); `notes`: a
    list to which what was left out is added (loaders.py)."""
    if tsv:
        pairs = load_tsv(tsv, name=names[2], notes=notes)
    elif src and tgt:
        pairs = load_parallel(src, tgt, names=names[:2], notes=notes)
    elif src or tgt:
        missing, given = (names[1], names[0]) if src else (names[0], names[1])
        raise InputError(message(missing, f"a file beside `{given}` ({what}: a parallel "
                                 f"corpus needs both)", "none"))
    else:
        return None
    if not pairs:
        raise InputError(message(what, "some sentence pairs", f"none in {tsv or src} (every "
                                 f"line is blank on one side)"))
    return pairs


def task_data(c):
    """Seq2SeqData of the generated task c.task: held-out examples drawn with c.seed."""
    for key, why in (("bpe", "a task has its own character vocabulary"),
                     ("joint_vocab", "a task's source and target already share one")):
        if getattr(c, key):
            raise InputError(message(key, "a corpus (`src`/`tgt` or `tsv`)", f"`task` "
                                     f"{c.task} ({why})"))
    task = get_task(c.task)
    tok = task.tokenizer()
    longest = max(task.max_src_len, task.max_tgt_len + 1)
    if longest > c.max_len:
        raise InputError(message("max_len", f"at least {longest} (the task's longest "
                                 f"sequence)", c.max_len))
    rng = np.random.default_rng([c.seed, 1])
    val = encode_pairs(task.sample(rng, c.eval_examples, split="test"), tok)
    decode_len = min(task.max_tgt_len + 2, c.max_len)     # never past the model's max_len
    return Seq2SeqData(task.name, task, None, tok, tok, val, None, decode_len, False)


def make_tokenizers(c, train):
    """(source, target) tokenizers fitted on the training pairs: words, or BPE with c.bpe
    merges; with c.joint_vocab one tokenizer, fitted on both sides, serves both."""
    opts = dict(lowercase=c.lowercase, min_freq=c.min_freq)
    kind = WordTokenizer
    if c.bpe:
        kind, opts = BPETokenizer, {**opts, "num_merges": c.bpe}
    if c.joint_vocab:
        tok = kind.from_texts([a for a, _ in train] + [b for _, b in train], **opts)
        return tok, tok
    return (kind.from_texts([a for a, _ in train], **opts),
            kind.from_texts([b for _, b in train], **opts))


def check_shared(share_embeddings, src_tok, tgt_tok):
    """share_embeddings needs one vocabulary: the same symbols at the same ids."""
    if share_embeddings and src_tok.symbols != tgt_tok.symbols:
        raise InputError(message("share_embeddings", "one vocabulary for both sides "
                                 "(add `joint_vocab`)", f"separate source and target vocabularies "
                                 f"({src_tok.vocab_size} and {tgt_tok.vocab_size} tokens)"))


def split_pairs(c, notes=None):
    """(training, validation, test) sentence pairs of the corpus c as read, untokenised:
    validation is `val_src`/`val_tgt`, else the last min(len // 10, eval_examples) pairs
    of the training corpus (taken out of training); test is None without test files.
    `notes`: as in read_pairs."""
    if c.tsv and (c.src or c.tgt):
        raise InputError(message("tsv", "either `tsv` or `src`/`tgt`", "both"))
    train = read_pairs(c.src, c.tgt, c.tsv, "training data", notes=notes)
    val = read_pairs(c.val_src, c.val_tgt, None, "validation data", ("val_src", "val_tgt", None),
                     notes)
    test = read_pairs(c.test_src, c.test_tgt, None, "test data", ("test_src", "test_tgt", None),
                      notes)
    if val is None:                  # hold out the end of the training corpus
        n_val = min(len(train) // 10, c.eval_examples)
        if n_val == 0:
            raise InputError(message("training data", "at least 10 sentence pairs (to hold "
                                     "some out), or `val_src`/`val_tgt`", len(train)))
        train, val = train[:-n_val], train[-n_val:]
    return train, val, test


def corpus_data(c, tokenizers=None, share_embeddings=False):
    """A parallel corpus: tokenizers fitted on the training side (or `tokenizers`, (src, tgt),
    those of a resumed run), held-out splits."""
    notes = []
    train, val, test = split_pairs(c, notes)
    src_tok, tgt_tok = tokenizers or make_tokenizers(c, train)
    check_shared(share_embeddings, src_tok, tgt_tok)
    dropped, splits, refs = {}, {}, {}
    for split, pairs in (("training", train), ("validation", val[:c.eval_examples]),
                         ("test", test or [])):
        splits[split], refs[split] = _fitting(encode_pairs(pairs, src_tok, tgt_tok), pairs,
                                              c.max_len, split, dropped)
    for split in ("training", "validation") + (("test",) if test else ()):
        if not splits[split]:               # found now, not at the first evaluation
            raise InputError(message("max_len", f"a limit that keeps some {split} pairs",
                                     f"{c.max_len} (every {split} pair is longer)"))
    return Seq2SeqData("translation", None, splits["training"], src_tok, tgt_tok,
                       splits["validation"], splits["test"] or None, None, True, dropped,
                       refs["validation"], refs["test"] or None, notes)


def seq2seq_data(c, tokenizers=None, *, share_embeddings=False):
    """Seq2SeqData of the DataConfig `c`: a task (c.task) or a corpus (c.src/c.tgt or c.tsv);
    `tokenizers` (src, tgt): a resumed corpus run's own, used instead of fitting new ones;
    share_embeddings: the model will share one matrix (the vocabularies must be one)."""
    if c.task and c.corpus:
        raise InputError(message("task", "either a task or a corpus (`src`/`tgt` or `tsv`)",
                                 "both"))
    return corpus_data(c, tokenizers, share_embeddings) if c.corpus else task_data(c)


def text_data(c, tokenizer=None):
    """(CharTokenizer, training ids, held-out ids) of the text file c.text: the first 90%
    trains, the last 10% is held out; both hold at least one window of c.max_len + 1.
    `tokenizer`: a resumed run's own, used instead of fitting a new one (characters it does
    not know read as <unk>)."""
    text = load_text(c.text, "text")
    train_text, val_text = split_text(text, 0.1)
    tok = tokenizer or CharTokenizer.from_texts([text])
    train_ids, val_ids = tok.encode(train_text), tok.encode(val_text)
    for part, ids in (("first 90%", train_ids), ("last 10%", val_ids)):
        if len(ids) < c.max_len + 1:
            raise InputError(message(c.text, f"a text whose {part} holds at least "
                                     f"{c.max_len + 1} characters (`max_len` + 1)",
                                     f"{len(text)} characters in all"))
    return tok, train_ids, val_ids
