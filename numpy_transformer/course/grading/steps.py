"""The steps the scenarios share (scenarios_layers.py, scenarios_models.py; table in harness.py).

Importing a module of the package under test, setting parameters from a source, one
forward and backward with the gradients it returns or adds, swapping functions of the
package under test for stand-ins and back.

An error raised inside the package under test (a shape mismatch, say) is reported
where it happened (`graded`, which wraps every scenario): the same exception,
its message the student's line, the arrays' shapes and the array being computed,

    ValueError: line 57 of layers/linear.py: shapes (6, 4, 3) and (3, 4, 5) do not match
    in a matrix product while computing dW; the line reads `dW = x.T @ dy`

in place of NumPy's bare "matmul: Input operand 1 has a mismatch in its core dimension
0 ...". The shapes' kind is said with them (product_hint, shape_hint): sides of a product
that would fit with one transposed or the two swapped, two shapes each the other's
transpose, two alike but for one axis' length (the gradient of another input?), one the
other less one axis (a reduction that lost its axis: `reduced`). By kind too: an arithmetic
error on a value that is no array (None, a string marker: the module's off path not
handled, `off_path`), a shape error inside or at a child's `.backward(` (the children out of
the reverse order: `child_order`). The line comes last, after "; ", shortened to fit the 300
characters a worker keeps: a student's report leaves out a clause that holds a formula
(formulas.redact), and the student's own line may hold one.

Harness code: imports nothing but the standard library, NumPy and the other harness
files, because the worker loads it by path (worker.py).
"""

import ast
import functools
import importlib
import linecache
import os
import re
import sys

import numpy as np


class TaskError(Exception):
    """A task that could not run as asked (a missing or mis-shaped array)."""


def load(pkg, dotted):
    """The module `dotted` of the package named `pkg`: load("numpy_transformer", "layers.linear").
    A plain import: nothing of the package but the modules under test is needed."""
    return importlib.import_module(f"{pkg}.{dotted}")


def rng(seed):
    """A generator for a module's own draws (its dropout masks, its initial weights)."""
    return np.random.default_rng(seed)


def set_parameters(module, source, scale=0.5):
    """Every parameter of `module` from the source, by its dotted name."""
    for name, param, _ in module.named_parameters():
        param[...] = source.normal(f"param.{name}", param.shape, scale)


def prefill_grads(module, source):
    """Random values already in every gradient (what earlier backward calls added)."""
    for name, _, grad in module.named_parameters():
        grad[...] = source.normal(f"grad0.{name}", grad.shape)


def grads(module):
    """{"grad.<name>": copy} of every parameter gradient."""
    return {f"grad.{name}": grad.copy() for name, _, grad in module.named_parameters()}


def grad_arrays(module):
    """{(id of the owning module, key): the gradient array itself}, to see replaced arrays."""
    return {(id(m), k): g for _, m in module.named_modules() for k, g in m.grads.items()}


def input_grads(returned, count):
    """{"dx.0": ..., "dx.1": ...} from what a backward returned (one array or a tuple)."""
    if not isinstance(returned, tuple):
        returned = (returned,)
    if len(returned) != count:
        raise TypeError(f"backward returned {len(returned)} gradient(s), expected {count}")
    return {f"dx.{i}": g for i, g in enumerate(returned)}


def forward_backward(module, source, inputs, kwargs=None, count=None, prefill=False):
    """forward(*inputs, **kwargs), backward(dout) with a drawn dout; returns the outputs:
    "out", the input gradients "dx.i" and the parameter gradients "grad.<name>"."""
    module.zero_grad()
    if prefill:
        prefill_grads(module, source)
    before = grad_arrays(module)
    out = module.forward(*inputs, **(kwargs or {}))
    dout = source.normal("dout", np.shape(out))
    returned = module.backward(dout)
    after = grad_arrays(module)
    found = {"out": out, **grads(module),
             "inplace": np.array(after.keys() == before.keys()
                                 and all(after[k] is g for k, g in before.items()))}
    if count is not None:
        found.update(input_grads(returned, count))
    return found


