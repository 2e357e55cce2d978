"""The book's Sphinx extension (``_config.yml``'s ``extra_extensions``): it de-duplicates page scripts (a
repeated thebe config is a JavaScript error), adds the book's style sheet (``static/cheems.css``: wide tables
wrap and fit the page), loads DataTables on the pages with an interactive table
(:func:`cheems_lib.publishing.interactive.page_script`) and adds the directives that generate page content from
the library: ``{cheems-categories}`` (:func:`category_table`), ``{cheems-cli}`` (:func:`cli_help`, every
subcommand's ``--help``), ``{cheems-real-data}`` (:func:`real_data_table`) and the citation directives of the
cite page (:func:`cheems_lib.publishing.citation.setup_directives`)."""
from __future__ import annotations

from pathlib import Path

from ..categories import CATEGORIES, DETERMINISTIC
from .citation import setup_directives
from .interactive import page_script

STATIC = Path(__file__).parent / "static"
"""The book's own static files (``cheems.css``), served from ``_static/``."""

__all__ = ["category_table", "cli_help", "subcommands", "real_data_table", "setup"]


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
    """The paper's top-level categories as a Markdown table, from :data:`cheems_lib.categories.CATEGORIES` and
    :data:`~cheems_lib.categories.DETERMINISTIC` (the ``{cheems-categories}`` directive of the book's pages)."""
    rows = [f"| {name} | {english} | {'yes' if name in DETERMINISTIC else 'no'} |" for name, english in CATEGORIES.items()]
    return "\n".join(["| `category[0]` | in English | deterministic answers |", "| --- | --- | --- |", *rows])


def real_data_table(manifest: Path | None = None) -> str:
    """The files of ``data/real/`` as a Markdown table, read from its ``manifest.json`` (the ``{cheems-real-data}``
    directive): path, who labelled it, licence, prompts and responses, so the page's counts are the manifest's."""
    import json

    manifest = manifest or Path(__file__).resolve().parents[2] / "data" / "real" / "manifest.json"
    files = json.loads(manifest.read_text(encoding="utf-8"))["files"]
    rows = [f"| `{path}` | {e.get('labels', '')} | {e.get('licence', '')} | {e.get('prompts', '')} | "
            f"{e.get('responses', '')} |" for path, e in files.items()]
    return "\n".join(["| file | labels | licence | prompts | responses |", "| --- | --- | --- | --- | --- |", *rows])


def _markdown_directive(text, source: str, *, optional_arguments: int = 0):
    """A directive class whose body is ``text(srcdir, arguments)`` (Markdown; ``srcdir``: the book's root;
    ``arguments``: the directive's, at most ``optional_arguments``) parsed where it stands, so a page shows what the
    library holds at every render instead of a hand-typed copy; ``source`` names where the text comes from."""
    from docutils import nodes
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective

    class Generated(SphinxDirective):
        def run(self):
            box = nodes.container()
            markdown = text(Path(self.env.srcdir), self.arguments)
            self.state.nested_parse(StringList(markdown.splitlines(), source=source), self.content_offset, box)
            return box.children

    Generated.optional_arguments = optional_arguments
    return Generated


HELP_WIDTH = 72
"""Columns of the rendered ``--help`` texts: fixed, so a page does not depend on the terminal that built it."""


def _cli_parser():
    """The ``cheems`` argument parser. Only the parser builder is imported: building it imports no torch."""
    from .. import cli

    return cli.build_parser()


def subcommands(parser=None) -> dict:
    """``{name: subparser}`` of every ``cheems`` subcommand, in the order ``cheems --help`` lists them."""
    import argparse

    parser = parser or _cli_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _help(parser) -> str:
    """``parser.format_help()`` at :data:`HELP_WIDTH` columns, whatever the terminal."""
    cls = parser.formatter_class
    parser.formatter_class = lambda prog: cls(prog, width=HELP_WIDTH, max_help_position=26)
    try:
        return parser.format_help().rstrip()
    finally:
        parser.formatter_class = cls


def cli_help(names: list[str] | None = None) -> str:
    """``cheems --help`` and ``cheems SUB --help`` of every subcommand (or of ``names`` only) as Markdown, for the
    ``{cheems-cli}`` directive of the command-line page: per command a rubric ``cheems SUB`` with the target
    ``cli-help-SUB`` (``cli-help`` for ``cheems --help``) over a text block of its help as argparse prints it.
    Raises ``KeyError`` for a name that is no subcommand."""
    parser = _cli_parser()
    subs = subcommands(parser)
    unknown = [n for n in names or [] if n not in subs]
    if unknown:
        raise KeyError(f"no cheems subcommand {', '.join(unknown)}; subcommands are {', '.join(subs)}")
    blocks = [] if names else [("cheems", _help(parser))]
    blocks += [(f"cheems {name}", _help(subs[name])) for name in names or subs]
    lines = []
    for title, text in blocks:
        label = "cli-help" + ("-" + title.split(" ", 1)[1] if " " in title else "")
        lines += [f"({label})=", "```{rubric} " + title, "```", "", "```text", text, "```", ""]
    return "\n".join(lines)


def setup(app):
    """Sphinx extension used by the book (``_config.yml``): de-duplicates page scripts, adds the book's style sheet,
    loads DataTables where a page needs it and adds the
    ``{cheems-categories}`` directive (:func:`category_table`), the ``{cheems-cli}`` directive (:func:`cli_help`), the
    ``{cheems-real-data}`` directive (:func:`real_data_table`) and the citation directives of the cite page
    (:func:`cheems_lib.publishing.citation.setup_directives`)."""
    app.connect("html-page-context", _dedupe_scripts, priority=100)  # early: emit_firstresult may stop later handlers
    app.connect("html-page-context", _load_datatables)
    app.connect("config-inited", _add_static)
    app.add_css_file("cheems.css")
    app.add_directive("cheems-categories", _markdown_directive(lambda root, args: category_table(),
                                                               "cheems_lib.categories"))
    app.add_directive("cheems-cli", _markdown_directive(lambda root, args: cli_help(args or None), "cheems_lib.cli",
                                                        optional_arguments=20))  # the subcommands to show
    app.add_directive("cheems-real-data", _markdown_directive(
        lambda root, args: real_data_table(root / "data" / "real" / "manifest.json"), "data/real/manifest.json"))
    setup_directives(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
