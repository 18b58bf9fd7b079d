"""One judgement: a body the grader gives full marks passes `assignment check`, and the reverse.

The testers of issue 49 found honest students failed by `check` while the grader gave
them full marks: a correct body written another way (Linear through einsum, CS231n's
LayerNorm, ...) changes the rounding of every array it feeds, and in a composite part
that runs it (multi-head attention, the stacks) an array that is zero in exact
arithmetic (the key projection's bias gradient: a softmax ignores a shift of its row)
came out as rounding noise, 1e-15 to 1e-19, which `check` compared relatively, by
itself. Both sides now call judgement.py. Here:

- ALTERNATIVES, correct bodies of our own (einsum, loops over rows, other orders of the
  products, reshapes for transposes, the textbook forms), each swapped into the
  reference in this process (no copy, no sandbox: fast): the grader (scoring.run_part)
  gives its part, and every part that runs its code, full marks, and `check`
  (local_check.check_parts, on an expected.npz written before the swap) passes them;
- a body computed in float32 (the rules: compute in the inputs' dtype) fails both,
  each saying float32;
- every catalogue mistake (mistakes.py) fails both in its own part, and `check` names
  the cause the grader names where its own children can show it (one mistake per part
  here, the rest in the slow pass);
- (slow) the testers' four bodies written into a copy's files: the sandboxed grader
  gives full marks and `assignment check` passes every part.
(A copy made for some parts checks those parts only: test_student_check.py.)
"""

import ast
import contextlib
import linecache
import math
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from numpy_transformer.course.copies.make import PACKAGE, package_regions
from numpy_transformer.course.classroom.grade import grade
from numpy_transformer.course.copies.markers import indented, write_region_bodies
from numpy_transformer.course.grading import local_check, scoring
from numpy_transformer.course.grading.local_check import USES
from numpy_transformer.course.selftest.mistakes import MISTAKES

SECRET = 49         # the grader's inputs: one fixed secret, so the test draws the same arrays
REGIONS = {r.qualname: r for r in package_regions(PACKAGE)}

