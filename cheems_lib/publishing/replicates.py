"""World replicates: every finding rebuilt on other simulated worlds, its spread and any verdict that flips.

Every finding the book tests on a simulated world rests on one world (seed 0 unless ``-p seed``). Its interval covers the
benchmark's prompts and the training seeds, never the draw of the world itself. The ``full`` profiles
(:mod:`cheems_lib.publishing.chapters`; ``full-smoke`` at smoke settings) run every chapter marked ``replicated`` again on
the worlds of :data:`~cheems_lib.publishing.chapters.REPLICATE_SEEDS`, with the book's parameters and only ``seed`` replaced:
the world, the data construction, the held-out samples and the bootstrap are drawn anew, the training seeds
(0 .. ``train_seeds``-1) train on the new world's records.

Each replicate is a book of its own under ``_build/replicates/seed<s>/`` (:func:`prepare`): its ``book/`` holds
the executed chapters and their claim files, and it links to the checkout's ``notebooks``, ``data`` and ``build``
(the world and model caches, which it shares with the book). So
:func:`cheems_lib.publishing.execute.execute_chapter` runs a replicate unchanged, with its cache and its nothing-is-lost rules,
and no file of the book itself is touched.

The Claims page reads them (:func:`load`): from each world (the book's and each replicate's), the claims of the
runs its pages show (:func:`cheems_lib.publishing.claims_files.load_shown`), each tagged with the world seed its chapter ran on
(:func:`run_of`). A replicate that ran with other parameters than the book's page (besides ``seed``), or whose
claim file another run wrote, is left out and named. :func:`compare` puts the worlds side by side: per finding
or question (:data:`KINDS`), the estimate and verdict on each world, the range of the estimates and its ``spread``
(max - min), the mean width of the 95% intervals, ``flips`` (the verdict differs between two worlds) and
``reverses`` (supported on one world, contradicted on another). :func:`summary` says it in one sentence;
:func:`left_out` is the sentence the page shows when the build ran no replicates.

>>> rows = [{"id": "a", "kind": "finding", "chapter": "x", "claim": "c", "world_seed": s, "estimate": e,
...          "ci_low": e - 0.1, "ci_high": e + 0.1, "verdict": v}
...         for s, e, v in ((0, 0.2, "supported"), (1, 0.05, "inconclusive"))]
>>> row = compare(rows).iloc[0]
>>> float(round(row["spread"], 3)), row["flips"], row["reverses"]
(0.15, 'yes', 'no')
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from .chapters import CHAPTERS, REPLICATE_SEEDS
from .claims_files import claims_dir, inputs_digest as claims_digest, load_shown

__all__ = ["DIR", "KINDS", "LINKED", "replicate_root", "prepare", "run_of", "load", "compare", "summary",
           "left_out", "inputs_digest", "replicated_chapters", "row_sources"]

DIR = Path("_build") / "replicates"
"""Where the replicates are built, relative to the checkout: one folder ``seed<s>`` per world seed."""
KINDS = ("finding", "question", "simulator-check")
"""The kinds of claim :func:`compare` shows: the paper's findings and the project's own questions, the claims whose
verdicts emerge from the simulated mechanisms, and the simulator checks, whose verdict on one world's labels may be
that world's draw (calibrated, structural and arithmetic ones do not depend on the world's draw in a way that tests
anything; robustness sweeps re-simulate worlds themselves)."""
LINKED = ("notebooks", "data", "build")
"""What a replicate's folder links to in the checkout: the chapters' sources, the data files, the caches."""
_DECIDED = {"supported", "contradicted"}
_SEED = re.compile(r"^seed\s*:\s*int\s*=\s*(\d+)", re.M)  # a chapter's parameters cell line (cheems_lib.publishing.chapters)


def replicated_chapters() -> list[str]:
    """The chapters the ``full`` profiles rebuild on each replicate world, in reading order."""
    return [c.name for c in CHAPTERS if c.replicated]


def replicate_root(root: str | Path, seed: int) -> Path:
    """The folder of the replicate on world ``seed``: ``<root>/_build/replicates/seed<seed>``."""
    return Path(root) / DIR / f"seed{int(seed)}"


def prepare(root: str | Path, seed: int) -> Path:
    """Make the replicate folder of world ``seed`` ready to execute chapters in; returns it.

    It gets its own ``book/`` and relative links to the checkout's :data:`LINKED` folders (``build`` is made when
    missing, so the world and model caches are shared). A link is replaced atomically (a new link renamed over
    it); something other than a link in its place is refused, never removed."""
    root = Path(root)
    out = replicate_root(root, seed)
    (out / "book").mkdir(parents=True, exist_ok=True)
    (root / "build").mkdir(exist_ok=True)
    for name in LINKED:
        target, link = root / name, out / name
        if not target.exists():
            continue
        rel = os.path.relpath(target, out)
        if link.is_symlink() and os.readlink(link) == rel:
            continue
        if link.exists() and not link.is_symlink():
            raise FileExistsError(f"{link}: not a link to {target} (fix: remove {out} and build again)")
        tmp = out / f".{name}.link-{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(rel, target_is_directory=target.is_dir())
        os.replace(tmp, link)
    return out


def run_of(book_dir: str | Path, chapter: str) -> tuple[int, dict[str, Any]] | None:
    """The world seed and parameters of ``book_dir/<chapter>.ipynb``'s run (its ``cheems`` metadata; the seed a
    run did not set is its parameters cell's default, read from the executed notebook itself); None when the
    notebook is missing, unreadable, has no recorded run (a placeholder) or no seed."""
    try:
        nb = json.loads((Path(book_dir) / f"{chapter}.ipynb").read_text(encoding="utf-8"))
        params = dict(nb["metadata"]["cheems"]["parameters"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if "seed" not in params:
        cells = [c for c in nb.get("cells", []) if "parameters" in c.get("metadata", {}).get("tags", [])]
        source = "".join(cells[0]["source"]) if cells else ""
        found = _SEED.search(source)
        if found is None:
            return None
        params["seed"] = int(found[1])
    return int(params.pop("seed")), params


def load(root: str | Path = ".", seeds: Sequence[int] = (), chapters: Sequence[str] | None = None
         ) -> tuple[list[dict], dict[str, str]]:
    """The claims of the book's world and of each replicate world ``seeds`` under ``root``: ``(rows, left)``.

    ``rows``: every claim of ``chapters`` (default: :func:`replicated_chapters`) that a page shows
    (:func:`cheems_lib.publishing.claims_files.load_shown`), with ``world_seed`` (:func:`run_of`) and ``replicate`` (False for
    the book's own run). ``left``: ``{"<chapter> on world seed <s>": why}`` for each replicate left out: its claim
    file was written by another run than its page shows, its page ran with other parameters than the book's
    (besides ``seed``), or it has not run."""
    root = Path(root)
    names = list(chapters) if chapters is not None else replicated_chapters()
    main = {name: run_of(root / "book", name) for name in names}
    rows, left = [], {}
    for where, replicate in [(root, None)] + [(replicate_root(root, s), s) for s in seeds]:
        for name in names:
            found, stale = load_shown(claims_dir(where), where / "book", [name])
            run = main[name] if replicate is None else run_of(where / "book", name)
            why = None if replicate is None else _left_why(name, bool(stale), run, main[name])
            if why:
                left[f"{name} on world seed {replicate}"] = why
            elif run is not None:
                rows += [{**row, "world_seed": run[0], "replicate": replicate is not None} for row in found]
    return rows, left


def _left_why(name: str, stale: bool, run, main) -> str | None:
    """Why a replicate's claims of chapter ``name`` are left out (None: they are used)."""
    fix = f"(fix: .venv/bin/cheems book --profile full --chapter {name})"
    if stale or run is None:
        return f"its replicate has not run, or its claims are not those of the run its page shows {fix}"
    if main is not None and run[1] != main[1]:
        return f"its replicate ran with other parameters than the book's page {fix}"
    return None


def _finite(values) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(float(v))]


