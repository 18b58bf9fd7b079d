"""Tokenizers: text <-> lists of integer token ids.

Every vocabulary starts with the same four special tokens, at fixed ids:

    id  name     meaning
    0   <pad>    padding that fills a batch up to its longest sequence
    1   <bos>    "begin of sequence", the first input of the decoder
    2   <eos>    "end of sequence", the last target of the decoder
    3   <unk>    any symbol the vocabulary does not know

Special ids are only ever made by `add_bos`/`add_eos` (and by padding): text
never encodes to them, except that unknown symbols become <unk>. So the
string "<pad>" inside a text is just an unknown word.

    tok = CharTokenizer.from_texts(["hello world"])
    tok.encode("hello", add_eos=True)      # [8, 6, 9, 9, 10, 2]
    tok.decode([8, 6, 9, 9, 10, 2, 0, 0])  # "hello" (stops at <eos>)

Tokenizers are saved as JSON (never pickle) so that loading one runs no code;
the JSON names the tokenizer's type (CharTokenizer, WordTokenizer, or
BPETokenizer of data/bpe.py: subwords learned by byte-pair encoding), and is
checked field by field when read (tokenizer_file.py).
"""

import json
import operator
from collections import Counter
from pathlib import Path

from ..backend import to_numpy
from ..validation import check_bool, check_integer, message
from ..errors import InputError, InputTypeError
from .tokenizer_file import FORMAT_VERSION, checked_fields, read_tokenizer_json

PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>", "<unk>")


