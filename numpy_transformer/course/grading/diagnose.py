"""What a wrong array looks like, said without giving the answer (scoring.py uses it).

When a student's array disagrees with the reference's, `diagnose` tests common
signatures of a mistake against the expected array and says what it sees:

    a constant factor   have = c want, c named by what it is and its size, never as a
                        number: first (primary_factors) 1/B, B, 1/N, N, sqrt(d), 1/sqrt(d)
                        (B the first axis of an array of 3 axes or more, N its rows, d its
                        last axis), a float argument of the task, one inside a dict too
                        (p, dloss, lr, ...: c, 1/c, 1-c, 1/(1-c)), 2, 1/2, -1 (every
                        check's sizes keep these apart: test_assignment_sizes.py); then
                        (secondary_factors) 1/d, d, (1-c)^2, 1/(1-c)^2 and the incoming
                        gradient's rows (a bias gradient's 1/N): "exactly 1/N with N = 12
                        rows times". A factor no name fits is said to fit none: a number
                        would only invite fitting it
    a transpose         have = want with its last two axes swapped
    too few axes summed have has more axes; summed over the extra leading ones it agrees
    assigned, not added have = want - what the gradient held before (prefilled checks)
    a mask not applied  have agrees (up to a constant factor) except where want is 0
    a fresh draw        a dropout stand-in counted more than one mask drawn
    a term of a sum     want - have (or have - want) is one of the check's named terms
                        (outputs "term.<label>" of its scenario, never compared); a term
                        missing is named before a term alone; a term with its sign flipped,
                        or off by a named factor, the rest agreeing
    the chain rule      have times the incoming gradient is want: it was never multiplied in
    added, off by c     with a prefilled gradient, what was added is c times what belongs
    a known slip        have is the array a named slip gives ("term.<output>|<cause>",
                        from known_slips.py in the reference's runs: another GELU
                        form's derivative, a bias correction left out, a child's backward
                        skipped, ...): "is exactly what you get when <cause>"
    an input passed on  have is an input array of the task (the incoming gradient, dV, x2);
                        where the task holds a dropout (an argument or a stand-in named for
                        it), its backward is named first among the steps that may be skipped
    dropout skipped     have is the incoming gradient and differs from want only where want
                        is 0 and by one constant factor elsewhere: a mask and a scale both
                        missing, dropout's backward
    a child skipped     a child's parameter gradient is all zero
    a wrong shape       have's shape is want's with its last two axes swapped (a transposed
                        operand), or another input's shape (that input's gradient given)
    not finite          (`not_finite`, judgement.py) a known slip whose array holds nan at the
                        same entries (Adam's second moment not squared), else what commonly
                        makes one: a square root of a negative, a division by zero
    by kind             relations that hold whatever the part: want's values in other places
                        (a reshape for a transpose); one factor per row (a power of the input
                        rows' standard deviation, when it is one) or per column (a parameter);
                        an extra term equal to a forward value ("value.<name>": an input, the
                        table); another output's expected gradient ("other.<name>") given or
                        added in; the forward's output where its derivative belongs; only the
                        positions a mask leaves out (ignore_index's targets, a boolean mask);
                        minus a named factor; the model's sizes (d_model, heads, d_k) and the
                        targets counted as factors; a table right at position 0 only; a
                        gradient of a child's output width (its backward skipped)

Never the expected formula: only how the two arrays relate, and the slip's name in words.
"" when nothing fits. `error_hint` adds to a worker's error message (steps.located
names the student's line, the shapes and the array being computed).
steps.mismatch names a shape error's kind in the worker's message itself (a matrix
product whose sides would fit transposed or swapped, two shapes one the other's transpose,
two alike but for one axis' length), so the grader and `check` both say it.
`import_failure` turns a worker's "SyntaxError: ... (softmax.py, line 49)" into one
clear message: "layers/softmax.py does not import: SyntaxError at line 49".
"""

import ast
import math
import re
from pathlib import Path

import numpy as np

PACKAGE = Path(__file__).resolve().parents[2]      # the reference's numpy_transformer/
NOT_PARSED = re.compile(r"(?P<kind>SyntaxError|IndentationError|TabError): .*"
                        r"\((?P<file>[\w.]+\.py), line (?P<line>\d+)\)")
CLOSE = 1e-9        # relative agreement that counts as "exactly" for a signature


def near(have, want):
    scale = max(float(np.abs(want).max(initial=0.0)), 1e-300)
    return have.shape == want.shape and float(np.abs(have - want).max(initial=0.0)) <= CLOSE * scale


