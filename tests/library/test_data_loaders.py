"""Loaders: parallel files, TSV, plain text, and a clear error for every bad file.

The tests write their own small files in tmp_path; they never read shared data.
"""

import pytest

from numpy_transformer.data import load_parallel, load_text, load_tsv, read_lines, split_text

from doors import raises_naming


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
    with raises_naming(ValueError, "max_len", "0"):
        load_parallel(en, de, max_len=0)


def test_load_parallel_mismatched_line_counts(tmp_path):
    en = write(tmp_path / "c.en", "a\nb\nc\n")
    de = write(tmp_path / "c.de", "a\nb\n")
    with raises_naming(ValueError, "c.en", "3", "c.de", "2"):
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
    with raises_naming(ValueError, "f.tsv", "line 2", "3"):
        load_tsv(path, columns=(0, 2))
    bad = write(tmp_path / "g.tsv", "left\tright\nno tab here\n")
    with raises_naming(ValueError, "g.tsv", "line 2", "2"):
        load_tsv(bad)
    with raises_naming(ValueError, "columns", "(0,)"):
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
    with raises_naming(ValueError, "val_fraction", "(0, 1)", "1.0"):
        split_text("abcd", val_fraction=1.0)
    with raises_naming(ValueError, "text"):
        split_text("a", val_fraction=0.1)


def test_missing_and_unreadable_files(tmp_path):
    with raises_naming(FileNotFoundError, "path", "nope.txt"):
        load_text(tmp_path / "nope.txt")
    with raises_naming(FileNotFoundError, "tgt_path", "x.de"):
        load_parallel(write(tmp_path / "x.en", "a\n"), tmp_path / "x.de")
    with raises_naming(ValueError, "path", "directory"):
        load_text(tmp_path)


def test_empty_files(tmp_path):
    with raises_naming(ValueError, "empty.txt"):
        load_text(write(tmp_path / "empty.txt", ""))
    with raises_naming(ValueError, "blank.en"):
        load_parallel(write(tmp_path / "blank.en", "\n \n"), write(tmp_path / "ok.de", "a\nb\n"))
    with raises_naming(ValueError, "empty.tsv"):
        load_tsv(write(tmp_path / "empty.tsv", b""))


def test_undecodable_bytes(tmp_path):
    path = write(tmp_path / "latin1.txt", "okay\nGr\u00fc\u00dfe\n".encode("latin-1"))
    with raises_naming(ValueError, "latin1.txt", "UTF-8", "0xfc", "7", "line 2"):
        load_text(path)
    with raises_naming(ValueError, "latin1.txt", "UTF-8"):
        load_parallel(write(tmp_path / "ok.en", "a\nb\n"), path)


def test_pairs_dropped_for_a_blank_side_are_counted_in_notes(tmp_path):
    de = write(tmp_path / "blank.de", "".join("\n" if i % 3 == 0 else f"satz {i}\n"
                                              for i in range(300)))
    en = write(tmp_path / "blank.en", "".join(f"sentence {i}\n" for i in range(300)))
    notes = []
    assert len(load_parallel(de, en, notes=notes)) == 200
    assert notes == [f"dropped 100 of 300 pairs of {de} and {en} with an empty side "
                     f"(lines 1, 4, 7, ...)"]
    assert len(load_parallel(de, en)) == 200            # no list given: nothing said


def test_a_tsv_with_more_columns_says_which_are_read(tmp_path):
    path = write(tmp_path / "three.tsv", "go\tva\tCC-BY\nhi\tsalut\tCC-BY\n")
    notes = []
    assert load_tsv(path, notes=notes) == [("go", "va"), ("hi", "salut")]
    assert notes == [f"{path} has 3 columns on line 1; only the first two are used "
                     f"(source, target)"]
    notes = []
    load_tsv(write(tmp_path / "two.tsv", "go\tva\n\n \tnichts\n"), notes=notes)
    assert notes == [f"dropped 1 of 2 pairs of {tmp_path / 'two.tsv'} with an empty side (line 3)"]


def test_old_mac_line_endings_are_named(tmp_path):
    path = write(tmp_path / "cr.de", "".join(f"satz {i}\r" for i in range(50)))
    with raises_naming(ValueError, str(path), "\\r line endings"):
        read_lines(path)
    assert read_lines(write(tmp_path / "one.de", "satz\r")) == ["satz"]
    assert read_lines(write(tmp_path / "ff.de", "a\rb\nc\n")) == ["a\rb", "c"]
