"""Stripping the stubbed parts' key formulas (formulas.py) from a student copy's text.

    strip_source(text, parts)     a .py file: docstring blocks and comments holding one
                                  of the parts' formulas give way to what to derive
    strip_prose(lines, parts)     lines of prose (a lesson's markdown): the same, by line
    strip_notebook(path, parts)   a lesson: its prose, its code cells' comments and
                                  docstrings, and its outputs that state a formula
    where_hint(region)            a stub's hint: where to read up, not what to write
    drop_fast_forms(package, parts)   the files that are the parts' fast forms leave the copy

A lesson's paragraph that states a formula may carry its student copy's question, a line
`<!-- student: What does ...? -->` inside the paragraph (hidden when the reference is
rendered): the copy asks it where the paragraph was. One naming a part (`<!-- student
embedding: ... -->`) replaces its paragraph whenever the part is stubbed, formula or not (a
paragraph that says how, in words the key formulas do not cover); one naming several
(`<!-- student encoder_stack decoder_stack: ... -->`), whenever any of them is.

A docstring is cut into blocks: a line at the docstring's own indentation that starts
like a heading ("Backward:", "Saved:", "Input: with g = ...") or follows a blank line
opens one; more indented lines and lower-case continuations belong to it. Every block
holding a formula goes; one sentence says what to derive, and where it is taught. The
forward, the shapes and what is saved stay (they hold no part's key formula).
"""

import ast
import json
import re
from pathlib import Path

from .formulas import formula_hits
from ..parts import LESSONS

HEADING = re.compile(r"^[A-Z][\w ,'()/-]*[:.](\s|$)")
COMMENT = re.compile(r"\s*#[^\"']*$")
LIST_ITEM = re.compile(r"^\s*([-*]|\d+\.) ")
STUDENT = re.compile(r"^\s*<!-- student((?: \w+)*):\s?(.*?)\s*-->\s*$")   # a copy's question
UPDATES = ("adam", "adamw")           # parts that are an update, not a backward
# A part's fast forms, (file, function, its plain call): named drop-ins that compute the
# part's answer another way, for training. A copy that stubs the part holds none of them.


def derive(parts, indent="", what=None):
    """The sentence that stands for a stripped derivation of `parts` (`what`: its heading,
    such as "Table", when the stripped block had one)."""
    where = "; ".join(f"{p}: {LESSONS[p]}" for p in parts)
    what = what or ("The update" if set(parts) <= set(UPDATES) else "Backward")
    return (f"{indent}{what}: derive it yourself (assignment part{'s' if len(parts) > 1 else ''}"
            f" {where}).")


def where_hint(region, parts):
    """The hint of a stubbed region: for a graded part's, where to look, not what to write;
    for a lesson's exercise, its own hint unless that states a formula of `parts`."""
    if not region.part:
        found = formula_hits(region.hint, parts)
        return region.hint if not found else (
            f"its hint is left out of this copy: it states the answer of assignment part "
            f"{found[0]} ({LESSONS[found[0]]})")
    return f"write this part (see {LESSONS[region.part]} and the docstrings in this file)"


def docstring_spans(tree):
    """(first, last) 0-based line indices of every module, class and function docstring."""
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                spans.append((body[0].lineno - 1, body[0].end_lineno - 1))
    return spans


def blocks(lines):
    """The docstring lines cut into blocks, as lists of indices into `lines`."""
    indents = [len(s) - len(s.lstrip()) for s in lines[1:] if s.strip()]
    base = min(indents) if indents else 0
    found, blank = [], True
    for i, line in enumerate(lines):
        text = line.strip()
        if not text:
            blank = True
            continue
        indent = len(line) - len(line.lstrip())
        opens = i == 0 or blank or (indent <= base and HEADING.match(text) is not None)
        if opens or not found:
            found.append([i])
        else:
            found[-1].append(i)
        blank = False
    return found


def heading(line):
    """The heading word of a docstring line ("Table: ..." gives "Table"), or None."""
    found = re.match(r'^\s*(?:[rRbBuU]*(?:"""|\'\'\'))?([A-Z][a-z]+):\s', line)
    return found.group(1) if found else None


