"""Generated tasks: correct answers, disjoint splits, determinism, one reading per date."""

import datetime
import re

import numpy as np
import pytest

from numpy_transformer.data import DATE_FORMATS, TASKS, UNK_ID, format_date, get_task, is_held_out
from numpy_transformer.data.dates import MONTHS, WEEKDAYS

from doors import raises_naming


@pytest.fixture(scope="module")
def samples():
    """For each task: 3000 training and 1000 held-out pairs, drawn once."""
    out = {}
    for name in TASKS:
        task = get_task(name)
        rng = np.random.default_rng(123)
        out[name] = (task, task.sample(rng, 3000), task.sample(rng, 1000, split="test"))
    return out


def test_task_names():
    assert tuple(TASKS) == ("copy", "reverse", "sort", "addition", "dates")
    for name in TASKS:
        assert get_task(name).name == name


@pytest.mark.parametrize("name", tuple(TASKS))
def test_splits_never_overlap(samples, name):
    task, train, test = samples[name]
    assert len(train) == 3000 and len(test) == 1000
    assert not {s for s, _ in train} & {s for s, _ in test}
    assert all(task.split_of(s, t) == "train" for s, t in train)
    assert all(task.split_of(s, t) == "test" for s, t in test)
    if name == "dates":                       # a held-out date is unseen in every form
        assert not {t for _, t in train} & {t for _, t in test}


def test_held_out_fraction_is_about_ten_percent():
    rng = np.random.default_rng(0)
    keys = [str(k) for k in rng.integers(0, 10**9, size=5000)]
    assert 0.08 < np.mean([is_held_out(k) for k in keys]) < 0.12


@pytest.mark.parametrize("name", TASKS)
def test_alphabet_covers_every_sample_and_lengths_fit(samples, name):
    task, train, test = samples[name]
    tok = task.tokenizer()
    for src, tgt in train + test:
        assert UNK_ID not in tok.encode(src) + tok.encode(tgt), (src, tgt)
        assert tok.decode(tok.encode(src, add_bos=True, add_eos=True)) == src
        assert len(src) <= task.max_src_len and len(tgt) <= task.max_tgt_len


def test_sequence_tasks_answers(samples):
    for name, answer in (("copy", lambda s: s), ("reverse", lambda s: s[::-1]),
                         ("sort", lambda s: "".join(sorted(s)))):
        task, train, test = samples[name]
        for src, tgt in train + test:
            assert tgt == answer(src) and 1 <= len(src) <= 10 and src.isalpha()
        assert {len(s) for s, _ in train} == set(range(1, 11))


def test_sequence_task_options():
    task = get_task("sort", alphabet="0123456789", min_len=3, max_len=5)
    for src, tgt in task.sample(np.random.default_rng(0), 200):
        assert src.isdigit() and 3 <= len(src) <= 5 and list(tgt) == sorted(src)
    assert task.max_src_len == 5 and task.tokenizer().vocab_size == 14


def test_addition_answers(samples):
    task, train, test = samples["addition"]
    for src, tgt in train + test:
        a, b = src.split("+")
        assert int(a) + int(b) == int(tgt) and str(int(a)) == a and 1 <= len(a) <= 4
    assert {len(s.split("+")[0]) for s, _ in train} == {1, 2, 3, 4}


WEEK3, MON3 = [w[:3] for w in WEEKDAYS], [m[:3] for m in MONTHS]


def parse_date(src):
    """An independent reading of the documented rules (dates.py), returning a date."""
    words = re.sub(r"(\d)(st|nd|rd|th)\b", r"\1", src.lower()).replace(" of ", " ")
    words = re.split(r"[ ,/.\-]+", words)
    weekday = WEEK3.index(words.pop(0)[:3]) if words[0][:3] in WEEK3 else None
    names = [w for w in words if w.isalpha()]
    numbers = [w for w in words if w.isdigit()]
    assert len(names) + len(numbers) == len(words)

    def full_year(y):
        return int(y) if len(y) == 4 else (1900 if int(y) >= 50 else 2000) + int(y)

    if names:                                   # rule 1: month as a word, year last
        assert len(names) == 1 and len(numbers) == 2
        assert names[0] in MONTHS or names[0] in MON3
        day, month, year = int(numbers[0]), MON3.index(names[0][:3]) + 1, full_year(numbers[1])
    elif len(numbers[0]) == 4:                  # rule 2: year first -> Y M D
        year, month, day = map(int, numbers)
    elif len(numbers[2]) == 4:                  # rule 3: 4-digit year last -> M D Y (US)
        month, day, year = int(numbers[0]), int(numbers[1]), int(numbers[2])
    else:                                       # rule 3: 2-digit year last -> D M Y (EU)
        assert len(numbers[2]) == 2
        day, month, year = int(numbers[0]), int(numbers[1]), full_year(numbers[2])
    date = datetime.date(year, month, day)
    assert weekday is None or weekday == date.weekday(), f"wrong weekday in {src!r}"
    return date


def test_dates_parse_back_to_the_answer(samples):
    task, train, test = samples["dates"]
    for src, tgt in train + test:
        assert parse_date(src).isoformat() == tgt, src
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", tgt)
    assert {src.count("/") for src, _ in train} == {0, 2}       # slashes seen
    assert min(t for _, t in train) < "1960" and max(t for _, t in train) > "2040"


def test_every_date_format_parses_on_tricky_dates():
    tricky = [datetime.date(1950, 1, 1), datetime.date(2049, 12, 31), datetime.date(2007, 6, 5),
              datetime.date(2000, 2, 29), datetime.date(2026, 11, 21), datetime.date(2011, 11, 11),
              datetime.date(1999, 3, 22), datetime.date(2013, 12, 13)]
    for date in tricky:
        for template, _ in DATE_FORMATS:
            assert parse_date(format_date(date, template)) == date, template
    assert format_date(datetime.date(2026, 11, 21), "{weekday}, {month} {d} {yyyy}") == \
        "saturday, november 21 2026"
    assert format_date(datetime.date(2007, 6, 5), "{dd}/{mm}/{yy}") == "05/06/07"


@pytest.mark.parametrize("name", TASKS)
def test_sampling_is_deterministic_by_seed(name):
    task = get_task(name)
    a = task.sample(np.random.default_rng(7), 50, split="test")
    assert a == task.sample(np.random.default_rng(7), 50, split="test")
    assert a != task.sample(np.random.default_rng(8), 50, split="test")


def test_bad_task_arguments():
    with raises_naming(ValueError, "name", "'translate'",
                       "('copy', 'reverse', 'sort', 'addition', 'dates')"):
        get_task("translate")
    task = get_task("copy")
    with raises_naming(ValueError, "split", "('train', 'test')", "'val'"):
        task.sample(np.random.default_rng(0), 3, split="val")
    with raises_naming(ValueError, "n", "-1"):
        task.sample(np.random.default_rng(0), -1)
    with raises_naming(TypeError, "rng", "int"):
        task.sample(0, 3)
    with raises_naming(ValueError, "max_len", "min_len=5", "2"):
        get_task("reverse", min_len=5, max_len=2)
    with raises_naming(ValueError, "max_year", "[1950, 2049]", "2100"):
        get_task("dates", max_year=2100)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'max_len'"):
        get_task("addition", max_len=3)
    # Only "a" and "b" exist and neither is held out: a clear error, not an endless loop.
    tiny = get_task("copy", alphabet="ab", max_len=1)
    with raises_naming(ValueError, "'copy'", "'test'", "0", "1"):
        tiny.sample(np.random.default_rng(0), 1, split="test")
    assert task.sample(np.random.default_rng(0), 0) == []
