"""Where a downloaded number comes from: the ``source`` of every table and figure of the book.

A source is one line of text whose first word says whose numbers they are:

- ``paper, Table 8 (data/paper/table8_reward_models.csv)``: the paper's own numbers, read
  from ``data/paper`` (:func:`paper_source`);
- ``simulated world (size default, seed 0, simulator 1.0)``: computed in this run on a
  simulated world (:func:`world_source` on a folder written by the simulator);
- ``data: real (cheems_bench/open.jsonl sha256 1a2b3c4d5e6f, ...)``: computed in this run
  from data files, each named with the first 12 hex digits of its SHA-256
  (:func:`world_source` on any other folder, :func:`file_source` on single files).

A table that puts the paper's numbers beside ours keeps the kind of its own numbers and
names the paper's columns after a ``;`` (:func:`with_paper_columns`)::

    simulated world (size default, seed 0, simulator 1.0); column paper: paper, Table 1 (data/paper/table1_statistics.csv)

A chapter sets its source once (:func:`set_source`); :func:`cheems_lib.publishing.publish.table` and
:func:`cheems_lib.publishing.publish.figure` use it unless given ``source=``, and refuse to publish
with neither, so no download ships without provenance. Each of them also writes a sidecar
``<file>.meta.json`` beside the file (one per download, written atomically, so chapters
executing in parallel never lose each other's entries); :func:`write_index` merges the
sidecars into ``tables/index.csv`` and ``figures/index.csv`` when the book is built.
"""
from __future__ import annotations

import csv
import glob
import hashlib
import json
import re
from pathlib import Path
from typing import Callable, Mapping, Sequence
from ..outputs import atomic_open
from ..paper import TABLES
from ..input_files import DataError
from ..world_files import detect_layout, RECORD_FILES

__all__ = ["KINDS", "sha256", "check_source", "set_source", "resolve_source", "paper_source",
           "with_paper_columns", "world_source", "file_source", "download_name", "artefact", "download_of",
           "downloads_digest", "drop_other_downloads", "footer_text", "sidecar_json", "write_index"]

KINDS = ("paper", "simulated", "data")
"""The first word of every source: the paper's numbers, a simulated world, or data files."""
_KIND = re.compile(r"^(paper|simulated|data)\b")
_default: str | None = None  # the kernel-wide source of set_source


