"""The class summary, for the teacher: DIR/index.html and its figures.

    write_report(folder, graded, parts, similar, dirs=None)   -> the page's path

`graded` is the class run's [(name, GradeReport or why it was not graded)],
`similar` the similarity pairs (similarity.py), `dirs` {name: the student's folder}
(to show each student's code beside their derivation). The page holds:

- the score distribution (scores.png: how many students reached each total) and
  each part's pass rate (pass_rates.png: the share of graded students with full
  points in it), drawn with matplotlib on Figure objects (no pyplot, no display);
- per part, the most common diagnosed causes: every failed check's message is cut
  into what the grader saw (the diagnosis after "(rel err ...):", "not implemented",
  "numerically close", "wrong shape", a crash, ...), each worded without the array it
  was seen in (a slip in dx, dW and db is one cause), and counted once per student;
- the similar pairs, and the folders that could not be graded, with why;
- the written derivations (derivations.py), graded by hand: per part, each student's
  answer (or "not answered", marked) beside their code of the part, its points and the
  lines honesty.py flagged, in a <details> element per student and part.

The page is self-contained (no script, no style sheet or image from elsewhere: the
figures are inside it as data: URLs, and also written beside it as PNG files). It
is the teacher's: the similarity pairs appear nowhere else, never in a student's
table, JSON or Gradescope file.
"""

import base64
import collections
import html
import io
import re
from pathlib import Path

from ...errors import InputError
from ...system.files import atomic_write

INSTALL = ("the class summary (--report) draws its figures with matplotlib: pip install "
           "matplotlib (or pip install 'numpy_transformer[course]')")
TOP = 3                                    # causes listed per part
PROBLEM = re.compile(r"^(?P<what>.+?) \(rel err [^)]*\)(?:: (?P<cause>.+))?$")


def need_matplotlib():
    """InputError with the install hint when matplotlib is missing."""
    try:
        from matplotlib.figure import Figure  # noqa: F401
    except ImportError:
        raise InputError(INSTALL) from None


def _cause(what, said):
    """A diagnosis worded without the array it was seen in (`what`: the array's label), so
    that one slip in several arrays is one cause: "your gradient of weight is ..." and
    "your gradient of bias is ..." both read "your array is ..."."""
    for name in dict.fromkeys((what, what.removeprefix("the "))):
        said = said.replace(f"your {name} ", "your array ")
    return said


def causes(message):
    """The causes a failed check's message names (see the module), one per problem, each
    worded without its array."""
    if message.startswith("not implemented"):
        return ["not implemented"]
    if " does not import: " in message:
        return [message.split(" does not import: ", 1)[1].split(" at line")[0] + " (does not "
                "import)"]
    found = []
    for problem in message.split(". Expected: ")[0].split("; "):
        problem = re.sub(r" and \d+ more$", "", problem.strip())
        seen = PROBLEM.match(problem)
        if "numerically close" in problem:
            found.append("numerically close, not exact")
        elif seen:
            found.append(_cause(seen["what"], seen["cause"]) if seen["cause"]
                         else "wrong values, no diagnosis")
        elif ": shape " in problem:
            found.append("wrong shape")
        elif ": not finite" in problem:
            found.append("not finite")
        elif problem.endswith(": missing"):
            found.append("an output missing")
        elif ": dtype " in problem:
            found.append("wrong dtype")
        elif problem.startswith("task "):
            found.append(re.sub(r"^task \d+: ", "", problem)[:120])
        else:
            found.append(problem[:120])
    return found


def part_causes(graded, part):
    """[(cause, how many students)] of `part`, most common first (TOP of them): a student
    counts once per cause, however many checks and arrays show it."""
    counts = collections.Counter()
    for _, report in graded:
        if isinstance(report, str):
            continue
        for result in report.parts:
            if result.part != part or result.points == result.max_points:
                continue
            said = {c for check in result.checks if not check.passed
                    for c in causes(check.message)}
            counts.update(said or {result.message[:120]})     # a crash: the part's message
    return counts.most_common(TOP)


