"""A tokenizer's JSON file: what `Tokenizer.save` writes, read back with every field checked.

    {"type": "CharTokenizer", "version": 1, "lowercase": false, "min_freq": 1,
     "max_size": null, "symbols": ["<pad>", "<bos>", "<eos>", "<unk>", " ", "a", ...]}

A BPETokenizer's file (bpe.py) adds its merges. JSON, never pickle: loading a tokenizer
runs no code. What is wrong with a file is an InputError naming the file and its field,
found before any tokenizer is built from it (tokenizers.py's `Tokenizer.from_dict`).
"""

import json
import os
from pathlib import Path

from ..system.files import read_regular
from ..validation import message
from ..errors import InputError

FORMAT_VERSION = 1


def read_tokenizer_json(path):
    """The JSON value in the tokenizer file `path`: FileNotFoundError when there is none,
    InputError naming it when it is not UTF-8 JSON."""
    path = Path(path)
    if not os.path.lexists(path):
        raise FileNotFoundError(message("path", "an existing tokenizer file",
                                        repr(str(path))))
    try:
        text = read_regular(path, str(path)).decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(message(str(path), "a readable UTF-8 JSON file", repr(err))) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        where = f"{err.msg} at line {err.lineno} column {err.colno}"
        raise InputError(message(str(path), "valid JSON", where)) from None


def checked_fields(data, source, kinds, wanted, specials):
    """(the tokenizer class `data` names, its settings), once `data` (read from `source`)
    is checked: a JSON object naming one of `kinds` (`wanted`, unless None), of this
    FORMAT_VERSION, whose symbols start with the `specials`, its settings valid."""
    if not isinstance(data, dict):
        raise InputError(message(source, "a JSON object", type(data).__name__))
    kind = data.get("type")
    if kind not in kinds:
        raise InputError(message(f"{source}: type", f"one of {tuple(kinds)}", repr(kind)))
    if wanted is not None and kinds[kind] is not wanted:
        raise InputError(message(f"{source}: type", repr(wanted.__name__), repr(kind)))
    if data.get("version") != FORMAT_VERSION:
        raise InputError(message(f"{source}: version", FORMAT_VERSION,
                                 repr(data.get("version"))))
    symbols = data.get("symbols")
    if not isinstance(symbols, list) or tuple(symbols[:len(specials)]) != specials:
        raise InputError(message(f"{source}: symbols", f"a list starting with {list(specials)}",
                                 repr(symbols)[:80]))
    settings = {}
    for key, ok in (("lowercase", lambda v: isinstance(v, bool)),
                    ("min_freq", lambda v: type(v) is int and v >= 1),
                    ("max_size", lambda v: v is None or (type(v) is int and v >= 1))):
        if key not in data or not ok(data[key]):
            raise InputError(message(f"{source}: {key}", "a valid setting",
                                     repr(data.get(key, "missing"))))
        settings[key] = data[key]
    return kinds[kind], settings
