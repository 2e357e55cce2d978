"""The book's "How this book was built" page, generated from the executed notebooks' metadata.

``cheems book`` writes ``book/build_stats.md`` (not tracked by git) just before rendering, from what
:mod:`cheems_lib.publishing.execute` keeps in each ``book/<chapter>.ipynb`` (metadata ``cheems``: profile, parameters,
wall time, start time, git commit, package versions, SHA-256 of the data files) and beside it (a failed
run's ``book/<chapter>.failed.ipynb``, whose metadata holds the failure), plus what this build did with
each chapter (executed, up to date, failed, or not selected). One row per chapter of the registry; a
failed chapter links its page (the placeholder that shows the error, or the last good run) and its
failed notebook. Every value is escaped (:func:`cheems_lib.publishing.publish.md_code`, ``md_text``).
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any, Mapping

from ..outputs import atomic_path
from .chapters import CHAPTERS
from .publish import _git, md_code, md_text

__all__ = ["PAGE", "chapter_rows", "page", "write_page"]

PAGE = Path("book") / "build_stats.md"
"""The generated page, relative to the book root (listed in ``_toc.yml``, ignored by git)."""

_CACHE = {"executed": "miss: executed", "cached": "hit: up to date", "failed": "miss: failed"}


def _metadata(path: Path) -> dict[str, Any] | None:
    """The ``cheems`` metadata of a notebook; None if it is missing or unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))["metadata"].get("cheems") or {}
    except (OSError, ValueError, KeyError, AttributeError):
        return None


