"""What `evaluate --checkpoint RUN/best.npz` scores with no data options: the run's own split.

    python -m numpy_transformer evaluate --checkpoint runs/reverse/best.npz   # its held-out set
    python -m numpy_transformer evaluate --checkpoint runs/lm/best.npz        # the last 10%

The split is rebuilt from the DataConfig the checkpoint saved, exactly as training built
it (data/corpus.py): a task's held-out examples (the same seed and count, the ones
training evaluated), a corpus's test files (the pairs train scored at the end), else
its held-out pairs (the validation files, or the end of the training corpus), and a
text's last 10%. Only the scored split is tokenised, with the run's saved tokenizers;
the training side is read (to find where it ends) but never tokenised. The data files
are the run's own (absolute paths, with their SHA-256 digests): a file gone refuses, a
file changed since the run started is scored with a warning.
"""

import os

from ..data import encode_pairs, load_text, split_text
from ..data.config import FILES
from ..data.corpus import split_pairs, task_data
from ..errors import InputError
from ..system.files import file_sha256
from ..validation import message
from .configs import data_config
from .data_files import option

RUN_SPLIT = "the run's held-out split"


def _saved_data(meta, checkpoint):
    """The run's DataConfig, its data files checked: there, and the files the run read."""
    data = data_config(meta, checkpoint)
    if data is None:
        raise InputError(message("--checkpoint", "a checkpoint that saves its run's data (to "
                                 "score its held-out split), or data options (--task, --src/"
                                 "--tgt, --tsv or --text)", f"{checkpoint}, a bare model"))
    for name in FILES:
        path = getattr(data, name)
        if path and not os.path.isfile(path):
            raise InputError(message(f"the run's {option(name)} file", "a file (to rebuild the "
                                     "run's split; or give the data to score as options)",
                                     f"{path!r}, not found"))
        digest = data.sha256.get(name)
        if path and digest and file_sha256(path, option(name)) != digest:
            print(f"warning: the run's {option(name)} file {path} has changed since the run "
                  f"started: its split may not be the one training scored")
    return data


def run_seq2seq_split(meta, checkpoint, toks):
    """(encoded pairs, reference lines (corpora; None for tasks), decoding limit, what is
    scored) of the encoder-decoder run's own split."""
    data = _saved_data(meta, checkpoint)
    if data.task:
        built = task_data(data)
        return built.val, None, built.decode_len, (
            f"{RUN_SPLIT} ({len(built.val)} held-out examples of the {data.task} task, seed "
            f"{data.seed}: the ones training evaluated)")
    _, val, test = split_pairs(data)
    if test:
        pairs = test
        what = (f"the run's test split ({len(test)} pairs of {data.test_src} / "
                f"{data.test_tgt}, as train scored it at the end)")
    else:
        pairs = val[:data.eval_examples]
        where = f"{data.val_src} / {data.val_tgt}" if data.val_src else \
            f"the last {len(pairs)} of {data.tsv or data.src + ' / ' + data.tgt}"
        what = f"{RUN_SPLIT} ({len(pairs)} pairs: {where}, the ones training evaluated)"
    return encode_pairs(pairs, toks["src"], toks["tgt"]), [t for _, t in pairs], None, what


def run_text_split(meta, checkpoint, tok):
    """(ids, what is scored) of the language model's held-out text: the last 10%."""
    data = _saved_data(meta, checkpoint)
    _, held_out = split_text(load_text(data.text, option("text")), 0.1)
    ids = tok.encode(held_out)
    return ids, (f"{RUN_SPLIT} (the last 10% of {data.text}, {len(ids):,} characters, as "
                 f"training scored it at the end)")
