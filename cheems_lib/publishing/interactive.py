"""Sortable, filterable tables in the book: itables (DataTables) in its offline mode, with the plain table kept.

``publish.table(..., interactive=True)`` returns :func:`datatable` of the captioned Styler instead of the Styler.
itables writes the table twice: a plain HTML table, shown by default, and the interactive one, hidden; a one-line
script of itables' swaps them when JavaScript runs. With JavaScript off the reader sees the plain table, with the
same cells, caption and CSV link.

The offline mode needs DataTables itself (about 1 MB, from the itables package, no CDN: the book's machines
reach nothing else). The first interactive table a kernel shows carries it (:func:`bundle`, once per chapter
run), so a chapter's executed notebook, downloaded from its page and opened in a trusted Jupyter, loads its tables
instead of showing "Loading ITables" (untrusted, Jupyter drops the scripts and shows the plain tables). For a page
whose body lacks it (a table in a removed cell, or a page that is not a notebook), the book's Sphinx extension adds
it once (:func:`page_script`, called by :mod:`cheems_lib.publishing.sphinx_hook`). itables is imported only here,
lazily: ``cheems --help`` and the chapters that show no interactive table never load it.
"""
from __future__ import annotations

import re
import warnings

__all__ = ["PAGE_LENGTH", "bundle", "datatable", "page_script"]

PAGE_LENGTH = 15
"""Rows per page of an interactive table; a longer table gets paging and a page-length menu."""
_USES_ITABLES = re.compile(r"await window\._itables_\w+")  # what every offline table's script waits for
_carried = False  # whether this kernel's output already holds the bundle (one chapter run is one kernel)


def bundle() -> str:
    """itables' offline DataTables bundle (its init script, CSS and JavaScript inlined), without the ``<noscript>``
    notice itables appends: a page or notebook with JavaScript off shows the plain tables and no notice."""
    from itables import options
    from itables.javascript import generate_init_offline_itables_html

    html = generate_init_offline_itables_html(options.dt_bundle)
    return html[:html.rindex("</script>") + len("</script>")] + "\n"


def _layout(rows: int) -> dict:
    """The controls: the search box always (itables drops it from a table that fits one page), paging only when
    the rows do not fit one page."""
    long = rows > PAGE_LENGTH
    return {"topStart": "pageLength" if long else None, "topEnd": "search",
            "bottomStart": "info" if long else None, "bottomEnd": "paging" if long else None}


def _sections(data) -> dict:
    """DataTables' ``orderFixed`` for a table whose first column is ``section`` (e.g. Table 2: the reward models,
    then the null controls, never ranked together): a sort then orders the rows within each section and keeps
    the sections in the table's order, and before any click every row is where the table put it. Only when that order is the sections' alphabetical order or its reverse
    (DataTables sorts the fixed column by its text); otherwise, and without the column, nothing is fixed."""
    if not len(data.columns) or data.columns[0] != "section":
        return {}
    order = list(dict.fromkeys(data["section"]))
    if order == sorted(order):
        return {"orderFixed": {"pre": [[0, "asc"]]}}
    # orderDescReverse off: rows that tie on a descending column keep the table's order (DataTables reverses them)
    return {"orderFixed": {"pre": [[0, "desc"]]}, "orderDescReverse": False} if order == sorted(order, reverse=True) else {}


# DataTables' box (and itables' plain copy) scrolls sideways in the page, not the page itself; a caption stays at the
# box's left edge, its lines no longer than the text column at 1280 px, so no caption is cut off at the box's edge
_BOX_STYLE = ("<style>div.dt-container, div[id$='_fallback'] {max-width: 100%; overflow-x: auto} "
              "table.cheems-datatable > caption, div[id$='_fallback'] table > caption {position: sticky; left: 0; "
              "text-align: left; max-width: min(100%, 40rem); white-space: normal}</style>\n")


def datatable(styler, label: str):
    """``styler`` (a pandas Styler, caption included) as an interactive table with the stable HTML id
    ``T_<label>``: click a column header to sort, type in the search box to filter the rows; a table with a
    first column ``section`` sorts within its sections (:func:`_sections`). Returns an IPython ``HTML`` object
    holding itables' plain-table fallback and the interactive table, preceded by DataTables itself (:func:`bundle`)
    the first time a process shows one."""
    import itables
    from IPython.display import HTML

    global _carried

    table_id = f"T_{label}"
    with warnings.catch_warnings():  # orderFixed is DataTables' own option, passed on though itables does not list it
        warnings.filterwarnings("ignore", message="These arguments are not documented")
        html = itables.to_html_datatable(
            styler, connected=False, allow_html=True, table_id=table_id,
            classes="display compact cheems-datatable", style="width:auto;margin:0;caption-side:top",
            layout=_layout(len(styler.data)), pageLength=PAGE_LENGTH, lengthMenu=[PAGE_LENGTH, 50, 100, 500],
            autoWidth=False, text_in_header_can_be_selected=False, **_sections(styler.data))
    # itables' fallback reuses the Styler's table, id included: give the plain copy its own id, so that the
    # page's ids stay unique and DataTables enhances only the interactive table
    fallback = f'<div id="{table_id}_fallback">'
    head, sep, rest = html.partition(fallback)
    if sep:
        rest = rest.replace(f'id="{table_id}"', f'id="{table_id}-static"', 1)
    # the table DataTables fills is itables' own element: give it the Styler's data-key-column too
    key = re.search(r'data-key-column="[^"]*"', styler.table_attributes or "")
    if key:
        head = head.replace(f'<table id="{table_id}"', f'<table id="{table_id}" {key.group(0)}', 1)
    carry, _carried = not _carried, True
    return HTML((bundle() if carry else "") + _BOX_STYLE + head + sep + rest)


def page_script(body: str) -> str:
    """The HTML that loads DataTables, offline (:func:`bundle`), for a page whose ``body`` holds an interactive table
    but not the bundle; ``""`` for a page without one, or whose notebook output carries it already."""
    if not _USES_ITABLES.search(body):
        return ""
    own = bundle()
    return "" if own in body else own
