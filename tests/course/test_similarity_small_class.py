"""The similarity report in a small class and in a larger one (issue 49, item 6a).

The report leaves out what "more than a share of the class" wrote alike (MOSS's rule: such
code is the problem's). In a class of 7, a share of 20% was 3 students: a copied pair and
one student who wrote the same loops on their own, and discounting what those three shared
hid the pair (0.836, below the 0.9 threshold). Here a class of 7 (the pair, that student
and four others, all bodies of Linear.backward) reports the pair and no honest one; a class
of 20 where most students wrote one scaffold still discounts it (without the discount,
every two of them would be a pair).
"""

import math

import pytest

from numpy_transformer.course.classroom import similarity
from numpy_transformer.course.selftest.right_bodies import RIGHT

pytest.importorskip("copydetect")

LOOPS = '''
x = self.saved_for_backward()
rows = x.reshape(-1, self.in_features)
grads = dy.reshape(-1, self.out_features)
for i in range(rows.shape[0]):
    for j in range(grads.shape[1]):
        self.grads["weight"][:, j] += rows[i] * grads[i, j]
if "bias" in self.params:
    for i in range(grads.shape[0]):
        self.grads["bias"] += grads[i]
dx = xp.zeros_like(rows)
for i in range(rows.shape[0]):
    dx[i] = self.params["weight"] @ grads[i]
return dx.reshape(x.shape)'''
COPIED = '''
inp = self.saved_for_backward()   # kept by forward
a = inp.reshape(-1,
                self.in_features)
g = dy.reshape(-1, self.out_features)
for n in range(a.shape[0]):
    for o in range(g.shape[1]):
        self.grads["weight"][:, o] += a[n] * g[n, o]
if "bias" in self.params:
    self.grads["bias"] += g.sum(axis=0)       # the one line the copier changed

out = xp.zeros_like(a)
for n in range(a.shape[0]):
    out[n] = self.params["weight"] @ g[n]
return out.reshape(inp.shape)'''
SAME_LOOPS = '''
x = self.saved_for_backward()
X = x.reshape(-1, self.in_features)
G = dy.reshape(-1, self.out_features)
for r in range(X.shape[0]):
    self.grads["weight"] += xp.outer(X[r], G[r])
if "bias" in self.params:
    for r in range(G.shape[0]):
        self.grads["bias"] += G[r]
dx = xp.zeros_like(X)
for r in range(X.shape[0]):
    dx[r] = self.params["weight"] @ G[r]
return dx.reshape(x.shape)'''
FLAT = '''
x = self.saved_for_backward()
flat_x = x.reshape(-1, x.shape[-1])
flat_dy = dy.reshape(-1, dy.shape[-1])
self.grads["weight"] += flat_x.T @ flat_dy
if "bias" in self.params:
    self.grads["bias"] += flat_dy.sum(axis=0)
return (flat_dy @ self.params["weight"].T).reshape(x.shape)'''
EINSUM = '''
x = self.saved_for_backward()
self.grads["weight"] += xp.einsum("...i,...o->io", x, dy)
if "bias" in self.params:
    self.grads["bias"] += dy.reshape(-1, dy.shape[-1]).sum(axis=0)
return xp.einsum("...o,io->...i", dy, self.params["weight"])'''
TENSORDOT = '''
x = self.saved_for_backward()
lead = tuple(range(x.ndim - 1))
self.grads["weight"] += xp.tensordot(x, dy, axes=(lead, lead))
if "bias" in self.params:
    self.grads["bias"] += dy.sum(axis=lead)
return xp.tensordot(dy, self.params["weight"], axes=([-1], [1]))'''

CLASS_OF_7 = {"ada": LOOPS, "bob": COPIED, "cy": SAME_LOOPS, "dee": FLAT, "eve": EINSUM,
              "fay": TENSORDOT, "gus": RIGHT["Linear.backward"]}


def reported(solutions):
    """{pair of names: similarity} of every pair the report shows, and every pair's score."""
    pairs = similarity.scored_pairs({name: {"linear": text} for name, text in solutions.items()},
                                    ["linear"])
    scores = {tuple(p["students"]): p["similarity"] for p in pairs}
    shown = {tuple(p["students"]) for p in pairs if p["similarity"] >= similarity.THRESHOLD
             and p["shared_tokens"] >= similarity.MIN_SHARED}
    return shown, scores


def test_a_copied_pair_in_a_class_of_7_is_reported_and_no_honest_pair_is():
    shown, scores = reported(CLASS_OF_7)
    assert shown == {("ada", "bob")}
    assert scores[("ada", "bob")] >= similarity.THRESHOLD
    assert scores[("ada", "cy")] < similarity.THRESHOLD             # the same loops, not a copy


def test_the_pairs_score_does_not_depend_on_who_else_wrote_loops():
    """No discount in a small class: the pair scores the same with and without cy."""
    _, scores = reported(CLASS_OF_7)
    _, without = reported({n: t for n, t in CLASS_OF_7.items() if n != "cy"})
    assert scores[("ada", "bob")] == without[("ada", "bob")]


def test_the_old_share_hid_the_pair(monkeypatch):
    """What this class caught: with more than 20% of 7 (3 students) counted as the
    problem's, the loops that ada, bob and cy share were discounted and the pair fell
    below the threshold."""
    monkeypatch.setattr(similarity, "common_count", lambda n: max(2, math.ceil(0.2 * n)))
    shown, scores = reported(CLASS_OF_7)
    assert ("ada", "bob") not in shown and scores[("ada", "bob")] < similarity.THRESHOLD


def test_how_many_may_share_grows_with_the_class():
    assert [similarity.common_count(n) for n in (2, 7, 9)] == [2, 7, 9]       # no discount
    assert similarity.common_count(10) == similarity.MIN_COMMON >= 5
    assert similarity.common_count(20) == 5 and similarity.common_count(100) == 20


SCAFFOLD = '''
x = self.saved_for_backward()
X = x.reshape(-1, self.in_features)
G = dy.reshape(-1, self.out_features)
for r in range(X.shape[0]):
    self.grads["weight"] += xp.outer(X[r], G[r])
if "bias" in self.params:
    for r in range(G.shape[0]):
        self.grads["bias"] += G[r]
'''


def class_of_20():
    """ada and bob (the copied pair), four other forms, and 14 students who wrote one
    scaffold (as a lesson's loop might teach it) and the reference's last line."""
    students = {"ada": LOOPS, "bob": COPIED, "dee": FLAT, "eve": EINSUM,
                "hal": SCAFFOLD + 'return xp.einsum("no,io->ni", G, self.params["weight"])'
                                  '.reshape(x.shape)',
                "ivy": SCAFFOLD + 'return xp.tensordot(dy, self.params["weight"], '
                                  'axes=([-1], [1]))'}
    students |= {f"s{i:02d}": SCAFFOLD + 'return (G @ self.params["weight"].T).reshape(x.shape)'
                 for i in range(14)}
    assert len(students) == 20
    return students


def test_a_class_of_20_still_discounts_what_most_of_it_wrote(monkeypatch):
    shown, _ = reported(class_of_20())
    assert shown == {("ada", "bob")}
    monkeypatch.setattr(similarity, "common_count", lambda n: n)      # no discount
    shown, _ = reported(class_of_20())
    assert ("ada", "bob") in shown and len(shown) > 100               # every two scaffolds