def known_slips(kind, **context):
    """{"term.<...>": array}: the arrays common slips give on this task (known_slips.py, for
    the diagnosis), computed in the reference's runs: the grader's (with stand-ins), and
    `assignment make`'s (the reference's own children: the copy's expected.npz, so that
    `assignment check` names the causes the grader names); {} where known_slips.py is
    absent (a student copy, a grading worker)."""
    here = os.path.dirname(os.path.abspath(__file__))
    if not os.path.isfile(os.path.join(here, "known_slips.py")):   # a copy's stand-in module would raise
        return {}
    try:
        from . import known_slips as slip_arrays
    except ImportError:                                 # a worker: this file loaded by path
        return {}
    return slip_arrays.slips(kind, context)


def swap(owner, name, value, undo):
    """setattr(owner, name, value), remembering the old value in `undo` (restore())."""
    undo.append((owner, name, getattr(owner, name)))
    setattr(owner, name, value)


def swap_everywhere(pkg, modules, name, value, undo):
    """Replace the function `name` of load(pkg, modules[0]) by identity: every attribute of
    every listed module that IS that function, whatever it is called there (a student may
    import it by name, under another name, or call it through its module)."""
    original = getattr(load(pkg, modules[0]), name)
    for dotted in modules:
        mod = load(pkg, dotted)
        for attribute in [a for a, v in vars(mod).items() if v is original]:
            swap(mod, attribute, value, undo)


def restore(undo):
    for owner, name, value in reversed(undo):
        setattr(owner, name, value)


HERE = os.path.dirname(os.path.realpath(__file__))      # the harness's own files
BROADCAST = re.compile(r"operands could not be broadcast together with shapes (\S+) (\S+)")
ADDED_INTO = re.compile(r"output operand with shape (\(.*?\)) doesn't match the broadcast "
                        r"shape (\(.*?\))")
MATMUL = re.compile(r"^matmul: ")


def graded(scenario):
    """`scenario`, its errors raised in the package under test re-raised with `located`'s
    message (the same exception type); stubs and the harness's own errors unchanged."""
    @functools.wraps(scenario)
    def run(pkg, source, standins, **args):
        try:
            return scenario(pkg, source, standins, **args)
        except (NotImplementedError, TaskError):
            raise
        except Exception as error:                                  # noqa: BLE001
            text = located(error, pkg)
            if not text:
                raise
            raise rebuilt(error, text) from error
    return run


def rebuilt(error, text):
    """An exception of `error`'s type holding the message `text`, or of the nearest base type
    whose message is `text` (NumPy's MemoryError wants a shape and a dtype; a KeyError
    quotes its message)."""
    for kind in type(error).__mro__:
        try:
            again = kind(text)
        except Exception:                                           # noqa: BLE001
            continue
        if str(again) == text:
            return again
    return RuntimeError(text)


def student_frame(error, pkg):
    """(frame, line number, path in the package) of the innermost frame of `error`'s
    traceback in a file of the package `pkg` other than the harness's, or None. A frame
    whose line is a `raise` (a helper's own clear error, such as "backward called before
    forward") gives way to the line that called it."""
    module = sys.modules.get(pkg)
    if module is None or not getattr(module, "__file__", None):
        return None
    root, found, tb = os.path.dirname(os.path.realpath(module.__file__)), [], error.__traceback__
    while tb is not None:
        path = os.path.realpath(tb.tb_frame.f_code.co_filename)
        if path.startswith(root + os.sep) and not path.startswith(HERE + os.sep):
            found.append((tb.tb_frame, tb.tb_lineno,
                          os.path.relpath(path, root).replace(os.sep, "/")))
        tb = tb.tb_next
    called = [f for f in found if not linecache.getline(
        f[0].f_code.co_filename, f[1]).lstrip().startswith("raise ")]
    return (called or found or [None])[-1]


