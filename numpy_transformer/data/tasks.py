"""Built-in sequence-to-sequence tasks, generated on the fly from a seed.

    task = get_task("reverse")                    # TASKS: the registry (register_task)
    pairs = task.sample(rng, 1000)                # [("abc", "cba"), ...]
    test_pairs = task.sample(rng, 100, split="test")
    tok = task.tokenizer()                        # a CharTokenizer for its alphabet

    copy      "hello"              -> "hello"
    reverse   "hello"              -> "olleh"
    sort      "hello"              -> "ehllo"
    addition  "123+4567"           -> "4690"
    dates     "Nov 21, 2026"       -> "2026-11-21"  (forms and rules in dates.py)

The held-out ("test") split never overlaps training: every example is put in
exactly one split by a deterministic hash of its *split key*,

    held out  <=>  crc32(utf-8 bytes of the key) % 10 == 0    (about 10%)

and `sample` draws random examples and keeps those of the asked split. The
key is the source string, so a test source is never seen in training; for
`dates` it is the date itself, so a test date is never seen in ANY written
form. Since the target is a function of the source, the key (hence the split)
is too: the same source can never land in both splits.
"""

import datetime
import zlib
from dataclasses import dataclass
from functools import partial

import numpy as np

from ..validation import check_choice, check_integer, message
from .dates import DATE_FORMATS, MAX_YEAR, MIN_YEAR, date_alphabet, format_date, random_date
from .tokenizers import CharTokenizer
from ..errors import InputError, InputTypeError

SPLITS = ("train", "test")
LOWERCASE = "abcdefghijklmnopqrstuvwxyz"


def is_held_out(key):
    """True if the example with this split key belongs to the test split (~10%)."""
    return zlib.crc32(key.encode("utf-8")) % 10 == 0


class Task:
    """A generated seq2seq task. Subclasses define `example(rng)` and `alphabet`."""

    name = "task"
    alphabet = ""          # every character a source or a target can hold
    max_src_len = 0        # longest source, in characters
    max_tgt_len = 0        # longest target, in characters (without <bos>/<eos>)

    def example(self, rng):
        """One random (src_text, tgt_text) pair, from either split."""
        raise NotImplementedError(f"{type(self).__name__}.example")

    def split_key(self, src, tgt):
        """The string whose hash decides the split: the source, by default."""
        return src

    def split_of(self, src, tgt):
        """The one split ("train" or "test") this example belongs to."""
        return "test" if is_held_out(self.split_key(src, tgt)) else "train"

    def sample(self, rng, n, split="train"):
        """n random (src_text, tgt_text) pairs of `split` (duplicates possible)."""
        if not isinstance(rng, np.random.Generator):
            raise InputTypeError(message("rng", "a numpy.random.Generator", type(rng).__name__))
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InputError(message("n", "a non-negative integer", repr(n)))
        check_choice(split, "split", SPLITS)
        pairs, draws, max_draws = [], 0, 100 * n + 10_000
        while len(pairs) < n:
            if draws == max_draws:
                raise InputError(f"task {self.name!r}: found only {len(pairs)} of {n} {split!r} "
                                 f"examples in {draws} draws; widen the task (longer or more "
                                 f"varied inputs) so that both splits have examples")
            src, tgt = self.example(rng)
            draws += 1
            if self.split_of(src, tgt) == split:
                pairs.append((src, tgt))
        return pairs

    def tokenizer(self):
        """A CharTokenizer whose vocabulary is exactly this task's alphabet."""
        return CharTokenizer(self.alphabet)

    def __repr__(self):
        return (f"{type(self).__name__}(name={self.name!r}, max_src_len={self.max_src_len}, "
                f"max_tgt_len={self.max_tgt_len})")


def _check_range(low, high, low_name, high_name):
    check_integer(low, low_name)
    check_integer(high, high_name)
    if high < low:
        raise InputError(message(high_name, f"at least {low_name}={low}", high))