ALTERNATIVES = {    # name -> (qualname, a correct body written another way)
    "linear_einsum": ("Linear.backward", """
        x = self.saved_for_backward()
        x2, dy2 = x.reshape(-1, self.in_features), dy.reshape(-1, self.out_features)
        self.grads["weight"] += np.einsum("ni,no->io", x2, dy2)
        if "bias" in self.params:
            self.grads["bias"] += np.einsum("no->o", dy2)
        return np.einsum("...o,io->...i", dy, self.params["weight"])
    """),
    "linear_tensordot": ("Linear.backward", """
        x = self.saved_for_backward()
        lead = tuple(range(x.ndim - 1))
        self.grads["weight"] += np.tensordot(x, dy, axes=(lead, lead))
        if "bias" in self.params:
            self.grads["bias"] += dy.sum(axis=lead)
        return dy @ self.params["weight"].T
    """),
    "linear_loop_over_rows": ("Linear.backward", """
        x = self.saved_for_backward()
        x2 = x.reshape(-1, self.in_features)
        dy2 = dy.reshape(-1, self.out_features)
        W = self.params["weight"]
        dx = np.zeros_like(x2)
        for n in range(x2.shape[0]):
            self.grads["weight"] += np.outer(x2[n], dy2[n])
            if "bias" in self.params:
                self.grads["bias"] += dy2[n]
            dx[n] = W @ dy2[n]
        return dx.reshape(x.shape)
    """),
    "tied_linear_einsum": ("TiedLinear.backward", """
        x = self.saved_for_backward()
        x2, dy2 = x.reshape(-1, self.in_features), dy.reshape(-1, self.out_features)
        self.grads["weight"] += np.einsum("nv,nd->vd", dy2, x2)
        if "bias" in self.params:
            self.grads["bias"] += dy.reshape(-1, self.out_features).sum(axis=0)
        return np.einsum("...v,vd->...d", dy, self.params["weight"])
    """),
    "layernorm_cs231n": ("LayerNorm.backward", """
        xhat, r = self.saved_for_backward()
        D = self.d_model
        self.grads["gamma"] += (dy * xhat).reshape(-1, D).sum(axis=0)
        self.grads["beta"] += dy.reshape(-1, D).sum(axis=0)
        dxhat = dy * self.params["gamma"]
        return (r / D) * (D * dxhat - dxhat.sum(axis=-1, keepdims=True)
                          - xhat * (dxhat * xhat).sum(axis=-1, keepdims=True))
    """),
    "layernorm_through_the_variance": ("LayerNorm.backward", """
        xhat, r = self.saved_for_backward()
        D = self.d_model
        self.grads["gamma"] += np.sum(dy * xhat, axis=tuple(range(dy.ndim - 1)))
        self.grads["beta"] += np.sum(dy, axis=tuple(range(dy.ndim - 1)))
        dxhat = dy * self.params["gamma"]
        xc = xhat / r                                   # x - mean
        dvar = np.sum(dxhat * xc, axis=-1, keepdims=True) * -0.5 * r**3
        dmean = -r * np.sum(dxhat, axis=-1, keepdims=True) - 2.0 * dvar * np.mean(xc, axis=-1, keepdims=True)
        return dxhat * r + dvar * 2.0 * xc / D + dmean / D
    """),
    "softmax_loop_over_rows": ("softmax_backward", """
        p_rows = np.moveaxis(p, axis, -1)
        dp_rows = np.moveaxis(dp, axis, -1)
        shape = p_rows.shape
        p2, dp2 = p_rows.reshape(-1, shape[-1]), dp_rows.reshape(-1, shape[-1])
        dx = np.empty_like(p2)
        for i in range(p2.shape[0]):
            jacobian = np.diag(p2[i]) - np.outer(p2[i], p2[i])
            dx[i] = jacobian @ dp2[i]
        return np.moveaxis(dx.reshape(shape), -1, axis)
    """),
    "softmax_expanded": ("softmax_backward", """
        return p * dp - p * np.sum(p * dp, axis=axis, keepdims=True)
    """),
    "gelu_sech_squared": ("GELU.backward", """
        x, t = self.saved_for_backward()
        u = self.C * (x + self.A * x**3)
        sech2 = 1.0 / np.cosh(np.clip(u, -300.0, 300.0)) ** 2
        return dy * 0.5 * (1.0 + np.tanh(u)) + dy * 0.5 * x * sech2 * self.C * (1.0 + 3.0 * self.A * x * x)
    """),
    "gelu_other_order": ("GELU.backward", """
        x, t = self.saved_for_backward()
        left = 0.5 + 0.5 * t
        right = 0.5 * self.C * x * (1.0 - t) * (1.0 + t) * (1.0 + 3.0 * self.A * x * x)
        return (left + right) * dy
    """),
    "attention_other_order": ("scaled_dot_product_attention_backward", """
        dropped = attn if dropout is None else dropout.reapply(attn)
        dv = np.swapaxes(dropped, -1, -2) @ dout
        dattn = dout @ np.swapaxes(v, -1, -2)
        if dropout is not None:
            dattn = dropout.backward(dattn)
        dscores = softmax_backward(dattn, attn)
        dq = (dscores @ k) / math.sqrt(q.shape[-1])
        dk = (q.swapaxes(-1, -2) @ dscores).swapaxes(-1, -2) / math.sqrt(q.shape[-1])
        return dq, dk, dv
    """),
    "attention_einsum": ("scaled_dot_product_attention_backward", """
        scale = q.shape[-1] ** -0.5
        dropped = attn if dropout is None else dropout.reapply(attn)
        dv = np.einsum("bhqk,bhqd->bhkd", dropped, dout)
        dattn = np.einsum("bhqd,bhkd->bhqk", dout, v)
        if dropout is not None:
            dattn = dropout.backward(dattn)
        dscores = softmax_backward(dattn, attn)
        dq = np.einsum("bhqk,bhkd->bhqd", dscores, k * scale)
        dk = np.einsum("bhqk,bhqd->bhkd", dscores, q * scale)
        return dq, dk, dv
    """),
    "mha_transpose_by_hand": ("MultiHeadAttentionBase.backward", """
        qh, kh, vh = self.saved_for_backward()
        B, T, D = dout.shape
        H = self.num_heads
        dheads = self.w_o.backward(dout).reshape(B, T, H, D // H).transpose(0, 2, 1, 3)
        dqh, dkh, dvh = scaled_dot_product_attention_backward(dheads, qh, kh, vh, self.attn_weights, self.dropout)
        merged = [d.transpose(0, 2, 1, 3).reshape(d.shape[0], d.shape[2], D) for d in (dqh, dkh, dvh)]
        return self.project_backward(*merged)
    """),
    "mha_projections_in_reverse": ("MultiHeadAttention.project_backward", """
        dv = self.w_v.backward(dV)
        dk = self.w_k.backward(dK)
        dq = self.w_q.backward(dQ)
        return dq, dk, dv
    """),
    "embedding_one_hot": ("Embedding.backward", """
        ids = self.saved_for_backward()
        vocab = self.grads["weight"].shape[0]
        one_hot = (ids.reshape(-1)[:, None] == np.arange(vocab)[None, :]).astype(dy.dtype)
        self.grads["weight"] += one_hot.T @ (dy.reshape(-1, dy.shape[-1]) * self.multiplier)
    """),
    "embedding_loop": ("Embedding.backward", """
        ids = self.saved_for_backward()
        flat_ids, flat_dy = ids.reshape(-1), dy.reshape(-1, dy.shape[-1])
        for i, row in zip(flat_ids, flat_dy):
            self.grads["weight"][i] += self.multiplier * row
    """),
    "feedforward_named_steps": ("FeedForward.backward", """
        dactivated = self.linear_2.backward(dy)
        dkept = self.dropout.backward(dactivated)
        dhidden = self.activation.backward(dkept)
        dx = self.linear_1.backward(dhidden)
        return dx
    """),
    "dropout_multiply_first": ("Dropout.backward", """
        mask = self.saved_for_backward()
        if mask is OFF:
            return dy
        return np.multiply(mask, dy)
    """),
    "sinusoidal_loops": ("sinusoidal_table", """
        pe = xp.zeros((max_len, d_model), dtype=xp.float64)
        for pos in range(max_len):
            for i in range(0, d_model, 2):
                angle = pos * math.exp(-math.log(10000.0) * i / d_model)
                pe[pos, i] = math.sin(angle)
                if i + 1 < d_model:
                    pe[pos, i + 1] = math.cos(angle)
        return pe.astype(get_default_dtype())
    """),
    "cross_entropy_explicit_target": ("CrossEntropyLoss.backward", """
        V, eps = shape[-1], self.label_smoothing
        q = xp.full(p.shape, eps / V)
        q[rows, t] += 1.0 - eps
        counted = valid.astype(p.dtype)[:, None]
        dx = (p - q) * counted * float(dloss) / max(self.num_tokens, 1)
        return dx.reshape(shape)
    """),
    "adam_in_place_moments": ("Adam._update", """
        if wd and not self.decoupled:
            g = g + wd * p
        m *= b1
        m += (1 - b1) * g
        v *= b2
        v += (1 - b2) * (g * g)
        step = self.lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + self.eps)
        p -= step
    """),
    "adamw_decay_subtracted": ("AdamW.decay", """
        p -= self.lr * weight_decay * p
    """),
    "encoder_block_other_sum": ("EncoderBlock.backward", """
        dx, df = self.sublayers[1].exit_backward(dout)
        dx = self.sublayers[1].enter_backward(self.feed_forward.backward(df)) + dx
        dx, da = self.sublayers[0].exit_backward(dx)
        dq, dk, dv = self.self_attn.backward(da)
        return self.sublayers[0].enter_backward(dv + dk + dq) + dx
    """),
    "encoder_indexed_loop": ("Encoder.backward", """
        if self.norm is not None:
            dout = self.norm.backward(dout)
        for i in range(len(self.layers) - 1, -1, -1):
            dout = self.layers[i].backward(dout)
        return dout
    """),
    "decoder_block_other_sums": ("DecoderBlock.backward", """
        dx, df = self.sublayers[2].exit_backward(dout)
        dx = self.sublayers[2].enter_backward(self.feed_forward.backward(df)) + dx
        dx, dc = self.sublayers[1].exit_backward(dx)
        dq, dk, dv = self.cross_attn.backward(dc)
        dmemory = dv + dk
        dx = self.sublayers[1].enter_backward(dq) + dx
        dx, da = self.sublayers[0].exit_backward(dx)
        dq, dk, dv = self.self_attn.backward(da)
        return self.sublayers[0].enter_backward(dv + dk + dq) + dx, dmemory
    """),
    "decoder_memory_as_list": ("Decoder.backward", """
        if self.norm is not None:
            dout = self.norm.backward(dout)
        memories = []
        for layer in self.layers[::-1]:
            dout, dmem = layer.backward(dout)
            memories.append(dmem)
        return dout, sum(memories[1:], memories[0])
    """),
}