# What a float argument of a task is, in words (a factor of it is named with these).
SCHEDULE = {"lrs": "lr"}         # a list argument: each of its values by its one name
ARGUMENT_WORDS = {"p": "the drop probability", "lr": "the learning rate",
                  "dloss": "the loss's incoming gradient", "smoothing": "the label smoothing",
                  "weight_decay": "the weight decay", "eps": "the epsilon"}


def float_arguments(args, prefix=""):
    """[(key, value)] of the task's float arguments, those inside a dict argument (Adam's
    `hyper`) included under their own key."""
    found = []
    for key, a in sorted((args or {}).items()):
        if isinstance(a, dict):
            found += float_arguments(a)
        elif isinstance(a, float) and 0.0 < abs(a) and a != 1.0:
            found.append((key, a))
        elif key in SCHEDULE and isinstance(a, (list, tuple)):
            found += [(SCHEDULE[key], e) for e in a if isinstance(e, float) and 0.0 < abs(e)
                      and e != 1.0]
    return found


def scalar_factors(args, secondary=False):
    """[(value, name, question)] from the task's float arguments (p, dloss, lr, ...): the
    argument, its inverse, one minus it and that inverse; `secondary`: the squares of the
    last two (a scale applied twice)."""
    named = []
    for key, a in float_arguments(args):
        words = ARGUMENT_WORDS.get(key, f"the argument {key}")
        say = lambda form: f"{form} with {key} = {a:g} ({words})"      # noqa: E731
        question = f"is a factor of {key}, {words}, missing, or applied once too often?"
        if secondary:
            named += [((1 - a) ** 2, say(f"(1-{key})^2"), question + " (twice?)"),
                      (1 / (1 - a) ** 2, say(f"1/(1-{key})^2"), question + " (twice?)")
                      ] if 1e-6 < a < 1.0 else []
            continue
        named += [(a, say(key), question), (1 / a, say(f"1/{key}"), question)]
        if 1e-6 < a < 1.0:
            named += [(1 - a, say(f"(1-{key})"), question),
                      (1 / (1 - a), say(f"1/(1-{key})"), question)]
    return named


def size_factors(shape):
    """[(value, name, question)] of the sizes of an array of `shape`: its batch, its rows,
    the square root of its last axis."""
    named = []
    if len(shape) >= 3:         # a batch axis first (a 2-D array's first axis is its rows)
        B = shape[0]
        named += [(1 / B, f"1/B with B = {B} (the batch, the first axis)",
                   "did you average over the batch?"),
                  (B, f"B with B = {B} (the batch, the first axis)",
                   "is a division by the batch missing?")]
    if len(shape) >= 2:
        named += row_factors(shape)
    if len(shape) >= 1 and shape[-1] > 1:
        d = shape[-1]
        named += [(math.sqrt(d), f"sqrt(d) with d = {d} (the last axis)",
                   "is a scale of the forward missing from the backward, or applied twice?"),
                  (1 / math.sqrt(d), f"1/sqrt(d) with d = {d} (the last axis)",
                   "is a scale applied twice, or one missing?")]
    return named


def row_factors(shape, whose=""):
    N = int(np.prod(shape[:-1]))
    return [(1 / N, f"1/N with N = {N} rows{whose}", "an average over the rows where a sum "
             "belongs, or a division by the row count once too often?"),
            (N, f"N with N = {N} rows{whose}", "is a division by the row count missing?")]


def counted_targets(inputs, args):
    """`args` with "counted": the number of targets not ignored (not ignore_index), where the
    task has targets and an ignore_index: an average over them is a factor too."""
    args = dict(args or {})
    targets, ignore = inputs.get("targets"), args.get("ignore_index")
    if targets is not None and ignore is not None:
        args["counted"] = int(np.sum(np.asarray(targets) != ignore))
    return args


SIZE_WORDS = {"d_model": "the model width", "heads": "the number of heads",
              "counted": "the number of targets counted, those not ignored",
              "d_ff": "the feed-forward width", "latent": "the latent width",
              "vocab": "the vocabulary size", "max_len": "the table's length"}


def model_factors(args):
    """[(value, name, question)] of the model's sizes among the task's integer arguments
    (d_model, heads, ...), and the head width d_k = d_model / heads: each size, its
    inverse, their square roots (a scale of the forward missing, doubled or inverted)."""
    sizes = {key: a for key, a in sorted((args or {}).items())
             if key in SIZE_WORDS and isinstance(a, int) and not isinstance(a, bool) and a > 1}
    if "d_model" in sizes and "heads" in sizes and sizes["d_model"] % sizes["heads"] == 0:
        sizes["d_k"] = sizes["d_model"] // sizes["heads"]
    named = []
    for key, a in sizes.items():
        words = SIZE_WORDS.get(key, "the head width, d_model / heads")
        say = lambda form: f"{form} with {key} = {a} ({words})"      # noqa: E731
        question = (f"is a scale by {key}, or by its square root, missing, applied twice, or "
                    "multiplied where it divides?")
        named += [(math.sqrt(a), say(f"sqrt({key})"), question),
                  (1 / math.sqrt(a), say(f"1/sqrt({key})"), question),
                  (a, say(key), question), (1 / a, say(f"1/{key}"), question)]
    return named


