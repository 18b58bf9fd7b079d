"""Loaders: parallel files, TSV, plain text, and a clear error for every bad file.

The tests write their own small files in tmp_path; they never read shared data.
"""

import pytest

from numpy_transformer.data import load_parallel, load_text, load_tsv, read_lines, split_text


def write(path, content):
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def test_load_parallel_aligned_lines(tmp_path):
    en = write(tmp_path / "a.en", "a dog runs .\ntwo men\r\n  a cat  \n")
    de = write(tmp_path / "a.de", "ein hund läuft .\nzwei männer\r\neine katze\n")
    assert load_parallel(en, de) == [("a dog runs .", "ein hund läuft ."),
                                     ("two men", "zwei männer"), ("a cat", "eine katze")]


def test_load_parallel_filters(tmp_path):
    en = write(tmp_path / "b.en", "one\ntwo words\n\nthree words here\nfour\n")
    de = write(tmp_path / "b.de", "eins\nzwei wörter\nleer\ndrei wörter hier\nvier")
    assert [s for s, _ in load_parallel(en, de)] == ["one", "two words", "three words here", "four"]
    assert [s for s, _ in load_parallel(en, de, max_len=2)] == ["one", "two words", "four"]
    assert [s for s, _ in load_parallel(en, de, max_len=2, max_examples=2)] == ["one", "two words"]
    with pytest.raises(ValueError, match=r"max_len: expected a positive integer, got 0"):
        load_parallel(en, de, max_len=0)


def test_load_parallel_mismatched_line_counts(tmp_path):
    en = write(tmp_path / "c.en", "a\nb\nc\n")
    de = write(tmp_path / "c.de", "a\nb\n")
    with pytest.raises(ValueError, match=r"same number of lines: '.*c\.en' has 3, '.*c\.de' has 2"):
        load_parallel(en, de)


def test_only_newline_splits_lines(tmp_path):
    # A form feed or a Unicode line separator inside a sentence must not split it.
    en = write(tmp_path / "d.en", "one\x0cstill one\nline\u2028two\n")
    de = write(tmp_path / "d.de", "eins\nzwei\n")
    assert len(load_parallel(en, de)) == 2
    assert read_lines(write(tmp_path / "e.txt", "x\n\ny")) == ["x", "", "y"]


def test_load_tsv(tmp_path):
    path = write(tmp_path / "f.tsv", "Go.\tVa !\tCC-BY 2.0\nHi.\tSalut !\n\nRun!\tCours !\n")
    assert load_tsv(path) == [("Go.", "Va !"), ("Hi.", "Salut !"), ("Run!", "Cours !")]
    assert load_tsv(path, columns=(1, 0), max_examples=1) == [("Va !", "Go.")]
    with pytest.raises(ValueError, match=r"line 2: expected at least 3 tab-separated fields"):
        load_tsv(path, columns=(0, 2))
    bad = write(tmp_path / "g.tsv", "left\tright\nno tab here\n")
    with pytest.raises(ValueError, match=r"g\.tsv' line 2: expected at least 2 tab-separated"):
        load_tsv(bad)
    with pytest.raises(ValueError, match=r"columns: expected two non-negative field numbers"):
        load_tsv(path, columns=(0,))


def test_load_text_and_split(tmp_path):
    text = "First Citizen:\nBefore we proceed any further, hear me speak.\n"
    path = write(tmp_path / "t.txt", "\ufeff" + text)          # a byte-order mark is dropped
    assert load_text(path) == text
    train, val = split_text("abcdefghij")
    assert (train, val) == ("abcdefghi", "j")
    train, val = split_text("x" * 1115394)
    assert (len(train), len(val)) == (1003854, 111540)          # the nanoGPT Shakespeare split
    assert split_text("abcd", val_fraction=0.5) == ("ab", "cd")
    with pytest.raises(ValueError, match=r"val_fraction: expected a number in \(0, 1\), got 1.0"):
        split_text("abcd", val_fraction=1.0)
    with pytest.raises(ValueError, match=r"text: expected enough characters to split"):
        split_text("a", val_fraction=0.1)


def test_missing_and_unreadable_files(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"path: expected an existing file, got '.*nope"):
        load_text(tmp_path / "nope.txt")
    with pytest.raises(FileNotFoundError, match=r"tgt_path: expected an existing file, got '.*x.de"):
        load_parallel(write(tmp_path / "x.en", "a\n"), tmp_path / "x.de")
    with pytest.raises(ValueError, match=r"path: expected a file, got the directory"):
        load_text(tmp_path)


def test_empty_files(tmp_path):
    with pytest.raises(ValueError, match=r"empty\.txt: expected a file holding some text, got an"):
        load_text(write(tmp_path / "empty.txt", ""))
    with pytest.raises(ValueError, match=r"blank\.en: expected a file holding some text, got only"):
        load_parallel(write(tmp_path / "blank.en", "\n \n"), write(tmp_path / "ok.de", "a\nb\n"))
    with pytest.raises(ValueError, match=r"empty\.tsv: expected a file holding some text"):
        load_tsv(write(tmp_path / "empty.tsv", b""))


def test_undecodable_bytes(tmp_path):
    path = write(tmp_path / "latin1.txt", "okay\nGr\u00fc\u00dfe\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1\.txt: expected UTF-8 text, got the undecodable "
                                         r"byte 0xfc at byte offset 7 \(line 2\)"):
        load_text(path)
    with pytest.raises(ValueError, match=r"latin1\.txt: expected UTF-8 text"):
        load_parallel(write(tmp_path / "ok.en", "a\nb\n"), path)
