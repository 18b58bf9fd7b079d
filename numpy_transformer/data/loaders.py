"""Reading corpora from disk: parallel text files, TSV files and plain text.

    pairs = load_parallel("train.lc.norm.tok.en", "train.lc.norm.tok.de", max_len=50)
    pairs = load_tsv("fra.tsv")                     # "source<TAB>target" per line
    train, val = split_text(load_text("tinyshakespeare.txt"))

Files are read as UTF-8 (a leading byte-order mark is dropped). Every problem
raises an error that names the file: FileNotFoundError for a missing file,
ValueError for a directory, an unreadable or empty file, bytes that are not
UTF-8 (with the byte offset and line), or lines that do not line up.

Lines are split on "\\n" only (a "\\r" before it is dropped), never on the
other characters `str.splitlines` treats as line breaks, so a stray form feed
inside a sentence cannot shift a parallel corpus out of alignment. A file of
several lines ended by "\\r" alone (old Mac OS) is refused, named as such: read
as one line it would only be a puzzling line-count mismatch.

What is left out is said, where a caller passes a list as `notes` (the command
line prints them): the pairs dropped for a blank side, counted with their line
numbers, and a TSV's columns beyond the two read.
"""

from pathlib import Path

from ..validation import check_integer, message
from ..errors import InputError, InputTypeError
from ..system.files import read_regular


def read_text_file(path, name="path"):
    """The whole file at `path`, decoded as UTF-8 (strict); clear errors naming it."""
    path = Path(path)
    raw = read_regular(path, name)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise InputError(message(str(path), "UTF-8 text", f"the undecodable byte "
                                 f"0x{raw[err.start]:02x} at byte offset {err.start} "
                                 f"(line {line})")) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        raise InputError(message(str(path), "a file holding some text",
                                 "an empty file" if not text else "only whitespace"))
    return text


def read_lines(path, name="path"):
    """The lines of a UTF-8 file, without their line endings ("\\n" or "\\r\\n"); an
    InputError naming the file if its lines end in "\\r" alone."""
    text = read_text_file(path, name)
    if "\n" not in text and "\r" in text[:-1]:
        raise InputError(message(str(path), "lines ended by \\n or \\r\\n", "\\r line endings "
                                 "(old Mac OS); convert them, e.g. tr '\\r' '\\n' < IN > OUT"))
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()                 # the newline that ends the last line
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _keep(pairs, max_examples, max_len, notes=None, where="pairs"):
    """Drop pairs with a blank side or more than max_len words on a side; cut to max_examples.
    `pairs`: (line number, source, target); `notes`: a list to which the count of pairs
    dropped for a blank side (and their first line numbers) is added, naming `where`."""
    if max_len is not None:
        check_integer(max_len, "max_len")
    if max_examples is not None:
        check_integer(max_examples, "max_examples")
    kept, blank, seen = [], [], 0
    for number, src, tgt in pairs:
        seen += 1
        src, tgt = src.strip(), tgt.strip()
        if not src or not tgt:
            blank.append(number)
            continue
        if max_len is not None and max(len(src.split()), len(tgt.split())) > max_len:
            continue
        kept.append((src, tgt))
        if max_examples is not None and len(kept) == max_examples:
            break
    if blank and notes is not None:
        lines = ", ".join(map(str, blank[:3])) + (", ..." if len(blank) > 3 else "")
        notes.append(f"dropped {len(blank)} of {seen} {where} with an empty side "
                     f"(line{'s' * (len(blank) > 1)} {lines})")
    return kept


def load_parallel(src_path, tgt_path, *, max_examples=None, max_len=None,
                  names=("src_path", "tgt_path"), notes=None):
    """[(src_line, tgt_line)] from two line-aligned UTF-8 files (line i <-> line i).

    max_len:      drop a pair if either side has more than max_len
                  whitespace-separated words.
    max_examples: keep only the first max_examples pairs (after filtering).
    Pairs with a blank side are dropped (counted in `notes`, a list, if given); lines
    are stripped of outer spaces.
    """
    src_lines = read_lines(src_path, names[0])
    tgt_lines = read_lines(tgt_path, names[1])
    if len(src_lines) != len(tgt_lines):
        raise InputError(f"parallel files must have the same number of lines: "
                         f"{str(src_path)!r} has {len(src_lines)}, "
                         f"{str(tgt_path)!r} has {len(tgt_lines)}")
    numbered = ((i, *pair) for i, pair in enumerate(zip(src_lines, tgt_lines), start=1))
    return _keep(numbered, max_examples, max_len, notes, f"pairs of {src_path} and {tgt_path}")


def load_tsv(path, *, columns=(0, 1), max_examples=None, max_len=None, name="path",
             notes=None):
    """[(src, tgt)] from a tab-separated UTF-8 file, one pair per line.

    columns: which two tab-separated fields are the source and the target
             (extra fields, such as a licence note, are ignored). Every
             non-blank line must have enough fields, else ValueError.
    max_len, max_examples, notes: as in `load_parallel`; `notes` also says how many
             columns a line beyond the ones read has (the first such line).
    """
    if (not isinstance(columns, (tuple, list)) or len(columns) != 2
            or not all(type(c) is int and c >= 0 for c in columns)):
        raise InputError(message("columns", "two non-negative field numbers such as (0, 1)",
                                 repr(columns)))
    needed = max(columns) + 1
    pairs, wider = [], None
    for number, line in enumerate(read_lines(path, name), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < needed:
            raise InputError(message(f"{str(path)!r} line {number}",
                                     f"at least {needed} tab-separated fields",
                                     f"{len(fields)}: {line[:60]!r}"))
        if wider is None and len(fields) > 2:
            wider = (len(fields), number)
        pairs.append((number, fields[columns[0]], fields[columns[1]]))
    if wider and notes is not None:
        read = "the first two" if tuple(columns) == (0, 1) else f"columns {columns[0] + 1} " \
            f"and {columns[1] + 1}"
        notes.append(f"{path} has {wider[0]} columns on line {wider[1]}; only {read} are "
                     f"used (source, target)")
    return _keep(pairs, max_examples, max_len, notes, f"pairs of {path}")


def load_text(path, name="path"):
    """The whole text of a UTF-8 file, unchanged (for a character language model)."""
    return read_text_file(path, name)


def split_text(text, val_fraction=0.1):
    """(train, val): the first (1 - val_fraction) of the characters, then the rest.

    A split by position, not at random, so no validation sentence leaks into
    training through overlapping windows (the nanoGPT split for Shakespeare).
    """
    if not isinstance(text, str):
        raise InputTypeError(message("text", "a str", type(text).__name__))
    if isinstance(val_fraction, bool) or not isinstance(val_fraction, (int, float)) \
            or not 0.0 < val_fraction < 1.0:
        raise InputError(message("val_fraction", "a number in (0, 1)", repr(val_fraction)))
    n_train = int(len(text) * (1.0 - val_fraction))
    if n_train == 0 or n_train == len(text):
        raise InputError(message("text", f"enough characters to split with val_fraction="
                                 f"{val_fraction}", f"{len(text)} characters"))
    return text[:n_train], text[n_train:]