def strip_docstring(lines, parts):
    """A docstring's lines less its blocks that hold a formula of `parts`, with one sentence
    in place of the first of them."""
    cut, hit, found = set(), [], blocks(lines)
    for k, block in enumerate(found):
        parts_here = formula_hits(" ".join(lines[i] for i in block), parts)
        if not parts_here:
            continue
        cut.update(block)
        lead = found[k - 1] if k else []
        if lead and lines[lead[-1]].rstrip().endswith((":", " so")):
            cut.update(lead)                     # "Gradient. ..., so" leads into the cut
        hit += [p for p in dict.fromkeys(parts_here) if p not in hit]
    if not hit:
        return lines
    first = min(cut)
    line = lines[first]
    indents = [len(s) - len(s.lstrip()) for s in lines[1:] if s.strip()]
    indent = " " * min(indents) if indents else ""
    opening = re.match(r'^\s*[rRbBuU]*("""|\'\'\')', line)
    out = []
    for i, text in enumerate(lines):
        if i == first:
            sentence = derive(hit, "" if opening else indent, heading(line))
            out.append(opening.group(0) + sentence if opening else sentence)
            if opening and i == len(lines) - 1:
                out[-1] += opening.group(1)
        elif i not in cut:
            out.append(text)
        elif i == len(lines) - 1 and text.rstrip().endswith(('"""', "'''")):
            out.append(indent + text.rstrip()[-3:])          # keep the closing quotes
    if len(out) > 2 and out[-1].strip() in ('"""', "'''") and not out[-2].strip():
        del out[-2]                              # no blank line before the closing quotes
    return [t for i, t in enumerate(out) if t.strip() or i == 0 or out[i - 1].strip()]


def strip_source(text, parts, keep=()):
    """A .py file's text with `parts`' formulas stripped from docstrings and comments;
    `keep`: 0-based line indices not to touch (the stubs)."""
    lines = text.split("\n")
    try:
        spans = docstring_spans(ast.parse(text))
    except SyntaxError:
        spans = []
    inside = {i for first, last in spans for i in range(first, last + 1)}
    for i, line in enumerate(lines):
        if i in inside or i in keep or not formula_hits(line, parts):
            continue
        code = COMMENT.sub("", line)
        lines[i] = code if code.strip() else ""           # a comment stating a formula goes
    for first, last in sorted(spans, reverse=True):
        lines[first:last + 1] = strip_docstring(lines[first:last + 1], parts)
    return "\n".join(lines)


def prose_blocks(lines):
    """Markdown lines cut into blocks: paragraphs (blank lines between them), a list item
    opening a block of its own; as lists of indices into `lines`."""
    found, blank = [], True
    for i, line in enumerate(lines):
        if not line.strip():
            blank = True
            continue
        if blank or LIST_ITEM.match(line) or not found:
            found.append([i])
        else:
            found[-1].append(i)
        blank = False
    return found


def strip_prose(lines, parts):
    """Markdown lines less each block that holds a formula of `parts`. In its place, the
    block's own question for a student copy (a line `<!-- student: ... -->` in the block:
    hidden in the reference; `<!-- student: -->` leaves nothing), else one sentence (a list
    item's marker kept) saying what to derive. A question replaces its whole block, a list
    item's marker included."""
    out, cut = list(lines), set()
    for block in prose_blocks(lines):
        asks = [STUDENT.match(lines[i]) for i in block]
        text = " ".join(lines[i] for i, ask in zip(block, asks) if not ask)
        named = list(dict.fromkeys(p for ask in asks if ask for p in ask.group(1).split()
                                   if p in parts))
        hit = formula_hits(text, parts) or named
        if hit:
            item = LIST_ITEM.match(lines[block[0]])
            generic = (f"*Derive this yourself (assignment part{'s' if len(hit) > 1 else ''} "
                       f"{', '.join(hit)}: this step is left out of the student copy).*")
            question = " ".join(ask.group(2) for ask in asks if ask)
            out[block[0]] = question if any(asks) else (item.group(0) if item else "") + generic
            cut.update(block[1:])
        else:
            cut.update(i for i, ask in zip(block, asks) if ask)
    kept = [line for i, line in enumerate(out) if i not in cut]
    while len(kept) > 1 and not kept[-1].strip():
        kept.pop()                                              # nor a blank line at the end
    return [line for i, line in enumerate(kept)                  # no run of blank lines
            if line.strip() or i == 0 or kept[i - 1].strip()]


