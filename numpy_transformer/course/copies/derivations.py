"""The written derivations: one question per part, asked in the copy, read back at grading.

    QUESTIONS[part]                      (question, shapes): what a copy asks of the part
    template(part, points=0)             -> the text of derivations/<part>.md in a copy
    write_templates(out, parts, points)  writes them into the copy at `out`
    read_answers(root, parts)            -> [Derivation] of the copy at `root`, one per part

The autograder checks arrays; a derivation is the reasoning behind them, which only a
person can grade (CS231n's inline questions). So each part of a student copy carries
derivations/<part>.md: the question, a table of shapes to fill in and an answer area
below "## Your answer" (Markdown, LaTeX allowed). The grader reads what the student
wrote from the "## Shapes" heading on (the question above it is the copy's own): a
file left as the copy had it is "not answered", and so is a missing, unreadable or
linked one. Derivations are graded by hand, apart from the autograded points:
`points` (the copy's assignment.json, "derivation_points", default 0) is what each
is worth to the teacher; the grader never scores one.

The questions ask, and never answer: they pass formulas.py's reading by meaning
(tests/course/test_assignment_leaks.py reads every file of a copy), so no line, nor two
lines together, states a part's key formula. Short lines help: formula_hits reads a
line at a time.
"""

from dataclasses import asdict, dataclass
from pathlib import Path

from ..parts import LESSONS, TITLES

FOLDER = "derivations"                  # the copy's folder of questions, beside numpy_transformer/
SHAPES_HEADING = "## Shapes"            # the student's text starts here
ANSWER_HEADING = "## Your answer"
PLACEHOLDER = ("<!-- Write your derivation below this line: Markdown, with LaTeX between $...$ "
               "or $$...$$. -->")
MAX_CHARS = 20_000                      # an answer longer than this is cut (and says so)
NOT_ANSWERED = "not answered"

