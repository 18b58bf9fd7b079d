"""Byte-pair encoding (data/bpe.py): the merges equal a plain recount's, encoding replays
them, decoding restores the words, JSON round trips, `tokenizers` agrees (when installed);
and `train --bpe` through the command line, with translate, evaluate and --resume."""

import json
import random
from collections import Counter

import numpy as np
import pytest

from doors import error, nt, ok, raises_naming

from numpy_transformer.data import BPETokenizer, CharTokenizer, Tokenizer, UNK_ID
from numpy_transformer.data.bpe import END, learn_merges, merge_pair, spell
from numpy_transformer.errors import InputError

TOY = ["low " * 5 + "lower " * 2 + "newest " * 6 + "widest " * 3]
QUICK = ["--quick", "--no-figures", "--no-progress"]


def random_words(seed, types=300, letters="abcdefghij"):
    """{word: count}: random words over `letters`, each seen a different number of times
    (1 to 999), so that ties between pair counts are rare."""
    rng = random.Random(seed)
    words = sorted({"".join(rng.choice(letters) for _ in range(rng.randint(1, 8)))
                    for _ in range(types)})
    return dict(zip(words, rng.sample(range(1, 1000), len(words))))


def naive_merges(counts, num_merges):
    """Recount every pair of every word before each merge: (merges, tied[r]) where tied[r]
    says whether merge r had a rival of equal count (broken by the smaller strings)."""
    words = {tuple(spell(w)): c for w, c in counts.items()}
    merges, tied = [], []
    for _ in range(num_merges):
        pairs = Counter()
        for w, c in words.items():
            for pair in zip(w, w[1:]):
                pairs[pair] += c
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        tied.append(sum(n == pairs[best] for n in pairs.values()) > 1)
        words = {tuple(merge_pair(list(w), best, best[0] + best[1])): c
                 for w, c in words.items()}
    return merges, tied


def test_the_classic_example_and_its_vocabulary():
    tok = BPETokenizer.from_texts(TOY, num_merges=10)
    assert tok.merges[:3] == [("e", "s"), ("es", "t" + END), ("l", "o")]
    assert tok.split("lowest") == ["lo", "w", "est" + END]
    assert tok.vocab_size == 4 + len(set(spell("lowerndist")) | set("lowerndist") | {END}) + 10
    assert repr(tok) == "BPETokenizer(vocab_size=26, merges=10, lowercase=False)"


@pytest.mark.parametrize("seed", [0, 1])
def test_merges_equal_a_naive_recount_ties_included(seed):
    counts = random_words(seed)
    naive, _ = naive_merges(counts, 120)
    assert learn_merges(counts, 120) == naive


def test_learning_is_deterministic_and_ignores_the_order_of_lines():
    lines = [" ".join(w for w, c in random_words(2).items() for _ in range(c % 5 + 1))]
    lines = " ".join(lines).split(" ")
    first = BPETokenizer.from_texts(lines, num_merges=200)
    random.Random(0).shuffle(lines)
    again = BPETokenizer.from_texts(lines, num_merges=200)
    assert first.merges == again.merges and first.symbols == again.symbols


def test_encoding_replays_the_merges_in_order():
    counts = random_words(3)
    tok = BPETokenizer.from_texts([" ".join(w for w in counts for _ in range(counts[w]))],
                                  num_merges=150)
    for word in random_words(4):                                    # mostly unseen words
        symbols = spell(word)
        for pair in tok.merges:                                   # merge 0, then 1, ...
            symbols = merge_pair(symbols, pair, pair[0] + pair[1])
        assert tok.split(word) == symbols, word