def _one(claim_id: str, rows: Sequence[Mapping], seeds: Sequence[int]) -> dict:
    """One row of :func:`compare`: a claim's estimates and verdicts on each world and what they say together."""
    by_seed: dict[int, Mapping] = {}
    for r in sorted(rows, key=lambda r: bool(r.get("replicate"))):  # the book's own run first
        by_seed.setdefault(int(r["world_seed"]), r)
    first = next(iter(by_seed.values()))
    out: dict[str, Any] = {"id": claim_id, "chapter": first.get("chapter", ""), "claim": first.get("claim", ""),
                           "worlds": len(by_seed)}
    for s in seeds:
        r = by_seed.get(s)
        out[f"estimate_seed{s}"] = float(r["estimate"]) if r is not None and r.get("estimate") is not None else math.nan
        out[f"verdict_seed{s}"] = r["verdict"] if r is not None else ""
    estimates = _finite(out[f"estimate_seed{s}"] for s in seeds)
    widths = _finite(float(r["ci_high"]) - float(r["ci_low"]) for r in by_seed.values()
                     if r.get("ci_low") is not None and r.get("ci_high") is not None)
    out["min"] = min(estimates) if estimates else math.nan
    out["max"] = max(estimates) if estimates else math.nan
    out["spread"] = out["max"] - out["min"] if len(estimates) > 1 else math.nan
    out["mean_ci_width"] = sum(widths) / len(widths) if widths else math.nan
    verdicts = {r["verdict"] for r in by_seed.values()}
    enough = len(by_seed) > 1
    out["flips"] = ("yes" if len(verdicts) > 1 else "no") if enough else ""
    out["reverses"] = ("yes" if _DECIDED <= verdicts else "no") if enough else ""
    return out