def primary_factors(shape, args=None):
    """[(value, name, question)] of the factors tried first for an array of `shape`: its
    own sizes, the task's float arguments, 2, 1/2 and -1 (a factor of 1 is no mistake).
    Every check's sizes keep these values apart (test_assignment_sizes.py): the one named
    is the cause."""
    named = size_factors(shape) + scalar_factors(args) + [
        (2.0, "2", "is a term counted twice?"), (0.5, "1/2", "is a term halved?"),
        (-1.0, "-1 (the opposite sign)", "is a sign flipped?")]
    return [f for f in named if abs(f[0] - 1.0) > 1e-9]


def secondary_factors(shape, args=None, sizes=()):
    """[(value, name, question)] of the factors tried when no primary one fits: the last
    axis itself (an average over it), the squares of the arguments' scales (applied twice)
    and the rows of the incoming gradient (`sizes`: {input: shape}; a bias gradient has no
    rows of its own). The checks' sizes may make one equal a primary factor (6 rows of 6
    columns): the primary is named then."""
    named = []
    if len(shape) >= 1 and shape[-1] > 1:
        d = shape[-1]
        named += [(1 / d, f"1/d with d = {d} (the last axis)",
                   "an average over the last axis where a sum belongs, or a scale by sqrt(d) "
                   "divided by where it multiplies (1/sqrt(d) twice)?"),
                  (d, f"d with d = {d} (the last axis)",
                   "a sum over the last axis where an average belongs, or a scale by sqrt(d) "
                   "applied twice (or multiplied where it divides)?")]
    named += model_factors(args)
    named += scalar_factors(args, secondary=True)
    if len(dict(sizes).get("dout", ())) >= 2:
        named += row_factors(dict(sizes)["dout"], " of the incoming gradient")
    return [f for f in named if abs(f[0] - 1.0) > 1e-9]


def named_factors(shape, args=None, sizes=()):
    """The primary factors, then the secondary ones, each value once (its first name)."""
    kept = []
    for f in primary_factors(shape, args) + secondary_factors(shape, args, sizes):
        if not any(abs(f[0] - k[0]) <= 1e-9 * abs(k[0]) for k in kept):
            kept.append(f)
    return kept


def factor_of(have, want):
    """c with have = c want (c != 1), or None."""
    norm = float(np.sum(want * want))
    if have.shape != want.shape or norm == 0.0:
        return None
    c = float(np.sum(have * want)) / norm
    if abs(c - 1.0) <= CLOSE or not near(have, c * want):
        return None
    return c


def factor_name(c, shape, args=None, sizes=()):
    """(name, question) of the first named factor equal to `c`, or to -c (that factor and a
    sign flipped), or None."""
    factors = named_factors(shape, args, sizes)
    for value, name, question in factors:
        if abs(c - value) <= 1e-7 * abs(value):
            return name, question
    for value, name, question in factors:
        if value != -1.0 and abs(c + value) <= 1e-7 * abs(value):
            return f"minus {name}", f"{question} And a sign is flipped (or a complement taken)"
    return None


UNNAMED_FACTOR = ("a constant factor that matches no size or setting of this task, no row "
                  "or batch count, axis, probability or rate it was given; look for a scale "
                  "applied where none belongs, or one left out")


def factor_message(what, c, shape, args=None, sizes=()):
    """The message of an array that is `c` times the expected one: the factor by its name
    and size ("1/N with N = 12 rows"), never as a bare number: a factor that fits no name
    is said to fit none (a number would only invite fitting it)."""
    found = factor_name(c, shape, args, sizes)
    if found:
        name, question = found
        return f"your {what} is exactly {name} times the expected one: {question}"
    if what.startswith("update."):      # an optimizer's step: its per-step scales
        return (f"your {what} is the expected one times {UNNAMED_FACTOR}; in an optimizer's "
                "step, a factor that changes from step to step comes from a bias correction "
                "(its step count, its rate) or a moment's rate")
    return f"your {what} is the expected one times {UNNAMED_FACTOR}"


