"""Publishing the book: downloadable figures and tables, and each chapter's header and footer.

A chapter calls :func:`figure` instead of ``glue`` for every figure: the figure is glued
under its stable label and saved as PNG, SVG and PDF; :func:`downloads` puts the links
under it. :func:`table` saves a table as CSV and adds the link to its caption. The files
go to ``book/_extra/{figures,tables}/<label>.<ext>``; the book copies that folder to the
root of the HTML build (``html_extra_path``), so a figure's address is stable:
``figures/<label>.svg`` next to ``index.html``.

:func:`header` and :func:`footer` write the Markdown that :mod:`cheems_lib.book` puts at
the top (the parameters a chapter ran with) and the bottom (package versions, git commit,
SHA-256 of the data files, wall time) of every executed chapter. Every value, path and
help text in them is escaped (:func:`md_code`, :func:`md_text`), so a parameter such as a
file name holding ``<img onerror=...>`` is shown as text, never rendered as HTML.

Every file written here goes to a temporary name in the same folder first and is renamed
into place (:func:`replace_atomically`): an interrupted run leaves the old file or the new
one, never a truncated one.
"""
from __future__ import annotations

import hashlib
import html
import os
import re
import secrets
import subprocess
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

__all__ = ["EXTRA", "LABEL", "figure", "downloads", "table", "header", "footer", "sha256", "PACKAGES",
           "replace_atomically", "md_code", "md_text"]

EXTRA = Path("book") / "_extra"
"""Folder (relative to the book root) copied to the root of the HTML build."""
LABEL = re.compile(r"^(paper-(table|fig|alg)\d+|fig-[a-z0-9]+-[a-z0-9-]+|tab-[a-z0-9]+-[a-z0-9-]+)$")
"""Stable ids: ``paper-*`` (spec §7) or ``fig-<chapter>-<name>`` / ``tab-<chapter>-<name>``."""
PACKAGES = ("cheems-lib", "torch", "transformers", "accelerate", "tokenizers", "numpy", "pandas", "networkx",
            "matplotlib", "seaborn", "papermill", "jupytext", "jupyter-book")
"""Packages whose versions the reproducibility footer lists."""
_FORMATS = ("png", "svg", "pdf")