# Each part: (the question, in Markdown lines; [(quantity, its shape or "?" to fill in)]).
# Shape letters: B batch, T positions (T_q queries, T_k keys), D features, H heads,
# V vocabulary, L latent width, F hidden width of the feed-forward block.
QUESTIONS = {
    "linear": ("""\
`Linear` maps $x$ of shape $(B, T, D_{in})$ to $y = x W + b$.

1. Write one entry $y_{btj}$ as a sum over $i$. From it, derive
   $\\partial L / \\partial x$, $\\partial L / \\partial W$ and $\\partial L / \\partial b$
   entry by entry, then as array expressions.
2. Why does the weight's gradient collect a contribution from every position of every
   batch entry? How does flattening the leading axes into $N = B T$ rows turn your
   entry-wise result into one matrix product per gradient?
3. `TiedLinear` reuses the embedding table $E$ of shape $(V, D)$ as its weight.
   Which axis of $E$ plays the part of $D_{in}$? Why must its gradient be added into
   the table's gradient, never assigned?""",
               [("$x$", "$(B, T, D_{in})$"), ("$W$", "$(D_{in}, D_{out})$"), ("$b$", "?"),
                ("$\\partial L / \\partial y$", "?"), ("$\\partial L / \\partial x$", "?"),
                ("$\\partial L / \\partial W$", "?"), ("$\\partial L / \\partial b$", "?")]),
    "layernorm": ("""\
LayerNorm normalises each row $x \\in \\mathbb{R}^D$ with the row's mean $\\mu$ and
variance $\\sigma^2$: $\\hat x = (x - \\mu) / \\sqrt{\\sigma^2 + \\epsilon}$, then
$y = \\gamma \\odot \\hat x + \\beta$.

1. Both $\\mu$ and $\\sigma$ depend on every entry of the row. Derive the Jacobian of
   $\\hat x$ with respect to $x$ for one row.
2. Contract it with the incoming gradient to get the gradient with respect to $x$,
   in a form that costs $O(D)$ per row, not $O(D^2)$.
   Which statistics of the incoming gradient, per row, does your form need?
3. Derive the gradients of the scale $\\gamma$ and of the shift $\\beta$:
   over which axes are they accumulated, and why?
4. What must forward save so that backward needs no second pass over $x$?""",
                  [("$x$", "$(B, T, D)$"), ("$\\gamma$, $\\beta$", "$(D,)$"),
                   ("$\\mu$, $\\sigma$", "?"), ("Jacobian of one row", "?"),
                   ("$\\partial L / \\partial x$", "?"),
                   ("$\\partial L / \\partial \\gamma$", "?")]),
    "softmax": ("""\
For one row, $p = \\mathrm{softmax}(z)$: $p_i = e^{z_i} / \\sum_k e^{z_k}$.

1. Derive $\\partial p_i / \\partial z_j$; treat $i = j$ and $i \\neq j$ apart, then
   write both cases as one expression with a Kronecker delta.
2. Derive the vector-Jacobian product, the gradient with respect to $z$ from the
   gradient with respect to $p$, in a form that never builds the $D \\times D$ matrix.
   How many operations per row does it take?
3. Adding the same constant to every entry of the incoming gradient of a row leaves
   the result unchanged. Show why. What does it tell you about the entries of the
   result of a row, added up?""",
                [("$z$, $p$", "$(B, H, T_q, T_k)$"), ("Jacobian of one row", "?"),
                 ("$\\partial L / \\partial p$", "?"), ("$\\partial L / \\partial z$", "?")]),
    "gelu": ("""\
The tanh form of GELU: $\\mathrm{GELU}(x) = \\tfrac{1}{2} x \\, (1 + \\tanh u)$ with
$u = \\sqrt{2 / \\pi} \\, (x + 0.044715 \\, x^3)$.

1. Derive $d \\, \\mathrm{GELU} / dx$ with the product and the chain rules.
   Write the derivative of $\\tanh$ in terms of $\\tanh$ itself, so that backward
   reuses what forward computed.
2. What must forward save for your backward?
3. Check your derivative at $x = 0$ and in the limits $x \\to \\pm \\infty$:
   which values do you expect, and why?
4. The exact GELU uses the normal CDF $\\Phi$. Why is the derivative of the tanh form
   close to, but not the same as, the derivative of the exact one?""",
             [("$x$", "$(B, T, F)$"), ("$u$", "?"), ("$\\partial L / \\partial x$", "?")]),
    "dropout": ("""\
In training, dropout with rate $p$ draws a mask $m$ of zeros and ones,
each entry kept with probability $1 - p$,
and scales the kept entries so that the expected output equals $x$.

1. Derive the scale from that requirement.
2. Derive the gradient with respect to $x$ from the gradient with respect to
   the output. What does an entry that was dropped receive?
3. Why must backward use the mask that forward drew, and never draw a new one?
4. What do forward and backward do in evaluation mode, and when $p = 0$?""",
                [("$x$", "$(B, T, D)$"), ("$m$", "?"), ("$\\partial L / \\partial x$", "?")]),
    "attention": ("""\
Scaled dot-product attention per head: scores $S = Q K^\\top / \\sqrt{d}$ (masked
entries set to $-\\infty$), weights $P = \\mathrm{softmax}(S)$ over the keys, output
$O = P V$.

1. Given the gradient with respect to $O$, derive the gradients with respect to
   $V$ and to $P$. Check each by its shape.
2. Go through the softmax (your softmax part) to the gradient with respect to $S$.
3. Derive the gradients with respect to $Q$ and $K$: where does the scale
   $1 / \\sqrt{d}$ enter the backward?
4. Masked entries: what do they receive in backward, and what must a row whose
   every key is masked give, so that nothing becomes NaN?
5. With dropout on $P$, which array must backward use: $P$ or the dropped one?""",
                  [("$Q$", "$(B, H, T_q, d)$"), ("$K$, $V$", "$(B, H, T_k, d)$"),
                   ("$S$, $P$", "?"), ("$\\partial L / \\partial P$", "?"),
                   ("$\\partial L / \\partial Q$", "?"), ("$\\partial L / \\partial K$", "?")]),
    "multihead_attention": ("""\
Multi-head attention projects $q$, $k$ and $v$ with three `Linear` layers of width $D$,
splits each result into $H$ heads of width $D / H$, runs attention on every head,
merges the heads back into width $D$ and projects the result with the output `Linear`.

1. Write the backward as the list of steps it takes, in order, with the shape
   each step receives and returns.
2. Which operation of forward does each of your backward steps undo? Why is a
   reshape alone not enough to undo splitting into heads, or merging them?
3. In self-attention, $q$, $k$ and $v$ are the same array $x$. The layer's backward
   returns three gradients: how does the caller turn them into the gradient of $x$,
   and why?""",
                            [("$q$, $k$, $v$", "$(B, T, D)$"), ("one head's $Q$", "?"),
                             ("merged heads", "?"), ("gradient of $q$", "?")]),
    "mla": ("""\
Multi-head latent attention compresses the keys' input $k$ into a latent $c$ of width
$L \\ll D$ with one `Linear` (`w_kv_compress`), and decompresses keys and values from
$c$ with two more (`w_k_decompress`, `w_v_decompress`). Queries have their own `Linear`.

1. `project_backward` receives the gradients of the projected queries, keys and
   values. Draw the graph from $k$ to the keys and values: how many paths reach $c$?
2. Derive the gradient with respect to $c$ from the two incoming gradients, and
   from it the gradient of $k$. Which children's backward do you call, in which order?
3. MLA is called as `mla(q, k, k)`: the values' input is the keys' very array. What
   should the gradient returned for $v$ be, and why must it not count $c$ twice?
4. At decoding, the cache keeps $c$ instead of the keys and values: how much memory
   per position does it save, and what does it cost at every step?""",
            [("$k$", "$(B, T_k, D)$"), ("$c$", "?"), ("keys, values", "?"),
             ("gradient of $c$", "?"), ("gradient of $k$", "?")]),
    "feedforward": ("""\
The feed-forward block has four children, called in forward as `linear_1`
(width $D$ to $F$), `activation`, `dropout`, then `linear_2` ($F$ to $D$).

1. Write the block's backward as calls of its children's backward: in which order,
   and what does each call receive and return (with shapes)?
2. Why must the block call its children's backward rather than compute their
   gradients itself? Think of the parameters' gradients and of what each child saved.
3. Where do the parameters' gradients of the block end up, and how does an optimizer
   find them?""",
                    [("$x$", "$(B, T, D)$"), ("hidden", "?"),
                     ("$\\partial L / \\partial x$", "?")]),
    "embedding": ("""\
An embedding looks rows up: output row $(b, t)$ is row $\\mathrm{ids}_{b,t}$ of the
table $E$ of shape $(V, D)$, scaled by a constant multiplier (see the docstring).

1. Write the output as a product of a one-hot matrix with $E$.
   From it, derive the gradient of $E$ row by row.
2. Which rows of the table receive a gradient? What does one row receive when its
   token occurs several times in the batch?
3. Why does NumPy's fancy-index assignment give a wrong gradient here (try a batch
   in which one id occurs twice), and which NumPy routine gives the right one?
4. Why does the embedding return no gradient for its input?""",
                  [("ids", "$(B, T)$"), ("$E$", "$(V, D)$"), ("output", "?"),
                   ("gradient of $E$", "?")]),
    "positional_encoding": ("""\
The sinusoidal table $PE$ has one row per position and one column per feature: each pair
of columns holds a sine and a cosine of the position at one frequency. The encoding adds
the table's first $T$ rows to its input and applies dropout.

1. The frequencies form a geometric sequence over the $D / 2$ pairs, from $1$ down to
   the inverse of a fixed base (the original paper's). Derive the frequency of pair $i$,
   and say why computing it through a logarithm is the better choice in code.
2. Show that row $t + k$ of the table is a fixed linear map of row $t$ (one
   $2 \\times 2$ rotation per pair), for every $t$.
3. Derive the backward. Does the table receive a gradient? Explain from
   how the table is made.""",
                            [("input", "$(B, T, D)$"), ("$PE$", "?"), ("table rows used", "?"),
                             ("$\\partial L / \\partial x$", "?")]),
    "cross_entropy": ("""\
Cross-entropy over logits $z$ of shape $(N, V)$ and targets $y$: with $p$ the softmax of a
row and $q$ the row's target distribution (one-hot, or smoothed with `label_smoothing`:
see the docstring), the row's loss is $-\\sum_k q_k \\log p_k$, and the loss is the mean
over the rows whose target is not `ignore_index`.

1. Write $\\log p_k$ in terms of $z$ and derive the gradient of one row's loss with
   respect to its logits. Use $\\sum_k q_k = 1$.
2. What does an ignored row receive? What does the mean divide by, and what if every
   row is ignored?
3. How does the incoming gradient of the loss, a scalar, enter?
4. Why is it better to compute the loss from $\\log \\sum_k e^{z_k}$ than from $p$?""",
                      [("$z$", "$(N, V)$"), ("$y$", "?"), ("$q$", "?"),
                       ("$\\partial L / \\partial z$", "?")]),
    "adam": ("""\
Adam keeps two exponential moving averages of the gradient $g_t$ of a parameter $\\theta$:
$m_t$ (of $g_t$, rate $\\beta_1$) and $v_t$ (of $g_t^2$, rate $\\beta_2$), both started at $0$.

1. For a gradient whose distribution does not change, derive the expected value of
   $m_t$ in terms of the expected gradient. Why is $m_t$ biased towards zero early on?
2. From it, derive the correction that removes the bias, and the same for $v_t$.
3. How large is the very first step ($t = 1$), whatever the scale of the gradient?
4. Adam's `weight_decay` here is L2 regularisation: derive from the loss with an
   L2 term how it changes the gradient the moments see.""",
             [("$\\theta$, $g_t$", "any shape"), ("$m_t$", "?"), ("$v_t$", "?"),
              ("the step", "?")]),
    "adamw": ("""\
AdamW decouples weight decay from the gradient (Loshchilov and Hutter).

1. Compare with Adam's L2 decay (your adam part): after the moments and their
   correction, how strongly is a weight pulled towards zero in each method? Show that
   with L2 decay a weight whose gradients are large is decayed less.
2. Write AdamW's update: is the decay scaled by the learning rate? Is it applied
   before or after the adaptive step, and does the order matter?
3. With a learning-rate schedule, how does the decay change over training?""",
              [("$\\theta$", "any shape"), ("the decay term", "?"),
               ("the adaptive step", "?")]),
    "encoder_stack": ("""\
An encoder block has two sublayers, self-attention then feed-forward, each inside a
residual connection with a LayerNorm (before or after the sublayer: see the docstring).
The stack applies $N$ blocks and, with norm-first blocks, a final LayerNorm.

1. Derive one block's backward as the calls of its children's backward, in order:
   where does the gradient branch at a residual, and where do the branches meet?
2. Self-attention reads one array as its query, key and value input. What does its
   backward return, and what becomes of it?
3. The stack: in which order are the blocks' backward called, and where does the
   final LayerNorm come in?
4. Why must the stack's backward never recompute a forward?""",
                      [("$x$", "$(B, S, D)$"), ("each sublayer's input", "?"),
                       ("$\\partial L / \\partial x$", "?")]),
    "decoder_stack": ("""\
A decoder block has three sublayers, each with its residual and LayerNorm: masked
self-attention, cross-attention (queries from the decoder, keys and values from the
encoder's output, the memory $M$) and feed-forward.

1. Derive one block's backward as the calls of its children's backward, in order.
   Which gradients does the block return, with which shapes?
2. Cross-attention reads $M$ as two of its inputs. What does its backward return
   for them, and what becomes of it?
3. Every block of the stack reads the same $M$. Derive the gradient of $M$ for the
   whole stack: why can it not be taken from the last block alone?
4. Where does that gradient go next, in an encoder-decoder model?""",
                      [("decoder input", "$(B, T, D)$"), ("$M$", "$(B, S, D)$"),
                       ("gradient of $M$", "?"), ("gradient of the decoder input", "?")]),
}


