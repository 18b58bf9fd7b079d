"""`python -m numpy_transformer lessons`, run as a user types it: list, copy out (--out), and
the website (--html), each in a fresh process with its exit status and messages checked.

The whole site (every lesson executed, about 3 minutes) is `-m slow`; two small lessons and a
failing one keep the mechanism checked in the main suite. The packaging tests build a real
wheel and check that the lessons are inside it and found from it.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from doors import error, ok

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
LESSONS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
NT = [sys.executable, "-m", "numpy_transformer", "lessons"]


def lessons(*args, env=None, cwd=None, timeout=900):
    """Run `python -m numpy_transformer lessons ARGS`; the CompletedProcess (text output)."""
    return subprocess.run([*NT, *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout, stdin=subprocess.DEVNULL,
                          env={**os.environ, **(env or {})})


def drawn(notebook):
    """How many figures a lesson surely draws: its plt.show() calls outside any block."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    lines = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return len(re.findall(r"^\S.*plt\.show\(\)", lines, flags=re.M))


def check_site(site, names, said):
    """Every page exists, shows its figures (as many as the command said, and at least those
    its code surely draws) and no error; index.html and the bars link every page."""
    index = (site / "index.html").read_text(encoding="utf-8")
    for i, name in enumerate(names):
        page = (site / f"{name}.html").read_text(encoding="utf-8")
        assert f'href="{name}.html"' in index, name
        assert "Traceback" not in page and 'class="ansi-red-fg"' not in page, name
        figures = len(re.findall(r'<img [^>]*src="data:image/png;base64,', page))
        reported = re.search(rf"^  {name} +\d+\.\d s  (\d+) figures?$", said, flags=re.M)
        assert reported and figures == int(reported.group(1)), f"{name}: {figures}\n{said}"
        assert figures >= drawn(NOTEBOOKS / f"{name}.ipynb"), f"{name}: {figures} figures"
        assert 'href="index.html"' in page, name
        if i + 1 < len(names):
            assert f'href="{names[i + 1]}.html" rel="next"' in page, name
        if i > 0:
            assert f'href="{names[i - 1]}.html" rel="prev"' in page, name
    assert len(re.findall(r'<a href="\d\d_[^"]+\.html"', index)) >= len(names)


def test_lessons_lists_every_lesson():
    out = ok(lessons())
    assert out.startswith(f"{len(LESSONS)} lessons in ")
    for notebook in LESSONS:
        assert f"  {notebook.name[:2]}  " in out, notebook.name
    assert "--out" in out and "--html" in out


def test_out_copies_every_lesson_and_refuses_to_overwrite(tmp_path):
    out = tmp_path / "lessons"
    said = ok(lessons("--out", out))
    assert f"{len(LESSONS) + 1} files written" in said and f"jupyter lab {out}" in said
    for source in [*LESSONS, NOTEBOOKS / "README.md"]:
        assert (out / source.name).read_bytes() == source.read_bytes(), source.name
    assert "0 files written" in ok(lessons("--out", out))          # the same files: no change

    edited, first = out / LESSONS[3].name, out / LESSONS[0].name
    edited.write_text("my notes")
    first.unlink()
    error(lessons("--out", out), 2, LESSONS[3].name, "--overwrite")
    assert edited.read_text() == "my notes" and not first.exists()  # nothing written at all
    assert "2 files written" in ok(lessons("--out", out, "--overwrite"))
    assert edited.read_bytes() == LESSONS[3].read_bytes() and first.is_file()


def test_only_selects_lessons_and_bad_choices_are_refused(tmp_path):
    ok(lessons("--out", tmp_path / "two", "--only", "1", LESSONS[7].stem[:6]))
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == \
        sorted([LESSONS[0].name, LESSONS[7].name, "README.md"])
    error(lessons("--only", "99"), 2, "--only", "'99'")
    error(lessons("--overwrite"), 2, "--overwrite", "--out", "--html")
    error(lessons("--from", tmp_path / "two" / "nowhere"), 2, "--from", "no lessons")
    assert not (tmp_path / "site").exists()


