"""The Jupyter lessons as files to copy out, and as a website with every output rendered.

A wheel ships notebooks/ as `numpy_transformer/lessons/`; a checkout reads notebooks/ itself.

    find_lessons()                  -> [Lesson], in order (name, number, title, path)
    select(lessons, only)           -> the lessons named by number or name ("01", "8", "08_grad")
    copy_lessons(lessons, out)      -> the files written (refuses to replace different files)
    build_site(lessons, out)        -> [Page]: one executed HTML page per lesson, and index.html

    build_warnings(lessons)         -> what the site will lack here (MathJax, optional modules)

nbconvert makes the site: `ExecutePreprocessor` runs each lesson in a fresh kernel, `HTMLExporter`
renders it (template "lab" + a previous / index / next bar, figures embedded, MathJax copied into
DIR/mathjax/: site_assets.py); index.html is a notebook of links, rendered the same way.
"""

import functools
import logging
import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ...version import __version__
from ...errors import InputError
from ...system.files import atomic_write, read_notebook_cells, refuse_special
from . import site_assets
from .needs import how_to_install, missing_modules

INSTALL = ('pip install "numpy_transformer[notebooks]" (from a clone: '
           'pip install -e ".[notebooks]")')

@dataclass(frozen=True)
class Lesson:
    """One lesson notebook: `01_embeddings_...` (name), "01" (number), its heading (title)."""
    name: str
    number: str
    title: str
    path: Path


@dataclass(frozen=True)
class Page:
    """A built page: its lesson, its file, how many figures it shows, how long it ran, and
    the optional modules it was built without (its cells that use them show as skipped)."""
    lesson: Lesson
    path: Path
    figures: int
    seconds: float
    missing: tuple = ()


def lessons_folder():
    """The folder holding the lessons: the package data of a wheel, else notebooks/."""
    package = Path(__file__).resolve().parents[2]
    for folder in (package / "lessons", package.parent / "notebooks"):
        if any(folder.glob("[0-9][0-9]_*.ipynb")):
            return folder
    raise InputError(f"no lessons in {package / 'lessons'} nor {package.parent / 'notebooks'}"
                     f" (a broken install? reinstall numpy_transformer)")


def find_lessons(folder=None):
    """Every lesson (NN_name.ipynb) in `folder` (default: the package's), in order."""
    folder = Path(folder) if folder is not None else lessons_folder()
    paths = sorted(folder.glob("[0-9][0-9]_*.ipynb"))
    if not paths:
        raise InputError(f"--from {folder}: no lessons there (files named like "
                         f"01_name.ipynb)")
    return [Lesson(path.stem, path.stem[:2], _title(path), path) for path in paths]


def _title(path):
    """The first markdown heading of a notebook ('Lesson 1 — Token embeddings ...')."""
    for cell in read_notebook_cells(path):
        if cell.get("cell_type") == "markdown":
            for line in "".join(cell.get("source", "")).splitlines():
                if line.startswith("#"):
                    return line.lstrip("#").strip()
    return path.stem


def select(lessons, only):
    """The lessons named in `only` (numbers such as 1 or 01, or the start of a name), in order."""
    if not only:
        return list(lessons)
    chosen = set()
    for key in only:
        hits = [x for x in lessons if (key.isdigit() and int(key) == int(x.number))
                or (not key.isdigit() and x.name.startswith(key))]
        if not hits:
            raise InputError(f"--only: no lesson {key!r}; the lessons are "
                             f"{', '.join(x.number for x in lessons)} (or the start of a name)")
        chosen.update(x.name for x in hits)
    return [x for x in lessons if x.name in chosen]


