"""Publishing the book: downloadable figures and tables, and each chapter's header and footer.

A chapter calls :func:`figure` instead of ``glue`` for every figure: the figure is glued
under its stable label and saved as PNG, SVG and PDF; :func:`downloads` puts the links
under it. :func:`table` saves a table as CSV and adds the link to its caption. The files
go to ``book/_extra/{figures,tables}/<name>.<ext>``; the book copies that folder to the
root of the HTML build (``html_extra_path``), so a figure's address is stable:
``figures/<name>.svg`` next to ``index.html``. ``<name>`` is the label, except that a label
named after the paper's artefact (``paper-fig5``) is saved under a name that says whose
numbers the file holds (:func:`cheems_lib.publishing.provenance.download_name`: ``simulated-fig5``,
``data-<folder>-fig5``, ``published-table8``); the page keeps the label, the file's metadata the artefact.

:func:`header` and :func:`footer` write the Markdown that :mod:`cheems_lib.publishing.execute` puts at
the top (the ``cheems book`` and papermill commands that rerun the chapter exactly,
:func:`rerun_commands`, and the parameters it ran with) and the bottom (package versions, git
commit, SHA-256 of the data files, wall time: :func:`run_facts`) of every executed chapter. Every value, path and
help text in them is escaped (:func:`md_code`, :func:`md_text`), so a parameter such as a
file name holding ``<img onerror=...>`` is shown as text, never rendered as HTML.

Every download says where its numbers come from (:mod:`cheems_lib.publishing.provenance`): a chapter
calls ``set_source`` once (e.g. ``publish.set_source(publish.world_source(directory))``)
and a table of the paper's own numbers passes ``source=publish.paper_source(name)``. A
table's CSV gets a last column ``source``; a figure gets a grey footer line with its source
(drawn under everything else, so ``bbox_inches="tight"`` keeps it) and the same text in its
metadata (PNG text chunk ``Description``, SVG ``Description``, PDF ``Subject`` and
``Keywords``). Each download also gets a sidecar ``<name>.meta.json`` (label, source,
caption, the paper's artefact) that ``write_index`` merges into ``tables/index.csv`` and
``figures/index.csv``.
``set_source``, ``paper_source``, ``world_source``, ``file_source`` and ``write_index`` are
those of :mod:`cheems_lib.publishing.provenance`, importable from here.

Every file written here goes to a temporary name in the same folder first and is renamed
into place (:func:`cheems_lib.outputs.atomic_path`): an interrupted run leaves the old file or the new
one, never a truncated one.
"""
from __future__ import annotations

import html
import json
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..outputs import atomic_path
from .interactive import datatable
from .table_view import in_view, integer_columns, integers_shown, key_column

# re-exported so a chapter needs only `publish`; documented in cheems_lib.publishing.provenance
from .provenance import (artefact, check_source, download_name, download_of, drop_other_downloads,  # noqa: F401
                         file_source, footer_text, paper_source, resolve_source, set_source, sha256, sidecar_json,
                         world_source, write_index)

__all__ = ["EXTRA", "LABEL", "figure", "downloads", "table", "items", "key_first", "header", "footer", "PACKAGES", "VENV_BIN",
           "rerun_commands", "run_facts", "md_code", "md_text", "glue_values", "note"]

EXTRA = Path("book") / "_extra"
"""Folder (relative to the book root) copied to the root of the HTML build."""
LABEL = re.compile(r"^(paper-(table|fig|alg)\d+|fig-[a-z0-9]+-[a-z0-9-]+|tab-[a-z0-9]+-[a-z0-9-]+)$")
"""Stable ids: ``paper-*`` (spec §7) or ``fig-<chapter>-<name>`` / ``tab-<chapter>-<name>``."""
PACKAGES = ("cheems-lib", "torch", "transformers", "accelerate", "tokenizers", "numpy", "pandas", "networkx",
            "matplotlib", "seaborn", "papermill", "jupytext", "jupyter-book")
