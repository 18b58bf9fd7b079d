"""No answer in any sentence a student sees, read by meaning (meaning.py, formulas.py).

- The matcher catches rewordings of every part's formulas, written here in spellings
  that formulas.py does not hold (code, LaTeX, unicode, words), and leaves alone
  sentences that only say what is computed or tested (forward formulas, check sentences).
- A full student copy holds none, in any file, line by line and over two lines (a
  formula wrapped in a docstring or a paragraph).
- No check sentence states one; nor does any message of a submission of zeros (every
  check fails, so every sentence is shown) or of any mistake of the catalogue (the
  diagnosis's sentences), in the teacher's unredacted form.
"""

import json
from collections import defaultdict
from pathlib import Path

import pytest

from numpy_transformer.course.copies.formulas import FORMULAS, formula_hits, grader_text
from numpy_transformer.course.classroom.grade import grade
from numpy_transformer.course.copies.make import make
from numpy_transformer.course.copies.meaning import tokens
from numpy_transformer.course.copies.strip import output_text
from numpy_transformer.course.selftest.mistakes import MISTAKES
from numpy_transformer.course.grading.scoring import CHECKS
from numpy_transformer.course.parts import PARTS

from test_assignment_grader import BLANK, add_import, fresh, replace_regions

REWORDINGS = {
    "linear": ["dx = dout @ self.W.T", "the input gradient is the upstream gradient multiplied "
               "by the transposed weight matrix",
               r"$\frac{\partial L}{\partial x} = \frac{\partial L}{\partial y}\, W^{\top}$",
               "dW = np.matmul(x.transpose(), grad_out)", "dW equals X transposed times dY",
               "grad_W = x2.swapaxes(-1, -2) @ dy2", "db is the sum of dout over the batch",
               "dx = dy · Wᵀ"],
    "layernorm": ["dx = rstd * (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1, "
                  "keepdims=True))", "subtract from g its mean and xhat times the average of g "
                  "times xhat, then scale by r",
                  r"$r\,(g - \overline{g} - \hat{x}\,\mathrm{mean}(g \odot \hat{x}))$",
                  "dgamma is the sum over batch and time of dy times x_hat",
                  "g minus its average, minus xhat times the average of g times xhat"],
    "softmax": ["dx = p * (dp - (dp * p).sum(axis, keepdims=True))",
                "p times (the upstream gradient minus the row sum of upstream gradient times p)",
                r"$J = \operatorname{diag}(p) - p\,p^{\top}$",
                "the Jacobian is diag(p) minus the outer product p p transposed",
                "ds = a * (da - np.dot(a, da))", "J = np.diag(a) - np.outer(a, a)"],
    "gelu": ["0.5 * (1 + t) + 0.5 * x * (1 - t**2) * c * (1 + 3 * 0.044715 * x**2)",
             "one minus tanh squared, times c times (1 + 0.134145 x^2)",
             r"$\tfrac12 x\,\mathrm{sech}^2(u)\,u'$", "0.5·x·(1 − t²)"],
    "dropout": ["dx = dout * mask / (1.0 - p)",
                "multiply dy by the kept mask and divide by the keep probability",
                "the gradient is dy times m, divided by 1 - p",
                "dx = grad_out * self.mask * self.scale", "dx = dy * m * (1 / (1 - p))"],
    "attention": ["dv = attn.T @ dout, that is A transposed times dO",
                  r"$dV = A^{\top} dO,\; dA = dO\, V^{\top}$", "dQ = dS @ K / sqrt(d)",
                  "dk is dS transposed times Q, scaled"],
    "multihead_attention": ["dx_q = dQ @ W_q.T",
                            "then the backward of w_o, split heads, attention backward, merge "
                            "heads"],
    "mla": ["dc = dK @ W_k_decompress.T + dV @ W_v_decompress.T",
            "dc collects dK through w_k_decompress plus dV through w_v_decompress"],
    "feedforward": ["backward through linear_2, then dropout, then the activation, then linear_1",
                    "call the backward of linear_2, dropout, relu and linear_1, in that order"],
    "embedding": ["np.add.at(grad_W, ids, dout)", "table_grad[idx] += grad_out",
                  "row v of the table's gradient is the sum of "
                  "dy over every position where token v occurs",
                  "a scatter-add of the upstream gradient into the embedding gradient",
                  r"$\frac{\partial L}{\partial W_v} = \sqrt{D} \sum_{t:\, ids_t = v} "
                  r"\frac{\partial L}{\partial y_t}$"],
    "positional_encoding": ["PE[pos, 2i] = sin(pos / 10000 ** (2 * i / D))",
                            "the angle is pos times exp(-2i log(10000) / D)",
                            "sine of the position divided by ten thousand to the power 2i over "
                            "d_model", "the positional encoding is a constant, so its backward "
                            "is only the dropout's backward"],
    "cross_entropy": ["dlogits = (probs - np.eye(V)[targets]) / n", "the probabilities minus "
                      "the one hot targets, divided by the number of counted rows",
                      r"$\frac{\partial \ell}{\partial z} = \frac{\mathrm{softmax}(z) - "
                      r"\mathbb{1}_t}{N}$", "subtract 1 at the target: p minus 1 at the correct "
                      "class"],
    "adam": ["m_hat = m / (1 - beta1 ** t)", r"$\hat v = v / (1 - \beta_2^t)$",
             "m = beta_1 * m + (1 - beta_1) * g", "divide m by one minus beta1 to the power t",
             "p -= lr * m_hat / (np.sqrt(v_hat) + eps)", "grad = grad + weight_decay * param",
             "m̂ = m / (1 − β₁ᵗ)", "p -= lr * m_hat / (v_hat ** 0.5 + eps)"],
    "adamw": ["p *= 1 - lr * weight_decay", r"$\theta \leftarrow \theta (1 - \eta\lambda)$",
              "multiply the weights by one minus the learning rate times the weight decay",
              "param -= self.lr * self.weight_decay * param", "θ ← θ·(1 − η·λ)"],
    "encoder_stack": ["the gradient of h is dq + dk + dv since self-attention read it three "
                      "times", "the final layer norm's backward first, then the blocks in "
                      "reverse", "dx, df = block.sub.exit_backward(g)",
                      "g = g + block.sub.enter_backward(block.ff.backward(df))",
                      "pre-norm: dx = dy + LayerNorm backward of f's backward of dy"],
    "decoder_stack": ["dmemory = dk + dv from the cross-attention", "the gradient of the memory "
                      "is the sum over the blocks of their memory gradients"],
}