def masked(have, want):
    """How `have` relates to `want` away from want's zeros, when only the zeros differ."""
    zero = want == 0
    if not zero.any() or zero.all() or have.shape != want.shape or not np.any(have[zero]):
        return None
    rest_have, rest_want = have[~zero], want[~zero]
    return 1.0 if near(rest_have, rest_want) else factor_of(rest_have, rest_want)


def fewer_axes_summed(have, want):
    extra = have.ndim - want.ndim
    if extra <= 0 or have.shape[extra:] != want.shape:
        return False
    return near(have.sum(axis=tuple(range(extra))), want)


def assigned(have, want, before):
    """Every entry is the expected one, or the expected minus what it held before (some)."""
    if before is None or np.shape(before) != want.shape:
        return False
    scale = CLOSE * max(float(np.abs(want).max(initial=0.0)), 1e-300)
    same, overwritten = np.abs(have - want) <= scale, np.abs(have - want + before) <= scale
    return bool(np.all(same | overwritten) and np.any(overwritten & ~same))


def sum_terms(want, inputs):
    """[(label, term)] of the check's named terms ("term.<label>") that fit `want`."""
    return [(key[5:], term) for key, term in inputs.items()
            if key.startswith("term.") and "|" not in key and np.shape(term) == want.shape
            and np.any(term)]


def missing_term(have, want, inputs, factor=None):
    """"lacks ..."/"has ... too many"/"has its term ..." when want - have is a named term
    of the check, or a multiple of one (inputs "term.<label>", from the reference's run),
    else "". A term missing is named before a term alone (in a sum of two, the one is the
    other); `factor(c)` names a term's factor c ("its sign flipped" for -1)."""
    terms = sum_terms(want, inputs)
    for label, term in terms:
        if near(want - have, term):
            return f"lacks exactly one term of its sum, {label}: is it left out?"
    for label, term in terms:
        if near(have - want, term):
            return f"has exactly one term too many, {label}: is it added twice?"
    for label, term in terms:
        if near(have, term):
            return (f"is one term of its sum only, {label}: are the others left out, "
                    "or overwritten (= where += was meant)?")
    for label, term in terms:           # have = want + (c - 1) term: that term c times
        norm = float(np.sum(term * term))
        c = 1.0 + float(np.sum((have - want) * term)) / norm
        if abs(c - 1.0) > 1e-6 and near(have - want, (c - 1.0) * term):
            if abs(c + 1.0) <= 1e-7:
                return (f"has one term of its sum, {label}, with its sign flipped (the rest "
                        "agrees): is it subtracted where it is added, or added where it is "
                        "subtracted?")
            named = factor(c) if factor else None
            scaled = (f"exactly {named[0]} times what it should be: {named[1]}" if named
                      else f"off by {UNNAMED_FACTOR}")
            return f"has one term of its sum, {label}, {scaled} (the rest agrees)"
    return ""


def chain_rule_missing(have, want, inputs):
    """Whether `have` times the incoming gradient (input "dout") is `want`: the local
    derivative returned, the incoming gradient never multiplied in."""
    dout = inputs.get("dout")
    return (dout is not None and np.shape(dout) == have.shape and np.any(want)
            and not near(have, want) and near(have * np.asarray(dout, dtype=float), want))


def near_finite(have, want):
    """`near`, where both may hold nan or inf: the same entries not finite (the same inf),
    the finite ones near."""
    have, want = np.asarray(have, dtype=float), np.asarray(want, dtype=float)
    if have.shape != want.shape:
        return False
    bad = ~np.isfinite(want)
    if not np.array_equal(bad, ~np.isfinite(have)) or not np.array_equal(
            np.isnan(have), np.isnan(want)) or np.any(have[bad & ~np.isnan(have)]
                                                     != want[bad & ~np.isnan(want)]):
        return False
    return near(have[~bad], want[~bad])


def known_slip(name, have, inputs):
    """The causes of the known slips of output `name` that `have` equals (inputs
    "term.<name>|<cause>", from known_slips.py in the grader's reference run), joined by
    ", or when " (two slips may give one array: a child skipped, or run out of order),
    else ""; a slip's array that is not finite is matched entry by entry (nan where nan)."""
    causes = []
    for key, form in inputs.items():
        output, _, cause = key[5:].partition("|")
        if key.startswith("term.") and cause and output == name and cause not in causes \
                and near_finite(have, form):
            causes.append(cause)
    return ", or when ".join(causes[:3])


NOT_FINITE = ("what commonly makes one: a square root of a negative number (a quantity that "
              "can be negative, a moment or a variance, under a square root?), a division by "
              "zero (a denominator that can be zero: a sum, a count, a norm?), or a log or "
              "an exponential out of range")


