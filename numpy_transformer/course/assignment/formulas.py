"""Each part's key formulas, named once. Not copied into a student copy (which carries
registry.py): the copy must hold none of them.

    FORMULAS[part]            regular expressions, matched against a line whose
                              whitespace runs are made one space
    formula_hits(line, parts) the parts among `parts` whose formulas the line holds
    redact(message, part)     a grader's message without them (a student's report;
                              `assignment grade --teacher` keeps them)
"""

import re

from .registry import LESSONS, PARTS

# Regular expressions matched against a line with its
# whitespace runs made one space. A student copy holds none of the stubbed parts' (its
# docstrings, hints, lessons and grader messages are stripped of them: make.py, and
# tests/course/test_assignment_leaks.py scans every file of a copy); a teacher's copy keeps them.
FORMULAS = {
    "linear": (r"d[XYxy]\\?,? ?W\^\\top", r"[Xx]\^\\top ?d[Yy]", r"x\^T dy", r"x\.T @ dy",
               r"dy W\^T", r"dy @ (self\.)?W\.T", r"dy\^T x", r"dy E\b", r"dW = x"),
    "layernorm": (r"mean\}?\(g ?\\odot", r"d\\gamma = ", r"g - \\mathrm\{mean\}\(g\)",
                  r"\(g \* xhat\)\.mean", r"g\.mean\(-1", r"mean\(g \* xhat\)",
                  r"g_?k? - mean\(g\)", r"dgamma = sum", r"dxhat_j/dx_k", r"r \(g",
                  r"mean_g_xhat"),
    "softmax": (r"dA - \\(text|mathrm)\{rowsum\}", r"A ?\\odot ?(\\big)?\(dA",
                r"p_i \(delta_ij - p_j\)", r"diag\(p\) - p p\^T", r"\(dp - ", r"dA - rowsum",
                r"A \* \(dA", r"sum\(dp \* p"),
    "gelu": (r"1 - t\^2", r"1 - t\*\*2", r"0\.5 \(1 \+ t\)", r"3 \* 0\.044715 x\^2",
             r"1\.0 \+ 3\.0 \* self\.A"),
    "dropout": (r"m / \(1 - p\)", r"dy \* m\b", r"dy \* mask", r"dx = dy \* "),
    "attention": (r"dS [Kk]\b", r"dS\^T [Qq]", r"A\^T dO", r"dO [Vv]\^T", r"A\^\\top ?dO",
                  r"dO\\?,? ?V\^\\top", r"dS\\?,? ?K\b", r"dS\^\\top ?Q", r"dS K", r"dS\^T Q",
                  r"A'\^T dO", r"dO V\^T", r"dscores @ k", r"dropped\.swapaxes",
                  r"dout @ v\.swapaxes"),
    "multihead_attention": (r"d[QKV]\\?,? ?W_[qkv]\^\\top", r"dQ W_q\^T", r"dK W_k\^T",
                            r"dV W_v\^T"),
    "mla": (r"dc\\?,? ?W_c\^\\top", r"dK W_k_decompress\^T", r"dV W_v_decompress\^T",
            r"dc W_kv_compress\^T", r"dv = 0"),
    "feedforward": (r"dh = linear_2\.backward", r"dx = linear_1\.backward"),
    "embedding": (r"SUM of multiplier \* dy", r"add\.at\(expected", r"dW\[v\] = ",
                  r"add\.at\(self\.grads", r"add\.at\(dW", r"dW\[ids\[b, t\]\] \+="),
    "positional_encoding": (r"dx = Dropout backward", r"exp\(2i \* -\(log\(10000\)"),
    "cross_entropy": (r"\(p - onehot\)", r"softmax\(logits\) - (q|xp\.eye)", r"= p - q",
                      r"\(p - q\) ?/ ?N", r"p_k - q_k", r"dloss \* \(p - q\)",
                      r"dlogits = \(?p - "),
    "adam": (r"g \+ wd p\b", r"\\beta_1 m \+ \(1 ?- ?\\beta_1\)",
             r"\\beta_2 v \+ \(1 ?- ?\\beta_2\)", r"g \+ \\lambda ?\\theta",
             r"1 ?- ?\\beta_[12]\^t", r"1 - b[12]\*\*t", r"m_t = b1 m_\{t-1\}",
             r"v_t = b2 v_\{t-1\}", r"1 - b1\^t", r"1 - b2\^t", r"g_t <- g_t \+ wd",
             r"\(1 - b1\) g", r"\(1 - b2\) g"),
    "adamw": (r"\(1 - \\eta ?\\lambda\)", r"p \(1 - lr wd\)", r"p \* \(1 - lr \* wd\)",
              r"1 - lr \* weight_decay", r"1 - self\.lr \* (self\.)?weight_decay"),
    "encoder_stack": (r"gradient is dq \+ dk \+ dv",),
    "decoder_stack": (r"dmemory = dk \+ dv", r"dmemory is the SUM",
                      r"\(dk \+ dv\) are the gradient", r"dq \+ dk \+ dv\)"),
}

COMPILED = {part: re.compile("|".join(f"(?:{f})" for f in found))
            for part, found in FORMULAS.items()}


def formula_hits(line, parts=PARTS):
    """The parts among `parts` one of whose key formulas the text `line` holds."""
    code = " ".join(line.split())
    return [p for p in parts if COMPILED[p].search(code)]


def redact(message, part):
    """A grader's message with no formula: "Expected: <formula> [...]" says where the part
    is taught instead, any other clause holding a formula is left out."""
    if not formula_hits(message):
        return message
    where = f"the result derived in {LESSONS[part]} (a student's report shows no formula)"
    message = re.sub(r"Expected: (.*?)(?= \[a correct answer|$)",
                     lambda m: "Expected: " + (where if formula_hits(m[1]) else m[1]), message)
    return "; ".join(clause if not formula_hits(clause) else "(a formula, left out)"
                     for clause in message.split("; "))


def redact_report(report):
    """`report` (a GradeReport) with every part's and check's message redacted, in place."""
    for result in report.parts:
        result.message = redact(result.message, result.part)
        for c in result.checks:
            c.message = redact(c.message, result.part)
    return report
