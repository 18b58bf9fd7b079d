"""What reading a parallel corpus leaves out is said (data/loaders.py, issue 52): pairs
with an empty side counted with their lines, a TSV's columns beyond two, and a file of
old-Mac "\\r" line endings named as such rather than a line-count mismatch."""

from doors import error, nt, ok


def test_train_says_what_the_corpus_reader_left_out(tmp_path):
    (tmp_path / "blank.de").write_text("".join("\n" if i % 3 == 0 else f"ein satz {i}\n"
                                               for i in range(300)))
    (tmp_path / "blank.en").write_text("".join(f"a sentence {i}\n" for i in range(300)))
    (tmp_path / "three.tsv").write_text("".join(f"go {i}\tva {i}\tCC-BY\n" for i in range(60)))
    small = ("--quick", "--steps", "2", "--no-figures")
    out = ok(nt("train", "--src", "blank.de", "--tgt", "blank.en", *small, "--out", "a",
                cwd=tmp_path))
    assert "note: dropped 100 of 300 pairs of blank.de and blank.en with an empty side " \
        "(lines 1, 4, 7, ...)" in out, out
    out = ok(nt("train", "--tsv", "three.tsv", *small, "--out", "b", cwd=tmp_path))
    assert "note: three.tsv has 3 columns on line 1; only the first two are used" in out, out


def test_old_mac_line_endings_are_named_not_a_line_count_mismatch(tmp_path):
    with open(tmp_path / "cr.de", "w", newline="") as f:
        f.write("".join(f"satz {i}\r" for i in range(50)))
    (tmp_path / "cr.en").write_text("".join(f"sentence {i}\n" for i in range(50)))
    error(nt("train", "--src", "cr.de", "--tgt", "cr.en", "--quick", cwd=tmp_path), 2,
          "cr.de", "\\r line endings")