def not_finite(what, name, want, have, inputs=None):
    """Why an array holds nan or inf where the expected one is finite: the known slip that
    gives it, else what commonly makes one (never the formula)."""
    what = what.removeprefix("the ")
    slip = known_slip(name, have, inputs or {})
    if slip:
        return f"your {what} is exactly what you get when {slip}"
    if np.all(np.isfinite(want)):
        return f"your {what} holds nan or inf where the expected one is finite: {NOT_FINITE}"
    return ""


def passed_through(have, inputs):
    """The name of an input array (not a parameter, a prefilled gradient or a term) that
    `have` equals, or ""."""
    for key, given in inputs.items():
        if "." not in key and np.shape(given) == have.shape and np.any(given) \
                and near(have, np.asarray(given, dtype=float)):
            return key
    return ""


def zero_message(what, name):
    """The message of an array that is all zero where the expected one is not."""
    child = name[5:].rpartition(".")[0] if name.startswith("grad.") else ""
    if child:
        return (f"your {what} is zero where the expected one is not: is the backward of "
                f"{child} skipped, or was the result rebound to a new array instead of "
                "written in place?")
    return (f"your {what} is zero where the expected one is not: is a step missing, or "
            "was the result rebound to a new array instead of written in place?")


def error_hint(message):
    """What a worker's error message suggests, or "": a += of an array with more axes than
    the gradient it is added into (NumPy's own message; steps.located's says it already)."""
    if "a sum over too few axes?" in message:
        return ""
    found = re.search(r"an array of shape (\(.*?\)) added into one of shape (\(.*?\))", message)
    if found is not None:
        added, into = found[1], found[2]
    else:
        found = re.search(r"output operand with shape (\(.*?\)) doesn't match the broadcast "
                          r"shape (\(.*?\))", message)
        if found is None:
            return ""
        added, into = found[2], found[1]
        return (f"an array of shape {added} added into a gradient of shape {into}: a sum "
                "over too few axes?")
    try:
        more = len(ast.literal_eval(added)) > len(ast.literal_eval(into))
    except (ValueError, SyntaxError, TypeError):
        more = False
    return "a sum over too few axes?" if more else ""


def shape_signature(what, name, want, have, inputs):
    """What a gradient of the wrong shape suggests, by its shape alone: the expected shape
    with its last two axes swapped (a transposed operand), or the shape of another input
    of the task, not this one's (the gradient of that input)."""
    if have.ndim >= 2 and have.shape == want.swapaxes(-1, -2).shape:
        return (f"your {what} has the expected shape with its last two axes swapped: a "
                "transposed operand, or the operands of a product in the other order?")
    if not name.startswith(("dx.", "grad.")):
        return ""
    children = [key[6:].rpartition(".")[0] for key, w in inputs.items()
                if key.startswith("param.") and key.endswith(".weight") and np.ndim(w) == 2
                and np.shape(w)[0] == want.shape[-1] and np.shape(w)[1] == have.shape[-1]
                and have.shape[:-1] == want.shape[:-1]]
    if children:
        return (f"your {what} has the width of {children[0]}'s output ({have.shape[-1]}), not "
                f"of its input ({want.shape[-1]}): the gradient stops before {children[0]}'s "
                "backward (is it skipped, the gradient passed on as it came?)")
    others = [key for key, given in inputs.items() if "." not in key and key != "dout"
              and np.ndim(given) >= 1 and np.shape(given) == have.shape]
    if others:
        return (f"your {what} has the shape of the input {others[0]}, not this one's: the "
                f"gradient of another input ({others[0]}'s?) given, or added in, here?")
    return ""


def input_sizes(inputs):
    """{name: shape} of the task's input arrays (not its parameters, prefilled gradients
    or terms), whose sizes name factors too (the rows of dout for a bias gradient)."""
    return {key: np.shape(a) for key, a in inputs.items()
            if "." not in key and np.ndim(a) >= 1 and np.size(a) > 1}


