"""Data: tokenizers, generated seq2seq tasks (one registry, TASKS), corpus loaders, a run's
DataConfig, batching and BLEU.

    from numpy_transformer.data import get_task, batches, encode_pairs
    task = get_task("reverse")
    tok = task.tokenizer()
    pairs = encode_pairs(task.sample(rng, 10_000), tok)
    for batch in batches(pairs, 64, rng=rng):
        ...   # batch.src, batch.tgt_in, batch.tgt_out, batch.src_mask, batch.tgt_mask
"""

from .batching import Batch, batches, encode_pairs, lm_batch, lm_batches, make_batch
from .bleu import bleu_statistics, corpus_bleu
from .bpe import BPETokenizer
from .dates import DATE_FORMATS, format_date
from .loaders import load_parallel, load_text, load_tsv, read_lines, split_text
from .config import DataConfig
from .tasks import (TASKS, AdditionTask, DatesTask, SequenceTask, Task, TaskSpec, get_task,
                    is_held_out, register_task)
from .tokenizers import (BOS_ID, EOS_ID, PAD_ID, SPECIAL_TOKENS, UNK_ID, CharTokenizer,
                         Tokenizer, WordTokenizer)

__all__ = [
    "PAD_ID", "BOS_ID", "EOS_ID", "UNK_ID", "SPECIAL_TOKENS",
    "Tokenizer", "CharTokenizer", "WordTokenizer", "BPETokenizer", "DataConfig",
    "Batch", "make_batch", "batches", "encode_pairs", "lm_batch", "lm_batches",
    "TASKS", "TaskSpec", "register_task", "Task", "SequenceTask", "AdditionTask", "DatesTask",
    "get_task", "is_held_out",
    "DATE_FORMATS", "format_date",
    "load_parallel", "load_tsv", "load_text", "read_lines", "split_text",
    "corpus_bleu", "bleu_statistics",
]