def replace_atomically(path: str | Path, write: Callable[[Path], Any]) -> Path:
    """Call ``write(tmp)`` on a temporary name beside ``path``, then rename it to ``path``.

    The rename is atomic (same folder, same file system), so ``path`` holds either its old
    content or the complete new one. The temporary file is removed if ``write`` fails or is
    interrupted; a hard kill can leave a hidden ``.<name>.tmp-*`` file, never a bad ``path``.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def _check(label: str) -> None:
    if not LABEL.match(label):
        raise ValueError(f"figure/table label {label!r} is not a stable id "
                         "(fix: use paper-<artefact>, fig-<chapter>-<name> or tab-<chapter>-<name>)")


def figure(fig, label: str, *, root: str | Path = ".") -> dict[str, Path]:
    """Glue ``fig`` as ``label``, save it as PNG, SVG and PDF, close it; returns the paths.

    The files are byte-stable for the same figure: no dates in the metadata, and SVG ids
    are salted with the label rather than a random value.
    """
    import matplotlib
    import matplotlib.pyplot as plt
    from myst_nb import glue

    _check(label)
    out = Path(root) / EXTRA / "figures"
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    with matplotlib.rc_context({"svg.hashsalt": label}):
        for ext in _FORMATS:
            paths[ext] = out / f"{label}.{ext}"
            meta = {"png": {"Software": None}, "svg": {"Date": None}, "pdf": {"CreationDate": None}}[ext]
            replace_atomically(paths[ext], lambda tmp: fig.savefig(tmp, format=ext, dpi=150, bbox_inches="tight",
                                                                   metadata=meta))
    glue(label, fig, display=False)
    plt.close(fig)
    return paths


def downloads(label: str):
    """The download line under a figure (an HTML display object)."""
    from IPython.display import HTML

    _check(label)
    links = " · ".join(f'<a href="../figures/{label}.{ext}" download>{ext.upper()}</a>' for ext in _FORMATS)
    return HTML(f'<p class="cheems-downloads">Download figure <code>{label}</code>: {links}</p>')


def table(styler_or_frame, label: str, *, root: str | Path = ".", index: bool | None = None):
    """Save a table as ``tables/<label>.csv`` and return its Styler with a CSV link in the caption.

    Pass a pandas ``Styler`` (its data is saved, its formatting shown) or a DataFrame.
    ``index`` says whether to write the index (default: unless it is a plain 0..n-1 range).
    """
    import pandas as pd

    _check(label)
    styler = styler_or_frame if hasattr(styler_or_frame, "data") else styler_or_frame.style
    data = styler.data
    if index is None:
        index = not (isinstance(data.index, pd.RangeIndex) and data.index.name is None)
    out = Path(root) / EXTRA / "tables"
    out.mkdir(parents=True, exist_ok=True)
    replace_atomically(out / f"{label}.csv", lambda tmp: data.to_csv(tmp, index=index))
    caption = html.escape(styler.caption or "")
    link = f'<a class="cheems-csv" href="../tables/{label}.csv" download>CSV</a>'
    return styler.set_caption(f"{caption} ({link}, <code>{label}</code>)" if caption else f"{link} <code>{label}</code>")


def world_source(directory: str | Path) -> str:
    """Provenance of numbers computed from a world folder: ``simulated world (size S, seed N, simulator V)``
    when it holds a simulator's ``summary.json``, else ``data: DIR (file sha256 PREFIX, ...)``."""
    import json

    directory = Path(directory)
    summary = directory / "summary.json"
    if summary.exists():
        s = json.loads(summary.read_text(encoding="utf-8"))
        return f"simulated world (size {s.get('size')}, seed {s.get('seed')}, simulator {s.get('simulator_version')})"
    files = sorted(p for p in directory.rglob("*.jsonl") if p.is_file())
    return f"data: {directory} (" + ", ".join(f"{p.relative_to(directory)} sha256 {sha256(p)[:12]}" for p in files) + ")"


def sha256(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


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


def header(profile: str, params: Mapping[str, Any], declared: Mapping[str, Mapping], data_dir: str | None) -> str:
    """Markdown: the parameters a chapter ran with (every declared one, overrides marked); all escaped."""
    lines = [":::{admonition} How this chapter was run", ":class: note dropdown", "",
             f"Profile **{md_text(profile)}**; data: {md_code(data_dir or 'none')}. Rerun it with "
             f"{md_code(f'cheems book --profile {profile} --chapter <name> -p NAME VALUE')}, or with papermill.", "",
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


def footer(root: str | Path, data_files: Iterable[str | Path], wall_time_s: float) -> str:
    """Markdown: package versions, git commit, SHA-256 of the data files, wall time; all escaped."""
    from importlib.metadata import PackageNotFoundError, version

    root = Path(root)
    commit = _git(root, "rev-parse", "HEAD") or "unknown (not a git checkout)"
    dirty = bool(_git(root, "status", "--porcelain", "--untracked-files=no"))
    versions = []
    for pkg in PACKAGES:
        try:
            versions.append(f"{pkg} {version(pkg)}")
        except PackageNotFoundError:
            versions.append(f"{pkg} (not installed)")
    lines = ["## Reproducibility", "",
             f"- **Wall time** of this chapter's execution: {wall_time_s:.1f} s",
             f"- **Git commit**: {md_code(commit)}" + (" with uncommitted changes" if dirty else ""),
             f"- **Packages**: {md_text(', '.join(versions))}", "- **Data files** (SHA-256):", ""]
    files = [Path(f) for f in data_files]
    for f in files:
        shown = f.relative_to(root) if f.is_absolute() and f.is_relative_to(root) else f
        lines.append(f"  - {md_code(shown)}: {md_code(sha256(f))}")
    if not files:
        lines.append("  - none (this chapter reads no data files)")
    return "\n".join(lines) + "\n"
