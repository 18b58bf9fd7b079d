"""Each part's key formulas, named once and read by meaning. Not copied into a student copy
(which carries parts.py): the copy must hold none of them.

    FORMULAS[part]            keys: each formula in one of its spellings, read by meaning
                              (meaning.py), so that its rewordings are found too
    formula_hits(text, parts) the parts among `parts` whose formulas the text states, in
                              symbols or in words
    grader_text(message)      a grader's message less the student's own quoted line
    redact(message, part)     a grader's message without any formula (a student's report):
                              a net only, as the checks' sentences say what is tested, never
                              how (`assignment grade --teacher` skips it)
"""

import re

from .meaning import holds
from ..parts import LESSONS, PARTS

# Each part's key formulas, each written once in one of its spellings and read by meaning
# (meaning.py): "dy W^T" is also found in "dy @ W.T", "dout times the transposed weight",
# "\\frac{\\partial L}{\\partial y} W^\\top". A key in braces holds names that, all in one
# sentence in any order, state the formula ("{pe dropout backward constant}"); "a|b" is
# either name. A student copy holds none of the stubbed parts' (its docstrings, hints,
# lessons and grader messages are stripped of them: strip.py; tests/course/
# test_assignment_leaks.py reads every file of a copy and every grader message); a
# teacher's copy keeps them. RESIDUAL: a block's backward through its residual
# connections (SublayerConnection's two halves and the sublayer's backward between them,
# the two paths added), and a stack's (the final norm, then the blocks in reverse), both
# stacks' answer.
# LOG_SOFTMAX: log-softmax's backward, dx = dz - p sum(dz), one step from both softmax's
# answer (dz = dp p) and cross-entropy's (dz = -q). The key bias's gradient is 0 because
# softmax ignores a constant added to a row: lesson 3's question (multihead_attention).
LOG_SOFTMAX = ("dz - p sum dz",)
# L2_GRADIENT: what the L2 term adds to the gradient, wd p: adam's (L2 decay) and the first
# half of lesson 13's adamw question (one plain step with it is the decay factor).
L2_GRADIENT = ("g = wd p|w",)
RESIDUAL = ("df = exit_backward", "+ enter_backward", "dh = sublayer backward", "dx = dz +",
            "dx = dy + ln|norm", "{sublayer backward enter_backward +}",
            "{final norm blocks|layers reverse|reversed}")
FORMULAS = {
    "linear": ("dy W^T", "dx = W^T dy", "x^T dy", "dy^T x", "{db sum dy}"),
    "layernorm": ("g - mean(g)", "mean(g xhat)", "(g * xhat).mean", "xhat mean(g",
                  "{dgamma sum xhat}", "{dbeta sum dy}", "dxhat_j/dx_k"),
    "softmax": ("p (dp - sum", "dp - sum(dp p)", "A (dA - rowsum", "diag(p) - p p^T",
                "p_i (delta_ij - p_j)", "{jacobian diag p}", "diag(p) - outer(p",
                "p (dp - p dp)", *LOG_SOFTMAX),
    "gelu": ("=1 - t^2", "1 - tanh^2", "sech^2", "3 * 0.044715 x^2", "0.134145",
             "1 + 3 A x^2", "0.5 (1 + t) + 0.5 x"),
    "dropout": ("dy * m / (1 - p)", "dy * m * scale", "dx = dy * mask", "x * m / (1 - p)",
                "dy / (1 - p)", "{dy mask keep}"),
    "attention": ("A^T dO", "dO V^T", "dq = dS K", "dS^T Q", "dk = Q^T dS"),
    "multihead_attention": ("dQ W_q^T", "dK W_k^T", "dV W_v^T",
                            "w_o split attention merge", "{merge heads transpose}",
                            "{k bias|b softmax ignores|ignore|invariant}"),
    "mla": ("dK W_k_decompress^T", "dV W_v_decompress^T", "dc W_kv_compress^T",
            "dK w_k_decompress + dV w_v_decompress", "{dc w_k_decompress w_v_decompress}",
            "dc = dK", "{dc dk dv transp}", "sum k^T dc",
            "dv = 0"),
    "feedforward": ("linear_2 dropout activation linear_1 backward",
                    "backward linear_2 dropout activation linear_1",
                    "dh = linear_2.backward", "dx = linear_1.backward"),
    "embedding": ("add.at(dW, ids, dy)", "dW[ids] += dy", "{sum dy ids|id|token}",
                  "index|ids|id|idx += values|dy|rows",
                  "{dw|row sum dy id|ids|token|pos}",
                  "{scatter-add embedding gradient|backward}", "{multiplier dy sum}"),
    "positional_encoding": ("10000^", "log(10000)", "{sin cos 10000}",
                            "dx = Dropout backward", "{pe|positional|table dropout "
                            "backward|dx|gradient constant|only|just}"),
    "cross_entropy": ("p - onehot", "dlogits = p - q", "= p - q", "(p - q) / N", "p_k - q_k",
                      "dloss * (p - q)", "p - 1 target|targets|correct", *LOG_SOFTMAX),
    "adam": ("1 - b1^t", "1 - b2^t", "b1 m + (1 - b1) g", "b2 v + (1 - b2) g^2",
             "m_hat / (sqrt(v_hat) + eps)", "g + wd p|w", "g_t <- g_t + wd", "adds wd p to g",
             "/ (1 - beta|beta1|beta2 ^ t)", *L2_GRADIENT),
    "adamw": ("1 - lr wd", "-= lr wd", "p - lr wd p", "{lr wd p shrink|shrinks|decays}",
              "shrink|shrinks|shrunk lr wd", *L2_GRADIENT),
    "encoder_stack": ("dq + dk + dv", "final LayerNorm backward first", *RESIDUAL),
    "decoder_stack": ("dmemory = dk + dv", "dmemory dk + dv", "dmemory sum", "dq + dk + dv",
                      "sum dmemory blocks", "cross-attention dk + dv", *RESIDUAL),
}


def formula_hits(line, parts=PARTS):
    """The parts among `parts` one of whose key formulas the text `line` holds, by meaning."""
    return [p for p in parts if holds(line, FORMULAS[p])]


# The student's own line, quoted back by the diagnosis of an error in their region: theirs,
# not the answer, so never read for a formula nor left out.
THEIRS = re.compile(r"the line reads `[^`]*(`|$)")      # a quote cut at the end is theirs too


def grader_text(message):
    """What the grader itself says in `message`: the student's quoted line left out."""
    return THEIRS.sub("the line reads (theirs)", message)


def redact(message, part):
    """A grader's message with no formula: "Expected: <formula> [...]" says where the part
    is taught instead, any other clause holding a formula is left out. The checks' sentences
    hold none (they say what is tested); this is the net for any other sentence."""
    said = lambda text: formula_hits(grader_text(text))              # noqa: E731
    if not said(message):
        return message
    where = f"the result derived in {LESSONS[part]} (a student's report shows no formula)"
    message = re.sub(r"Expected: (.*?)(?= \[a correct answer|$)",
                     lambda m: "Expected: " + (where if said(m[1]) else m[1]), message)
    return "; ".join(clause if not said(clause) else "(a formula, left out)"
                     for clause in message.split("; "))


def redact_report(report):
    """`report` (a GradeReport) with every part's and check's message redacted, in place."""
    for result in report.parts:
        result.message = redact(result.message, result.part)
        for c in result.checks:
            c.message = redact(c.message, result.part)
    return report