class SequenceTask(Task):
    """Random strings of `alphabet` with a length in [min_len, max_len], transformed.

    copy: the string itself; reverse: read backwards; sort: its symbols sorted.
    """

    transforms = {
        "copy": lambda s: s,
        "reverse": lambda s: s[::-1],
        "sort": lambda s: "".join(sorted(s)),
    }

    def __init__(self, name, *, alphabet=LOWERCASE, min_len=1, max_len=10):
        check_choice(name, "name", tuple(self.transforms))
        if not isinstance(alphabet, str) or len(set(alphabet)) != len(alphabet) or not alphabet:
            raise InputError(message("alphabet", "a non-empty string of distinct characters",
                                     repr(alphabet)))
        _check_range(min_len, max_len, "min_len", "max_len")
        self.name, self.transform = name, self.transforms[name]
        self.alphabet, self.min_len, self.max_len = alphabet, min_len, max_len
        self.max_src_len = self.max_tgt_len = max_len

    def example(self, rng):
        length = int(rng.integers(self.min_len, self.max_len + 1))
        src = "".join(self.alphabet[i] for i in rng.integers(0, len(self.alphabet), size=length))
        return src, self.transform(src)


class AdditionTask(Task):
    """Addition: "a+b" -> the decimal sum; operands have [min_digits, max_digits] digits.

    The number of digits is drawn first (uniformly), then the number, so that
    short numbers are as common as long ones.
    """

    name = "addition"
    alphabet = "+0123456789"

    def __init__(self, *, min_digits=1, max_digits=4):
        _check_range(min_digits, max_digits, "min_digits", "max_digits")
        self.min_digits, self.max_digits = min_digits, max_digits
        self.max_src_len = 2 * max_digits + 1
        self.max_tgt_len = max_digits + 1

    def _number(self, rng):
        digits = int(rng.integers(self.min_digits, self.max_digits + 1))
        low = 0 if digits == 1 else 10 ** (digits - 1)
        return int(rng.integers(low, 10 ** digits))

    def example(self, rng):
        a, b = self._number(rng), self._number(rng)
        return f"{a}+{b}", str(a + b)


class DatesTask(Task):
    """A date written in a human form (dates.py) -> the same date as YYYY-MM-DD.

    Years lie in [min_year, max_year], inside 1950..2049 where 2-digit years
    are unambiguous. The split key is the date, so test dates are new dates.
    """

    name = "dates"
    max_tgt_len = 10

    def __init__(self, *, min_year=MIN_YEAR, max_year=MAX_YEAR):
        _check_range(min_year, max_year, "min_year", "max_year")
        for value, name in ((min_year, "min_year"), (max_year, "max_year")):
            if not MIN_YEAR <= value <= MAX_YEAR:
                raise InputError(message(name, f"a year in [{MIN_YEAR}, {MAX_YEAR}] (where "
                                         "2-digit years are unambiguous)", value))
        self.min_year, self.max_year = min_year, max_year
        self.alphabet = date_alphabet()
        # Year 2000 has every (weekday, month) pair and every day 1..31: the longest forms.
        days = [datetime.date(2000, 1, 1) + datetime.timedelta(days=k) for k in range(366)]
        self.max_src_len = max(len(format_date(d, t)) for d in days for t, _ in DATE_FORMATS)

    def example(self, rng):
        date = random_date(rng, self.min_year, self.max_year)
        template, _ = DATE_FORMATS[int(rng.integers(len(DATE_FORMATS)))]
        return format_date(date, template), date.isoformat()

    def split_key(self, src, tgt):
        return tgt            # the ISO date: a held-out date is held out in every form


@dataclass(frozen=True)
class TaskSpec:
    """A registered task: how to build it, and its own training defaults."""
    build: object        # build(**options) -> Task
    defaults: dict       # settings that suit it (steps, d_model, lr, ...), over the general ones


TASKS = {}               # name -> TaskSpec: the one registry (the command line's choices too)


def register_task(name, build, **defaults):
    """Add the task `name` (built by `build(**options)`), with its own training defaults
    (TrainConfig / model fields such as steps=2000, d_model=32); returns `build`."""
    if not isinstance(name, str) or not name.isidentifier():
        raise InputError(message("name", "a task name (letters, digits, _)", repr(name)))
    if not callable(build):
        raise InputTypeError(message("build", "a callable returning a Task", repr(build)))
    TASKS[name] = TaskSpec(build, dict(defaults))
    return build


register_task("copy", partial(SequenceTask, "copy"), steps=1500)
register_task("reverse", partial(SequenceTask, "reverse"), steps=3000)
register_task("sort", partial(SequenceTask, "sort"), steps=2000)
register_task("addition", AdditionTask, steps=6000)
register_task("dates", DatesTask, steps=3000)


def get_task(name, **options):
    """The task called `name` (one of TASKS), built with `options` (e.g. max_len=12)."""
    if name not in TASKS:
        raise InputError(message("name", f"a task name, one of {tuple(TASKS)}", repr(name)))
    return TASKS[name].build(**options)