HARMLESS = [
    "the gradient of the input, the weight and the bias, for inputs with two leading axes",
    "gradients already held in grads (prefilled here) are kept",
    "the gradient of the tied weight, in the array TiedLinear shares with the embedding",
    "y = x @ W + b, with x (B, T, D_in) and W (D_in, D_out)",
    "xhat = (x - mean) * r with r = 1 / sqrt(var + eps)",
    "p = softmax(x) along the last axis: subtract the row max, exponentiate, normalise",
    "GELU(x) = 0.5 x (1 + tanh(c (x + 0.044715 x^3)))",
    "a fully masked row: its gradient is finite, never NaN",
    "the sinusoidal table's values at every position and column, for an even and an odd d_model",
    "every repeated id: one id at every position of the batch",
    "Attention(Q, K, V) = softmax(Q K^T / sqrt(d)) V",
    "the loss is the mean over the counted rows of -log p[target]",
    "Adam keeps two moving averages of the gradient, m and v",
    "the learning rate schedule warms up, then decays as 1/sqrt(step)",
    "AdamW(params, lr=1e-3, weight_decay=0.01) is the default optimizer",
    "feed-forward: linear_1, activation, dropout, linear_2 at every position",
    "return lin('linear_2', torch.relu(lin('linear_1', x)))",
    "the encoder stack runs its blocks in order, then a final LayerNorm",
    "dropout keeps each unit with probability 1 - p during training",
    "lookup == one-hot @ W * sqrt(D)",
    "backward(dloss) with a dloss other than 1, and a batch whose every target is ignored",
    "the decay alone, in place, with the learning rate changed between steps",
    "a pre-norm stack with its final LayerNorm: the gradients of the input and of the memory",
    "Each part's own code runs with stand-ins for the sub-layers of other parts.",
    "print(f'max error {err:.1e}')",
    "exit_backward(dy) gives the gradients of x along the identity path and of f",
    "enter_backward(dh) gives that of x along the sublayer's path, from the gradient of h",
    "Same as `xp.add.at(a, index, values)` (NumPy's unbuffered add)",
    "ids is a (B, T) array of token ids, a, b and c are names",
    "fast.sum(a, axis) is a.sum(axis=axis); np.outer(a, b) an outer product",
]


@pytest.mark.parametrize("part", PARTS)
def test_every_rewording_of_a_parts_formula_is_caught(part):
    missed = [text for text in REWORDINGS[part] if part not in formula_hits(text)]
    assert not missed, "\n".join(f"{text!r} read as {tokens(text)}" for text in missed)


def test_sentences_that_say_what_is_computed_are_not_caught():
    caught = [(text, formula_hits(text)) for text in HARMLESS if formula_hits(text)]
    assert not caught, "\n".join(f"{text!r}: {parts} ({tokens(text)})" for text, parts in caught)


def test_the_rewordings_are_not_the_spellings_of_formulas_py():
    """The test's rewordings are other spellings: no key of formulas.py is written in them,
    and every key is found by its own part (the list is what the matcher reads)."""
    keys = {k.strip("{}").lower() for found in FORMULAS.values() for k in found}
    assert not [t for texts in REWORDINGS.values() for t in texts if t.lower() in keys]
    assert all(part in formula_hits(k.strip("{}").replace("|", " ")) or k.startswith("{")
               for part, found in FORMULAS.items() for k in found)