FLOAT32 = ("linear", "Linear.backward", """
    x = self.saved_for_backward().astype(np.float32)
    dy32 = dy.astype(np.float32)
    x2, dy2 = x.reshape(-1, self.in_features), dy32.reshape(-1, self.out_features)
    self.grads["weight"] += x2.T @ dy2
    if "bias" in self.params:
        self.grads["bias"] += dy2.sum(axis=0)
    return (dy2 @ self.params["weight"].astype(np.float32).T).reshape(x.shape)
""")


def function_source(region, body):
    """The source of the function holding `region`, its region's lines set to `body`, led by
    blank lines so that it compiles at its own line numbers in the file, and the file's
    lines as they read with that body (for linecache: an error quotes the student's line)."""
    path = PACKAGE / region.path
    lines = path.read_text(encoding="utf-8").split("\n")
    tree, node = ast.parse("\n".join(lines)), None
    for name in region.qualname.split("."):
        node = next(n for n in ast.iter_child_nodes(node or tree)
                    if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name)
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
    body_lines = indented(body, region.indent)
    file_lines = lines[:region.begin + 1] + body_lines + lines[region.end:]
    source = lines[first:region.begin + 1] + body_lines + lines[region.end:node.end_lineno]
    return "\n" * first + textwrap.dedent("\n".join(source)), file_lines