def test_round_trip_with_unseen_words_and_characters():
    tok = BPETokenizer.from_texts(["a man rides a horse .", "two dogs play in the snow ."],
                                  num_merges=40)
    seen = "a dog rides in the snow ."
    assert tok.decode(tok.encode(seen)) == seen
    unseen_words = "the horsemen play snowmen ."                   # known characters only
    ids = tok.encode(unseen_words, add_bos=True, add_eos=True)
    assert UNK_ID not in ids and tok.decode(ids) == unseen_words
    assert tok.decode(tok.encode("  two\tdogs \n play ")) == "two dogs play"   # whitespace: one
    odd = "a zebra héllo é"                                          # z, b, é never seen
    ids = tok.encode(odd)
    assert ids.count(UNK_ID) == 4
    assert tok.decode(ids) == "a <unk>e<unk>ra h<unk>llo <unk>"      # the words still apart
    assert tok.decode(tok.encode("a man", add_bos=True, add_eos=True), skip_special=False) \
        == "<bos> a man <eos>"


def test_save_and_load_keep_every_id(tmp_path):
    tok = BPETokenizer.from_texts(["Ein Mann fährt Fahrrad .", "Zwei Hunde spielen ."],
                                  num_merges=25, lowercase=True)
    tok.save(tmp_path / "bpe.json")
    for cls in (Tokenizer, BPETokenizer):
        back = cls.load(tmp_path / "bpe.json")
        assert type(back) is BPETokenizer and back.merges == tok.merges
        assert back.symbols == tok.symbols and back.lowercase and back.num_merges == 25
        assert back.encode("ZWEI Männer fahren") == tok.encode("zwei männer fahren")
    with raises_naming(InputError, "type", "'CharTokenizer'", "'BPETokenizer'"):
        CharTokenizer.load(tmp_path / "bpe.json")


@pytest.mark.parametrize("change, words", [
    (lambda d: d.update(merges=[["q", "x"]]), ("merges[0]",)),
    (lambda d: d.update(merges="es"), ("merges", "[a, b]")),
    (lambda d: d["symbols"].append("zz"), ("symbols",)),
    (lambda d: d["symbols"].insert(-1, d["symbols"].pop()), ("symbols",)),
    (lambda d: d.update(num_merges=-1), ("num_merges", "-1")),
    (lambda d: d.update(max_size=5), ("max_size", "null", "5")),
])
def test_a_damaged_file_is_refused_by_name(change, words):
    data = BPETokenizer.from_texts(TOY, num_merges=4).to_dict()
    change(data)
    with raises_naming(InputError, "bpe.json", *words) as refused:
        Tokenizer.from_dict(data, source="bpe.json")
    assert str(refused.value).count("bpe.json") == 1        # the file is named once


def test_tokenizers_library_learns_and_encodes_the_same():
    """The `tokenizers` package (an oracle, not a dependency): the same merges up to the
    first tie (the two break ties differently), and the same pieces for unseen words."""
    tk = pytest.importorskip("tokenizers")
    counts = random_words(5)
    text = [" ".join(w for w in counts for _ in range(counts[w]))]
    naive, tied = naive_merges(counts, 300)
    untied = tied.index(True) if True in tied else len(tied)
    assert untied >= 50                                           # a comparison worth making
    ours = BPETokenizer.from_texts(text, num_merges=300)
    oracle = tk.Tokenizer(tk.models.BPE(end_of_word_suffix="</w>"))
    oracle.pre_tokenizer = tk.pre_tokenizers.WhitespaceSplit()
    oracle.train_from_iterator(text, tk.trainers.BpeTrainer(
        vocab_size=100_000, min_frequency=0, end_of_word_suffix="</w>", show_progress=False))
    theirs = [tuple(s.replace("</w>", END) for s in pair)
              for pair in json.loads(oracle.to_str())["model"]["merges"]]
    assert theirs[:untied] == ours.merges[:untied]
    as_theirs = [s.replace(END, "</w>") for s in ours.symbols[4:]]
    replay = tk.Tokenizer(tk.models.BPE(
        vocab={s: i for i, s in enumerate(as_theirs)}, end_of_word_suffix="</w>",
        merges=[tuple(s.replace(END, "</w>") for s in pair) for pair in ours.merges]))
    replay.pre_tokenizer = tk.pre_tokenizers.WhitespaceSplit()
    unseen = " ".join(random_words(6))
    assert replay.encode(unseen).tokens == [s.replace(END, "</w>") for s in ours.split(unseen)]