def located(error, pkg):
    """"line N of <file>, `<source>`: <what went wrong> while computing <target>" for an error
    raised in the package under test, or "" when none of its lines is in the traceback."""
    found = student_frame(error, pkg)
    if found is None:
        return ""
    frame, lineno, path = found
    source = linecache.getline(frame.f_code.co_filename, lineno).strip()
    shown = source if len(source) <= 70 else source[:67] + "..."
    child = child_order(error, pkg, found)      # its hint says the kind: the shapes' goes
    what = mismatch(str(error), source, frame, hint=not child) or str(error)[:150]
    target = computing(source)
    said = (f"line {lineno} of {path}: {what}" + (f" while computing {target}" if target else "")
            + off_path(error) + child)
    room = LONGEST - len(said) - len("; the line reads ``")      # a message is cut at 300
    if room < 12:
        return said
    shown = shown if len(shown) <= room else shown[:room - 3] + "..."
    return said + f"; the line reads `{shown}`"


LONGEST = 270       # of a located message: the worker keeps 300 characters, its type's name
                    # first; the quoted line is shortened to fit, never cut open


OFF_PATH = re.compile(r"NoneType|dtype\('<U\d+'\)|'str'|numpy\.str_")


def off_path(error):
    """What an error of a value that is no array (None, a string marker) suggests: the path
    where a module is off, which keeps no array, not handled; else ""."""
    if not isinstance(error, TypeError) or not OFF_PATH.search(str(error)):
        return ""
    return ("; a value here is a marker, not an array (None or a string): the module's off "
            "path (dropout with p = 0 or in eval mode, a mask of None) not handled?")


def child_order(error, pkg, innermost):
    """What a shape error inside a child's backward suggests, or "": the error was raised
    in, or under, a line of the package that calls a `.backward(` with a gradient of
    another shape than that child's output: the children's backwards out of the reverse
    order of their forward (each must be given the gradient of its own output)."""
    if not isinstance(error, ValueError) or "shape" not in str(error) and "matmul" not in \
            str(error) and "broadcast" not in str(error):
        return ""
    module = sys.modules.get(pkg)
    root = os.path.dirname(os.path.realpath(getattr(module, "__file__", "") or "."))
    tb, calls = error.__traceback__, []
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        path = os.path.realpath(name)
        if path.startswith(root + os.sep) and not path.startswith(HERE + os.sep):
            line = linecache.getline(name, tb.tb_lineno).strip()
            if ".backward(" in line:
                calls.append((tb.tb_lineno, os.path.relpath(path, root).replace(os.sep, "/"),
                              line, tb.tb_next is not None))
        tb = tb.tb_next
    calls = [c for c in calls if c[3]]          # the error came from inside that call
    if not calls:
        return ""
    lineno, path, line, _ = calls[-1]
    shown = line if len(line) <= 70 else line[:67] + "..."
    where = "" if (lineno, path) == tuple(innermost[1:]) else \
        f"; it ran inside the backward called at line {lineno} of {path}, which reads `{shown}`"
    return ("; a child's backward got a gradient of another shape than its own output: "
            f"are the children's backwards out of the reverse order of their forward?{where}")


def tidy(shape):
    """"(3, 5)" for NumPy's "(3,5)"; the text itself when it is no shape."""
    try:
        return str(tuple(ast.literal_eval(shape)))
    except (ValueError, SyntaxError, TypeError):
        return shape


def mismatch(message, source, frame, hint=True):
    """What NumPy's shape error `message` says, with the shapes and (`hint`) their kind, or
    ""."""
    if BROADCAST.search(message):
        a, b = BROADCAST.search(message).groups()
        return f"shapes {tidy(a)} and {tidy(b)} do not match" + (
            (reduced(a, b) or shape_hint(a, b)) if hint else "")
    if ADDED_INTO.search(message):
        into, added = (tidy(a) for a in ADDED_INTO.search(message).groups())
        more = len(ast.literal_eval(added)) > len(ast.literal_eval(into))
        return (f"an array of shape {added} added into one of shape {into}"
                + (" (a sum over too few axes?)" if more else ""))
    if MATMUL.search(message):
        shapes = matmul_shapes(source, frame)
        return (f"shapes {shapes[0]} and {shapes[1]} do not match in a matrix product"
                + product_hint(shapes[0], shapes[1]) if shapes else
                "the inner sizes of a matrix product do not match" + TRANSPOSED)
    return ""


