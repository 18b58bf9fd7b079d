"""Byte-pair encoding (Sennrich et al., 2016) of whitespace-separated words.

A word is first spelled as its characters, the last one carrying the end-of-word
mark END (a space: words never hold one, so the mark can never be confused with
text). Learning counts every pair of neighbouring symbols over the training
words, merges the most frequent pair into one new symbol everywhere, and repeats
`num_merges` times; the merges, in order, are the tokenizer:

    "lower" -> l o w e "r "  -> ... -> "low" "er "        (after merges like (e, "r "))

    tok = BPETokenizer.from_texts(lines, num_merges=8000)
    tok.encode("a dog runs")               # ids of "a " "dog " "run" "s "
    tok.decode(tok.encode("a  dog\\n"))      # "a dog": the words, joined by one space

Learning keeps the pair counts and, per pair, the words holding it; a merge
updates only those words' pairs (one pass over the corpus in all, not one per
merge), and a heap finds the most frequent pair. Ties go to the pair whose
symbols come first alphabetically, so two runs learn the same merges. Encoding
replays the merges by rank: in each word, merge the known pair of lowest rank,
until none is left (the same as applying merge 0, then 1, ... in order);
results are cached per word. A character never seen in training is <unk>, the
end of its word kept (the bare END symbol), so decoding still restores the words.
"""

import heapq
from collections import defaultdict

from ..validation import message
from ..errors import InputError
from .tokenizers import SPECIAL_TOKENS, Tokenizer

END = " "                                      # the end-of-word mark, a suffix of symbols
SPACED = frozenset(SPECIAL_TOKENS[:3])         # <pad> <bos> <eos> decode as words of their own


def is_initial(symbol):
    """True for a symbol a word can start as: one character, alone or with END; or END."""
    return isinstance(symbol, str) and (symbol == END or (
        len(symbol.removesuffix(END)) == 1 and not symbol[0].isspace()))


def spell(word):
    """The initial symbols of a word: its characters, the last with END: "dog" -> d o "g "."""
    return list(word[:-1]) + [word[-1] + END]


def merge_pair(symbols, pair, merged):
    """symbols with every (left to right, non-overlapping) occurrence of pair replaced."""
    out, i, n = [], 0, len(symbols)
    while i < n:
        if i + 1 < n and symbols[i] == pair[0] and symbols[i + 1] == pair[1]:
            out.append(merged)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def learn_merges(word_counts, num_merges, min_count=1):
    """The merges [(a, b), ...] of up to num_merges rounds over {word: count}.

    Each round merges the pair (a, b) of largest count c(a, b) = sum over words of
    count(word) * occurrences in it; ties: the smallest (a, b) as strings. It stops
    early when no pair is left or the best is seen fewer than min_count times.
    Symbols are ids inside; `where[pair]` holds the words that may hold `pair`.
    """
    names, ids = [], {}                                       # id -> symbol, symbol -> id

    def intern(symbol):
        if symbol not in ids:
            ids[symbol] = len(names)
            names.append(symbol)
        return ids[symbol]

    words = [[intern(s) for s in spell(w)] for w in word_counts]
    freq = list(word_counts.values())
    count, where = defaultdict(int), defaultdict(set)
    for i, w in enumerate(words):
        for pair in zip(w, w[1:]):
            count[pair] += freq[i]
            where[pair].add(i)
    heap = [(-c, names[a], names[b], a, b) for (a, b), c in count.items()]
    heapq.heapify(heap)
    merges = []
    while heap and len(merges) < num_merges:
        c, _, _, a, b = heapq.heappop(heap)
        if count.get((a, b)) != -c:
            continue                                          # an outdated entry
        if -c < min_count:
            break
        if names[a] + names[b] in SPECIAL_TOKENS:             # "<unk" + ">": never a symbol
            del count[(a, b)]
            continue
        merges.append((names[a], names[b]))
        new = intern(names[a] + names[b])
        delta = defaultdict(int)
        for i in where.pop((a, b)):                           # only the words holding (a, b)
            w, f = words[i], freq[i]
            for pair in zip(w, w[1:]):                        # their old pairs out ...
                delta[pair] -= f
            words[i] = w = merge_pair(w, (a, b), new)
            for pair in zip(w, w[1:]):                        # ... their new pairs in
                delta[pair] += f
                where[pair].add(i)
        for pair, d in delta.items():
            if d == 0:
                continue
            count[pair] += d
            if count[pair] > 0:
                heapq.heappush(heap, (-count[pair], names[pair[0]], names[pair[1]], *pair))
            else:
                del count[pair]
                where.pop(pair, None)
    return merges