def test_one_formula_in_several_spellings_reads_as_one_token_stream():
    same = ["dy @ W.T", "dy W^T", "dout times W transposed", r"\frac{\partial L}{\partial y}"
            r" W^\top", "np.matmul(grad_out, W.transpose())", "dy · Wᵀ"]
    assert {tokens(text) for text in same} == {("dy", "w", "transp")}
    assert tokens("(p - onehot) / N") == tokens("p minus one-hot, divided by N")
    assert tokens("x / (1 - p)") == tokens("x divided by the keep probability")


def copy_lines(copy):
    """(file, [lines]) of every text file of `copy` (a notebook's sources and outputs)."""
    for path in sorted(p for p in Path(copy).rglob("*") if p.is_file()):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        lines = text.split("\n")
        if path.suffix == ".ipynb":
            lines = [line for cell in json.loads(text)["cells"]
                     for chunk in ["".join(cell.get("source", []))]
                     + [output_text(o) for o in cell.get("outputs", [])]
                     for line in chunk.split("\n")]
        yield path.relative_to(copy), lines


def copy_hits(copy):
    """[(file:line, parts, text)] of every line of `copy` stating a formula, and of every two
    lines that state one together but not apart (a formula wrapped over a line break)."""
    hits = []
    for name, lines in copy_lines(copy):
        alone = [formula_hits(line) for line in lines]
        for i, line in enumerate(lines):
            if alone[i]:
                hits.append((f"{name}:{i + 1}", alone[i], line.strip()))
            if i + 1 < len(lines) and not (alone[i] or alone[i + 1]):
                both = formula_hits(line + " " + lines[i + 1])
                if both:
                    hits.append((f"{name}:{i + 1}-{i + 2}", both, line.strip()))
    return hits


@pytest.mark.slow
def test_a_full_student_copy_states_no_formula_by_meaning(student_copy):
    hits = copy_hits(student_copy)
    assert not hits, "formulas in the student copy:\n" + "\n".join(
        f"  {where} {parts}: {text[:160]!r}" for where, parts, text in hits)


def test_the_scan_finds_a_reworded_formula_planted_in_a_copy(tmp_path):
    (tmp_path / "notes.md").write_text("The backward is easy: multiply the upstream gradient\n"
                                       "by the transposed weight.\n")
    assert [(where, parts) for where, parts, _ in copy_hits(tmp_path)] == [
        ("notes.md:1-2", ["linear"])]


def test_no_check_sentence_says_how_to_compute_its_answer():
    stated = [(part, c.name, text) for part, checks in CHECKS.items() for c in checks
              for text in (c.why, c.expect) if formula_hits(text)]
    assert not stated, stated


def messages(report):
    """Every sentence of a report: parts' and checks' messages and the table."""
    return [r.message for r in report.parts] + [c.message for r in report.parts
                                                for c in r.checks] + [report.table()]


def assert_no_formula(said):
    """No formula in `said`, but in the student's own line quoted back ("the line reads `...`":
    their code, not the answer)."""
    said = [grader_text(m) for m in said]
    stated = [(formula_hits(m), m) for m in said if formula_hits(m)]
    assert not stated, "\n".join(f"{parts}: {m}" for parts, m in stated)


@pytest.mark.slow
def test_a_submission_of_zeros_shows_every_check_and_no_formula(solution_copy, tmp_path):
    copy = fresh(solution_copy, tmp_path)
    replace_regions(copy, BLANK)
    for path in ("layers/attention.py", "layers/feedforward.py", "models/decoder.py",
                 "models/encoder.py"):
        add_import(copy, path, "from ..backend import xp")
    report = grade(copy, teacher=True)
    shown = [c for r in report.parts for c in r.checks if "Expected: " in c.message]
    assert len(shown) == sum(len(checks) for checks in CHECKS.values())     # every sentence
    assert_no_formula(messages(report))


def batches(mistakes):
    """The mistakes in rounds of at most one per part (each graded on its own part)."""
    rounds = defaultdict(list)
    for part in PARTS:
        for i, m in enumerate(m for m in mistakes if m.part == part):
            rounds[i].append(m)
    return [rounds[i] for i in sorted(rounds)]


@pytest.mark.slow
def test_no_message_of_a_catalogue_mistake_states_a_formula(solution_copy, tmp_path):
    said = []
    for i, batch in enumerate(batches(MISTAKES)):
        copy = fresh(solution_copy, tmp_path, f"round{i}")
        for mistake in batch:
            mistake.apply(copy)
        said += messages(grade(copy, parts=[m.part for m in batch], teacher=True))
    assert len(said) > len(MISTAKES)
    assert_no_formula(said)


@pytest.mark.slow
def test_a_copy_that_stubs_linear_alone_states_no_linear_formula(tmp_path):
    """A part's formula under other names: lesson 3 and the attention docstring write the
    query projection's backward (Linear's, with W_q and dQ), which a copy stubbing only
    linear must not show."""
    make(tmp_path / "hw", parts=["linear"])
    hits = [(where, text) for where, parts, text in copy_hits(tmp_path / "hw")
            if "linear" in parts]
    assert not hits, "Linear's formula in a linear-only copy:\n" + "\n".join(
        f"  {where}: {text[:160]!r}" for where, text in hits)