def compare(rows: Sequence[Mapping], *, kinds: Sequence[str] = KINDS):
    """One row per claim of ``kinds`` (the kind of its first row: the book's own run when there is one), in the
    order of ``rows``: ``id``, ``chapter``, ``claim``, ``worlds`` (on how many worlds it was rebuilt), then per
    world seed ``s`` (ascending) ``estimate_seed<s>`` and ``verdict_seed<s>`` (NaN and empty where that world
    lacks it), ``min``, ``max`` and ``spread`` (max - min; NaN on fewer than two worlds) of the estimates,
    ``mean_ci_width`` (of the 95% intervals over the worlds), ``flips`` and ``reverses`` (``yes``/``no``; empty
    on fewer than two worlds)."""
    import pandas as pd

    seeds = sorted({int(r["world_seed"]) for r in rows})
    groups: dict[str, list[Mapping]] = {}
    for r in rows:
        groups.setdefault(r["id"], []).append(r)
    out = []
    for claim_id, group in groups.items():
        head = sorted(group, key=lambda r: bool(r.get("replicate")))[0]
        if head.get("kind") in kinds:
            out.append(_one(claim_id, group, seeds))
    columns = ["id", "chapter", "claim", "worlds", *[f"{k}_seed{s}" for s in seeds for k in ("estimate", "verdict")],
               "min", "max", "spread", "mean_ci_width", "flips", "reverses"]
    return pd.DataFrame(out, columns=columns)


def row_sources(rows: Sequence[Mapping], frame) -> list[str]:
    """The source of each row of :func:`compare`'s ``frame``: the sources of its claim's rows on every world."""
    by_id: dict[str, set[str]] = {}
    for r in rows:
        by_id.setdefault(r["id"], set()).add(r["source"])
    return ["; ".join(sorted(by_id[i])) for i in frame["id"]]