@dataclass
class Derivation:
    """A student's written derivation of one part, to be graded by hand."""
    part: str
    answered: bool
    text: str            # what the student wrote (from "## Shapes" on), or why not answered
    max_points: int = 0  # what the teacher gives it at most (0: read, not scored)

    def to_dict(self):
        return {**asdict(self), "status": "answered" if self.answered else NOT_ANSWERED,
                "graded": "by hand"}


def _worth(points):
    if points:
        return (f"It is worth {points} point{'s' * (points != 1)}, graded by hand by your "
                "teacher, apart from the autograded points.")
    return "Your teacher reads it by hand; it is not part of the autograded points."


def template(part, points=0):
    """The Markdown file derivations/<part>.md of a copy: the question, the shapes to fill
    in, and the answer area."""
    question, shapes = QUESTIONS[part]
    rows = [f"| {what} | {shape} |" for what, shape in shapes]
    return "\n".join([
        f"# Derivation: {TITLES[part]}", "",
        f"Part `{part}` of the assignment; {LESSONS[part]} teaches what you need.",
        _worth(points),
        "Keep the headings; write below them. Submit this file with your code.", "",
        "## Question", "", question, "",
        SHAPES_HEADING, "",
        "Replace each `?` by the shape (B batch, T positions, D features, H heads,",
        "V vocabulary, L latent width, F hidden width; `()` for a scalar).", "",
        "| quantity | shape |", "| --- | --- |", *rows, "",
        ANSWER_HEADING, "", PLACEHOLDER, "", ""])