"""Packages whose versions the reproducibility footer lists."""
_FORMATS = ("png", "svg", "pdf")
VENV_BIN = ".venv/bin"
"""Where the project's programs are, from the repository root (the README's set-up makes ``.venv``): the commands
a page prints name them by this path, so they run as printed, with or without the environment active."""


_STEMS: dict[str, str] = {}  # label -> the file name figure() saved it under, for downloads() in a later cell


def _check(label: str) -> None:
    if not LABEL.match(label):
        raise ValueError(f"figure/table label {label!r} is not a stable id "
                         "(fix: use paper-<artefact>, fig-<chapter>-<name> or tab-<chapter>-<name>)")


PaperColumns = Mapping[str, str | Sequence[str]]
"""``{paper table name: column or columns}``: the parts of a download that are the paper's numbers."""


def _add_footer(fig, text: str):
    """Draw ``text`` small and grey under everything else in ``fig``, wrapped to its width.

    Placed just below the figure's tight bounding box, so ``bbox_inches="tight"`` keeps it; in
    figure coordinates, which the tight crop shifts with everything else. A previous footer (a
    second call on the same figure) is replaced.
    """
    import textwrap

    for old in [t for t in fig.texts if t.get_gid() == "cheems-source"]:
        old.remove()
    box = fig.get_tightbbox()  # inches
    w, h = fig.get_size_inches()
    note = fig.text(box.x0 / w, (box.y0 - 0.06) / h, text, ha="left", va="top", fontsize=6.5, color="#6e6e6e",
                    gid="cheems-source")
    width = note.get_window_extent().width / fig.dpi
    if width > box.width:
        chars = max(30, int(len(text) * box.width / width))
        note.set_text("\n".join(textwrap.wrap(text, chars, break_long_words=False)))
    return note


def _title(label: str, source: str) -> str:
    """A download's title: its label, and for a ``paper-*`` label the paper's artefact and whose numbers these are."""
    if not artefact(label):
        return label
    whose = "the paper's numbers" if source.startswith("paper") else "our analogue, not the paper's numbers"
    return f"{label}: the paper's {artefact(label)}, {whose}"


def _metadata(ext: str, label: str, source: str) -> dict:
    """Metadata of each format: the label and paper artefact (:func:`_title`), the provenance, and no dates (same
    figure, same bytes)."""
    text = footer_text(source).replace(" · ", " | ")
    title = _title(label, source)
    return {"png": {"Software": None, "Title": title, "Description": text},
            "svg": {"Date": None, "Title": title, "Description": text},
            "pdf": {"CreationDate": None, "Title": title, "Subject": text, "Keywords": source}}[ext]


def figure(fig, label: str, *, root: str | Path = ".", source: str | None = None,
           paper_columns: PaperColumns | None = None) -> dict[str, Path]:
    """Glue ``fig`` as ``label``, save it as PNG, SVG and PDF (named
    :func:`~cheems_lib.publishing.provenance.download_name`), close it; returns the paths.

    ``source`` (default: the chapter's :func:`~cheems_lib.publishing.provenance.set_source`) is drawn as a footer line and
    written into each file's metadata and into ``figures/<label>.meta.json``;
    ``paper_columns`` names the series that are the paper's numbers (see
    :func:`cheems_lib.publishing.provenance.with_paper_columns`). The files are byte-stable for the
    same figure: no dates in the metadata, and SVG ids are salted with the label rather than
    a random value.
    """
    import matplotlib
    import matplotlib.pyplot as plt
    from myst_nb import glue

    _check(label)
    source = resolve_source(label, source, paper_columns)
    out = Path(root) / EXTRA / "figures"
    out.mkdir(parents=True, exist_ok=True)
    _add_footer(fig, footer_text(source))
    stem = download_name(label, source)
    paths = {}
    with matplotlib.rc_context({"svg.hashsalt": label}):
        for ext in _FORMATS:
            paths[ext] = out / f"{stem}.{ext}"
            meta = _metadata(ext, label, source)
            with atomic_path(paths[ext]) as tmp:
                fig.savefig(tmp, format=ext, dpi=150, bbox_inches="tight", metadata=meta)
    with atomic_path(out / f"{stem}.meta.json") as tmp:
        tmp.write_text(sidecar_json(label, source, artefact=artefact(label)), encoding="utf-8")
    drop_other_downloads(out, label, stem, _FORMATS)
    _STEMS[label] = stem
    glue(label, fig, display=False)
    plt.close(fig)
    return paths