@pytest.mark.slow          # nbconvert runs two lessons (9 s): CI's slow pass
def test_html_builds_pages_for_two_lessons(tmp_path):
    site, names = tmp_path / "site", [LESSONS[0].stem, LESSONS[7].stem]
    said = ok(lessons("--html", site, "--only", "01", "08", timeout=300))
    assert "2 lesson pages and index.html" in said and "index.html" in said
    assert sorted(p.name for p in site.iterdir() if p.name != "mathjax") == sorted(
        [f"{n}.html" for n in names] + ["index.html"])
    check_site(site, names, said)
    check_offline(site, said)


def check_offline(site, said):
    """The pages load no script from the network: MathJax is in the site, found from the
    installed jupyter-server-mathjax (the notebooks extra)."""
    pytest.importorskip("jupyter_server_mathjax")
    assert (site / "mathjax" / "MathJax.js").is_file()
    assert re.search(r"; MathJax in mathjax/, \d\.\d MB\)", said), said
    assert "jupyter-server-mathjax is not installed" not in said
    for page in site.glob("*.html"):
        html = page.read_text(encoding="utf-8")
        assert '<script src="mathjax/MathJax.js?config=' in html, page.name
        assert not re.search(r"<script[^>]* src=\"(https?:)?//", html), page.name
        assert "https://cdn" not in html and "import(\"http" not in html, page.name


def write_lessons(folder, lessons):
    """folder/NAME.ipynb for each (name, code): a heading cell and one code cell."""
    folder.mkdir()
    for name, code in lessons:
        cells = [{"id": "a", "cell_type": "markdown", "metadata": {}, "source": f"# {name}"},
                 {"id": "b", "cell_type": "code", "metadata": {}, "source": code, "outputs": [],
                  "execution_count": None}]
        (folder / f"{name}.ipynb").write_text(json.dumps(
            {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "language": "python",
             "display_name": "Python 3"}}, "nbformat": 4, "nbformat_minor": 5}))


@pytest.mark.slow
def test_html_says_what_the_site_lacks_here_and_still_builds(tmp_path):
    """A lesson using a module that is not installed (as lesson 16 without PyTorch) and no
    jupyter-server-mathjax (hidden by an empty package of that name): a warning line for each,
    before any lesson runs, and the pages load MathJax from the CDN."""
    write_lessons(tmp_path / "mine", [
        ("01_optional", "try:\n    import no_such_module_xyz\nexcept ImportError:\n"
                        "    no_such_module_xyz = None\n    print('skipped')"),
        ("02_plain", "print(6 * 7)")])
    (tmp_path / "hide" / "jupyter_server_mathjax").mkdir(parents=True)
    (tmp_path / "hide" / "jupyter_server_mathjax" / "__init__.py").write_text("")
    site = tmp_path / "site"
    said = ok(lessons("--html", site, "--from", tmp_path / "mine", timeout=300,
                      env={"PYTHONPATH": str(tmp_path / "hide")}))
    lines = said.splitlines()
    assert lines[0] == ('warning: jupyter-server-mathjax is not installed: the pages load MathJax '
                        'from a CDN, so their equations show as raw LaTeX without a network; '
                        'pip install "numpy_transformer[notebooks]" (from a clone: pip install '
                        '-e ".[notebooks]") brings it'), said
    assert lines[1] == ("warning: lesson 01 needs no_such_module_xyz, which is not installed: "
                        "its page shows the cells that use it as skipped; pip install "
                        "no_such_module_xyz to build it fully"), said
    assert lines[2].startswith("Executing 2 lessons") and "lesson 02" not in said
    assert "skipped" in (site / "01_optional.html").read_text(encoding="utf-8")
    assert not (site / "mathjax").exists() and "MathJax in" not in said
    assert "https://cdnjs.cloudflare.com/ajax/libs/mathjax/" in \
        (site / "02_plain.html").read_text(encoding="utf-8")
    index = (site / "index.html").read_text(encoding="utf-8")    # the index marks the page
    assert index.count("Built without no_such_module_xyz") == 1, index
    row = index[index.index("01_optional.html"):index.index("02_plain.html")]
    assert "Built without no_such_module_xyz" in row and "pip install no_such_module_xyz" in row