@contextlib.contextmanager
def swapped(qualname, body):
    """The reference package, in this process, with the function `qualname` compiled from
    its own source with `body` in its solution region (a module-level function is swapped
    in every module of the package that holds it); put back on exit. The function compiles
    at its lines in the file, and linecache reads the file with the body in place, so an
    error's message quotes the student's line, as in a copy."""
    region = REGIONS[qualname]
    module = sys.modules[f"{PACKAGE.name}.{region.module}"]
    space = vars(module)        # the new function's globals: the grader's swaps reach it
    added = [n for n in ("np", "math") if n not in space]
    space.update({"np": np, "math": math})      # what a student would import to use
    *owner, name = qualname.split(".")
    old = getattr(getattr(module, owner[0]) if owner else module, name)
    if owner:
        undo = [(getattr(module, owner[0]), name, old)]
    else:                                       # every module of the package holding it
        undo = [(m, a, old) for key, m in list(sys.modules.items())
                if key.startswith(PACKAGE.name + ".") and not key.startswith(
                    f"{PACKAGE.name}.course") for a, v in vars(m).items() if v is old]
    shadowed = space.get(name)
    filename = str(PACKAGE / region.path)
    source, file_lines = function_source(region, body)
    exec(compile(source, filename, "exec"), space)
    new = space[name]
    if owner and shadowed is None:
        del space[name]                         # the method was defined at module level
    elif owner:
        space[name] = shadowed
    cached = linecache.cache.get(filename)
    text = [line + "\n" for line in file_lines]
    linecache.cache[filename] = (sum(map(len, text)), None, text, filename)   # kept as is
    try:
        for holder, attribute, _ in undo:
            setattr(holder, attribute, new)
        yield
    finally:
        for holder, attribute, before in undo:
            setattr(holder, attribute, before)
        for n in added:
            del space[n]
        if cached is None:
            linecache.cache.pop(filename, None)
        else:
            linecache.cache[filename] = cached


def judged(part):
    """The parts whose verdict a body of `part` can change: its own and those running it."""
    return [part, *(p for p, used in USES.items() if part in used)]


@pytest.fixture(scope="module")
def expected(tmp_path_factory):
    """The public check's expected.npz of every part, and the grader's reference results,
    both from the reference before any body is swapped (reference_results is cached)."""
    path = tmp_path_factory.mktemp("judgement") / "expected.npz"
    local_check.write_expected(path, [c for checks in scoring.CHECKS.values() for c in checks])
    for part in scoring.PARTS:
        scoring.reference_results(part, SECRET)
    return path


def part_of(qualname):
    return REGIONS[qualname].part


@pytest.mark.parametrize("name", sorted(ALTERNATIVES))
def test_a_correct_body_written_another_way_passes_both(expected, name):
    qualname, body = ALTERNATIVES[name]
    parts = judged(part_of(qualname))
    with swapped(qualname, body):
        points = {p: scoring.run_part(p, secret=SECRET) for p in parts}
        verdicts = local_check.check_parts(parts, path=expected)
    for part in parts:
        assert points[part].points == points[part].max_points, (part, points[part].message)
        assert verdicts[part] == ("pass", ""), (part, verdicts[part])