def output_text(output):
    """Everything a saved cell output shows, as text: a stream's text, every form of a
    result or display (text/plain, text/html, text/markdown, ...) and an error's name,
    value and traceback."""
    values = [output.get("text", ""), output.get("ename", ""), output.get("evalue", ""),
              "\n".join(output.get("traceback", [])),      # one line each, no line ends
              *output.get("data", {}).values()]
    return "\n".join("".join(v) if isinstance(v, list) else str(v) for v in values)


def strip_notebook(path, parts):
    """A lesson in a copy: markdown lines and code cells' comments and docstrings stripped;
    a cell whose saved output states a formula (a print of the identity the cell checks)
    loses its outputs, as the student runs the cell anyway."""
    book = json.loads(path.read_text(encoding="utf-8"))
    for cell in book.get("cells", []):
        if any(formula_hits(output_text(o), parts) for o in cell.get("outputs", [])):
            cell["outputs"], cell["execution_count"] = [], None
        source = cell.get("source", [])
        text = "".join(source) if isinstance(source, list) else source
        asked = any(map(STUDENT.match, text.split("\n")))     # its questions go, at least
        if not (asked or formula_hits(text, parts)):
            continue
        if cell.get("cell_type") == "code":
            lines = strip_source(text, parts).split("\n")
        else:
            lines = strip_prose(text.split("\n"), parts)
        cell["source"] = [line + "\n" for line in lines[:-1]] + [lines[-1]]
    path.write_text(json.dumps(book, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def fast_forms(package):
    """{path: part} for each file of the package that is a graded part's fast form: it says
    so at its top level, `FAST_FORM_OF = "part"` (optim/fast.py: part adam)."""
    found = {}
    for path in sorted(Path(package).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "FAST_FORM_OF" not in text:
            continue
        for node in ast.parse(text).body:
            if (isinstance(node, ast.Assign) and len(node.targets) == 1
                    and getattr(node.targets[0], "id", None) == "FAST_FORM_OF"):
                found[path.relative_to(package).as_posix()] = ast.literal_eval(node.value)
    return found


def drop_fast_forms(package, parts):
    """Leave out of the copy's `package` each fast form of `parts` (it computes the part's
    answer); the core then runs the plain form, the student's."""
    for path, part in fast_forms(package).items():
        if part in parts:
            (Path(package) / path).unlink()


def strip_copy(root, parts):
    """Strip `parts`' formulas from every .py file and lesson of the copy at `root`, and
    their fast forms (drop_fast_forms)."""
    root = Path(root)
    if not parts:
        return
    drop_fast_forms(root / "numpy_transformer", parts)
    for path in sorted((root / "numpy_transformer").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if formula_hits(text, parts):
            path.write_text(strip_source(text, parts), encoding="utf-8")
    for path in sorted((root / "notebooks").glob("*.ipynb")):
        strip_notebook(path, parts)
    for path in sorted((root / "notebooks").glob("*.md")):       # the lessons' index
        lines = path.read_text(encoding="utf-8").split("\n")
        path.write_text("\n".join(strip_inline(line, parts) for line in lines),
                        encoding="utf-8")


def strip_inline(line, parts):
    """A line (a table row, say) with each cell holding a formula of `parts` made
    "(derive it)"; a line that is no table row goes whole."""
    if not formula_hits(line, parts):
        return line
    if line.count("|") < 2:
        return "(derive it)"
    cells = line.split("|")
    return "|".join(" (derive it) " if formula_hits(cell, parts) else cell for cell in cells)