def copy_lessons(lessons, out, *, overwrite=False):
    """Copy the lessons and their README into `out`; {file name: "written" or "unchanged"}.

    A file already in `out` with the same bytes is left alone; one that differs is replaced
    only with `overwrite`, else nothing at all is written and the error names every such file.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: exists and is not a folder")
    readme = lessons[0].path.parent / "README.md"
    sources = [x.path for x in lessons] + ([readme] if readme.is_file() else [])
    for source in sources:              # never read or written through: a FIFO would block
        refuse_special(out / source.name, "--out")
    different = [s.name for s in sources if (out / s.name).exists()
                 and (out / s.name).read_bytes() != s.read_bytes()]
    if different and not overwrite:
        raise InputError(f"--out {out}: {len(different)} file{'s' if len(different) > 1 else ''}"
                         f" already there and different: {', '.join(different)} (pass "
                         f"--overwrite to replace them)")
    out.mkdir(parents=True, exist_ok=True)
    done = {}
    for source in sources:
        target = out / source.name
        done[source.name] = "unchanged" if target.exists() and source.name not in different \
            else "written"
        if done[source.name] == "written":
            with atomic_write(target, "wb", suffix=target.suffix) as file:
                file.write(source.read_bytes())
    return done


def check_site_tools():
    """Import nbconvert, a kernel and matplotlib, or say (one line) which extra brings them."""
    missing = []
    for module in ("nbconvert", "ipykernel", "matplotlib"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise InputError(f"lessons --html needs nbconvert, ipykernel and matplotlib (missing: "
                         f"{', '.join(missing)}): {INSTALL}")


def build_warnings(lessons):
    """One line for each thing the site will lack when built here: MathJax (without
    jupyter-server-mathjax the pages load it from a CDN), and the optional modules a lesson
    uses that are not installed (lesson 16 without PyTorch: cells that print "skipped")."""
    lines = [] if site_assets.mathjax_source() else [
        f"warning: {site_assets.PACKAGE} is not installed: the pages load MathJax from a CDN, "
        f"so their equations show as raw LaTeX without a network; {INSTALL} brings it"]
    for lesson in lessons:
        missing = missing_modules(lesson.path)
        if missing:
            one = len(missing) == 1
            lines.append(
                f"warning: lesson {lesson.number} needs {' and '.join(missing)}, which "
                f"{'is' if one else 'are'} not installed: its page shows the cells that use "
                f"{'it' if one else 'them'} as skipped; "
                f"{'; '.join(map(how_to_install, missing))} to build it fully")
    return lines


class LessonFailed(Exception):
    """A lesson that did not run to the end, or left an error in its outputs."""


def build_site(lessons, out, *, timeout=600, report=None):
    """Execute every lesson, write `out/NAME.html` for each and `out/index.html`; the pages.

    `report(page_or_None, lesson, seconds, error)` is called as each lesson ends. A lesson that
    fails gets no page; after trying all of them, LessonFailed lists every failure (and no
    index is written).
    """
    check_site_tools()
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"--html {out}: exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    exporter = site_assets.exporter(site_assets.bundle_mathjax(out))
    pages, failures = [], []
    for i, lesson in enumerate(lessons):
        start = time.perf_counter()
        try:
            notebook = execute(lesson.path, timeout=timeout)
        except LessonFailed as err:
            failures.append(f"{lesson.name} ({err})")
            if report:
                report(None, lesson, time.perf_counter() - start, str(err))
            continue
        seconds = time.perf_counter() - start
        notebook.metadata["title"] = lesson.title.replace("`", "")     # the page's <title>
        page = Page(lesson, out / f"{lesson.name}.html", _figures(notebook), seconds,
                    tuple(missing_modules(lesson.path)))
        _write(exporter, notebook, page.path, _nav(lessons, i))
        pages.append(page)
        if report:
            report(page, lesson, seconds, None)
    if failures:
        raise LessonFailed(f"{len(failures)} of {len(lessons)} lesson"
                           f"{'s' if len(lessons) > 1 else ''} failed: {'; '.join(failures)}")
    _write(exporter, index_notebook(pages), out / "index.html", _nav(lessons, -1))
    return pages


def execute(path, *, timeout=600):
    """The notebook at `path`, run top to bottom in a fresh kernel in a scratch folder."""
    import nbformat
    from jupyter_client.kernelspec import NoSuchKernel
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
    from nbconvert.preprocessors import ExecutePreprocessor
    notebook = nbformat.read(str(path), as_version=4)
    logging.getLogger("tornado.general").setLevel(logging.CRITICAL)   # kernel-shutdown noise
    runner = ExecutePreprocessor(timeout=timeout, extra_arguments=["--IPKernelApp.log_level=ERROR"])
    with tempfile.TemporaryDirectory(prefix="lesson-") as scratch, \
            open(os.path.join(scratch, "kernel.log"), "wb") as kernel_log:
        # the kernel's own stderr (a cell's comes as outputs): ipykernel's shutdown noise
        runner.setup_kernel = functools.partial(runner.setup_kernel, stderr=kernel_log)
        try:
            runner.preprocess(notebook, {"metadata": {"path": scratch}})
        except CellExecutionError as err:
            raise LessonFailed(f"cell {_error_cell(notebook)}: {err.ename}: "
                               f"{' '.join(str(err.evalue).split())}") from None
        except CellTimeoutError:
            raise LessonFailed(f"a cell ran over --timeout {timeout:g} s") from None
        except DeadKernelError:
            raise LessonFailed("the kernel died (out of memory?)") from None
        except NoSuchKernel as err:
            raise InputError(f"no Jupyter kernel {err.name!r}: {INSTALL}") from None
    if _error_cell(notebook) != "?":       # a cell tagged raises-exception: still no errors
        raise LessonFailed(f"cell {_error_cell(notebook)} shows an error or a traceback")
    return notebook


def _error_cell(notebook):
    """The number (from 1) of the first cell showing an error or a traceback, or '?'."""
    for number, cell in enumerate(notebook.cells, 1):
        if any(o.get("output_type") == "error" or "Traceback (most recent call last)"
               in str(o.get("text", "")) for o in cell.get("outputs", [])):
            return number
    return "?"


def _figures(notebook):
    return sum(1 for cell in notebook.cells for o in cell.get("outputs", [])
               if {"image/png", "image/svg+xml"} & set(o.get("data", {})))


def _nav(lessons, i):
    def link(j):
        return ((f"{lessons[j].name}.html", lessons[j].title.replace("`", ""))
                if 0 <= j < len(lessons) else None)
    return {"previous": link(i - 1), "next": link(i + 1)}


def _write(exporter, notebook, path, nav):
    html, _ = exporter.from_notebook_node(notebook, resources={"lesson_nav": nav})
    with atomic_write(path, "w", suffix=".html") as file:     # never over a FIFO or a link
        file.write(html)


def index_notebook(pages):
    """A one-cell notebook: the lessons as a table of links, with what each one teaches."""
    from nbformat.v4 import new_markdown_cell, new_notebook
    teaches = _descriptions(pages[0].lesson.path.parent / "README.md") if pages else {}
    rows = [f"| [{p.lesson.title}]({p.path.name}) | {teaches.get(p.lesson.name, '')}"
            f"{_without(p.missing)} | {p.figures} | {p.seconds:.0f} s |" for p in pages]
    text = "\n".join([
        "# numpy_transformer: the lessons\n",
        "Step-through lessons on the Transformer of *Attention Is All You Need*, built on the "
        "package's NumPy code with a hand-written backward pass for every layer. Each page "
        "is a lesson executed top to bottom, with its outputs and figures.\n",
        "| lesson | what it teaches | figures | run time |\n| --- | --- | --- | --- |", *rows,
        f"\nBuilt by `python -m numpy_transformer lessons --html` (numpy_transformer "
        f"{__version__}, {time.strftime('%Y-%m-%d')}). To run a lesson yourself: "
        f"`python -m numpy_transformer lessons --out lessons` and `jupyter lab lessons`.",
    ])
    notebook = new_notebook(cells=[new_markdown_cell(text)])
    notebook.metadata["title"] = "numpy_transformer: the lessons"
    return notebook


def _without(missing):
    """The index's mark of a page built without its optional modules ('' when none)."""
    if not missing:
        return ""
    one, install = len(missing) == 1, "; ".join(map(how_to_install, missing))
    return (f" **Built without {' and '.join(missing)}: the cells that use "
            f"{'it' if one else 'them'} show as skipped** ({install} to build it fully).")


def _descriptions(readme):
    """{lesson name: 'what it teaches'} from the README's table, where there is one."""
    lines = readme.read_text(encoding="utf-8").splitlines() if readme.is_file() else []
    rows = (re.match(r"\| \[([^\]]+)\]\(\1\.ipynb\) \| (.*) \|\s*$", line) for line in lines)
    return {m.group(1): m.group(2) for m in rows if m}
