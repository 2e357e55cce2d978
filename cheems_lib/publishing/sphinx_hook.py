"""The book's Sphinx extension (``_config.yml``'s ``extra_extensions``): it de-duplicates page scripts (a
repeated thebe config is a JavaScript error), adds the book's style sheet (``static/cheems.css``: wide tables
wrap and fit the page), loads DataTables on the pages with an interactive table
(:func:`cheems_lib.publishing.interactive.page_script`) and adds the ``{cheems-categories}`` directive
(:func:`category_table`) and the citation directives of the cite page
(:func:`cheems_lib.publishing.citation.setup_directives`)."""
from __future__ import annotations

from pathlib import Path

from ..world.corpus import CATEGORIES, DETERMINISTIC
from .citation import setup_directives
from .interactive import page_script

STATIC = Path(__file__).parent / "static"
"""The book's own static files (``cheems.css``), served from ``_static/``."""

__all__ = ["category_table", "setup"]


def _dedupe_scripts(app, pagename, templatename, context, doctree) -> None:
    """Drop repeated <script> entries: sphinx-thebe adds its inline config once per read phase,
    and a second ``const THEBE_JS_URL`` declaration is a JavaScript error on every page."""
    files = context.get("script_files")
    if not files:
        return
    seen, kept = set(), []
    for js in files:
        # an inline script is registered once with filename None and once with '' (same body)
        key = (getattr(js, "filename", str(js)) or "", repr(sorted(getattr(js, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            kept.append(js)
    files[:] = kept


def _load_datatables(app, pagename, templatename, context, doctree) -> None:
    """Append DataTables (itables' offline bundle) to a page that holds an interactive table, once per page."""
    if "body" in context:
        context["body"] += page_script(context["body"])


def _add_static(app, config) -> None:
    config.html_static_path.append(str(STATIC))


def category_table() -> str:
    """The paper's top-level categories as a Markdown table, from :data:`cheems_lib.world.corpus.CATEGORIES` and
    :data:`~cheems_lib.world.corpus.DETERMINISTIC` (the ``{cheems-categories}`` directive of the book's pages)."""
    rows = [f"| {name} | {english} | {'yes' if name in DETERMINISTIC else 'no'} |" for name, english in CATEGORIES.items()]
    return "\n".join(["| `category[0]` | in English | deterministic answers |", "| --- | --- | --- |", *rows])


def _category_directive():
    """``{cheems-categories}``: :func:`category_table`, parsed where it stands, so a page lists the library's
    categories at every render instead of a hand-typed copy."""
    from docutils import nodes
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective

    class CategoryTable(SphinxDirective):
        def run(self):
            box = nodes.container()
            self.state.nested_parse(StringList(category_table().splitlines(), source="cheems_lib.world.corpus"),
                                    self.content_offset, box)
            return box.children

    return CategoryTable


def setup(app):
    """Sphinx extension used by the book (``_config.yml``): de-duplicates page scripts, adds the book's style sheet,
    loads DataTables where a page needs it and adds the
    ``{cheems-categories}`` directive (:func:`category_table`) and the citation directives of the cite page
    (:func:`cheems_lib.publishing.citation.setup_directives`)."""
    app.connect("html-page-context", _dedupe_scripts, priority=100)  # early: emit_firstresult may stop later handlers
    app.connect("html-page-context", _load_datatables)
    app.connect("config-inited", _add_static)
    app.add_css_file("cheems.css")
    app.add_directive("cheems-categories", _category_directive())
    setup_directives(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