TRANSPOSED = (" (a transposed operand, one not transposed where it should be, or the two "
              "operands in the other order?)")


def as_shape(text):
    try:
        shape = ast.literal_eval(text) if isinstance(text, str) else text
        return tuple(int(n) for n in shape)
    except (ValueError, SyntaxError, TypeError):
        return None


def reduced(a, b):
    """What two shapes that do not broadcast suggest when one is the other with one axis
    removed: a reduction (a sum, a mean, a max) that lost its axis, so that its result no
    longer lines up with the array it meets; else ""."""
    a, b = as_shape(a), as_shape(b)
    if a is None or b is None or abs(len(a) - len(b)) != 1:
        return ""
    longer, shorter = (a, b) if len(a) > len(b) else (b, a)
    if not any(longer[:i] + longer[i + 1:] == shorter for i in range(len(longer))):
        return ""
    return (" (one is the other less one axis: a sum, mean or max that lost its axis? keep "
            "the reduced axis, of length 1, so it broadcasts back)")


def shape_hint(a, b):
    """What two shapes that do not broadcast suggest, by kind: one the other's with its last
    two axes swapped (a transposed operand), or the two alike but along one axis, of another
    length (an array of another input: its gradient, of its own length), else ""."""
    a, b = as_shape(a), as_shape(b)
    if a is None or b is None or len(a) != len(b) or not a:
        return ""
    if len(a) >= 2 and a[:-2] == b[:-2] and a[-2:] == b[-1:-3:-1]:
        return " (one is the other's shape with its last two axes swapped: a transposed " \
               "operand, or the operands of a product in the other order?)"
    differ = [i for i, (m, n) in enumerate(zip(a, b)) if m != n]
    if len(differ) == 1:        # along the positions: a sequence of another length
        example = (", such as the query's where the keys' and values' belong" if len(a) >= 3
                   and differ == [len(a) - 2] else "")
        return (" (alike but for the length of one axis: is one of them the gradient of "
                f"another input, one of its own length{example}?)")
    return ""


def product_hint(a, b):
    """What a matrix product a @ b whose inner sizes differ suggests: the sizes fit with one
    side transposed, or with the two in the other order."""
    a, b = as_shape(a), as_shape(b)
    if not a or not b or len(a) < 2 or len(b) < 2:
        return TRANSPOSED
    fits = [(a[-2] == b[-2], "the first operand transposed"),
            (a[-1] == b[-1], "the second operand transposed"),
            (b[-1] == a[-2], "the two operands in the other order")]
    said = [words for fit, words in fits if fit]
    return (f" (they would fit with {' or with '.join(said)}: a transposed operand, or the "
            "operands in the other order?)" if said else TRANSPOSED)


def matmul_shapes(source, frame):
    """The shapes of the two sides of the first `a @ b` in `source` whose sides are plain
    names, attributes, items or transposes (evaluated in `frame`), that do not fit; or None."""
    try:
        tree = ast.parse(source.rstrip(":"), mode="exec")
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            sides = [node.left, node.right]
            if any(isinstance(n, ast.Call) for side in sides for n in ast.walk(side)):
                continue
            try:
                a, b = (np.shape(eval(compile(ast.Expression(side), "<line>", "eval"),
                                      frame.f_globals, frame.f_locals)) for side in sides)
            except Exception:                                       # noqa: BLE001
                continue
            if a and b and a[-1] != b[-2 if len(b) > 1 else 0]:
                return str(tuple(a)), str(tuple(b))
    return None


def computing(source):
    """The array a line of code computes: its assignment's target, "the returned value", or
    "" (a line that does not parse alone, or assigns nothing)."""
    try:
        [statement] = ast.parse(source).body
    except (SyntaxError, ValueError):
        return ""
    if isinstance(statement, ast.Assign):
        return " = ".join(ast.get_source_segment(source, t) for t in statement.targets)
    if isinstance(statement, (ast.AugAssign, ast.AnnAssign)):
        return ast.get_source_segment(source, statement.target)
    if isinstance(statement, ast.Return):
        return "the returned value"
    return ""