def _seeds_text(seeds: Sequence[int]) -> str:
    seeds = [str(s) for s in seeds]
    return seeds[0] if len(seeds) == 1 else ", ".join(seeds[:-1]) + " and " + seeds[-1]


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def summary(frame, left: Mapping[str, str] | None = None, *, kinds: Sequence[str] = KINDS) -> str:
    """The sentence the Claims page prints over :func:`compare`'s ``frame``: on which worlds the claims were
    rebuilt, how many keep their verdict on every world, flip or reverse, how many spread across the worlds by
    more than their mean 95% interval, and what ``left`` (:func:`load`) left out.

    >>> import pandas as pd
    >>> f = pd.DataFrame({"worlds": [3, 3], "estimate_seed0": [0.1, 0.2], "flips": ["no", "yes"],
    ...                   "reverses": ["no", "no"], "spread": [0.01, 0.3], "mean_ci_width": [0.1, 0.1]})
    >>> summary(f).split(". ")[1].split(";")[0]
    '1 keep their verdict on every world they were rebuilt on and 1 change it, 0 of these from supported to contradicted or back'
    """
    seeds = [int(c.removeprefix("estimate_seed")) for c in frame.columns if c.startswith("estimate_seed")]
    n = len(frame)
    every = int((frame["worlds"] == len(seeds)).sum()) if n else 0
    flips = int((frame["flips"] == "yes").sum()) if n else 0
    reverses = int((frame["reverses"] == "yes").sum()) if n else 0
    kept = int((frame["flips"] == "no").sum()) if n else 0
    wide = int((frame["spread"] > frame["mean_ci_width"]).sum()) if n else 0
    kinds_text = ", ".join(kinds[:-1]) + " or " + kinds[-1] if len(kinds) > 1 else "".join(kinds)
    text = (f"World replicates: {_count(n, 'claim')} of kind {kinds_text} rebuilt on world seeds "
            f"{_seeds_text(seeds) if seeds else '(none)'}, {every} of them on every one. {kept} keep their verdict on "
            f"every world they were rebuilt on and {flips} change it, {reverses} of these from supported to "
            f"contradicted or back; for {wide} the estimates spread across the worlds by more than the mean width of "
            f"their 95% intervals, a variance that one world's interval does not cover.")
    if left:
        text += " Left out: " + "; ".join(f"{k} ({why})" for k, why in left.items()) + "."
    return text


def left_out(seeds: Sequence[int] | None = None, chapters: Sequence[str] | None = None) -> str:
    """The sentence the Claims page shows when this build ran no world replicates: what the build leaves out and
    the command that adds it."""
    seeds = REPLICATE_SEEDS if seeds is None else seeds
    chapters = replicated_chapters() if chapters is None else chapters
    return (f"This build leaves the world replicates out: every finding above computed on a simulated world rests "
            f"on one world (the seed each chapter's header shows), and its interval covers the prompts and the training seeds, not "
            f"the draw of that world. The command `.venv/bin/cheems book --profile full` (`full-smoke`: at smoke settings) also "
            f"runs the chapters {', '.join(chapters)} on world seeds {_seeds_text(seeds)}, about three times their "
            f"cost, and shows here how much each finding and question spreads across the worlds and every verdict "
            f"that flips.")


def inputs_digest(root: str | Path, seeds: Sequence[int]) -> str:
    """sha256 of what the Claims page reads from the replicates ``seeds`` under ``root``: each replicate's claim
    files and runs (:func:`cheems_lib.publishing.claims_files.inputs_digest`) and the parameters its pages record (part of the
    Claims page's cache key when it shows replicates)."""
    h = hashlib.sha256()
    for s in seeds:
        where = replicate_root(root, s)
        runs = {name: run_of(where / "book", name) for name in replicated_chapters()}
        h.update(f"{s}:{claims_digest(where)}:{json.dumps(runs, sort_keys=True, default=str)}\n".encode())
    return h.hexdigest()
