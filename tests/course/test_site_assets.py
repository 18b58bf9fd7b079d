"""site_assets: the lesson pages' template, and MathJax copied into the site from the installed
jupyter-server-mathjax (only what a page loads), so that the equations render offline."""

import pytest

from numpy_transformer.course.lessons import site_assets


def test_without_the_package_there_is_nothing_to_bundle(tmp_path, monkeypatch):
    monkeypatch.setattr(site_assets, "find_spec", lambda name: None)
    assert site_assets.mathjax_source() is None
    assert site_assets.bundle_mathjax(tmp_path / "site") is None
    assert not (tmp_path / "site").exists()


def test_bundle_copies_what_a_page_loads_and_no_more(tmp_path):
    pytest.importorskip("jupyter_server_mathjax")
    source = site_assets.mathjax_source()
    url = site_assets.bundle_mathjax(tmp_path)
    assert url == "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe"
    copied = {p.relative_to(tmp_path / "mathjax").as_posix()
              for p in (tmp_path / "mathjax").rglob("*") if p.is_file()}
    for name in ("MathJax.js", "config/TeX-AMS-MML_HTMLorMML-full.js", "config/Safe.js",
                 "extensions/Safe.js", "jax/output/HTML-CSS/fonts/STIX-Web/fontdata.js",
                 "fonts/HTML-CSS/STIX-Web/woff/STIXMathJax_Main-Regular.woff",
                 "localization/en/MathMenu.js", "LICENSE"):
        assert name in copied, name
        assert (tmp_path / "mathjax" / name).read_bytes() == (source / name).read_bytes()
    assert not any(name.startswith(("jax/output/SVG/", "localization/de/",
                                    "extensions/a11y/mathmaps/")) for name in copied)
    size = sum(p.stat().st_size for p in (tmp_path / "mathjax").rglob("*") if p.is_file())
    assert size < 3 * 2**20, size                     # of the package's 12 MB


def test_the_template_loads_no_script_from_a_cdn_but_mathjax():
    pytest.importorskip("nbconvert")
    from nbformat.v4 import new_markdown_cell, new_notebook
    page = new_notebook(cells=[new_markdown_cell("$x^2$")])
    nav = {"resources": {"lesson_nav": {"previous": None, "next": None}}}
    local, _ = site_assets.exporter("mathjax/MathJax.js").from_notebook_node(page, **nav)
    cdn, _ = site_assets.exporter().from_notebook_node(page, **nav)
    assert '<script src="mathjax/MathJax.js">' in local and 'webFont: "STIX-Web"' in local
    assert "https://cdn" not in local and "require.min.js" not in local and "mermaid" not in local
    assert "cdnjs.cloudflare.com/ajax/libs/mathjax/" in cdn and "STIX-Web" not in cdn