def write_templates(out, parts, points=0):
    """derivations/<part>.md for each of `parts` in the copy at `out`."""
    folder = Path(out) / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    for part in parts:
        (folder / f"{part}.md").write_text(template(part, points), encoding="utf-8")


def _students_part(text):
    """What the student wrote: the text from the shapes heading on (all of it without one),
    the placeholder left out."""
    at = text.find(SHAPES_HEADING)
    mine = text[at:] if at >= 0 else text
    return mine.replace(PLACEHOLDER, "").strip()


def _same(a, b):
    return a.split() == b.split()


def read_answer(folder, part, points=0):
    """The Derivation of `part` in the derivations `folder` of a copy (None: none found).
    A student's file is read as text, a link or anything but a regular file refused."""
    name = f"{FOLDER}/{part}.md"
    path = None if folder is None else Path(folder) / f"{part}.md"
    if path is None or not (path.exists() or path.is_symlink()):
        return Derivation(part, False, f"{NOT_ANSWERED}: no {name} was submitted", points)
    if path.is_symlink() or not path.is_file():
        return Derivation(part, False, f"{NOT_ANSWERED}: {name} is not a plain file", points)
    try:
        with open(path, "rb") as file:
            raw = file.read(4 * MAX_CHARS + 4)
    except OSError as err:
        return Derivation(part, False, f"{NOT_ANSWERED}: {name} is unreadable "
                                       f"({err.strerror or err})", points)
    text = raw.decode("utf-8", errors="replace").replace("\r\n", "\n")
    mine = _students_part(text)
    if not mine or _same(mine, _students_part(template(part))):
        return Derivation(part, False, NOT_ANSWERED, points)
    if len(mine) > MAX_CHARS:
        mine = mine[:MAX_CHARS] + f"\n\n[... cut at {MAX_CHARS} characters]"
    return Derivation(part, True, mine, points)


def read_answers(root, parts, points=0):
    """[Derivation] of `parts` in the copy at `root` (its derivations/ folder)."""
    folder = Path(root) / FOLDER
    return [read_answer(folder if folder.is_dir() and not folder.is_symlink() else None,
                        part, points) for part in parts]