def downloads(label: str):
    """The download line under a figure (an HTML display object): links to the files :func:`figure` saved for
    ``label`` in this process (else named from the chapter's source)."""
    from IPython.display import HTML

    _check(label)
    stem = _STEMS.get(label) or download_name(label, resolve_source(label))
    links = " · ".join(f'<a href="../figures/{stem}.{ext}" download>{ext.upper()}</a>' for ext in _FORMATS)
    named = f" as <code>{stem}</code>" if stem != label else ""
    return HTML(f'<p class="cheems-downloads">Download figure <code>{label}</code>{named}: {links}</p>')


def items(rows: Sequence[Mapping], label: str, sidecar: Mapping, *, root: str | Path = ".", source: str | None = None):
    """Publish per-item results (one JSON object per row, :mod:`cheems_lib.analyses.per_item`) as a download: the
    rows, gzip-compressed (a leaderboard's items run to tens of megabytes as text; the archive's time stamp is
    fixed, so the same rows give the same bytes), to ``tables/<name>.jsonl.gz``, ``sidecar`` (their protocol, with
    the provenance ``source`` added) to ``tables/<name>.jsonl.gz.cheems.json``, each atomically, and the sidecar
    ``<name>.meta.json`` that lists it in ``tables/index.csv``; returns the download line (an HTML display object)
    with both links."""
    import gzip

    from IPython.display import HTML

    _check(label)
    source = resolve_source(label, source)
    stem = download_name(label, source)
    out = Path(root) / EXTRA / "tables"
    out.mkdir(parents=True, exist_ok=True)
    with atomic_path(out / f"{stem}.jsonl.gz") as tmp, open(tmp, "wb") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
            for row in rows:
                gz.write((json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8"))
    with atomic_path(out / f"{stem}.jsonl.gz.cheems.json") as tmp:
        tmp.write_text(json.dumps({**sidecar, "source": source}, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    with atomic_path(out / f"{stem}.meta.json") as tmp:
        tmp.write_text(sidecar_json(label, source, f"per-item results, {len(rows):,} rows", artefact=artefact(label)),
                       encoding="utf-8")
    drop_other_downloads(out, label, stem, ("jsonl.gz", "jsonl.gz.cheems.json"))
    return HTML(f'<p class="cheems-downloads">Download the per-item results <code>{label}</code>: '
                f'<a href="../tables/{stem}.jsonl.gz" download>JSONL (gzip)</a> ({len(rows):,} rows) · '
                f'<a href="../tables/{stem}.jsonl.gz.cheems.json" download>protocol</a></p>')


def _check_columns(label: str, data, paper_columns: PaperColumns | None) -> None:
    """Refuse a table that has its own ``source`` column, or whose paper columns do not exist."""
    names = [c[0] if isinstance(c, tuple) else c for c in data.columns]
    if "source" in names or "source" in data.index.names:
        raise ValueError(f"{label}: the table already has a column named 'source' (fix: rename it; "
                         "publish.table adds the provenance column 'source' itself)")
    for columns in (paper_columns or {}).values():
        for col in [columns] if isinstance(columns, str) else columns:
            if col not in names:
                raise ValueError(f"{label}: paper_columns names {col!r}, which is not a column of the table "
                                 f"(fix: use one of {names})")


def table(styler_or_frame, label: str, *, root: str | Path = ".", index: bool | None = None,
          source: str | None = None, paper_columns: PaperColumns | None = None,
          row_sources: Sequence[str] | None = None, csv_name: str | None = None, interactive: bool = False,
          key: str | None = None):
    """Save a table as ``tables/<name>.csv`` (:func:`cheems_lib.publishing.provenance.download_name`) and return its
    Styler with a CSV link in the caption.

    Pass a pandas ``Styler`` (its data is saved, its formatting shown) or a DataFrame.
    ``index`` says whether to write the index (default: unless it is a plain 0..n-1 range).
    The CSV gets a last column ``source``: ``source``, else the chapter's
    :func:`~cheems_lib.publishing.provenance.set_source`, followed by ``paper_columns`` (``{paper table name: column(s)}``,
    the columns that hold the paper's numbers). The caption and source also go to
    ``tables/<label>.meta.json`` for :func:`~cheems_lib.publishing.provenance.write_index`.
    ``row_sources`` gives each row its own source instead (a table gathered from several
    chapters, such as the claims ledger); ``csv_name`` saves ``tables/<csv_name>.csv`` instead of
    ``tables/<label>.csv`` (a download with a documented name, such as ``claims.csv``).
    ``interactive`` returns the captioned table as a sortable, filterable one instead
    (:func:`cheems_lib.publishing.interactive.datatable`, HTML id ``T_<label>``), the plain table kept for
    readers without JavaScript.

    On the page, counts stored as floats show as integers (:func:`cheems_lib.publishing.table_view.integer_columns`), and the table carries
    ``data-key-column``: the header of ``key``, the column a reader looks for first (default :func:`cheems_lib.publishing.table_view.key_column`:
    Overall where there is one, else the first column after the row label). A wide table scrolls sideways in the page's output
    box, its caption wrapped to the visible width, so the row label and the key column stay in view.
    """
    import pandas as pd

    _check(label)
    styler = styler_or_frame if hasattr(styler_or_frame, "data") else styler_or_frame.style
    data = styler.data
    _check_columns(label, data, paper_columns)
    if row_sources is not None:
        row_sources = [check_source(x) for x in row_sources]
        if len(row_sources) != len(data):
            raise ValueError(f"{label}: {len(row_sources)} row sources for {len(data)} rows")
        source = "; ".join(sorted(set(row_sources))) or resolve_source(label, source)
    else:
        source = resolve_source(label, source, paper_columns)
    if index is None:
        index = not (isinstance(data.index, pd.RangeIndex) and data.index.name is None)
    out = Path(root) / EXTRA / "tables"
    out.mkdir(parents=True, exist_ok=True)
    saved = data.copy()
    for col in integer_columns(saved):  # a count stored as a float is written as the integer the page shows
        saved[col] = pd.to_numeric(saved[col]).round().astype("Int64")
    column = ("source",) + ("",) * (saved.columns.nlevels - 1) if saved.columns.nlevels > 1 else "source"
    saved[column] = list(row_sources) if row_sources is not None else source
    stem = csv_name or download_name(label, source)
    with atomic_path(out / f"{stem}.csv") as tmp:
        saved.to_csv(tmp, index=index)
    with atomic_path(out / f"{stem}.meta.json") as tmp:
        tmp.write_text(sidecar_json(label, source, styler.caption or "", artefact=artefact(label)), encoding="utf-8")
    drop_other_downloads(out, label, stem, ("csv",))
    caption = html.escape(styler.caption or "")
    link = f'<a class="cheems-csv" href="../tables/{stem}.csv" download>CSV</a>'
    styler = styler.set_caption(f"{caption} ({link}, <code>{label}</code>)" if caption else f"{link} <code>{label}</code>")
    styler = in_view(integers_shown(styler), key if key is not None else key_column(styler))
    return datatable(styler, label) if interactive else styler


def key_first(frame, key: str, *, after: str = "model"):
    """``frame`` with its column ``key`` moved right after the name column ``after`` (first when there is none),
    the rest in their order: the column that matters (Overall on a leaderboard) stays in view on a narrow page
    instead of behind a sideways scroll. ``frame`` unchanged when it has no column ``key``.

    ``key_first(DataFrame(columns=["model", "kind", "acc", "Overall"]), "Overall").columns`` ->
    ``["model", "Overall", "kind", "acc"]``
    """
    if key not in frame.columns:
        return frame
    rest = [c for c in frame.columns if c != key]
    at = rest.index(after) + 1 if after in rest else 0
    return frame[rest[:at] + [key] + rest[at:]]


def md_code(text: Any, *, in_table: bool = False) -> str:
    """``text`` as a Markdown code span that shows it verbatim, on one line.

    Nothing inside a code span is parsed as Markdown or HTML; the fence is longer than any
    run of backticks in the text (CommonMark), line breaks are shown as ``\\n`` so a value
    cannot end a table row, and in a table ``|`` is escaped so it cannot end a cell.
    """
    text = str(text).replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n")
    if in_table:
        text = text.replace("|", "\\|")
    fence = "`" * (max((len(r) for r in re.findall("`+", text)), default=0) + 1)
    pad = " " if text[:1] in ("`", " ") or text[-1:] in ("`", " ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_text(text: Any) -> str:
    """``text`` as plain Markdown text: every ASCII punctuation character is backslash-escaped
    (CommonMark), so ``<``, ``&``, ``*``, ``[`` ... are shown, not interpreted."""
    text = str(text).replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    return re.sub(r"([!-/:-@\[-`{-~])", r"\\\1", text)


def _md_help(text: str) -> str:
    """Help text: plain text, except that its `code` spans stay code spans (both escaped)."""
    parts = re.split(r"(`[^`]+`)", text)
    return "".join(md_code(p[1:-1], in_table=True) if i % 2 else md_text(p) for i, p in enumerate(parts))


def _md_value(v: Any) -> str:
    return md_code(repr(v) if not isinstance(v, str) else (v or '""'), in_table=True)


def _cli_value(v: Any) -> str:
    """A value as ``cheems book -p NAME VALUE`` reads it (:func:`cheems_lib.publishing.chapters.coerce`): strings as they are,
    anything else as JSON."""
    return v if isinstance(v, str) else json.dumps(v)


def _papermill_option(name: str, v: Any) -> list[str]:
    """The papermill option that gives ``name`` exactly ``v``: ``-p`` where papermill's own typing of the text keeps
    the value, ``-r`` (raw) for a string it would turn into a number, boolean or None, ``-y`` (YAML) for lists."""
    if isinstance(v, str):
        return ["-r" if v in ("True", "False", "None") or _number(v) else "-p", name, v]
    if isinstance(v, (bool, int, float)) and v == v and abs(v) != float("inf"):
        return ["-p", name, repr(v)]
    return ["-y", json.dumps({name: v})]  # JSON is YAML


def _number(text: str) -> bool:
    """Whether papermill's ``-p`` would read ``text`` as a number (it tries ``int()``, then ``float()``)."""
    try:
        float(text)
    except ValueError:
        try:
            int(text)
        except ValueError:
            return False
    return True


def _shell(groups: list[list[str]], width: int | None) -> str:
    """Shell-quoted words; with ``width``, broken into lines of at most about ``width`` characters between
    option groups, each line ending in a `` \\`` continuation."""
    words = [shlex.join(g) for g in groups]
    if not width:
        return " ".join(words)
    lines = [words[0]]
    for w in words[1:]:
        if len(lines[-1]) + 1 + len(w) > width - 2:
            lines.append("    " + w)
        else:
            lines[-1] += " " + w
    return " \\\n".join(lines)


def rerun_commands(chapter: str, profile: str, params: Mapping[str, Any],
                   declared: Mapping[str, Any] = (), *, width: int | None = None) -> tuple[str, str]:
    """The shell commands that rerun ``chapter`` with exactly ``params`` (the values the book passed, in the order
    of its parameters cell): ``.venv/bin/cheems book --profile P --chapter CH -p NAME VALUE ...`` and
    ``.venv/bin/papermill CH.ipynb out.ipynb -p NAME VALUE ...`` for the chapter's executed notebook (the page's
    download), both run from the repository root: the programs are named by their path in the project's virtual
    environment (:data:`VENV_BIN`), so a command copied from the page runs without activating it. Values are
    shell-quoted; ``width`` breaks them into continued lines."""
    order = [n for n in declared if n in params] + [n for n in params if n not in declared]
    cheems = [[f"{VENV_BIN}/cheems", "book", "--profile", profile, "--chapter", chapter]]
    papermill = [[f"{VENV_BIN}/papermill", f"{chapter}.ipynb", "out.ipynb"]]
    for name in order:
        cheems.append(["-p", name, _cli_value(params[name])])
        papermill.append(_papermill_option(name, params[name]))
    return _shell(cheems, width), _shell(papermill, width)


_WIDTH = 76  # characters of a code block that the book's page shows without scrolling at 1280 px


def _code_block(text: str, lang: str = "bash") -> str:
    """A fenced code block that shows ``text`` verbatim (the fence is longer than any backtick run in it)."""
    fence = "`" * max(3, max((len(r) for r in re.findall("`+", text)), default=0) + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def header(profile: str, params: Mapping[str, Any], declared: Mapping[str, Mapping], data_dir: str | None,
           *, chapter: str | None = None) -> str:
    """Markdown: the commands that rerun ``chapter`` exactly (:func:`rerun_commands`, shown open, with a download
    link to its executed notebook) and, in a dropdown, the parameters it ran with (every declared one, overrides
    marked); all escaped."""
    lines = []
    if chapter:
        cheems, papermill = rerun_commands(chapter, profile, params, declared, width=_WIDTH)
        lines += ["**Rerun this chapter** from the repository root, with the parameters this page ran with:", "",
                  _code_block(cheems), "",
                  f"or run its notebook ({{download}}`{chapter}.ipynb <{chapter}.ipynb>`, the executed notebook of "
                  "this page) with papermill, also from the repository root:", "",
                  _code_block(papermill), ""]
    lines += [":::{admonition} How this chapter was run", ":class: note dropdown", "",
              f"Profile **{md_text(profile)}**; data: {md_code(data_dir or 'none')}."
              + (" Change a value with one more `-p NAME VALUE` in the commands above." if chapter else ""), "",
              "| parameter | value | default | meaning |", "| --- | --- | --- | --- |"]
    for name, spec in declared.items():
        default = md_code(spec["default"], in_table=True)
        shown = _md_value(params[name]) if name in params else default
        mark = "" if name not in params else " (set)"
        lines.append(f"| {md_code(name, in_table=True)} | {shown}{mark} | {default} | {_md_help(spec['help'])} |")
    return "\n".join(lines + [":::", ""])


def _git(root: Path, *args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def run_facts(root: str | Path, data_files: Iterable[str | Path]) -> dict[str, Any]:
    """What a run depends on besides its parameters: ``commit`` (None outside a git checkout), ``dirty`` (uncommitted
    changes to tracked files), ``packages`` (:data:`PACKAGES` -> version, None when not installed) and
    ``data_files`` (path, relative to ``root`` where it lies under it -> SHA-256). The footer shows them and the book
    keeps them in the executed notebook's metadata (the "How this book was built" page reads them)."""
    from importlib.metadata import PackageNotFoundError, version

    root = Path(root)
    packages: dict[str, str | None] = {}
    for pkg in PACKAGES:
        try:
            packages[pkg] = version(pkg)
        except PackageNotFoundError:
            packages[pkg] = None
    files = {}
    for f in map(Path, data_files):
        files[str(f.relative_to(root) if f.is_absolute() and f.is_relative_to(root) else f)] = sha256(f)
    return {"commit": _git(root, "rev-parse", "HEAD") or None,
            "dirty": bool(_git(root, "status", "--porcelain", "--untracked-files=no")),
            "packages": packages, "data_files": files}


def footer(root: str | Path, data_files: Iterable[str | Path], wall_time_s: float,
           facts: Mapping[str, Any] | None = None) -> str:
    """Markdown: package versions, git commit, SHA-256 of the data files, wall time (from ``facts``, a
    :func:`run_facts` of the same files, when given); all escaped."""
    facts = facts or run_facts(root, data_files)
    commit = facts["commit"] or "unknown (not a git checkout)"
    versions = [f"{pkg} {v or '(not installed)'}" for pkg, v in facts["packages"].items()]
    lines = ["## Reproducibility", "",
             f"- **Wall time** of this chapter's execution: {wall_time_s:.1f} s",
             f"- **Git commit**: {md_code(commit)}" + (" with uncommitted changes" if facts["dirty"] else ""),
             f"- **Packages**: {md_text(', '.join(versions))}", "- **Data files** (SHA-256):", ""]
    for shown, digest in facts["data_files"].items():
        lines.append(f"  - {md_code(shown)}: {md_code(digest)}")
    if not facts["data_files"]:
        lines.append("  - none (this chapter reads no data files)")
    return "\n".join(lines) + "\n"


# ---- pages that follow the world's files (spec §6b) ----------------------------------------------

CONDITIONS_MIME = "application/vnd.cheems.conditions+json"
"""Mime type of the output by which a chapter tells the book which of its cells to keep."""


def show_conditions(conditions: Mapping[str, bool]) -> None:
    """Emit the chapter's conditions (e.g. :meth:`cheems_lib.analyses.world_folder.World.conditions`) for
    :func:`apply_conditions`. Call it in a ``remove-cell`` cell: the output is for the book, not the reader."""
    from IPython.display import display

    display({CONDITIONS_MIME: {k: bool(v) for k, v in conditions.items()}}, raw=True)


def apply_conditions(nb) -> list[str]:
    """Tag ``remove-cell`` every cell of the executed notebook ``nb`` whose tag ``if-<name>`` names a
    false condition, or ``unless-<name>`` a true one (conditions from :func:`show_conditions`); so
    simulator prose, or the text of a section whose file is absent, is not on the page at all.
    Returns the ids of the cells removed. A tag naming a condition the chapter did not emit is an
    error (a typo would otherwise keep or drop prose silently)."""
    found = [o["data"][CONDITIONS_MIME] for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
             if CONDITIONS_MIME in o.get("data", {})]
    conditions = {k: v for d in found for k, v in d.items()}
    removed = []
    for i, cell in enumerate(nb.cells):
        tags = cell.metadata.get("tags", [])
        for tag in tags:
            m = re.match(r"^(if|unless)-(.+)$", tag)
            if not m:
                continue
            if m.group(2) not in conditions:
                raise ValueError(f"cell {i} is tagged {tag!r} but the chapter emitted no condition {m.group(2)!r} "
                                 f"(it emitted {sorted(conditions)}; fix the tag or call publish.show_conditions)")
            if conditions[m.group(2)] != (m.group(1) == "if") and "remove-cell" not in tags:
                cell.metadata["tags"] = [*tags, "remove-cell"]
                removed.append(cell.get("id", str(i)))
                break
    return removed


def note(sentence: str | None) -> None:
    """Show ``sentence`` (e.g. :meth:`cheems_lib.analyses.world_folder.World.missing`) as Markdown in the page; nothing if None."""
    if sentence:
        from IPython.display import Markdown, display

        display(Markdown(sentence))


_GLUE_REF = re.compile(r"\{glue:(?:text|any|md|figure|math)?\}`([^`<]+?)(?::[^`]*)?`|```\{glue:(?:figure|md|math|any)?\}\s+(\S+)")


def glue_values(values: Mapping[str, Any]) -> None:
    """Glue every value of ``values`` under its name, hidden, for the chapter's prose to quote with MyST-NB's
    ``glue:text`` role (this docstring avoids the role's literal markup: the API page shows docstrings, and a
    rendered page must never show unreplaced glue markup)."""
    from myst_nb import glue

    for name, value in values.items():
        glue(name, value, display=False)


def unresolved_glue(nb) -> list[str]:
    """The glue keys that the kept Markdown cells of the executed notebook ``nb`` use but no output glued
    (Jupyter Book would fail on each); cells tagged ``remove-cell`` are not rendered, so not checked."""
    glued = {o.get("metadata", {}).get("scrapbook", {}).get("name") for c in nb.cells if c.cell_type == "code"
             for o in c.get("outputs", [])}
    used = []
    for cell in nb.cells:
        if cell.cell_type == "markdown" and "remove-cell" not in cell.metadata.get("tags", []):
            used += [a or b for a, b in _GLUE_REF.findall(cell.source)]
    return sorted({k.strip() for k in used} - glued)
