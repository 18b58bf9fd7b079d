"""A second blind measurement: does the feedback name the cause of a mistake it was not tuned on?

blind_mistakes_2.py is a fourth set of mistakes, independent of the catalogue
(selftest/mistakes.py), the held-out set (selftest/fresh_mistakes.py) and the first blind
set (blind_mistakes.py): its writer read none of them nor the diagnosis (grading/
diagnose.py, known_slips*.py), only the reference's graded bodies, and fixed each
mistake's cause words, and committed them, before any message was seen. The machinery
is test_blind_feedback.py's: each mistake is swapped into the reference in this process
(test_one_judgement.swapped), graded (scoring.run_part) and checked
(local_check.check_parts on an expected.npz written before any swap); here:

- every mistake fails its own part in the grader and in `check`;
- the rates at which the failed checks' messages name the cause (every group of the
  mistake's `cause` has one of its words in the lower-cased text, check names and
  "Expected: ..." tails left out) are printed, per side, with the mistakes not named and
  what they were told. No rate is asserted unless it was measured at 0.8 or more on
  both sides (see MEASURED).
"""

import json
import os
import warnings

import pytest

from numpy_transformer.course.grading import local_check, scoring
from numpy_transformer.course.selftest.right_bodies import RIGHT, canonical

from blind_mistakes_2 import BLIND
from test_one_judgement import swapped

SECRET = 53
GOAL = 0.8
MEASURED = None             # (grader, check) at the final run; filled in when measured
GRADER, CHECK = 0, 1
# The reader's verdicts where the recorded words miss or falsely match (strictly: only
# where the message plainly says the cause in other words, or plainly does not).
HAND = {}


def body_of(mistake):
    """The right body of the mistake's function with its one edit made."""
    right = RIGHT[mistake.function]
    old, new = canonical(mistake.old), canonical(mistake.new)
    if right.count(old) != 1:                   # a fragment that parses as something else
        old, new = mistake.old, mistake.new
    assert right.count(old) == 1, (mistake.name, old)
    return right.replace(old, new)


@pytest.fixture(scope="module")
def feedback(tmp_path_factory):
    """{name: (grader result, check verdict)} for every mistake of the set."""
    path = tmp_path_factory.mktemp("blind2") / "expected.npz"
    local_check.write_expected(path, [c for checks in scoring.CHECKS.values() for c in checks])
    for part in scoring.PARTS:
        scoring.reference_results(part, SECRET)
    found = {}
    for mistake in BLIND:
        with swapped(mistake.function, body_of(mistake)), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = scoring.run_part(mistake.part, secret=SECRET)
            verdict = local_check.check_parts([mistake.part], path=path)[mistake.part]
        found[mistake.name] = (result, verdict)
    return found


def said(message):
    """A message without the check's own description (its "Expected: ..." tail)."""
    return message.split(". Expected: ")[0]


def grader_text(result):
    return " ".join(said(c.message) for c in result.checks if not c.passed)


def check_text(part, verdict):
    """`check`'s message without the checks' names."""
    text = verdict[1]
    for check in scoring.CHECKS[part]:
        text = text.replace(f"{check.name}:", "|")
    return text


def auto_named(mistake, text):
    text = text.lower()
    return all(any(word in text for word in group) for group in mistake.cause)


def named(mistake, side, text):
    """The recorded words found, or the reader's verdict where HAND overrides them."""
    return HAND.get((mistake.name, side), (auto_named(mistake, text),))[0]


def texts(feedback, mistake):
    result, verdict = feedback[mistake.name]
    return grader_text(result), check_text(mistake.part, verdict)


def rate(feedback, side):
    hits = [m.name for m in BLIND if named(m, side, texts(feedback, m)[side])]
    return hits, [m for m in BLIND if m.name not in hits]


def test_the_second_blind_set_spans_every_part_and_says_its_causes():
    assert len(BLIND) >= 35 and len({m.name for m in BLIND}) == len(BLIND)
    assert {m.part for m in BLIND} == set(scoring.PARTS)
    for mistake in BLIND:
        assert mistake.function in RIGHT, mistake.name
        assert mistake.cause and all(group and all(w == w.lower() for w in group)
                                     for group in mistake.cause), mistake.name
        assert body_of(mistake) != RIGHT[mistake.function], mistake.name
        compile(body_of(mistake).replace("return", "x ="), mistake.name, "exec")
    assert all(side in (GRADER, CHECK) and name in {m.name for m in BLIND}
               for name, side in HAND)


@pytest.mark.slow           # grades and checks every mistake of the set
def test_every_second_blind_mistake_fails_its_part_in_the_grader_and_in_check(feedback):
    full = [m.name for m in BLIND if feedback[m.name][0].points >= feedback[m.name][0].max_points]
    passed = [m.name for m in BLIND if feedback[m.name][1][0] != "fail"]
    assert not full and not passed, {"full marks": full, "check did not fail": passed}


@pytest.mark.slow           # grades and checks every mistake of the set
def test_the_rates_at_which_the_second_set_s_causes_are_named(feedback):
    rates = []
    for side, label in ((GRADER, "grader"), (CHECK, "check")):
        hits, missed = rate(feedback, side)
        rates.append(len(hits) / len(BLIND))
        print(f"\n{label}: {len(hits)} of {len(BLIND)} named")
        for m in missed:
            print(f"  NOT NAMED {m.name} (cause {m.cause}): {texts(feedback, m)[side][:600]}")
    if os.environ.get("BLIND2_DUMP"):         # every message, for reading them by hand
        result = {m.name: {"part": m.part, "cause": m.cause,
                           "points": [feedback[m.name][0].points, feedback[m.name][0].max_points],
                           "check": feedback[m.name][1][0],
                           "named": [named(m, s, texts(feedback, m)[s]) for s in (GRADER, CHECK)],
                           "texts": texts(feedback, m)} for m in BLIND}
        with open(os.environ["BLIND2_DUMP"], "w", encoding="utf-8") as f:
            json.dump({"rates": rates, "mistakes": result}, f, indent=1, ensure_ascii=False)
    if MEASURED is not None and min(MEASURED) >= GOAL:
        assert min(rates) >= GOAL, rates