def _figure_png(draw):
    from matplotlib.figure import Figure
    fig = Figure(figsize=(6.4, 3.2))
    draw(fig.add_subplot())
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    return buffer.getvalue()


def figures(graded, parts):
    """{file name: PNG bytes} of the score distribution and the parts' pass rates."""
    reports = [r for _, r in graded if not isinstance(r, str)]
    totals = [r.points for r in reports]
    top = max([r.max_points for r in reports], default=0)
    rates = [pass_rate(reports, p) for p in parts]

    def scores(ax):
        from matplotlib.ticker import MaxNLocator
        counts = collections.Counter(totals)
        ax.bar(sorted(counts), [counts[t] for t in sorted(counts)], width=max(top / 40, 0.8))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))        # students are whole
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))        # and so are points
        ax.set(xlabel=f"total points (of {top})", ylabel="students", xlim=(-1, top + 1),
               title=f"Score distribution ({len(reports)} students graded)")

    def passes(ax):
        bars = ax.bar(range(len(parts)), [100 * r for r in rates])
        ax.bar_label(bars, [f"{100 * r:.0f}%" for r in rates], fontsize=8)
        ax.set_xticks(range(len(parts)), parts, rotation=60, ha="right")
        ax.set(ylabel="students with full points (%)", ylim=(0, 100),
               title="Pass rate per part")
    return {"scores.png": _figure_png(scores), "pass_rates.png": _figure_png(passes)}


def pass_rate(reports, part):
    """The share of `reports` with full points in `part` (0 when none graded it)."""
    mine = [r for report in reports for r in report.parts if r.part == part]
    return sum(r.points == r.max_points for r in mine) / len(mine) if mine else 0.0


STYLE = ("body{font-family:sans-serif;max-width:60em;margin:2em auto;color:#222}"
         "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;"
         "padding:.3em .6em;text-align:left;vertical-align:top}img{max-width:100%}"
         "pre{white-space:pre-wrap;margin:0;font-size:90%}td.pair{width:50%}"
         ".unanswered{background:#fde2e2}summary{cursor:pointer}")
UNANSWERED = "NOT ANSWERED"                # how the page marks a derivation left as it came


def _table(header, rows):
    cells = lambda tag, row: "".join(f"<{tag}>{html.escape(str(c))}</{tag}>" for c in row)
    return ("<table><tr>" + cells("th", header) + "</tr>"
            + "".join("<tr>" + cells("td", r) + "</tr>" for r in rows) + "</table>")


def _image(name, png, alt):
    data = base64.b64encode(png).decode("ascii")
    return f'<p><img src="data:image/png;base64,{data}" alt="{html.escape(alt)}"> ({name})</p>'


def codes_of(dirs, parts):
    """{name: {part: the student's code of the part}} of the folders `dirs` ({name: folder});
    a copy whose markers are broken shows no code (its grade says why)."""
    from .similarity import region_texts
    codes = {}
    for name, directory in (dirs or {}).items():
        try:
            codes[name] = region_texts(Path(directory) / "numpy_transformer", parts)
        except (InputError, OSError, UnicodeError):
            codes[name] = {}
    return codes


def _pre(text):
    return f"<pre>{html.escape(text)}</pre>"


def _derivation(name, result, derivation, code):
    """One student's derivation of one part beside their code, points and flags."""
    flags = [f"{f['path']}:{f['line']}: {f['why']}: {f['source']}" for f in result.flags]
    status = "answered" if derivation.answered else UNANSWERED
    summary = (f"{name}: {status}; code {result.points}/{result.max_points}"
               + (f", {len(flags)} line{'s' * (len(flags) != 1)} flagged" if flags else ""))
    mark = "" if derivation.answered else " unanswered"
    right = (_pre(code) if code is not None else "<p>(no code read)</p>") + (
        "<p>flagged for review:</p>" + _pre("\n".join(flags)) if flags else "")
    opened = f'<summary class="{mark.strip()}">' if mark else "<summary>"
    return (f"<details>{opened}{html.escape(summary)}</summary>"
            f"<table><tr><th>derivation ({derivation.max_points or 'no'} points, by hand)</th>"
            f"<th>code</th></tr><tr><td class=\"pair{mark}\">{_pre(derivation.text)}</td>"
            f"<td class=\"pair\">{right}</td></tr></table></details>")