def test_the_alternatives_cover_the_graded_parts():
    assert len(ALTERNATIVES) >= 20
    covered = {part_of(q) for q, _ in ALTERNATIVES.values()}
    assert covered >= {"linear", "layernorm", "softmax", "gelu", "attention",
                       "multihead_attention", "feedforward", "embedding", "cross_entropy",
                       "adam", "adamw", "dropout", "positional_encoding", "encoder_stack",
                       "decoder_stack"}


def test_a_body_in_float32_fails_both_as_float32(expected):
    part, qualname, body = FLOAT32
    with swapped(qualname, body):
        result = scoring.run_part(part, secret=SECRET)
        verdict, message = local_check.check_parts([part], path=expected)[part]
    assert result.points < result.max_points and "float32" in result.message, result.message
    assert verdict == "fail" and "float32" in message, message


# Causes the grader sees through its stand-ins only: a stand-in dropout counts the masks
# drawn and has a known scale. `check`, with the copy's own children, may not name them.
SEEN_THROUGH_STANDINS = ("attention_fresh_dropout_mask", "positional_backward_skips_dropout")


FIRST_OF_EACH_PART = {m.part: m.name for m in reversed(MISTAKES)}.values()   # the rest: slow


@pytest.mark.filterwarnings("ignore::RuntimeWarning")      # a mistake's NaN, on purpose
@pytest.mark.parametrize("mistake", [
    pytest.param(m, id=m.name, marks=() if m.name in FIRST_OF_EACH_PART else pytest.mark.slow)
    for m in MISTAKES])
def test_a_catalogue_mistake_fails_both_in_its_own_part(expected, mistake):
    """The floor of judgement.py hides no mistake: each fails the grader's check of its part
    and `check` of its part, and `check` names the cause the grader names (expected.npz
    carries the known slips' arrays of the public inputs); a part running its code passes
    the grader (stand-ins) and `check` passes it or says "check <part> first"."""
    parts = judged(mistake.part)
    with swapped(mistake.function, mistake.body):
        points = {p: scoring.run_part(p, secret=SECRET) for p in parts}
        verdicts = local_check.check_parts(parts, path=expected)
    assert points[mistake.part].points < points[mistake.part].max_points
    verdict, said = verdicts[mistake.part]
    assert verdict == "fail", verdicts[mistake.part]
    graded = " ".join(c.message for c in points[mistake.part].checks).lower()
    named = mistake.cause and all(word.lower() in graded for word in mistake.cause)
    if named and mistake.name not in SEEN_THROUGH_STANDINS:
        assert all(word.lower() in said.lower() for word in mistake.cause), (mistake.cause, said)
    for user in parts[1:]:
        assert points[user].points == points[user].max_points, (user, points[user].message)
        assert verdicts[user][0] in ("pass", "check first"), (user, verdicts[user])


TESTERS = ("linear_einsum", "attention_other_order", "softmax_loop_over_rows",
           "layernorm_cs231n")        # the four the testers of issue 49 wrote


@pytest.mark.slow
def test_the_testers_bodies_in_a_copy_pass_the_sandboxed_grader_and_check(solution_copy,
                                                                          tmp_path):
    """End to end: the testers' four bodies written into a solution copy's files (NumPy as
    `xp` where the file imports no `np`), graded by the sandboxed grader and checked by
    `python -m numpy_transformer assignment check` in the copy: full marks, every part
    passes."""
    copy = shutil.copytree(solution_copy, tmp_path / "copy",
                           ignore=shutil.ignore_patterns("notebooks"))
    package = copy / "numpy_transformer"
    regions = {r.qualname: r for r in package_regions(package)}
    chosen = [ALTERNATIVES[name] for name in TESTERS]
    bodies = [body if "import numpy as np" in (package / regions[q].path).read_text()
              else body.replace("np.", "xp.") for q, body in chosen]
    write_region_bodies(package, [regions[q] for q, _ in chosen], bodies)
    report = grade(copy)
    assert all(r.points == r.max_points for r in report.parts), report.table()
    done = subprocess.run([sys.executable, "-m", "numpy_transformer", "assignment", "check"],
                          cwd=copy, env={**os.environ, "PYTHONPATH": str(copy)},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout
