"""The registry of the paper's claims: ``data/paper/claims.yaml``, one entry per claim the book tests or cannot test.

An entry is data, not code: the claim's id, the chapter that handles it, its kind, where the paper makes it
(``paper_ref``) and in which words (``paper_words``, a short quote; empty for the project's own questions), the
claim in the book's words (``statement``: what the ledger's ``claim`` column shows, and what the generated sentences
say, :func:`cheems_lib.analyses.claims.claim_sentences`; a chapter may word it more precisely), the
direction its statistic is tested in, ``reason`` (why a claim that is not a finding has its kind) and
``mechanism``: on a simulated world, what in the simulator's construction could decide the verdict whatever
training does (``none`` when nothing does; a calibrated, structural or simulator-check claim's is its reason). The chapters compute estimates; a
:class:`~cheems_lib.analyses.claims.Ledger` checks every claim it records against its entry
(:func:`check`) and takes the paper's reference and words from it, so a chapter cannot produce a claim the
registry lacks, and the tests fail when a registry claim is produced by no chapter.

A claim's kind depends on its data. ``kind`` is its kind on the chapter's default data (the simulated world, or
the real files of the real-data chapters); ``real_kind`` (default: ``kind``) its kind on real files, where
nothing was fitted or built: a *calibrated*, *structural* or *simulator-check* claim there is a *finding*, since
the data, not the simulator's inputs, decide it. ``alt_kind``: a kind the chapter's settings may give it instead
(a test that repeats another at the same settings is *robustness*, counted once).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path

from ..paper import data_dir

__all__ = ["KINDS", "OURS_PREFIX", "ID_PATTERN", "REGISTRY_NAME", "DIRECTIONS", "Entry", "registry", "entry", "check",
           "construction_text", "simulated_source", "families", "FAMILIES"]

KINDS = ("calibrated", "simulator-check", "finding", "robustness", "question", "arithmetic", "structural",
         "untestable")
"""Every kind a claim can have (what each means: :mod:`cheems_lib.analyses.claims`)."""
OURS_PREFIX = "ours"
"""How the ``paper_ref`` of every ``question`` claim (the project's own question), and only of those, starts:
``ours (relates to §6.1, Table 3)``."""
ID_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
"""A stable claim id: lower-case words joined by hyphens."""

REGISTRY_NAME = "claims.yaml"
"""The registry's file name in ``data/paper`` (:func:`cheems_lib.paper.data_dir`)."""
DIRECTIONS = ("greater", "less", "equal", "")
"""The directions an entry may give (:func:`cheems_lib.estimates.decide`'s; empty for a claim decided by a
composite rule or never tested)."""
FAMILIES = ("simulated", "real data")
"""The two families of claims the Claims page counts and adjusts apart (:func:`families`): those computed on a
simulated world and those computed on real files."""


@dataclass(frozen=True)
class Entry:
    """One claim of the registry (see the module's docstring for each field)."""

    id: str
    chapter: str
    kind: str
    paper_ref: str
    paper_words: str = ""
    statement: str = ""
    direction: str = ""
    reason: str = ""
    mechanism: str = ""
    real_kind: str = ""
    alt_kind: str = ""

    def kind_on(self, simulated: bool) -> str:
        """The claim's kind on a simulated world (``simulated``) or on real files."""
        return self.kind if simulated else (self.real_kind or self.kind)

    @property
    def kinds(self) -> tuple[str, ...]:
        """Every kind a chapter may record it with: on a simulated world, on real files, ``alt_kind``, and
        *untestable* (where its data is missing)."""
        return tuple(dict.fromkeys(k for k in (self.kind, self.real_kind, self.alt_kind, "untestable") if k))

    @property
    def construction(self) -> str:
        """What could decide it by construction on a simulated world: ``mechanism``, else the ``reason`` of a
        calibrated, structural or simulator-check claim, else ``none``."""
        return self.mechanism or (self.reason if self.kind in _BUILT else "") or "none"


_BUILT = ("calibrated", "structural", "simulator-check")


def _path() -> Path:
    return data_dir() / REGISTRY_NAME


@lru_cache(maxsize=4)
def _load(path: str, mtime: float) -> dict[str, Entry]:
    import yaml  # the file's reader, imported when a chapter first records a claim

    with open(path, encoding="utf-8") as f:
        items = yaml.safe_load(f) or []
    known = {f.name for f in fields(Entry)}
    out: dict[str, Entry] = {}
    for i, item in enumerate(items, 1):
        where = f"{path}: entry {i}"
        if not isinstance(item, dict) or "id" not in item:
            raise ValueError(f"{where} is not a mapping with an id (fix: write it as '- id: ...' with its fields)")
        unknown = set(item) - known
        if unknown:
            raise ValueError(f"{where} ({item['id']}): unknown fields {sorted(unknown)} (fix: use {sorted(known)})")
        e = Entry(**{k: ("" if v is None else str(v)) for k, v in item.items()})
        if not ID_PATTERN.match(e.id):
            raise ValueError(f"{where}: id {e.id!r} must be lower-case words joined by hyphens")
        if e.id in out:
            raise ValueError(f"{where}: id {e.id!r} is listed twice (fix: keep one entry per claim)")
        for name in ("kind", "real_kind", "alt_kind"):
            value = getattr(e, name)
            if value and value not in KINDS:
                raise ValueError(f"{where} ({e.id}): {name} {value!r} is not one of {KINDS}")
        if e.direction not in DIRECTIONS:
            raise ValueError(f"{where} ({e.id}): direction {e.direction!r} is not one of {DIRECTIONS}")
        # a sweep of our own question is ours too
        if (e.kind == "question") != e.paper_ref.startswith(OURS_PREFIX) and e.kind != "robustness":
            raise ValueError(f"{where} ({e.id}): a question, and only a question, has a paper_ref starting with "
                             f"{OURS_PREFIX!r} (fix: 'ours (relates to §x)' for our own question)")
        if not e.statement:
            raise ValueError(f"{where} ({e.id}): no statement (fix: the claim in the book's words, as the ledger "
                             "shows it)")
        if e.kind not in ("question", "robustness") and e.kind != "untestable" and not e.paper_words:
            raise ValueError(f"{where} ({e.id}): a claim of the paper needs paper_words, a short quote of it")
        if e.kind in ("finding", "robustness") and not e.mechanism:
            raise ValueError(f"{where} ({e.id}): a {e.kind} needs its mechanism (fix: what in the simulator could "
                             "decide it by construction, or 'none')")
        if e.kind in _BUILT and not e.reason:
            raise ValueError(f"{where} ({e.id}): a {e.kind} claim needs its reason (fix: what was fitted or built)")
        out[e.id] = e
    return out


def registry() -> dict[str, Entry]:
    """Every entry of the registry, by id, in the file's order (read once per change of the file)."""
    path = _path()
    if not path.is_file():
        raise FileNotFoundError(f"{path}: the claims registry is missing (fix: restore data/paper/{REGISTRY_NAME})")
    return _load(str(path), path.stat().st_mtime)


def entry(claim_id: str) -> Entry:
    """The registry's entry for ``claim_id``; a KeyError that says how to add one when it has none."""
    try:
        return registry()[claim_id]
    except KeyError:
        raise KeyError(f"claim {claim_id!r} is not in data/paper/{REGISTRY_NAME} (fix: add an entry with its id, "
                       "chapter, kind, paper_ref, paper_words, direction and mechanism)") from None


def construction_text(claim_id: str) -> str:
    """One sentence on what could decide ``claim_id`` by construction on a simulated world (its entry's
    :attr:`Entry.construction`), for a chapter to glue beside the claim.

    >>> construction_text("tab1-length-direction-open-prompt").startswith("On a simulated world, what could decide")
    True
    """
    text = entry(claim_id).construction
    return f"On a simulated world, what could decide {claim_id} by construction: {text[:1].lower()}{text[1:]}" + (
        "" if text.endswith(".") else ".")


def simulated_source(source: str) -> bool:
    """Was a ledger with this ``source`` computed on a simulated world (rather than on named real files)?"""
    return str(source).startswith("simulated world")


def families(sources) -> list[str]:
    """The family (:data:`FAMILIES`) of each source: ``simulated`` for a simulated world, else ``real data``."""
    return [FAMILIES[0] if simulated_source(s) else FAMILIES[1] for s in sources]


def check(claim, *, chapter: str, simulated: bool) -> None:
    """Check ``claim`` (a :class:`~cheems_lib.analyses.claims.Claim`) against its entry and complete it: its
    chapter, kind (its kind on a simulated world or on real files, or *untestable*) and direction must agree with
    the entry, and
    a paper reference the code gives must be the entry's. Fills ``paper_ref``, ``paper_words``, empty words (the
    entry's ``statement``), an empty kind
    (its kind on ``simulated`` data), for a non-finding an empty reason (the entry's), and on a simulated world
    what could decide it by construction (:attr:`Entry.construction`). A ValueError names the entry and the fix."""
    e = entry(claim.id)
    fix = f"(fix: the code or data/paper/{REGISTRY_NAME}'s entry for {claim.id})"
    if e.chapter != chapter:
        raise ValueError(f"claim {claim.id!r} is made by chapter {chapter!r}, but the registry gives it to "
                         f"{e.chapter!r} {fix}")
    # the code knows which data it tested (a test may label a simulated world otherwise), so any of its kinds is
    # accepted
    if not claim.kind:
        claim.kind = e.kind_on(simulated)
    if claim.kind not in e.kinds:
        raise ValueError(f"claim {claim.id!r} has kind {claim.kind!r}; the registry allows {', '.join(e.kinds)} {fix}")
    if claim.paper_ref and claim.paper_ref != e.paper_ref:
        raise ValueError(f"claim {claim.id!r} cites {claim.paper_ref!r}; the registry says {e.paper_ref!r} {fix}")
    if claim.direction and e.direction and claim.direction != e.direction:
        raise ValueError(f"claim {claim.id!r} is tested {claim.direction!r}; the registry says {e.direction!r} {fix}")
    claim.paper_ref, claim.paper_words = e.paper_ref, e.paper_words
    if not claim.claim:
        if not e.statement:
            raise ValueError(f"claim {claim.id!r} has no words: neither the code nor the registry gives them {fix}")
        claim.claim = e.statement
    if claim.kind not in ("finding", "untestable") and not claim.reason:
        claim.reason = e.reason or e.construction
    if simulated and not claim.mechanism:
        claim.mechanism = e.construction
