"""The claim files: each chapter's saved claims, and which of them the Claims page may use.

A chapter's ledger (:class:`cheems_lib.analyses.claims.Ledger`) saves its claims to
``book/_extra/claims/<chapter>.json`` (:func:`claims_dir`, :func:`write_claims`); the Claims page reads them all
back (:func:`load_shown`) and exports ``tables/claims.csv``. The files are the book's, not an analysis's: the
build keys the Claims page on them (:func:`inputs_digest`) and the replicates read them per world
(:mod:`cheems_lib.publishing.replicates`), so they live here, below the analyses that fill them.

The ledger uses only the run that each page shows. A claims file says which run wrote it: ``run`` is the digest
of what that run saved (chapter, source, claims), and the ledger glues the same digest (``claims-run-<chapter>``)
into the executed notebook. A file whose ``run`` differs from the one recorded in ``book/<chapter>.ipynb``
(written by a plain papermill run, or by a run whose notebook was not kept) is not used: the Claims page names the
chapter as stale and says how to rebuild it. ``cheems book`` keys the Claims page on the bytes of the claim files
and the runs the pages record (:func:`inputs_digest`).

>>> body = {"chapter": "x", "source": "s", "claims": []}
>>> run_digest(body) == run_digest({**body, "run": "anything"})  # the digest covers what the run saved, only
True
"""
from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path
from typing import Mapping, Sequence

from ..outputs import atomic_open
from .chapters import CHAPTERS

__all__ = ["claims_dir", "run_digest", "write_claims", "shown_run", "load_shown", "load_all", "inputs_digest"]


def claims_dir(root: str | Path = ".") -> Path:
    """Where chapters save their claims: ``book/_extra/claims`` (published beside tables/)."""
    return Path(root) / "book" / "_extra" / "claims"


def run_digest(body: Mapping) -> str:
    """sha256 (16 hex digits) of what a chapter's run saved: its chapter, source and claims."""
    blob = json.dumps({k: body.get(k) for k in ("chapter", "source", "claims")}, sort_keys=True, ensure_ascii=False,
                      allow_nan=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def write_claims(root: str | Path, chapter: str, source: str, claims: Sequence[Mapping]) -> tuple[Path, str]:
    """Write ``book/_extra/claims/<chapter>.json`` under ``root`` atomically, with its ``run`` digest
    (:func:`run_digest`); returns the file and that digest, which the caller glues into its notebook."""
    out = claims_dir(root) / f"{chapter}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    body = {"chapter": chapter, "source": source, "claims": list(claims)}
    body["run"] = run_digest(body)
    # atomic: a failed run keeps the last good file, and a reader never sees half of one
    with atomic_open(out, "w", encoding="utf-8") as fh:
        json.dump(body, fh, ensure_ascii=False, indent=1, allow_nan=True)
    return out, body["run"]


def shown_run(notebook: str | Path, chapter: str) -> str | None:
    """The claims run glued into an executed notebook (``book/<chapter>.ipynb``); None if it has none."""
    try:
        nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    for cell in nb.get("cells", []):
        for o in cell.get("outputs", []):
            if o.get("metadata", {}).get("scrapbook", {}).get("name") == f"claims-run-{chapter}":
                data = o.get("data", {})
                text = data.get("application/papermill.record/text/plain") or data.get("text/plain")
                return ast.literal_eval(text) if text else None
    return None


def load_shown(folder: str | Path, book: str | Path, chapters: Sequence[str] | None = None
               ) -> tuple[list[dict], dict[str, str]]:
    """The saved claims of the runs the pages show: ``(rows, stale)``.

    ``rows``: every claim, in chapter order (``chapters``, default: the book's), each with its
    ``source``, read from ``folder/<chapter>.json`` only when its ``run`` matches the run
    recorded in ``book/<chapter>.ipynb`` (:func:`shown_run`) and its content. ``stale``:
    ``{chapter: why}`` for each file that was not used.
    """
    rows, stale = [], {}
    for name in chapters or [c.name for c in CHAPTERS]:
        path = Path(folder) / f"{name}.json"
        if not path.exists():
            continue
        body = json.loads(path.read_text(encoding="utf-8"))
        shown = shown_run(Path(book) / f"{name}.ipynb", name)
        if shown is None or body.get("run") != shown or run_digest(body) != shown:
            page = f"{Path(book).name}/{name}.ipynb"
            stale[name] = (f"{path.name} was not written by the run that {page} shows "
                           f"(fix: `.venv/bin/cheems book --chapter {name} --force`)")
            continue
        rows += [{**c, "source": body["source"]} for c in body["claims"]]
    return rows, stale


def load_all(root: str | Path = ".", chapters: Sequence[str] | None = None) -> list[dict]:
    """The claims of :func:`load_shown` under ``root`` (``book/_extra/claims``, ``book/``)."""
    return load_shown(claims_dir(root), Path(root) / "book", chapters)[0]


def inputs_digest(root: str | Path = ".") -> str:
    """sha256 of what the Claims page reads under ``root``: each claim file's bytes and the run
    each chapter's executed notebook records (part of the Claims page's cache key)."""
    h = hashlib.sha256()
    for name in [c.name for c in CHAPTERS]:
        path = claims_dir(root) / f"{name}.json"
        data = path.read_bytes() if path.exists() else b""
        h.update(f"{name}:{hashlib.sha256(data).hexdigest()}:{shown_run(Path(root) / 'book' / f'{name}.ipynb', name)}\n"
                 .encode())
    return h.hexdigest()