def derivations_section(graded, parts, codes):
    """The page's section on the written derivations (see the module); [] when no graded
    student has any."""
    reports = [(name, r) for name, r in graded if not isinstance(r, str) and r.derivations]
    if not reports:
        return []
    rows, blocks = [], []
    for part in parts:
        mine = [(name, r.by_part().get(part), d) for name, r in reports
                for d in r.derivations if d.part == part]
        left = [name for name, _, d in mine if not d.answered]
        rows.append([part, f"{len(mine) - len(left)} of {len(mine)}", ", ".join(left) or "-"])
        blocks.append(f"<h3>{html.escape(part)}</h3>")
        blocks += [_derivation(name, result, d, codes.get(name, {}).get(part))
                   for name, result, d in mine if result is not None]
    return ["<h2>Written derivations (graded by hand)</h2>",
            "<p>Each student's derivations/&lt;part&gt;.md, from its shapes on, beside their "
            f"code of the part; {UNANSWERED} where the file was left as it came (or missing). "
            "Not part of the autograded points.</p>",
            _table(["part", "answered", "not answered"], rows), *blocks]


def page(graded, parts, similar, pngs, codes=None):
    """The summary's HTML text (see the module); `codes`: codes_of's {name: {part: code}}."""
    reports = [r for _, r in graded if not isinstance(r, str)]
    sandbox = reports[0].warning if reports else ""
    rows = [[p, f"{100 * pass_rate(reports, p):.0f}%",
             "; ".join(f"{cause} ({n})" for cause, n in part_causes(graded, p)) or "-"]
            for p in parts]
    pairs = [[" and ".join(s["students"]), f"{s['similarity']:.2f}", s["shared_tokens"],
              ", ".join(s["parts"])] for s in similar]
    lost = [[name, why] for name, why in graded if isinstance(why, str)]
    body = [f"<h1>Class summary: {len(graded)} folders, {len(reports)} graded</h1>",
            f"<p>Parts: {html.escape(', '.join(parts))}. {html.escape(sandbox)}</p>",
            "<h2>Scores</h2>", _image("scores.png", pngs["scores.png"], "score distribution"),
            "<h2>Parts</h2>", _image("pass_rates.png", pngs["pass_rates.png"], "pass rates"),
            _table(["part", "pass rate", "most common causes (students)"], rows),
            "<h2>Similar solutions (for the teacher only)</h2>",
            "<p>Pairs whose solution regions match beyond renaming and reformatting, beyond "
            "the reference's code and what many students wrote: a reason to look, not a "
            "verdict.</p>",
            _table(["students", "similarity", "shared tokens", "parts"], pairs) if pairs
            else "<p>No pair above the threshold.</p>"]
    body += derivations_section(graded, parts, codes or {})
    if lost:
        body += ["<h2>Not graded</h2>", _table(["folder", "why"], lost)]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>Class summary</title><style>{STYLE}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def write_report(folder, graded, parts, similar, dirs=None):
    """Write folder/index.html and its PNG figures (each file atomically); the page's path.
    `dirs`: {name: folder} of the students, whose code the page shows beside their
    derivations."""
    need_matplotlib()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    pngs = figures(graded, parts)
    for name, png in pngs.items():
        with atomic_write(folder / name, "wb", suffix=".png") as file:
            file.write(png)
    with atomic_write(folder / "index.html", "w", suffix=".html") as file:
        file.write(page(graded, parts, similar, pngs, codes_of(dirs, parts)))
    return folder / "index.html"
