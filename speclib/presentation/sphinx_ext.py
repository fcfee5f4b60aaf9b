"""Sphinx extension for the HTML book: live figures and no remote resources.

Registered in ``_config.yml`` (``sphinx: extra_extensions``). It

* writes ``_static/speclib/speclib_model.js`` (speclib's closed forms printed
  as JavaScript, and the colours) and ``_static/speclib/figures/<name>.js``
  (one live figure's definition: controls, panels, recorded compute graphs;
  see :mod:`speclib.presentation.web.codegen`), and copies ``speclib_live.js``
  / ``.css``;
* adds them to every page holding a cell tagged ``figure-<name>`` for a live
  figure (the model, the renderer and that page's figures only), and to no
  other page;
* serves MathJax from ``_static/mathjax`` instead of a CDN, drops the
  ipywidgets embedding scripts MyST-NB would load from a CDN (the notebooks'
  widgets need a kernel anyway; the live figures replace them) and thebe's
  loader (off in _config.yml, yet still included by jupyter-book);
* sets the theme's default colour mode, whose absence logs a console error.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

from .web import offline
from .web import codegen

STATIC_SUBDIR = "speclib"
MODEL_JS = f"{STATIC_SUBDIR}/speclib_model.js"
FIGURES_SUBDIR = f"{STATIC_SUBDIR}/figures"
LIVE_JS = f"{STATIC_SUBDIR}/speclib_live.js"
LIVE_CSS = f"{STATIC_SUBDIR}/speclib_live.css"
TABLES_CSS = f"{STATIC_SUBDIR}/speclib_tables.css"
MATHJAX_SUBDIR = "mathjax"
_HAND_WRITTEN = Path(__file__).parent / "web" / "static"
_FIGURE_TAG = re.compile(r"\btag_figure-([A-Za-z0-9_]+)")


def _is_remote(url: str) -> bool:
    return bool(re.match(r"^(?:[a-z][a-z0-9+.-]*:)?//", url or "", re.IGNORECASE))


def _configure(app, config):
    if "mathjax_path" in config and _is_remote(config.mathjax_path):
        config.mathjax_path = f"{MATHJAX_SUBDIR}/{offline.MATHJAX_ENTRY}"
    if "nb_ipywidgets_js" in config:
        config.nb_ipywidgets_js = {}
    # pydata-sphinx-theme reads the colour mode from html_context; left unset,
    # its script logs "Got invalid theme mode" as an error on a reader's first visit.
    config.html_context = {"default_mode": "auto", **(config.html_context or {})}
    # Without an icon the browser asks for /favicon.ico, a 404 in the console.
    if not config.html_favicon:
        config.html_favicon = str(_HAND_WRITTEN / "favicon.svg")


def _is_thebe(asset) -> bool:
    name = getattr(asset, "filename", None) or ""
    body = (getattr(asset, "attributes", None) or {}).get("body", "")
    return name.endswith(("sphinx-thebe.js", "sphinx-thebe.css")) or "THEBE_JS_URL" in body


WIDGET_STATE_TYPE = "application/vnd.jupyter.widget-state+json"


def _is_widget_state(asset) -> bool:
    return (getattr(asset, "attributes", None) or {}).get("type") == WIDGET_STATE_TYPE


def _drop_dead_assets(context, keep_thebe: bool):
    """Remove from the page what cannot work without a server or a CDN.

    * thebe (live code through a remote Binder; off in _config.yml): jupyter-book
      1.0.4 still includes its loader, and its config script twice, which is a
      SyntaxError on every page;
    * the ipywidgets state MyST-NB embeds for the notebooks' widget cells: it
      is only read by the widget manager from a CDN (dropped in _configure),
      and it can weigh megabytes (a widget's images are in it).
    """
    for key in ("script_files", "css_files"):
        assets = context.get(key)
        if assets is not None:
            assets[:] = [a for a in assets
                         if not (_is_widget_state(a) or (not keep_thebe and _is_thebe(a)))]


def _add_page_assets(app, pagename, templatename, context, doctree):
    if app.builder.format != "html":
        return
    _drop_dead_assets(context, app.config.speclib_keep_thebe)
    if doctree is None:
        return
    names = sorted(set(_FIGURE_TAG.findall(context.get("body", ""))) & set(codegen.live_names()))
    if names:
        app.add_css_file(LIVE_CSS)
        app.add_js_file(MODEL_JS, loading_method="defer")
        for name in names:
            app.add_js_file(f"{FIGURES_SUBDIR}/{name}.js", loading_method="defer")
        app.add_js_file(LIVE_JS, loading_method="defer")


def _write_live_assets(app):
    """Write the live-figure scripts before any page is written, so that Sphinx
    stamps their links with a checksum (?v=...) and a reader's browser never
    pairs a cached old script with a new page."""
    if app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / STATIC_SUBDIR
    (target / "figures").mkdir(parents=True, exist_ok=True)
    (target / "speclib_model.js").write_text(codegen.model_javascript(), encoding="utf-8")
    for name in codegen.live_names():
        (target / "figures" / f"{name}.js").write_text(codegen.figure_javascript(name), encoding="utf-8")
    for path in sorted(_HAND_WRITTEN.iterdir()):
        if path.suffix in (".js", ".css"):
            shutil.copyfile(path, target / path.name)


def _copy_mathjax(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    if not _is_remote(app.config.mathjax_path) and app.config.mathjax_path.startswith(f"{MATHJAX_SUBDIR}/"):
        offline.copy_mathjax(Path(app.outdir) / "_static" / MATHJAX_SUBDIR)


def setup(app):
    app.add_config_value("speclib_keep_thebe", False, "html")
    app.connect("config-inited", _configure, priority=900)
    # After MyST-NB's and MathJax's own html-page-context handlers (500).
    app.connect("html-page-context", _add_page_assets, priority=900)
    app.connect("builder-inited", _write_live_assets)
    app.add_css_file(TABLES_CSS)  # every page: the chapters' tables of computed numbers
    app.connect("build-finished", _copy_mathjax)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
