"""Tokenizers: special ids, round trips, vocabulary limits, JSON save/load and bad input."""

import json

import numpy as np
import pytest

from numpy_transformer.data import (BOS_ID, EOS_ID, PAD_ID, SPECIAL_TOKENS, UNK_ID,
                                    CharTokenizer, Tokenizer, WordTokenizer)

from doors import raises_naming


def test_special_ids_are_fixed():
    assert (PAD_ID, BOS_ID, EOS_ID, UNK_ID) == (0, 1, 2, 3)
    assert SPECIAL_TOKENS == ("<pad>", "<bos>", "<eos>", "<unk>")
    for tok in (CharTokenizer.from_texts(["abc"]), WordTokenizer.from_texts(["a b c"])):
        assert tok.symbols[:4] == list(SPECIAL_TOKENS)
        assert tok.vocab_size == 4 + 3 == len(tok)


def test_char_round_trip_and_specials():
    tok = CharTokenizer.from_texts(["hello world", "abc\n"])
    text = "hello\nworld"
    ids = tok.encode(text, add_bos=True, add_eos=True)
    assert ids[0] == BOS_ID and ids[-1] == EOS_ID and len(ids) == len(text) + 2
    assert all(i >= 4 for i in ids[1:-1])
    assert tok.decode(ids) == text
    assert tok.decode(ids, skip_special=False) == "<bos>" + text + "<eos>"
    assert tok.encode("") == []


def test_decode_stops_at_eos_and_skips_padding():
    tok = CharTokenizer.from_texts(["ab"])
    a, b = tok.encode("ab")
    assert tok.decode([BOS_ID, a, PAD_ID, b, EOS_ID, a, a]) == "ab"
    assert tok.decode(np.array([a, b, EOS_ID, PAD_ID, PAD_ID])) == "ab"
    assert tok.decode([np.int64(a), np.int32(b)]) == "ab"
    assert tok.decode([a, EOS_ID, b], skip_special=False) == "a<eos>"


def test_unknown_symbols_become_unk_and_specials_are_not_text():
    tok = WordTokenizer.from_texts(["the cat sat"])
    assert tok.encode("the dog sat") == [tok.ids["the"], UNK_ID, tok.ids["sat"]]
    assert tok.decode(tok.encode("the dog")) == "the <unk>"
    # The *text* "<pad>" is just an unknown word, never the padding id.
    assert tok.encode("<pad> <bos> <eos> <unk>") == [UNK_ID] * 4


def test_word_tokenizer_lowercase_min_freq_max_size():
    texts = ["The cat sat", "the cat ran", "THE dog"]
    tok = WordTokenizer.from_texts(texts, lowercase=True)
    assert tok.symbols[4:] == ["cat", "dog", "ran", "sat", "the"]
    assert tok.decode(tok.encode("The CAT")) == "the cat"
    assert WordTokenizer.from_texts(texts, lowercase=True, min_freq=2).symbols[4:] == ["cat", "the"]
    # max_size keeps the most frequent (the: 3, cat: 2, then ties broken alphabetically).
    assert WordTokenizer.from_texts(texts, lowercase=True, max_size=3).symbols[4:] == \
        ["cat", "dog", "the"]
    assert WordTokenizer.from_texts(texts).encode("The")[0] != UNK_ID


def test_fit_is_deterministic_and_replaces_vocabulary():
    tok = CharTokenizer().fit(["cba"])
    assert tok.symbols[4:] == ["a", "b", "c"]
    tok.fit(["zy"])
    assert tok.symbols[4:] == ["y", "z"] and tok.encode("a") == [UNK_ID]


@pytest.mark.parametrize("cls", [CharTokenizer, WordTokenizer])
def test_save_load_round_trip(tmp_path, cls):
    texts = ["Grüße aus Köln", "über alles"]
    tok = cls.from_texts(texts, lowercase=True, min_freq=1, max_size=50)
    path = tmp_path / "tok.json"
    tok.save(path)
    for loader in (cls, Tokenizer):
        again = loader.load(path)
        assert type(again) is cls
        assert again.symbols == tok.symbols
        assert (again.lowercase, again.min_freq, again.max_size) == (True, 1, 50)
        assert again.encode("grüße über x") == tok.encode("grüße über x")
    assert json.loads(path.read_text(encoding="utf-8"))["type"] == cls.__name__


def _write(tmp_path, content):
    path = tmp_path / "bad.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


def test_load_rejects_malformed_files(tmp_path):
    good = CharTokenizer.from_texts(["ab"]).to_dict()
    with raises_naming(ValueError, "bad.json", "line 1"):
        CharTokenizer.load(_write(tmp_path, "{not json"))
    with raises_naming(ValueError, "list"):
        CharTokenizer.load(_write(tmp_path, [1, 2]))
    with raises_naming(ValueError, "type", "'CharTokenizer'", "'WordTokenizer'"):
        CharTokenizer.load(_write(tmp_path, {**good, "type": "WordTokenizer"}))
    with raises_naming(ValueError, "type", "'Pickle'"):
        Tokenizer.load(_write(tmp_path, {**good, "type": "Pickle"}))
    with raises_naming(ValueError, "symbols"):
        CharTokenizer.load(_write(tmp_path, {**good, "symbols": ["a", "b"]}))
    with raises_naming(ValueError, "symbols[0]", "'ab'"):
        CharTokenizer.load(_write(tmp_path, {**good, "symbols": list(SPECIAL_TOKENS) + ["ab"]}))
    with raises_naming(ValueError, "symbols", "'a'"):
        CharTokenizer.load(_write(tmp_path, {**good, "symbols": list(SPECIAL_TOKENS) + ["a", "a"]}))
    with raises_naming(ValueError, "min_freq", "0"):
        CharTokenizer.load(_write(tmp_path, {**good, "min_freq": 0}))
    with raises_naming(ValueError, "version", "1", "99"):
        CharTokenizer.load(_write(tmp_path, {**good, "version": 99}))
    with raises_naming(FileNotFoundError, "path", "missing.json"):
        CharTokenizer.load(tmp_path / "missing.json")


def test_bad_arguments():
    tok = CharTokenizer.from_texts(["ab"])
    with raises_naming(TypeError, "texts", "str"):
        CharTokenizer.from_texts("hello")
    with raises_naming(TypeError, "texts[1]", "str", "int"):
        CharTokenizer.from_texts(["ok", 5])
    with raises_naming(TypeError, "text", "str", "list"):
        tok.encode(["a"])
    with raises_naming(ValueError, "ids", "[0, 6)", "6"):
        tok.decode([4, 6])
    with raises_naming(ValueError, "ids", "[0, 6)", "-1"):
        tok.decode([-1])
    with raises_naming(ValueError, "ids", "(2, 2)"):
        tok.decode(np.zeros((2, 2), dtype=np.int64))
    with raises_naming(ValueError, "min_freq", "0"):
        WordTokenizer(min_freq=0)
    with raises_naming(ValueError, "symbols[0]", "'<pad>'"):
        WordTokenizer(["<pad>"])