def chapter_rows(root: str | Path, outcomes: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """One dict per registered chapter, in reading order: ``name``, ``status`` (``ok``, ``failed``, ``not
    executed``), ``failure`` (the error, for a failed chapter), ``failed_notebook`` (whether
    ``book/<name>.failed.ipynb`` exists), ``shows`` (``run``, ``last good run``, ``placeholder``), ``cache`` (what
    this build did: ``outcomes[name]``, or None when it did not select the chapter) and the run's metadata
    ``meta`` (empty for a placeholder)."""
    book, rows = Path(root) / "book", []
    for ch in CHAPTERS:
        meta = _metadata(book / f"{ch.name}.ipynb")
        failed_meta = _metadata(book / f"{ch.name}.failed.ipynb")
        placeholder = meta is None or bool(meta.get("placeholder")) or not meta.get("cache_key")
        failure = (failed_meta or {}).get("failure") or (meta or {}).get("error")
        failed = failed_meta is not None or bool(failure) or (outcomes or {}).get(ch.name) == "failed"
        rows.append({"name": ch.name, "status": "failed" if failed else "not executed" if placeholder else "ok",
                     "failure": failure if failed else None, "failed_notebook": failed_meta is not None,
                     "shows": "placeholder" if placeholder else "last good run" if failed else "run",
                     "cache": (outcomes or {}).get(ch.name), "meta": {} if placeholder else meta})
    return rows


def _fingerprint(files: Mapping[str, str]) -> str:
    """12 hex digits standing for a set of data files and their SHA-256."""
    text = "".join(f"{path}:{digest}\n" for path, digest in sorted(files.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _status(r: dict[str, Any]) -> str:
    """A row's status, with the failure and links to the chapter's page and its failed notebook."""
    if r["status"] != "failed":
        return {"ok": "ok", "not executed": "not executed yet"}[r["status"]]
    shows = "the error" if r["shows"] == "placeholder" else "the last good run"
    text = f"**failed**: {md_text(r['failure'] or 'see the failed notebook')} ({{doc}}`its page <{r['name']}>` shows {shows}"
    if r["failed_notebook"]:
        text += f"; {{download}}`failed notebook <{r['name']}.failed.ipynb>`"
    return text + ")"


def _row(r: dict[str, Any]) -> str:
    """The chapter's line of the main table: chapter, status, profile, wall time, cache, start time."""
    m = r["meta"]
    wall = f"{m['wall_time_s']:.1f} s" if "wall_time_s" in m else "–"
    cache = _CACHE.get(r["cache"], "not in this build") if r["cache"] else "not in this build"
    cells = [f"{{doc}}`{r['name']} <{r['name']}>`", _status(r), md_text(m.get("profile", "–")), wall, cache,
             md_text(m.get("executed_at", "–").replace("T", " ").rstrip("Z"))]
    return "| " + " | ".join(cells) + " |"


def _run_row(r: dict[str, Any]) -> str:
    """The chapter's line of the second table: its parameters, data fingerprint and commit."""
    m = r["meta"]
    params = ", ".join(md_code(f"{k}={v if isinstance(v, str) else json.dumps(v)}", in_table=True)
                       for k, v in (m.get("parameters") or {}).items()) or "the defaults"
    files = m.get("data_files")
    data = "unknown" if files is None else "none" if not files else f"{len(files)} files, {md_code(_fingerprint(files))}"
    commit = md_code(m["commit"][:12]) + (" (dirty)" if m.get("dirty") else "") if m.get("commit") else "unknown"
    return f"| {md_code(r['name'], in_table=True)} | {params} | {data} | {commit} |"


def _tally(rows: list[dict[str, Any]], key: str) -> dict[tuple[str, str], list[str]]:
    """``(item, value) -> chapters`` over the chapters' metadata dict ``key`` (data files, packages)."""
    out: dict[tuple[str, str], list[str]] = {}
    for r in rows:
        for item, value in (r["meta"].get(key) or {}).items():
            out.setdefault((item, value or "not installed"), []).append(r["name"])
    return out


def _chapters(n: int) -> str:
    """``1 chapter``, ``2 chapters``."""
    return f"{n} chapter{'' if n == 1 else 's'}"


def _who(chapters: list[str], rows: list[dict[str, Any]], key: str = "data_files") -> str:
    """The chapters, or "every chapter that recorded it" when no chapter that recorded ``key`` is left out."""
    recorded = [r["name"] for r in rows if r["meta"].get(key)]
    return "every chapter that recorded them" if len(recorded) > 1 and chapters == recorded else ", ".join(chapters)


def page(root: str | Path, outcomes: Mapping[str, str] | None = None, build_s: float | None = None,
         *, commit: str | None = None) -> str:
    """The page's Markdown (see the module docstring); ``build_s``: this build's wall time."""
    rows = chapter_rows(root, outcomes)
    commit = commit or _git(Path(root), "rev-parse", "HEAD") or "unknown (not a git checkout)"
    done = {k: sum(r["cache"] == k for r in rows) for k in ("executed", "cached", "failed")}
    total = sum(r["meta"].get("wall_time_s", 0) for r in rows)
    lines = ["(build-stats)=", "# How this book was built", "",
             f"Rendered {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} from git commit {md_code(commit)}, "
             f"generated from the executed notebooks' metadata. This build executed {_chapters(done['executed'])}, "
             f"found {done['cached']} up to date (cache hits) and saw {done['failed']} fail"
             + (f", in {build_s:.1f} s." if build_s is not None else "."),
             f"Executing every chapter shown took {total:.1f} s in all (the sum of their wall times). "
             "Each chapter's page opens with the commands that rerun it and ends with its reproducibility footer.", "",
             "| chapter | status | profile | wall time | cache | executed (UTC) |",
             "| --- | --- | --- | --- | --- | --- |", *map(_row, rows), "",
             "## Parameters, data and commit", "",
             "The parameters each chapter ran with (its page shows the commands that rerun it with them), a "
             "fingerprint of its data files (listed below) and the git commit it ran at (*dirty*: with uncommitted "
             "changes).", "",
             "| chapter | parameters | data | commit |", "| --- | --- | --- | --- |",
             *[_run_row(r) for r in rows if r["meta"]], ""]
    lines += ["## Data files", "", "The column *data* above is a fingerprint of these files and their SHA-256.", ""]
    files = _tally(rows, "data_files")
    lines += ["| file | SHA-256 | read by |", "| --- | --- | --- |"] if files else ["No chapter recorded its data."]
    lines += [f"| {md_code(f, in_table=True)} | {md_code(d)} | {_who(chs, rows)} |" for (f, d), chs in sorted(files.items())]
    packages = _tally(rows, "packages")
    lines += ["", "## Packages", ""]
    lines += ["| package | version | chapters |", "| --- | --- | --- |"] if packages else ["No chapter recorded them."]
    lines += [f"| {md_text(p)} | {md_text(v)} | {_who(chs, rows, 'packages')} |" for (p, v), chs in packages.items()]
    return "\n".join(lines) + "\n"


def write_page(root: str | Path, outcomes: Mapping[str, str] | None = None, build_s: float | None = None) -> Path:
    """Write :func:`page` to ``book/build_stats.md`` under ``root`` (atomically); returns its path."""
    text = page(root, outcomes, build_s)
    with atomic_path(Path(root) / PAGE) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(root) / PAGE