@pytest.mark.slow
def test_html_names_a_lesson_that_fails_and_writes_no_page_for_it(tmp_path):
    for needed in ("nbconvert", "ipykernel"):      # the notebooks extra
        pytest.importorskip(needed)
    source = tmp_path / "mine"
    write_lessons(source, [("01_works", "print(6 * 7)"),
                           ("02_broken", "raise ValueError('on purpose')")])
    site = tmp_path / "site"
    done = lessons("--html", site, "--from", source, timeout=300)
    error(done, 1, "1 of 2 lessons failed", "02_broken", "cell 2", "ValueError: on purpose")
    assert re.search(r"^  02_broken +\d+\.\d s  FAILED: ", done.stdout, flags=re.M)
    assert "42" in (site / "01_works.html").read_text(encoding="utf-8")
    assert not (site / "02_broken.html").exists() and not (site / "index.html").exists()


def test_html_without_nbconvert_says_which_extra_to_install(tmp_path):
    (tmp_path / "nbconvert.py").write_text("raise ImportError('No module named nbconvert')\n")
    done = lessons("--html", tmp_path / "site", env={"PYTHONPATH": str(tmp_path)})
    error(done, 2, "nbconvert", "[notebooks]")
    assert not (tmp_path / "site").exists()


@pytest.mark.slow
def test_html_builds_the_whole_site(tmp_path):
    site = tmp_path / "site"
    said = ok(lessons("--html", site, timeout=1800))
    assert f"{len(LESSONS)} lesson pages and index.html" in said
    check_site(site, [p.stem for p in LESSONS], said)
    check_offline(site, said)


def test_pyproject_lists_every_package():
    """The lessons' mapping needs packages listed by hand: none may be forgotten."""
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = {".".join(p.parent.relative_to(ROOT).parts)
             for p in (ROOT / "numpy_transformer").rglob("__init__.py")}
    assert set(config["packages"]) == found | {"numpy_transformer.lessons"}
    assert config["package-dir"]["numpy_transformer.lessons"] == "notebooks"


def test_a_wheel_ships_the_lessons_and_the_command_finds_them(tmp_path):
    """Build a wheel from a copy of the project, install it alone, and copy the lessons out."""
    pytest.importorskip("setuptools", minversion="77")
    project = tmp_path / "project"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("numpy_transformer", "notebooks"):
        shutil.copytree(ROOT / name, project / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, project / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", str(project), "--no-deps", "--no-build-isolation", "-w",
                    str(tmp_path / "wheel")], check=True, capture_output=True, timeout=300)
    wheel = next((tmp_path / "wheel").glob("numpy_transformer-*.whl"))
    subprocess.run([*pip, "install", "--no-deps", "--target", str(tmp_path / "site-packages"),
                    str(wheel)], check=True, capture_output=True, timeout=300)
    installed = tmp_path / "site-packages" / "numpy_transformer" / "lessons"
    assert sorted(p.name for p in installed.iterdir()) == sorted(
        [p.name for p in LESSONS] + ["README.md", "capstone"])
    for name in ("shakespeare_char.npz", "history.json"):         # lesson 17's checkpoint
        shipped = installed / "capstone" / name
        assert shipped.read_bytes() == (NOTEBOOKS / "capstone" / name).read_bytes(), name
    env = {"PYTHONPATH": str(tmp_path / "site-packages")}     # not the checkout: cwd elsewhere
    assert ok(lessons(env=env, cwd=tmp_path)).startswith(f"{len(LESSONS)} lessons in {installed}:")
    ok(lessons("--out", tmp_path / "copy", env=env, cwd=tmp_path))
    assert sorted(p.name for p in (tmp_path / "copy").iterdir()) == sorted(
        [p.name for p in LESSONS] + ["README.md"])