def diagnose(what, name, want, have, inputs=None, args=None):
    """A sentence on how `have` (the student's array `name`, called `what`) relates to the
    expected `want`; `inputs`: the task's input arrays ("grad0.<param>": prefilled);
    `args`: the task's arguments (its float ones name factors)."""
    inputs, what = inputs or {}, what.removeprefix("the ")
    if name == "dropout.draws" and have.shape == want.shape and np.all(have > want):
        return ("dropout drew a new mask after forward: reuse the kept one (reapply, backward) "
                "instead of calling forward again?")
    if fewer_axes_summed(have, want):
        return (f"your {what} has shape {have.shape}; summed over its extra leading axes it "
                "agrees: a sum over too few axes?")
    if have.shape != want.shape:
        return shape_signature(what, name, want, have, inputs)
    sizes, args = input_sizes(inputs), counted_targets(inputs, args)
    slip = known_slip(name, have, inputs)
    if slip:
        return f"your {what} is exactly what you get when {slip}"
    term = missing_term(have, want, inputs, lambda c: factor_name(c, want.shape, args, sizes))
    if term:
        return f"your {what} {term}"
    c = factor_of(have, want)
    if c is not None and abs(c) <= CLOSE:
        return zero_message(what, name)
    if c is not None:
        return factor_message(what, c, want.shape, args, sizes)
    if want.ndim >= 2 and near(have, want.swapaxes(-1, -2)):
        return f"your {what} is the transpose of the expected one (its last two axes swapped)"
    if rearranged(have, want):
        return (f"your {what} holds exactly the expected values, in other places: rearranged "
                "(a reshape where a transpose belongs, heads split or merged without moving "
                "their axis, axes in another order?)")
    before = inputs.get("grad0." + name[5:]) if name.startswith("grad.") else None
    if assigned(have, want, before):
        return (f"your {what} is the expected one minus what it held before: assigned (=) "
                "instead of accumulated (+=)?")
    added = added_off(what, want, have, before, args, sizes)
    if added:
        return added
    if chain_rule_missing(have, want, inputs):
        return (f"your {what}, times the incoming gradient, would agree: the incoming "
                "gradient is not multiplied in (the chain rule's last step missing?)")
    return where_it_differs(what, name, want, have, inputs, args, sizes)


def where_it_differs(what, name, want, have, inputs, args, sizes):
    """`diagnose`'s second half: no factor, no known slip, no shape error; what is left is
    where or how the values differ (masked positions, another output, a forward value, per
    row or per column), else a step skipped where the array passed through."""
    given = passed_through(have, inputs)
    source = "the incoming gradient" if given == "dout" else f"the array {given} it was given"
    dropout = has_dropout(name, inputs, args)
    m = masked(have, want)
    if m is not None:
        found = None if m == 1.0 else factor_name(m, want.shape, args, sizes)
        scale = ("" if m == 1.0 else f" (and exactly {found[0]} times the expected one "
                 "elsewhere)" if found else f" (and off by {UNNAMED_FACTOR} elsewhere)")
        passed = f"; it is {source}, passed on unchanged" if given else ""
        if m != 1.0 and given:      # both a mask and a scale missing: dropout's signature
            return (f"your {what} differs only where the expected one is 0, and elsewhere by "
                    f"one constant factor{passed}: is dropout's backward skipped (its mask "
                    "and its scale both missing)?")
        where = masked_positions(have, want, inputs, args)
        if where:
            return (f"your {what} differs only at {where}, where the expected one is 0"
                    f"{scale}: are those positions left out (zeroed), as the forward leaves "
                    f"them out?{passed}")
        if dropout:
            return (f"your {what} is not zero at the units dropout dropped, where the expected "
                    f"one is 0{scale}: the gradient flows through the dropped units (the kept "
                    "mask not applied in backward, the dropped and kept units swapped, or "
                    f"dropout's backward skipped?){passed}")
        return (f"your {what} differs only where the expected one is 0{scale}: "
                f"a mask not applied?{passed}")
    if output_for_derivative(have, want, inputs):
        return (f"your {what} is the forward's output (times the incoming gradient) where its "
                "derivative belongs: the function used where its derivative is wanted?")
    other = another_output(name, have, want, inputs)
    if other:
        return f"your {what} {other}"
    if name == "table" and want.ndim == 2 and want.shape[0] > 1 and near(have[0], want[0]) \
            and near(have[:, 0], want[:, 0]):
        return (f"your {what} agrees at position 0 and in its first column, not elsewhere: "
                "the angles' frequencies differ (their base, the exponent's scale or its sign, "
                "how the column index enters it?)")
    extra = forward_value_added(have, want, inputs)
    if extra:
        return (f"your {what} has one extra term, exactly {extra}: a value of the forward "
                "added into the gradient (a constant of the forward, one that does not depend "
                "on the input, has no gradient: its backward passes the gradient on)?")
    per_row = row_scale(have, want, inputs)
    if per_row:
        return f"your {what} {per_row}"
    per_column = column_scale(have, want, inputs)
    if per_column:
        return f"your {what} {per_column}"
    if given:
        steps = "dropout's backward, a child's backward" if dropout else "a child's backward"
        return (f"your {what} is {source}, passed on unchanged: is a step ({steps}, a "
                "scale, a mask) skipped?")
    return ""