class BPETokenizer(Tokenizer):
    """Byte-pair encoding of words; ids: the specials, the alphabet, then the merged symbols.

    Settings (besides lowercase):
        num_merges: merges `fit` learns (fewer when the words run out of pairs).
        min_freq:   `fit` stops at a pair seen fewer times (default 1: never).
    The vocabulary holds the characters of the training words (each also with
    END, as a word's last symbol), the bare END, and one symbol per merge (two
    merges can make the same symbol: "a"+"bc " and "ab"+"c "; it is listed once).
    """

    def __init__(self, alphabet=(), merges=(), *, num_merges=1000, lowercase=False, min_freq=1):
        if isinstance(num_merges, bool) or not isinstance(num_merges, int) or num_merges < 0:
            raise InputError(message("num_merges", "an integer >= 0", repr(num_merges)))
        super().__init__((), lowercase=lowercase, min_freq=min_freq)
        self.num_merges = num_merges
        self._install(list(alphabet), [tuple(m) for m in merges])

    def _install(self, alphabet, merges):
        """Set the alphabet and the merges; the vocabulary follows from them."""
        for i, s in enumerate(alphabet):
            if not is_initial(s):
                raise InputError(message(f"alphabet[{i}]", f"a character, alone or with "
                                         f"{END!r} after it, or {END!r}", repr(s)))
        learned, known = list(alphabet) + ([] if END in alphabet else [END]), set(alphabet)
        known.add(END)
        for r, pair in enumerate(merges):
            if len(pair) != 2 or not all(isinstance(s, str) and s in known for s in pair):
                raise InputError(message(f"merges[{r}]", "a pair of symbols of the alphabet "
                                         "or of earlier merges", repr(pair)[:80]))
            if pair[0] + pair[1] not in known:
                known.add(pair[0] + pair[1])
                learned.append(pair[0] + pair[1])
        self.merges = merges
        self.ranks = {pair: r for r, pair in enumerate(merges)}
        self._set_vocabulary(learned)
        self._words = {}                                      # word -> its symbols (a cache)

    def fit(self, texts):
        """Learn the alphabet and up to num_merges merges from an iterable of strings."""
        counts = self._count(texts, str.split)                # word -> occurrences
        alphabet = sorted({s for word in counts for s in spell(word)} | {END})
        self._install(alphabet, learn_merges(counts, self.num_merges, self.min_freq))
        return self

    def split(self, text):
        """The symbols of every word of text, in order (cached per word)."""
        out = []
        for word in text.split():
            if word not in self._words:
                self._words[word] = self._encode_word(word)
            out += self._words[word]
        return out

    def _encode_word(self, word):
        symbols, ranks = spell(word), self.ranks
        while len(symbols) > 1:
            rank = min(ranks.get(pair, len(ranks)) for pair in zip(symbols, symbols[1:]))
            if rank == len(ranks):
                break                                         # no known merge left
            a, b = self.merges[rank]
            symbols = merge_pair(symbols, (a, b), a + b)
        last = symbols[-1]                # unknown only if never seen: one character + END
        if last not in self._lookup and last != END:
            symbols[-1:] = [last[:-1], END]                   # <unk>, but the word still ends
        return symbols

    def join(self, symbols):
        """Glue the symbols; END separates the words (one space between words)."""
        return " ".join("".join(s + END if s in SPACED else s for s in symbols).split())

    def to_dict(self):
        return {**super().to_dict(), "num_merges": self.num_merges,
                "merges": [list(pair) for pair in self.merges]}

    @classmethod
    def _rebuild(cls, learned, settings, data, source):
        if settings.pop("max_size") is not None:
            raise InputError(message(f"{source}: max_size", "null (num_merges sets a BPE "
                                     "vocabulary's size)", repr(data["max_size"])))
        merges = data.get("merges")
        if not isinstance(merges, list) or not all(isinstance(m, list) for m in merges):
            raise InputError(message(f"{source}: merges", "a list of [a, b] pairs",
                                     repr(merges)[:80]))
        alphabet = learned[:next((i for i, s in enumerate(learned) if not is_initial(s)),
                                 len(learned))]
        tok = cls(alphabet, merges, num_merges=data.get("num_merges"), **settings)
        if tok.symbols[len(SPECIAL_TOKENS):] != learned:
            raise InputError(message(f"{source}: symbols", "the alphabet, then the symbols "
                                     "the merges make, in order", "another list"))
        return tok

    def __repr__(self):
        return (f"BPETokenizer(vocab_size={self.vocab_size}, merges={len(self.merges)}, "
                f"lowercase={self.lowercase})")
