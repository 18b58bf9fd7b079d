"""Similar solutions across a class: pairs of students whose solution regions match
beyond renaming and reformatting. For the teacher's class summary only.

    similar_pairs(named_dirs, parts, threshold=THRESHOLD)   -> [pair, ...], most similar first
    pair = {"students": [a, b], "similarity": s, "shared_tokens": n, "parts": [...]}

The fingerprinting is copydetect's (pip install copydetect: the winnowing of
Schleimer, Wilkerson and Aiken, "Winnowing: local algorithms for document
fingerprinting", SIGMOD 2003, the method of MOSS): k-grams of a text are hashed,
winnowed (here with a window of 1, every k-gram: solution regions are short, and
the result then does not depend on Python's salted string hashes), and two texts
share the code their common fingerprints cover. What is
fingerprinted is not the source but its tokens, normalised here with Python's
own `tokenize` so that renaming and reformatting change nothing:

- every name a student chooses becomes one token `V` (variables, arguments,
  helpers); keywords, builtins, attribute names (`.reshape`, `.T`, `.grads`:
  the package's and NumPy's, not the student's) and keyword-argument names
  (`axis=`) stay as they are;
- strings become `S`, numbers stay; comments, blank lines, line breaks inside
  brackets and indentation width go; the end of a statement stays.

Each token becomes one character, so copydetect's k counts tokens (K).

Correct solutions of the same part are alike, whoever wrote them. So per part,
the fingerprints of the reference's own body and of the copy's stub are
boilerplate (copydetect drops them): what two students share beyond those is what
counts; so does not, in a class of SMALL_CLASS or more, what more than COMMON of the
class and more than MIN_COMMON students wrote alike (MOSS's rule: a passage in many
programs is the problem's; in a smaller class no passage is discounted, as a share of
it is a handful of students: common_count). A pair's similarity is the shared share of
the smaller of the two solutions (their fingerprinted tokens, all graded parts
together), and a pair is reported when it is at least `threshold` and at least
MIN_SHARED tokens are shared.
THRESHOLD is set clearly above what independent correct bodies reach: measured on
the catalogue's right bodies (right_bodies.py) and the correct alternative forms
of tests/course/test_class_tools.py, each against every other of its function,
the most is 0.69 (two forms of Linear.backward that both reshape, transpose when
tied and sum the bias alike, 52 tokens shared); the right bodies reach 0 (they are
the reference's code), and a renamed, reformatted copy reaches 1.0.
"""

import builtins
import collections
import io
import itertools
import keyword
import math
import textwrap
import tokenize
from pathlib import Path

from ...errors import InputError
from ...system.files import read_regular

K = 8               # tokens in a fingerprinted k-gram (copydetect's noise threshold)
WINDOW = 1          # winnowing window: 1 keeps every k-gram (regions are short), so
                    # the result does not depend on the hash values (Python salts them)
THRESHOLD = 0.9     # the share of the smaller solution found in the other (a renamed,
                    # reformatted copy: 1.0; independent correct bodies: at most 0.69)
MIN_SHARED = 20     # tokens that a reported pair shares at least
COMMON = 0.2        # a fingerprint in more than this share of a class is the problem's,
SMALL_CLASS = 10    # in a class of at least this many students (a smaller one: no discount),
MIN_COMMON = 5      # and in more than this many students (never a copied pair and 3 others)
INSTALL = ("the similarity report needs copydetect: pip install copydetect (or pip install "
           "'numpy_transformer[course]')")
KEPT = set(keyword.kwlist) | set(dir(builtins)) | {"self"}
SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT,
           tokenize.ENCODING, tokenize.ENDMARKER}


def copydetect():
    """The copydetect module; InputError with the install hint when it is missing."""
    try:
        import copydetect as found
        from copydetect import CodeFingerprint, compare_files  # noqa: F401
    except ImportError:
        raise InputError(INSTALL) from None
    return found


def tokens(text):
    """The normalised tokens of Python source `text` (see the module); a text that does not
    tokenize gives its words, so a broken region still compares."""
    try:
        found = [t for t in tokenize.generate_tokens(io.StringIO(text).readline)
                 if t.type not in SKIPPED]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return text.split()
    out = []
    for i, tok in enumerate(found):
        after = found[i + 1].string if i + 1 < len(found) else ""
        before = found[i - 1].string if i else ""
        if tok.type == tokenize.NAME:       # a keyword argument's name is the API's too
            kept = tok.string in KEPT or before == "." or (after == "=" and before in ("(", ","))
            out.append(tok.string if kept else "V")
        elif tok.type == tokenize.STRING:
            out.append("S")
        elif tok.type == tokenize.NEWLINE:
            out.append(";")
        else:
            out.append(tok.string)
    return out


def encode(words, alphabet):
    """`words` as one character each (a private-use code point per distinct token)."""
    return "".join(alphabet.setdefault(w, chr(0xE000 + len(alphabet))) for w in words)