class Tokenizer:
    """Shared machinery of every tokenizer; subclasses say how text splits.

    A subclass defines `split(text) -> list[str]` (text to symbols) and
    `join(symbols) -> str` (the inverse). The vocabulary is the list
    `symbols`: the four special tokens, then the learned symbols, so that
    `symbols[id]` is the symbol of `id` and `ids[symbol]` its id.

    Settings:
        lowercase: lower-case the text before splitting it.
        min_freq:  `fit` keeps symbols seen at least this many times.
        max_size:  `fit` keeps at most this many learned symbols (the most
                   frequent; ties broken alphabetically); specials not counted.
    """

    kinds = {}      # type name -> subclass: what `from_dict` can rebuild (filled below)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        Tokenizer.kinds[cls.__name__] = cls     # a saved tokenizer names its type

    def __init__(self, symbols=(), *, lowercase=False, min_freq=1, max_size=None):
        check_integer(min_freq, "min_freq")
        check_bool(lowercase, "lowercase")
        if max_size is not None:
            check_integer(max_size, "max_size")
        self.lowercase = lowercase
        self.min_freq = min_freq
        self.max_size = max_size
        self._set_vocabulary(list(symbols))

    def _set_vocabulary(self, learned):
        """Install the vocabulary: the specials, then the learned symbols."""
        for i, symbol in enumerate(learned):
            if not isinstance(symbol, str) or symbol in SPECIAL_TOKENS or symbol == "":
                raise InputError(message(f"symbols[{i}]", "a non-empty string that is not a "
                                         "special token", repr(symbol)))
        if len(set(learned)) != len(learned):
            twice = next(s for s, n in Counter(learned).items() if n > 1)
            raise InputError(message("symbols", "distinct symbols", f"{twice!r} twice"))
        self.symbols = list(SPECIAL_TOKENS) + learned
        self.ids = {symbol: i for i, symbol in enumerate(self.symbols)}
        # Only learned symbols are looked up, so text never encodes to <pad>/<bos>/<eos>.
        self._lookup = {symbol: i + len(SPECIAL_TOKENS) for i, symbol in enumerate(learned)}

    # What each subclass defines.

    def split(self, text):
        raise NotImplementedError(f"{type(self).__name__}.split")

    def join(self, symbols):
        raise NotImplementedError(f"{type(self).__name__}.join")

    def unknown_symbols(self, texts):
        """The symbols (characters, words or subwords) of `texts` outside the vocabulary,
        which encode as <unk>: sorted, each once."""
        unknown = set()
        for text in texts:
            seq = self.encode(text)
            if UNK_ID in seq:
                pieces = self.split(text.lower() if self.lowercase else text)   # one per id
                unknown.update(p for p, i in zip(pieces, seq) if i == UNK_ID)
        return sorted(unknown)

    def _symbols_of(self, text, name="text"):
        if not isinstance(text, str):
            raise InputTypeError(message(name, "a str", type(text).__name__))
        return self.split(text.lower() if self.lowercase else text)

    # Learning the vocabulary.

    def _count(self, texts, split):
        """Counter of the pieces split(text) of every text (lower-cased if self.lowercase);
        InputTypeError for a single str or a text that is not one."""
        if isinstance(texts, str):
            raise InputTypeError(message("texts", "an iterable of strings (a list of texts)",
                                    "a single str"))
        counts = Counter()
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise InputTypeError(message(f"texts[{i}]", "a str", type(text).__name__))
            counts.update(split(text.lower() if self.lowercase else text))
        return counts

    def fit(self, texts):
        """Learn the vocabulary from an iterable of strings; returns self."""
        counts = self._count(texts, self.split)
        for special in SPECIAL_TOKENS:
            counts.pop(special, None)
        kept = [s for s, n in counts.items() if n >= self.min_freq]
        kept.sort(key=lambda s: (-counts[s], s))          # most frequent first
        if self.max_size is not None:
            kept = kept[:self.max_size]
        self._set_vocabulary(sorted(kept))                 # stored alphabetically
        return self

    @classmethod
    def from_texts(cls, texts, **settings):
        """A new tokenizer fitted on `texts`: `CharTokenizer.from_texts(lines)`."""
        return cls(**settings).fit(texts)

    @property
    def vocab_size(self):
        """Number of ids, specials included: the model's V."""
        return len(self.symbols)

    def __len__(self):
        return len(self.symbols)

    def __repr__(self):
        return (f"{type(self).__name__}(vocab_size={self.vocab_size}, "
                f"lowercase={self.lowercase})")

    # Encoding and decoding.

    def encode(self, text, add_bos=False, add_eos=False):
        """Token ids of `text`; unknown symbols become UNK_ID (3)."""
        check_bool(add_bos, "add_bos")
        check_bool(add_eos, "add_eos")
        lookup = self._lookup
        ids = [lookup.get(symbol, UNK_ID) for symbol in self._symbols_of(text)]
        if add_bos:
            ids.insert(0, BOS_ID)
        if add_eos:
            ids.append(EOS_ID)
        return ids

    def decode(self, ids, skip_special=True):
        """Text of `ids` (a list or a 1-D array), stopping at the first <eos>.

        skip_special=True drops <pad> and <bos> and the final <eos>; <unk> is
        always written as "<unk>" so that a reader sees something was lost.
        skip_special=False writes every token up to and including <eos>.
        """
        check_bool(skip_special, "skip_special")
        if hasattr(ids, "shape"):
            if len(ids.shape) != 1:
                raise InputError(message("ids", "a 1-D sequence of token ids",
                                         f"shape {tuple(ids.shape)}"))
            ids = to_numpy(ids).tolist()
        out = []
        for i in ids:
            if not _is_token_id(i, self.vocab_size):
                raise InputError(message("ids", f"token ids in [0, {self.vocab_size})", repr(i)))
            i = int(i)
            if i == EOS_ID:
                if not skip_special:
                    out.append(self.symbols[i])
                break
            if skip_special and i in (PAD_ID, BOS_ID):
                continue
            out.append(self.symbols[i])
        return self.join(out)

    # Saving and loading as JSON.

    def to_dict(self):
        """Everything needed to rebuild this tokenizer, as plain JSON values."""
        return {"type": type(self).__name__, "version": FORMAT_VERSION,
                "lowercase": self.lowercase, "min_freq": self.min_freq,
                "max_size": self.max_size, "symbols": self.symbols}

    def save(self, path):
        """Write the tokenizer to `path` as UTF-8 JSON."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, ensure_ascii=False, indent=1)
            f.write("\n")

    @classmethod
    def load(cls, path):
        """Read a tokenizer written by `save`; ValueError naming `path` if malformed.

        `Tokenizer.load` returns whichever kind the file holds;
        `CharTokenizer.load` insists on a CharTokenizer.
        """
        return cls.from_dict(read_tokenizer_json(path), source=str(Path(path)))

    @classmethod
    def from_dict(cls, data, source="data"):
        """Rebuild a tokenizer from `to_dict()` output, checking every field
        (tokenizer_file.py)."""
        kind, settings = checked_fields(data, source, Tokenizer.kinds,
                                        None if cls is Tokenizer else cls, SPECIAL_TOKENS)
        try:
            return kind._rebuild(data["symbols"][len(SPECIAL_TOKENS):], settings, data, source)
        except (TypeError, ValueError) as err:     # name the file once
            text = str(err)
            raise InputError(text if text.startswith(f"{source}: ") else f"{source}: {text}") \
                from None

    @classmethod
    def _rebuild(cls, learned, settings, data, source):
        """The tokenizer of checked `settings` and `learned` symbols; a subclass that saves
        more than its symbols (BPETokenizer: its merges) reads the rest from `data`."""
        return cls(learned, **settings)


def unknown_note(symbols):
    """The warning's words for the symbols outside a vocabulary (at most 20 listed)."""
    listed = ", ".join(map(repr, symbols[:20])) + (", ..." if len(symbols) > 20 else "")
    return f"{len(symbols)} symbol{'s' * (len(symbols) > 1)} not in the model's vocabulary " \
        f"(read as <unk>): {listed}"


def _is_token_id(value, vocab_size):
    """True for an integer (Python or NumPy, not bool) in [0, vocab_size)."""
    if isinstance(value, bool):
        return False
    try:
        return 0 <= operator.index(value) < vocab_size
    except TypeError:
        return False


class CharTokenizer(Tokenizer):
    """One token per character: the vocabulary of a character-level model."""

    def _set_vocabulary(self, learned):
        for i, symbol in enumerate(learned):
            if not (isinstance(symbol, str) and len(symbol) == 1):
                raise InputError(message(f"symbols[{i}]", "a single character", repr(symbol)))
        super()._set_vocabulary(learned)

    def split(self, text):
        return list(text)

    def join(self, symbols):
        return "".join(symbols)


class WordTokenizer(Tokenizer):
    """One token per whitespace-separated word (for pre-tokenised corpora)."""

    def _set_vocabulary(self, learned):
        for i, symbol in enumerate(learned):
            if isinstance(symbol, str) and len(symbol.split()) != 1:
                raise InputError(message(f"symbols[{i}]", "a word without whitespace",
                                         repr(symbol)))
        super()._set_vocabulary(learned)

    def split(self, text):
        return text.split()

    def join(self, symbols):
        return " ".join(symbols)
