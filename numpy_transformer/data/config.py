"""DataConfig: where a run's data comes from and how it is tokenised, checked field by field.

    DataConfig(task="reverse", max_len=64)                          # a generated task
    DataConfig(src="train.de", tgt="train.en", bpe=8000, joint_vocab=True)   # a corpus
    DataConfig(text="tinyshakespeare.txt", max_len=128)              # a text (a GPT)

The tokenizer follows from the data: a task's or a text's characters, a corpus's
words, or byte-pair encoding with `bpe` merges (data/bpe.py). A checkpoint saves
these fields (metadata["data_config"]), so that a resumed run reads the same data
the same way; `sha256` records each file's digest when the run starts.
"""

import numbers
from dataclasses import asdict, dataclass, field

from ..errors import InputError, InputTypeError
from ..validation import check_choice, check_integer, message

FILES = ("text", "src", "tgt", "tsv", "val_src", "val_tgt", "test_src", "test_tgt")
BLEU_TOKENIZE = ("13a", "none")


@dataclass
class DataConfig:
    task: str = None            # a registered task (tasks.TASKS); None for a corpus or a text
    src: str = None             # a parallel corpus: source side, one sentence per line
    tgt: str = None             # target side, line-aligned with src
    tsv: str = None             # or the corpus as 'source<TAB>target' lines
    val_src: str = None         # held-out pairs (default: the end of the training corpus)
    val_tgt: str = None
    test_src: str = None        # test pairs, scored at the end
    test_tgt: str = None
    text: str = None            # a UTF-8 text for a language model (90% train, 10% held out)
    bpe: int = None             # byte-pair merges learned on the training side (None: words)
    joint_vocab: bool = False   # one vocabulary fitted on both sides, used for both
    min_freq: int = 1           # keep words (with bpe: merge pairs) seen min_freq+ times
    lowercase: bool = False     # lower-case the corpora
    bleu_tokenize: str = "13a"  # how BLEU splits output and references: 13a or none
    max_len: int = 64           # longest sequence in tokens; longer corpus pairs are dropped
    eval_examples: int = 1000   # held-out examples evaluated (seq2seq)
    eval_batches: int = 20      # held-out batches per periodic evaluation (language model)
    seed: int = 0               # seed of a task's held-out examples
    sha256: dict = field(default_factory=dict)   # {file field: SHA-256 of its file}

    def __post_init__(self):
        if self.task is not None:
            from .tasks import TASKS
            check_choice(self.task, "task", tuple(TASKS))
        for name in FILES:
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise InputTypeError(message(name, "a file path or None", repr(value)[:80]))
        if self.bpe is not None:
            check_integer(self.bpe, "bpe")
        for name in ("joint_vocab", "lowercase"):
            if not isinstance(getattr(self, name), bool):
                raise InputTypeError(message(name, "True or False", repr(getattr(self, name))))
        check_choice(self.bleu_tokenize, "bleu_tokenize", BLEU_TOKENIZE)
        for name in ("min_freq", "max_len", "eval_examples", "eval_batches"):
            check_integer(getattr(self, name), name)
        if isinstance(self.seed, bool) or not isinstance(self.seed, numbers.Integral) \
                or self.seed < 0:
            raise InputError(message("seed", "an integer >= 0", repr(self.seed)))
        if not isinstance(self.sha256, dict) or not all(
                k in FILES and isinstance(v, str) for k, v in self.sha256.items()):
            raise InputError(message("sha256", "a dict of SHA-256 digests by file field",
                                     repr(self.sha256)[:80]))

    @property
    def corpus(self):
        """True for a parallel corpus (src/tgt or tsv)."""
        return any(getattr(self, k) for k in ("src", "tgt", "tsv"))

    @property
    def tokenizer(self):
        """"char" (a task or a text), "bpe" or "word" (a corpus)."""
        if not self.corpus:
            return "char"
        return "bpe" if self.bpe else "word"

    def to_dict(self):
        return asdict(self)