def region_texts(package, parts):
    """{part: the bodies of the part's regions under `package` (a numpy_transformer/), in file
    order, each dedented}; InputError when its markers are broken."""
    from ..copies.make import package_regions
    texts, lines_of = {p: [] for p in parts}, {}
    for r in package_regions(package):
        if r.part in texts:
            if r.path not in lines_of:
                raw = read_regular(Path(package) / r.path, r.path)       # a student's: no FIFO
                lines_of[r.path] = raw.decode("utf-8", errors="replace").split("\n")
            body = "\n".join(lines_of[r.path][r.begin + 1:r.end])
            texts[r.part].append(textwrap.dedent(body))
    return {p: "\n".join(t) for p, t in texts.items()}


def boilerplate_texts(parts):
    """{part: the reference's bodies and a stub's line}: what any copy may share."""
    from ..copies.make import PACKAGE
    reference = region_texts(PACKAGE, parts)
    return {p: reference[p] + '\nraise NotImplementedError("write this part")' for p in parts}


def fingerprints(texts, boilerplate, alphabet):
    """{part: copydetect CodeFingerprint of the part's text}, without the fingerprints of
    `boilerplate` ({part: set of hashes})."""
    detect = copydetect()
    return {part: detect.CodeFingerprint(part, K, WINDOW, boilerplate=list(boilerplate[part]),
                                         filter=False,
                                         fp=io.StringIO(encode(tokens(text), alphabet)))
            for part, text in texts.items()}


def all_hashes(text, alphabet):
    """Every k-gram hash of `text` (copydetect, no winnowing)."""
    encoded = io.StringIO(encode(tokens(text), alphabet))
    return set(copydetect().CodeFingerprint("", K, 1, filter=False, fp=encoded).hashes)


def compare(a, b):
    """(similarity, shared tokens, parts that share any) of two students' fingerprints."""
    detect = copydetect()
    shared, size_a, size_b, where = 0, 0, 0, []
    for part in a:
        size_a, size_b = size_a + a[part].token_coverage, size_b + b[part].token_coverage
        if a[part].hashes and b[part].hashes:
            overlap = int(detect.compare_files(a[part], b[part])[0])
            shared += overlap
            if overlap:
                where.append(part)
    smaller = min(size_a, size_b)
    return (shared / smaller if smaller else 0.0), shared, where


def similar_pairs(named_dirs, parts, threshold=THRESHOLD, min_shared=MIN_SHARED):
    """Pairs of students whose solution regions of `parts` match beyond renaming and
    reformatting, most similar first: [{"students", "similarity", "shared_tokens", "parts"}].
    `named_dirs`: [(name, folder of a student copy)]; a copy whose markers are broken is
    left out (its grade says why)."""
    copydetect()
    solutions = {}
    for name, directory in named_dirs:
        try:
            solutions[name] = region_texts(Path(directory) / "numpy_transformer", parts)
        except (InputError, OSError, UnicodeError):
            continue
    return [p for p in scored_pairs(solutions, parts)
            if p["similarity"] >= threshold and p["shared_tokens"] >= min_shared]


def scored_pairs(solutions, parts):
    """Every pair of {name: {part: text}} with its similarity, most similar first. Shared
    by any pair: neither the reference's and the stub's fingerprints, nor those of code
    that more than common_count(n) of the n students wrote (MOSS's rule: a passage in many
    programs is the problem's, not a copy's)."""
    alphabet = {}
    boilerplate = {part: all_hashes(text, alphabet)
                   for part, text in boilerplate_texts(parts).items()}
    prints = {name: fingerprints(texts, boilerplate, alphabet)
              for name, texts in solutions.items()}
    for part in parts:
        seen = collections.Counter(h for p in prints.values() for h in p[part].hashes)
        boilerplate[part] |= {h for h, n in seen.items() if n > common_count(len(prints))}
    prints = {name: fingerprints(texts, boilerplate, alphabet)
              for name, texts in solutions.items()}
    pairs = []
    for a, b in itertools.combinations(prints, 2):
        similarity, shared, where = compare(prints[a], prints[b])
        pairs.append({"students": [a, b], "similarity": round(float(similarity), 3),
                      "shared_tokens": int(shared), "parts": where})
    return sorted(pairs, key=lambda p: (-p["similarity"], p["students"]))


def common_count(n):
    """How many of n students may share a fingerprint before it counts as the problem's:
    all of them in a class below SMALL_CLASS (no discount), else COMMON of the class and at
    least MIN_COMMON. In a small class a share is a handful of students: with 7, "more than
    20%" was 3, a copied pair and one student who wrote the same loops on their own, and
    discounting what those three shared hid the pair (0.836 with the loops discounted, 1.048
    without: tests/course/test_similarity_small_class.py). A problem's own boilerplate is
    written by most of a class, not by 3 in 7."""
    return n if n < SMALL_CLASS else max(MIN_COMMON, math.ceil(COMMON * n))
