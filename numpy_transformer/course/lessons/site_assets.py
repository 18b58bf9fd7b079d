"""What a page of the lesson site is made of: nbconvert's "lab" template with a navigation bar,
and MathJax carried inside the site, so that the equations render without a network.

    mathjax_source()          -> the MathJax 2 folder of `jupyter-server-mathjax`, or None
    bundle_mathjax(out)       -> the pages' MathJax URL ("mathjax/MathJax.js?config=..."), or None
    exporter(mathjax_url)     -> nbconvert's HTMLExporter: our template, that MathJax (None: CDN)

nbconvert's pages load MathJax, require.js and mermaid from a CDN. The lessons need only MathJax
(no widgets, no diagrams), so the template drops the other two, and MathJax comes from the
`jupyter-server-mathjax` package (in the `notebooks` and `dev` extras): MathJax 2.7 with its
HTML-CSS output and STIX-Web fonts. Only what a page loads is copied (about 3 MB of its 12):
the SVG output's fonts (not usable without the SVG jax, which the package leaves out), the
accessibility explorer's speech rules and the 50 other languages stay behind.
"""

import shutil
from importlib.util import find_spec
from pathlib import Path

PACKAGE = "jupyter-server-mathjax"
FOLDER = "mathjax"                                     # in the site: out/mathjax/MathJax.js
CONFIG = "MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe"    # Jupyter's own (HTML-CSS)
KEEP = ("MathJax.js", "LICENSE", "config/", "extensions/", "jax/", "localization/en/",
        "fonts/HTML-CSS/STIX-Web/woff/")
SKIP = ("jax/output/SVG/", "extensions/a11y/mathmaps/", "extensions/a11y/mathjax-sre.js")

NAV = """\
<nav class="lessons-nav">
  <span>{% if nav.previous %}<a href="{{ nav.previous[0] }}" rel="prev">&larr;
    {{ nav.previous[1] | e }}</a>{% endif %}</span>
  <span><a href="index.html">All lessons</a></span>
  <span>{% if nav.next %}<a href="{{ nav.next[0] }}" rel="next">{{ nav.next[1] | e }}
    &rarr;</a>{% endif %}</span>
</nav>
"""

# MathJax of the package has the STIX-Web fonts only (its default would look for TeX fonts)
PAGE = """\
{%- extends 'index.html.j2' -%}
{% block html_head_js_requirejs %}{% endblock html_head_js_requirejs %}
{% block html_head_js_mermaidjs %}{% endblock html_head_js_mermaidjs %}
{% block html_head_js_mathjax %}
{%- if not resources.mathjax_url.startswith('http') %}
<script type="text/x-mathjax-config">
MathJax.Hub.Config({"HTML-CSS": {availableFonts: [], preferredFont: null, webFont: "STIX-Web",
                                 imageFont: null}});
</script>
{%- endif %}
{{ super() }}
{% endblock html_head_js_mathjax %}
{% block extra_css %}
<style>
nav.lessons-nav { display: flex; justify-content: space-between; gap: 1em; margin: 0.5em auto;
  padding: 0.6em 1em; max-width: 1100px; font-family: var(--jp-ui-font-family);
  border-bottom: 1px solid var(--jp-border-color2); }
nav.lessons-nav span { flex: 1; text-align: center; }
nav.lessons-nav span:first-child { text-align: left; } nav.lessons-nav span:last-child { text-align: right; }
</style>
{% endblock extra_css %}
{%- block body_header -%}
{{ super() }}
{% set nav = resources.lesson_nav %}{% include 'lessons_nav.html.j2' %}
{%- endblock body_header -%}
{% block body_footer %}{% set nav = resources.lesson_nav %}{% include 'lessons_nav.html.j2' %}
{{ super() }}{% endblock body_footer %}
"""


def mathjax_source():
    """The folder holding MathJax.js in the installed `jupyter-server-mathjax`, or None."""
    spec = find_spec("jupyter_server_mathjax")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        static = Path(location) / "static"
        if (static / "MathJax.js").is_file():
            return static
    return None


def mathjax_files(source):
    """The files of `source` a page loads (KEEP less SKIP), as paths relative to it."""
    files = (p.relative_to(source).as_posix() for p in sorted(source.rglob("*")) if p.is_file())
    return [Path(name) for name in files
            if name.startswith(KEEP) and not name.startswith(SKIP)]


def bundle_mathjax(out):
    """Copy MathJax into `out/mathjax/`; the URL the pages load it from, or None when
    `jupyter-server-mathjax` is not installed (the pages then load it from a CDN)."""
    source = mathjax_source()
    if source is None:
        return None
    for name in mathjax_files(source):
        target = Path(out) / FOLDER / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / name, target)
    return f"{FOLDER}/{CONFIG}"


def exporter(mathjax_url=None):
    """nbconvert's HTML exporter, lab template, with our navigation bar and MathJax in it."""
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter
    loader = DictLoader({"lessons_page.html.j2": PAGE, "lessons_nav.html.j2": NAV})
    local = {"mathjax_url": mathjax_url} if mathjax_url else {}
    return HTMLExporter(template_name="lab", extra_loaders=[loader],
                        template_file="lessons_page.html.j2", **local)
