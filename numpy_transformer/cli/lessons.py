"""`lessons`: the Jupyter lessons, copied out of the package or built into a website.

    python -m numpy_transformer lessons                        # list them
    python -m numpy_transformer lessons --out lessons          # copy them; jupyter lab lessons
    python -m numpy_transformer lessons --html site            # run all, write site/index.html
    python -m numpy_transformer lessons --html site --only 01 08   # just two lessons
    python -m numpy_transformer lessons --html site --from my_lessons   # an edited copy

The site carries MathJax (from jupyter-server-mathjax, the notebooks extra) so its equations
render offline; before building, a warning names what is missing here (that package; an
optional module a lesson uses, such as PyTorch for lesson 16, whose cells then say "skipped").

Exit status: 0 done, 2 bad input (a file in the way, an unknown lesson, nbconvert missing),
1 a lesson that failed to run (each one named, with its error).
"""

import os
import sys
import time
from pathlib import Path

from .options import add_common, positive_float


def add_parsers(commands):
    p = commands.add_parser(
        "lessons", help="copy the Jupyter lessons out of the package, or build their website",
        description="The step-through Jupyter lessons shipped inside the package. With no "
        "option, list them; --out DIR copies them (and their README) into DIR to open with "
        "Jupyter; --html DIR executes every lesson with nbconvert and writes a static website "
        "into DIR: one page per lesson with its outputs and figures, and index.html.")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--out", metavar="DIR", help="copy the lessons into DIR")
    what.add_argument("--html", metavar="DIR", help="execute the lessons and write their "
                      "website into DIR (a few minutes for all of them)")
    p.add_argument("--only", nargs="+", metavar="LESSON", help="just these lessons, by number "
                   "or by the start of their name (e.g. --only 01 08)")
    p.add_argument("--from", dest="source", metavar="DIR", help="the lessons in DIR (e.g. a "
                   "copy you edited) instead of the package's")
    p.add_argument("--overwrite", action="store_true", help="replace files already in DIR: "
                   "with --out, lessons that differ; with --html, the pages (by default that "
                   "is refused)")
    p.add_argument("--timeout", type=positive_float, default=600, metavar="SECONDS",
                   help="with --html: how long one cell may run before its lesson fails "
                   "(default 600)")
    add_common(p, threads="with --html: BLAS threads of the lessons' kernels (default 1)")
    p.set_defaults(run=run_lessons)


def run_lessons(args):
    from ..errors import InputError
    from ..course.lessons.site import find_lessons, select
    if args.overwrite and not (args.out or args.html):
        raise InputError("--overwrite goes with --out DIR or --html DIR")
    for option, folder in (("--out", args.out), ("--html", args.html)):
        if folder is not None and not folder.strip():
            raise InputError(f"{option}: expected a folder name, got {folder!r}")
    lessons = select(find_lessons(args.source), args.only)
    if args.out:
        return _copy(lessons, args.out, args.overwrite)
    if args.html:
        _check_pages(lessons, args.html, args.overwrite)
        return _site(lessons, args.html, args.timeout)
    return _list(lessons)


def _list(lessons):
    print(f"{len(lessons)} lessons in {lessons[0].path.parent}:")
    for lesson in lessons:
        print(f"  {lesson.number}  {lesson.title}")
    print("\nCopy them to open with Jupyter: python -m numpy_transformer lessons --out lessons"
          "\nBuild their website:           python -m numpy_transformer lessons --html site")
    return 0


def _copy(lessons, out, overwrite):
    from ..course.lessons.site import copy_lessons
    done = copy_lessons(lessons, out, overwrite=overwrite)
    written, same = (sum(v == state for v in done.values()) for state in ("written", "unchanged"))
    print(f"{len(lessons)} lesson{'s' if len(lessons) > 1 else ''}"
          f"{' and README.md' if 'README.md' in done else ''} in {os.path.join(out, '')}: "
          f"{written} file{'s' if written != 1 else ''} written"
          + (f", {same} already there" if same else ""))
    print(f"Open them with Jupyter (pip install \"numpy_transformer[notebooks]\", from a clone "
          f"pip install -e \".[notebooks]\", brings it):"
          f"\n  jupyter lab {out}")
    return 0


def _check_pages(lessons, out, overwrite):
    """--html DIR: the pages it would replace are refused without --overwrite, as --out's
    lessons are (before any lesson runs)."""
    from ..errors import InputError
    names = [f"{lesson.name}.html" for lesson in lessons] + ["index.html"]
    there = [name for name in names if os.path.lexists(os.path.join(out, name))]
    if there and not overwrite:
        raise InputError(f"--html {out}: {len(there)} file{'s' if len(there) > 1 else ''} "
                         f"already there: {', '.join(there)} (pass --overwrite to replace "
                         f"them)")


def _site(lessons, out, timeout):
    from ..course.lessons.site import LessonFailed, build_site, build_warnings, check_site_tools
    check_site_tools()
    for line in build_warnings(lessons):
        print(line, flush=True)
    print(f"Executing {len(lessons)} lesson{'s' if len(lessons) > 1 else ''} with nbconvert "
          f"into {os.path.join(out, '')} (a few seconds to a minute each)",
          flush=True)
    start = time.perf_counter()
    try:
        pages = build_site(lessons, out, timeout=timeout, report=_progress)
    except LessonFailed as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    size = sum(f.stat().st_size for f in Path(out).glob("*.html"))
    mathjax = sum(f.stat().st_size for f in Path(out, "mathjax").rglob("*") if f.is_file())
    index = Path(out).resolve() / "index.html"
    print(f"{len(pages)} lesson pages and index.html in {os.path.join(out, '')} "
          f"({sum(p.figures for p in pages)} figures, {size / 2**20:.1f} MB"
          + (f"; MathJax in mathjax/, {mathjax / 2**20:.1f} MB" if mathjax else "")
          + f") in {time.perf_counter() - start:.0f} s")
    print(f"Open {index.as_uri()} in a browser, or serve the folder:\n"
          f"  python -m http.server --directory {out}   # then http://localhost:8000")
    return 0


def _progress(page, lesson, seconds, error):
    if page is None:
        print(f"  {lesson.name:<42} {seconds:6.1f} s  FAILED: {error}", flush=True)
    else:
        print(f"  {lesson.name:<42} {seconds:6.1f} s  {page.figures} figure"
              f"{'s' if page.figures != 1 else ''}", flush=True)