def added_off(what, want, have, before, args, sizes):
    """The sentence for a prefilled gradient (`before`) to which the student added the
    expected amount times a constant factor, or ""."""
    if before is None or np.shape(before) != want.shape:
        return ""
    c = factor_of(have - before, want - before)     # what was added, off by a factor
    if c is None or abs(c) <= CLOSE:
        return ""
    found = factor_name(c, want.shape, args, sizes)
    scaled = f"exactly {found[0]} times" if found else f"off by {UNNAMED_FACTOR} from"
    return (f"what you added into your {what} (it held a gradient before) is {scaled} "
            f"what the expected one adds" + (f": {found[1]}" if found else ""))


MASK_DROPOUT = " (dropout's backward skipped?)"


def rearranged(have, want):
    """Whether `have` holds want's values, each once, in other places (not `want` itself)."""
    if have.shape != want.shape or want.size < 4 or near(have, want):
        return False
    return near(np.sort(have, axis=None), np.sort(want, axis=None)) and len(
        np.unique(np.round(want, 12))) > want.size // 2


def masked_positions(have, want, inputs, args):
    """The positions a mask of the task leaves out, in words, when `have` differs from
    `want` only there: the targets equal to ignore_index (padding), or the entries a boolean
    mask input marks; else ""."""
    args, wrong = args or {}, np.abs(have - want) > CLOSE * max(float(np.abs(want).max()), 1e-300)
    targets = inputs.get("targets")
    ignore = args.get("ignore_index")
    if ignore is not None and targets is not None and np.shape(targets) == want.shape[:-1]:
        ignored = np.asarray(targets) == ignore
        if ignored.any() and not np.any(wrong & ~ignored[..., None]):
            return (f"the ignored positions (those whose target is ignore_index = {ignore}, "
                    "padding)")
    mask = inputs.get("mask")
    if mask is not None and np.asarray(mask).dtype == bool:
        try:
            marked = np.broadcast_to(np.asarray(mask), want.shape)
        except ValueError:
            return ""
        for hidden, words in ((marked, "the positions the mask marks"),
                              (~marked, "the positions the mask does not mark")):
            if hidden.any() and not np.any(wrong & ~hidden):
                return f"{words} (the masked positions)"
    return ""


def forward_value_added(have, want, inputs):
    """"<the input x / the forward's table ...>" (or "minus ...") when have - want is one of
    the task's input arrays or of the forward's values ("value.<name>", broadcast over the
    leading axes; a table's first rows), else ""."""
    diff = have - want
    if not np.any(diff):
        return ""
    for key, given in inputs.items():
        if key.startswith(("term.", "grad0.", "param.", "other.")) or key == "dout":
            continue
        a = np.asarray(given)
        if a.dtype.kind != "f" or a.ndim == 0 or not np.any(a):
            continue
        if a.ndim == 2 and diff.ndim >= 2 and a.shape[-1] == diff.shape[-1] \
                and a.shape[0] >= diff.shape[-2] and a.shape != diff.shape:
            a = a[: diff.shape[-2]]
        try:
            a = np.broadcast_to(a, diff.shape)
        except ValueError:
            continue
        words = (f"the forward's {key[6:]}" if key.startswith("value.") else f"the input {key}")
        for sign, said in ((1.0, words), (-1.0, f"minus {words}")):
            if near(diff, sign * a):
                return said
    return ""


def output_for_derivative(have, want, inputs):
    """Whether `have` is the forward's output, or it times the incoming gradient, of the same
    shape as `want` (the function where its derivative belongs)."""
    out, dout = inputs.get("value.out"), inputs.get("dout")
    if out is None or np.shape(out) != want.shape or not np.any(out):
        return False
    out = np.asarray(out, dtype=float)
    return near(have, out) or (dout is not None and np.shape(dout) == want.shape
                               and near(have, out * np.asarray(dout, dtype=float)))


def output_words(key):
    """How a message calls another output array of the task ("other.<name>")."""
    name = key[6:]
    if name.startswith("dx."):
        return f"the gradient of input {int(name[3:]) + 1}"
    return f"the gradient of {name[5:]}"


def another_output(name, have, want, inputs):
    """"is exactly the expected <other output> ..." when `have` is another output of the
    task (the outputs swapped, one returned for the other), or `want` plus or minus one
    (that output's part added in too); else ""."""
    for key, other in inputs.items():
        if not key.startswith("other.") or key[6:] == name or np.shape(other) != want.shape \
                or not np.any(other) or near(other, want):
            continue
        said = output_words(key)
        if near(have, other):
            expected = said.replace("the ", "the expected ", 1)
            return (f"is exactly {expected}: the two swapped, or one returned (or computed) "
                    "for the other?")
        for sign, how in ((1.0, "added in"), (-1.0, "subtracted")):
            if near(have - want, sign * other):
                return (f"is the expected one with {said} {how} too: a gradient that belongs "
                        "to the other array added into this one?")
    return ""