# The command line: train --bpe, translate, evaluate, --resume.

@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A tiny German-English-like corpus whose two sides use different words."""
    folder = tmp_path_factory.mktemp("bpe")
    rng = np.random.default_rng(0)
    de = "ein mann eine frau hund katze läuft sitzt im park auf der straße".split()
    en = "a man a woman dog cat runs sits in park on the street".split()
    lines = [rng.integers(0, len(de), rng.integers(3, 7)) for _ in range(120)]
    (folder / "train.de").write_text("\n".join(" ".join(de[i] for i in l) for l in lines))
    (folder / "train.en").write_text("\n".join(" ".join(en[i] for i in l) for l in lines))
    return folder


@pytest.fixture(scope="module")
def bpe_run(corpus):
    out = ok(nt("train", "--src", "train.de", "--tgt", "train.en", "--bpe", "30",
                "--joint-vocab", "--share-embeddings", *QUICK, "--out", "runs/bpe",
                cwd=corpus))
    assert "run folder runs/bpe" in out and "BLEU" in out
    return corpus / "runs" / "bpe"


def test_train_bpe_saves_one_joint_vocabulary_and_one_matrix(bpe_run):
    config = json.loads((bpe_run / "config.json").read_text())
    assert config["data_config"]["bpe"] == 30 and config["data_config"]["joint_vocab"] is True
    assert config["model"]["share_embeddings"] is True and config["model"]["tie_embeddings"]
    src = Tokenizer.load(bpe_run / "src_tokenizer.json")
    tgt = Tokenizer.load(bpe_run / "tgt_tokenizer.json")
    assert type(src) is BPETokenizer and src.symbols == tgt.symbols
    assert len(src.merges) == 30 and "ß" in "".join(src.symbols) and "w" in src.symbols


def test_translate_evaluate_and_resume_a_bpe_run(bpe_run, corpus):
    done = nt("translate", "--checkpoint", bpe_run / "best.npz", "ein mann läuft",
              "zwei zebras", cwd=corpus)
    out = ok(done)
    assert len(out.splitlines()) == 2                       # one line per input on stdout
    assert done.stderr.startswith("warning: ")              # characters never seen
    assert "<bos>" not in out and "</w>" not in out
    out = ok(nt("evaluate", "--checkpoint", bpe_run / "best.npz", "--src", "train.de",
                "--tgt", "train.en", cwd=corpus))
    assert out.startswith("120 sentence pairs of train.de / train.en: ") and "bleu" in out
    out = ok(nt("train", "--resume", bpe_run / "last.npz", "--steps", "44", *QUICK,
                cwd=corpus))
    assert "resuming at step 40" in out and "44 steps in" in out


def test_bpe_and_sharing_are_refused_where_they_cannot_apply(corpus):
    error(nt("train", "--task", "copy", "--bpe", "100", *QUICK, cwd=corpus), 2,
          "--bpe", "--src/--tgt", "--tsv", "--task copy")
    error(nt("train", "--task", "copy", "--joint-vocab", *QUICK, cwd=corpus), 2,
          "--joint-vocab", "corpus")
    error(nt("train", "--src", "train.de", "--tgt", "train.en", "--bpe", "30",
             "--share-embeddings", *QUICK, "--out", "runs/no", cwd=corpus), 2,
          "--share-embeddings", "--joint-vocab")
    error(nt("train", "--src", "train.de", "--tgt", "train.en", "--joint-vocab",
             "--share-embeddings", "--no-tie-embeddings", *QUICK, "--out", "runs/no",
             cwd=corpus), 2, "--share-embeddings", "tie_embeddings", "False")
    error(nt("train", "--src", "train.de", "--tgt", "train.en", "--bpe", "0", *QUICK,
             cwd=corpus), 2, "--bpe", "'0'")
