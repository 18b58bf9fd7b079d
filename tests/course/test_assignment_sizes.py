"""Every check's sizes keep the causes a diagnosis names apart (issue 37, section 5).

A wrong array that is the expected one times a constant is named by the factor
(diagnose.primary_factors, tried first: 1/B, N, sqrt(d), 1/(1-p), 2, ...; the secondary
ones, 1/d, (1-p)^2, the incoming gradient's rows, only where no primary one fits, may
coincide with a primary one: the primary is named then). Where two of those
factors are equal for a check's sizes (B = 2 is also "2"; d = 4 makes sqrt(d) = 2;
p = 0.75 makes 1/(1 - p) = 4 = N for 4 rows), the student is offered two or three
causes for one mistake. So for every compared array of every task of every check,
the named factors of its shape and of its task's arguments are pairwise distinct.
"""

import itertools

import numpy as np
import pytest

from numpy_transformer.course.grading.diagnose import primary_factors
from numpy_transformer.course.grading.scoring import CHECKS, reference_results


def coinciding(shape, args):
    """[(name, name)] of the named factors of `shape` and `args` that are equal."""
    found = primary_factors(shape, args)
    return [(n1, n2) for (v1, n1, _), (v2, n2, _) in itertools.combinations(found, 2)
            if abs(v1 - v2) <= 1e-9 * max(abs(v1), abs(v2))]


def test_a_collision_is_seen():
    """The test's own check: the shapes of the issue's examples are reported."""
    assert ("B with B = 2 (the batch, the first axis)", "2") in coinciding((2, 3, 5), {})
    assert coinciding((2, 3, 4), {})                     # sqrt(4) = 2 = B
    assert coinciding((4, 6), {"p": 0.75})               # 1/(1 - p) = 4 = N
    assert not coinciding((3, 4, 5), {"p": 0.3})


@pytest.mark.parametrize("part", sorted(CHECKS))
def test_no_two_named_factors_of_a_check_are_equal(part):
    ref = reference_results(part, 0)
    for i, c in enumerate(CHECKS[part]):
        for j, spec in enumerate(c.tasks):
            for name, array in ref.expected[f"c{i}t{j}"].items():
                if name.startswith("term.") or np.asarray(array).dtype == bool:
                    continue
                same = coinciding(np.shape(array), spec["args"])
                assert not same, (c.name, j, name, np.shape(array), same)