def factor_along(have, want, axis):
    """The factors c, one per column (axis 0: summed over the rows) or per row (axis 1), with
    have = c * want as rows (N, D) of the last axis; None when no such factor fits, or when
    it is the same everywhere (one constant factor, said elsewhere)."""
    if want.ndim < 2 or want.shape[-1] < 2 or have.shape != want.shape:
        return None
    w, h = want.reshape(-1, want.shape[-1]), have.reshape(-1, want.shape[-1])   # (N, D)
    norm = np.sum(w * w, axis=axis)
    if np.any(norm == 0.0):
        return None
    c = np.sum(h * w, axis=axis) / norm                                       # (D,) or (N,)
    fitted = c[None, :] * w if axis == 0 else c[:, None] * w
    if not near(h, fitted) or np.allclose(c, c[0], rtol=1e-9):
        return None
    return c


def column_scale(have, want, inputs):
    """"is off by one factor per column ..." when have is want times a factor that is one
    number per entry of the last axis, not the same for all; named when it is a parameter
    of the task (gamma, ...), its inverse or its square."""
    c = factor_along(have, want, axis=0)
    if c is None:
        return ""
    for key, param in inputs.items():
        if not key.startswith("param.") or np.shape(param) != c.shape or not np.all(param):
            continue
        param = np.asarray(param, dtype=float)
        for form, value in (("", param), ("the inverse of ", 1 / param),
                            ("the square of ", param ** 2)):
            if np.allclose(c, value, rtol=1e-7):
                return (f"is off by one factor per column, exactly {form}the parameter "
                        f"{key[6:]}: is a scale by {key[6:]} applied where none belongs, "
                        "applied twice, or inverted?")
    return ("is off by one factor per column (the same in every row, another along the last "
            "axis): a per-feature scale, such as a parameter, applied where none belongs, "
            "missing, or twice?")


def row_scale(have, want, inputs):
    """"is off by one factor per row ..." when have is want times a factor that is one number
    per row (the same along the last axis) but not the same for every row; the factor named
    when it is a power of the input rows' standard deviation (a normalization's scale)."""
    c = factor_along(have, want, axis=1)
    if c is None:
        return ""
    x = inputs.get("x")
    if x is not None and np.shape(x) == want.shape:
        x = np.asarray(x, dtype=float).reshape(-1, want.shape[-1])          # (N, D)
        var = x.var(axis=1)
        for eps in (1e-5, 0.0, 1e-6, 1e-12):
            std = np.sqrt(var + eps)
            for power, form in ((2, "squared"), (1, ""), (-1, "inverse"), (-2, "inverse, "
                                                                               "squared")):
                if np.allclose(c, std ** power, rtol=1e-6):
                    said = (f"the {form} " if form else "the ") + "standard deviation"
                    return (f"is off by one factor per row, exactly {said} of that row of the "
                            "input: the normalization's own scale (the inverse standard "
                            "deviation) inverted (divided by where it multiplies), missing, "
                            "or applied twice?")
    return ("is off by one factor per row (the same along the last axis, another in each "
            "row): a per-row scale (a normalization's standard deviation, a row's sum or "
            "count) missing, inverted or applied twice?")


def has_dropout(name, inputs, args):
    """Whether the task holds a dropout: an argument or an input (a stand-in) named for it,
    or a drop probability among its arguments."""
    named = [*(inputs or {}), *(args or {})]
    return any("dropout" in key or "drop" == key.rpartition(".")[2] for key in named) or \
        "p" in (args or {}) or "dropout" in name


def import_failure(message):
    """"<path> does not import: SyntaxError at line N" for a worker's message of a file that
    does not parse (the path as in the package when its name is unique there), else ""."""
    found = NOT_PARSED.search(message)
    if found is None:
        return ""
    same = sorted(PACKAGE.rglob(found["file"]))
    if len(same) > 1:               # layers/softmax.py and layers/fused/softmax.py: a student
        same = [f for f in same     # edits the one with graded regions
                if "BEGIN SOLUTION" in f.read_text(encoding="utf-8")]
    path = same[0].relative_to(PACKAGE).as_posix() if len(same) == 1 else found["file"]
    return f"{path} does not import: {found['kind']} at line {found['line']}"