def sha256(path: str | Path, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file, read in chunks (data files can be large)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def check_source(text) -> str:
    """``text`` if it is a valid source (one line starting with paper, simulated or data); else ValueError."""
    if not isinstance(text, str) or not _KIND.match(text) or "\n" in text or "\r" in text:
        raise ValueError(f"source {text!r} does not start with paper, simulated or data (fix: build it with "
                         "publish.paper_source, publish.world_source or publish.file_source)")
    return text


def set_source(text: str | None) -> str | None:
    """Make ``text`` the source of every later table and figure of this process (None: forget it).

    >>> set_source("simulated world (size smoke, seed 0, simulator 1.0)")
    'simulated world (size smoke, seed 0, simulator 1.0)'
    >>> set_source(None)
    """
    global _default
    _default = None if text is None else check_source(text)
    return _default


def resolve_source(label: str, source: str | None = None,
                   paper_columns: Mapping[str, str | Sequence[str]] | None = None) -> str:
    """The source of download ``label``: ``source``, else the default, plus the paper's columns.

    Raises ValueError naming the label when there is neither, so nothing ships unsourced.
    """
    text = source if source is not None else _default
    if text is None:
        raise ValueError(f"{label}: no source for this download (fix: call publish.set_source(...) at the top of "
                         "the chapter, or pass source=publish.paper_source(...) for the paper's own numbers)")
    text = check_source(text)
    return with_paper_columns(text, paper_columns) if paper_columns else text


def paper_source(name: str) -> str:
    """The source of one of the paper's tables in ``data/paper`` (:data:`cheems_lib.paper.TABLES`).

    >>> paper_source("table8_reward_models")
    'paper, Table 8 (data/paper/table8_reward_models.csv)'
    """
    if name not in TABLES:
        raise ValueError(f"paper table {name!r} is unknown (fix: use one of {', '.join(sorted(TABLES))})")
    artefact = re.match(r"Table \d+", TABLES[name])
    return f"paper, {artefact.group(0) if artefact else TABLES[name]} (data/paper/{name}.csv)"


def with_paper_columns(source: str, paper_columns: Mapping[str, str | Sequence[str]]) -> str:
    """``source`` followed by the columns that hold the paper's numbers, ``{paper table: column(s)}``.

    >>> with_paper_columns("simulated world (size smoke, seed 0)", {"table5_conflict_ratio": "paper"})
    'simulated world (size smoke, seed 0); column paper: paper, Table 5 (data/paper/table5_conflict_ratio.csv)'
    """
    parts = [check_source(source)]
    for name, columns in paper_columns.items():
        columns = [columns] if isinstance(columns, str) else list(columns)
        word = "column" if len(columns) == 1 else "columns"
        parts.append(f"{word} {', '.join(columns)}: {paper_source(name)}")
    return "; ".join(parts)


def _shown(path: Path) -> str:
    """A path as the reader passed it, relative to the working directory when it lies inside it."""
    if path.is_absolute() and path.is_relative_to(Path.cwd()):
        return path.relative_to(Path.cwd()).as_posix()
    return path.as_posix()


def world_source(directory: str | Path, *, note: str | None = None) -> str:
    """The source of numbers computed from a world folder (spec §6 layout).

    A simulated world (its ``summary.json`` names the simulator) gives ``simulated world
    (size S, seed N, simulator V)``; any other folder gives ``data: <folder> (<file> sha256
    <first 12 hex>, ...)`` over the record files :func:`cheems_lib.world_files.detect_layout` finds
    (simulated or release layout, with or without ``data/``). ``note`` (e.g. ``"training seeds
    0-2"``) is added inside the parentheses.
    """
    directory = Path(directory)
    extra = f"; {note}" if note else ""
    summary = directory / "summary.json"
    if summary.is_file():
        info = json.loads(summary.read_text(encoding="utf-8"))
        if isinstance(info, dict) and "simulator_version" in info:
            return (f"simulated world (size {info.get('size', '?')}, seed {info.get('seed', '?')}, "
                    f"simulator {info['simulator_version']}{extra})")
    try:
        paths = detect_layout(directory).paths
    except DataError:
        paths = {}
    present = [paths[n] for n in RECORD_FILES if n in paths]  # any layout of §6/§6b, data/ level included
    files = (", ".join(f"{p.relative_to(directory).as_posix()} sha256 {sha256(p)[:12]}" for p in present)
             or "no file of the spec layout found")
    return check_source(f"data: {_shown(directory)} ({files}{extra})")


def file_source(*paths: str | Path) -> str:
    """The source of numbers computed from data files: ``data: <file> sha256 <first 12 hex>, ...``."""
    if not paths:
        raise ValueError("file_source needs at least one file (fix: pass the data files the numbers come from)")
    return "data: " + ", ".join(f"{_shown(Path(p))} sha256 {sha256(p)[:12]}" for p in paths)


def download_name(label: str, source: str) -> str:
    """The file name (without extension) under which ``label`` is downloaded: the label itself, except for a label
    named after the paper's artefact (``paper-*``), whose file names whose numbers it holds: ``published-<artefact>``
    for the paper's own numbers, ``simulated-<artefact>`` for a simulated world's, ``data-<folder>-<artefact>`` for
    data files' (``<folder>``: the data folder's name, which says whose files they are), so a file saved to disk never passes our numbers off as the
    paper's. The paper's artefact stays the page label and is in the file's metadata (:func:`artefact`).

    >>> download_name("paper-table2", "simulated world (size smoke, seed 0, simulator 1.0)")
    'simulated-table2'
    >>> download_name("paper-fig5", "data: data/cheems (cheems_bench/open.jsonl sha256 1a2b3c4d5e6f)")
    'data-cheems-fig5'
    >>> download_name("paper-table1", "data: data/real (manifest.json sha256 1a2b3c4d5e6f)")
    'data-real-table1'
    >>> download_name("paper-table8", "paper, Table 8 (data/paper/table8_reward_models.csv)")
    'published-table8'
    >>> download_name("tab-data-categories", "simulated world (size smoke, seed 0, simulator 1.0)")
    'tab-data-categories'
    """
    if not label.startswith("paper-"):
        return label
    what = label.removeprefix("paper-")
    kind = check_source(source).split(maxsplit=1)[0].rstrip(":,")
    if kind == "paper":
        return f"published-{what}"
    if kind == "simulated":
        return f"simulated-{what}"
    first = source.removeprefix("data:").strip().split(" ", 1)[0].rstrip(",")  # the folder, or the first file
    name = Path(first).name.split(".")[0]  # a folder's name, or a file's without its extensions
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return f"data-{what}" if slug in ("", "data") else f"data-{slug}-{what}"


def artefact(label: str) -> str:
    """The paper's artefact a ``paper-*`` label stands for (``paper-fig5`` -> ``Fig. 5``), else ``""``.

    >>> artefact("paper-table2"), artefact("paper-alg1"), artefact("tab-data-categories")
    ('Table 2', 'Algorithm 1', '')
    """
    m = re.match(r"^paper-(table|fig|alg)(\d+)$", label)
    return f"{ {'table': 'Table', 'fig': 'Fig.', 'alg': 'Algorithm'}[m.group(1)]} {m.group(2)}" if m else ""


def download_of(label: str, *, kind: str = "tables", root: str | Path = ".") -> Path:
    """The file that holds download ``label`` under ``root``'s ``book/_extra/<kind>`` (``tables``: its CSV,
    ``figures``: its SVG), found by its sidecar's label, whatever :func:`download_name` called it. FileNotFoundError,
    naming the label, when no chapter has published it there."""
    folder = Path(root) / "book" / "_extra" / kind
    ext = "csv" if kind == "tables" else "svg"
    for meta in sorted(folder.glob("*.meta.json")):
        try:
            found = json.loads(meta.read_text(encoding="utf-8")).get("label") == label
        except (OSError, ValueError, AttributeError):
            continue
        path = folder / f"{meta.name[: -len('.meta.json')]}.{ext}"
        if found and path.is_file():
            return path
    raise FileNotFoundError(f"{folder}: no download of {label!r} (fix: run the chapter that publishes it)")


def drop_other_downloads(folder: Path, label: str, stem: str, exts: Sequence[str]) -> None:
    """Delete the files of ``label`` saved under another name (an earlier run on another source, or before the
    file names said whose numbers they hold), so that one label has one download and the index lists it once."""
    for meta in folder.glob("*.meta.json"):
        other = meta.name[: -len(".meta.json")]
        if other == stem:
            continue
        try:
            same = json.loads(meta.read_text(encoding="utf-8")).get("label", other) == label
        except (OSError, ValueError, AttributeError):
            continue
        if same:
            for ext in exts:
                (folder / f"{other}.{ext}").unlink(missing_ok=True)
            meta.unlink(missing_ok=True)


def footer_text(source: str) -> str:
    """The provenance line shown under a figure: the source and whose numbers they are."""
    if source.startswith("paper"):
        whose = "the paper's numbers"
    elif re.search(r"; columns? [^;]*: paper, ", source):
        whose = "only what is marked paper holds the paper's numbers"
    else:
        whose = "not the paper's numbers"
    return f"Source: {source} · Cheems companion · {whose}"


def _chapters_of(root: Path) -> dict[str, str]:
    """``{chapter name: source text}`` of the chapters under ``root/notebooks`` (to say where a label is used)."""
    folder = root / "notebooks"
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.md"))} if folder.is_dir() else {}


def _read_sidecars(folder: Path, exts: Sequence[str], chapters: Mapping[str, str]) -> list[dict]:
    rows = []
    for meta in sorted(folder.glob("*.meta.json")):
        stem = meta.name[: -len(".meta.json")]
        ext = next((e for e in exts if (folder / f"{stem}.{e}").is_file()), None)
        if ext is None:
            continue  # its download is gone: nothing to index
        try:
            info = json.loads(meta.read_text(encoding="utf-8"))
            source = check_source(info["source"])
            label = str(info.get("label") or stem)
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise ValueError(f"{meta}: not a provenance sidecar ({e}) (fix: delete it and rerun the chapter "
                             "that publishes this label)") from None
        chapter = next((name for name, text in chapters.items() if f'"{label}"' in text), "")
        rows.append({"label": label, "file": f"{stem}.{ext}", "artefact": info.get("artefact", ""),
                     "caption": info.get("caption", ""), "source": source, "chapter": chapter})
    return sorted(rows, key=lambda r: (r["label"], r["file"]))


def downloads_digest(root: str | Path, owned: Callable[[str], bool]) -> str:
    """sha256 (16 hex digits) of the downloads under ``root``'s ``book/_extra/{tables,figures}`` whose sidecar label
    ``owned`` accepts: every file of each such download (CSV, SVG, PNG, PDF, a per-item JSONL and its protocol, and
    the sidecar), by name and content.
    A chapter's executed page records it, so a download another run rewrote since (a papermill run in the
    checkout, say) is seen, and the chapter is executed again rather than shown beside files it did not write."""
    h = hashlib.sha256()
    for kind in ("tables", "figures"):
        folder = Path(root) / "book" / "_extra" / kind
        for meta in sorted(folder.glob("*.meta.json")) if folder.is_dir() else ():
            try:
                label = str(json.loads(meta.read_text(encoding="utf-8")).get("label") or "")
            except (OSError, ValueError, AttributeError):
                continue
            if not owned(label):
                continue
            stem = meta.name[: -len(".meta.json")]
            for path in sorted(folder.glob(f"{glob.escape(stem)}.*")):
                if path.name in (f"{stem}.meta.json", f"{stem}.jsonl.gz", f"{stem}.jsonl.gz.cheems.json") or \
                        path.suffix in (".csv", ".svg", ".png", ".pdf"):
                    h.update(f"{kind}/{path.name}\0".encode())
                    h.update(path.read_bytes())
                    h.update(b"\0")
    return h.hexdigest()[:16]


def write_index(root: str | Path = ".") -> dict[str, Path]:
    """Merge the sidecars of ``book/_extra/{tables,figures}`` into their ``index.csv``; returns the paths.

    Columns: label (the page's), file (the download's name, which says whose numbers it holds, a table's CSV or a
    per-item JSONL:
    :func:`download_name`), artefact (the paper's table or figure a
    ``paper-*`` label stands for), caption (tables only), source, and the chapter whose source
    names the label (empty when none does). Rows are sorted by label; a sidecar whose download
    is gone is left out.
    """
    root = Path(root)
    chapters = _chapters_of(root)
    written = {}
    for kind, ext, columns in (("tables", ("csv", "jsonl.gz"), ["label", "file", "artefact", "caption", "source", "chapter"]),
                               ("figures", ("svg",), ["label", "file", "artefact", "source", "chapter"])):
        folder = root / "book" / "_extra" / kind
        if not folder.is_dir():
            continue
        rows = _read_sidecars(folder, ext, chapters)
        with atomic_open(folder / "index.csv", "w", encoding="utf-8", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        written[kind] = folder / "index.csv"
    return written


def sidecar_json(label: str, source: str, caption: str | None = None, *, artefact: str = "") -> str:
    """The text of a download's sidecar ``<file>.meta.json`` (sorted keys: same download, same bytes): its page
    ``label``, ``source``, ``caption`` and, for a label named after the paper's artefact, that ``artefact``
    (``Table 2``): the file name says whose numbers it holds, the sidecar which table of the paper it stands for."""
    meta = {"label": label, "source": source, **({"caption": caption} if caption is not None else {}),
            **({"artefact": artefact} if artefact else {})}
    return json.dumps(meta, ensure_ascii=False, indent=1, sort_keys=True) + "\n"

