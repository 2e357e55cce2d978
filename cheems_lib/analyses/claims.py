"""The claims ledger: the paper's claims, tested by one rule, saved per chapter and read back by the Claims page.

A claim compares a statistic with a reference value or with another model's statistic. The statistic is
an :class:`cheems_lib.estimates.Estimate` (paired, stratified bootstrap over prompts, hierarchical over
training seeds) and its verdict comes from :func:`cheems_lib.estimates.decide` (one of
:data:`cheems_lib.estimates.VERDICTS`, *insufficient data* included); :meth:`Claim.test` does both.
This module adds what makes a verdict a claim: its kind, its sentence, the ledger and its files.

Its kind is one of :data:`KINDS`: ``calibrated`` (the simulator was fitted to this number,
so agreement is not evidence), ``simulator-check`` (a statistic read from the simulated labels with no model
trained: it checks what the simulator's inputs produce, not a mechanism of the paper, so even a contradicted
verdict only says the simulator misfits), ``finding`` (a claim of the paper that emerges from the simulated
mechanisms), ``robustness`` (a sweep of another claim over a simulator parameter: does its verdict
hold? not a claim of the paper, and never counted as a finding), ``question`` (the project's own
question, not a claim of the paper: its ``paper_ref`` reads "ours (relates to ...)", naming the part of the
paper it relates to, and its reason names what the paper can and cannot say about it), ``arithmetic`` (a claim about
the paper's own printed numbers, read from ``data/paper/``: it checks the paper's words against its
tables, never our data, so it has no interval), ``structural`` (true by construction, e.g. a design
input of the simulator that no number was fitted to; the reason says why), ``untestable`` (cannot
be tested on these data; the reason says why). Every kind but ``finding`` needs its reason.

Which claims exist, their kinds, the paper's reference and words, and what could decide each by construction
are data: the registry ``data/paper/claims.yaml`` (:mod:`cheems_lib.analyses.claim_registry`). A ledger checks
every claim it records against it and fills the paper's reference and words from it.

A chapter collects its claims in a :class:`Ledger`, glues one sentence per claim (generated
from the verdict, never typed) and saves them to ``book/_extra/claims/<chapter>.json``; the
Claims page reads them all and exports ``tables/claims.csv``. The files, the run digest that ties
each to the page that shows it, and their reading are :mod:`cheems_lib.publishing.claims_files`.

Each verdict is one 95% interval, and the ledger holds many. The Claims page
(:mod:`cheems_lib.analyses.claims_page`) adds a multiplicity rule over the findings (:func:`multiplicity`: Holm's
step-down on each claim's bootstrap p-value, :func:`cheems_lib.estimates.p_value`) and, for each inconclusive
finding, the count of prompts or seeds that would decide it at the observed effect
(:func:`cheems_lib.estimates.scale_to_decide`, rule :data:`cheems_lib.estimates.POWER_RULE`). Every verdict also
rests on one simulated world: the ``full`` profiles rebuild the findings on more worlds and the Claims page shows
their spread and any verdict that flips (:mod:`cheems_lib.publishing.replicates`); other builds say there that
they leave these out.

For tests, ``CHEEMS_FORCE_VERDICT="claim-id=contradicted,..."`` forces verdicts (any of
:data:`cheems_lib.estimates.VERDICTS`, ``claim-id=insufficient data`` too); a forced claim is marked ``forced``
everywhere it is shown.
"""
from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from ..estimates import (HOLM_ALPHA, INSUFFICIENT, VERDICTS, Estimate, decide, holm_adjust, insufficient_text,
                         p_value, units_to_decide)
from ..publishing.claims_files import write_claims
from .claim_registry import check, entry, families, ID_PATTERN, KINDS, OURS_PREFIX, simulated_source

__all__ = ["POSITION_EQUIVALENCE", "GPT_POSITION_TARGET", "CONFLICT_TOLERANCE",
           "TABLE1_TOLERANCE", "MODERATE_LENGTH_DIFFERENCE", "LARGE_LENGTH_DIFFERENCE", "PRONOUNCED_BIAS",
           "NEAR_TIE_UTILITY", "CLAIM_COLUMNS", "MULTIPLICITY_COLUMNS", "CSV_COLUMNS", "HOLM_KINDS", "multiplicity",
           "pd_na", "claim_sentences", "Claim", "Ledger", "to_frame", "forced_verdicts"]



# Every threshold a claim uses, in one place (the statistical ones: CI and N_BOOT in estimates, MIN_UNITS in metrics).
POSITION_EQUIVALENCE = 0.03
"""'No position preference' means the share for the second-shown response is within 0.5 ± this
(also the calibration tolerance of the human annotator's position share)."""
GPT_POSITION_TARGET = 0.55
"""Calibration target: the simulated GPT-4o's share for the second-shown response is at least this."""
CONFLICT_TOLERANCE = 0.03
"""Calibration tolerance of the simulated conflict ratios around Table 5."""
TABLE1_TOLERANCE = 0.05
"""Relative tolerance for 'ours reaches the paper's Table 1 statistic' (±5%)."""
MODERATE_LENGTH_DIFFERENCE = 150
"""A length difference below this many characters (real length) is moderate (Fig. 15)."""
LARGE_LENGTH_DIFFERENCE = 250
"""A length difference of at least this many characters (real length) is large (Fig. 15)."""
PRONOUNCED_BIAS = 0.1
"""Appendix D.3's "not very pronounced" (the paper gives no number; this is ours): every Fig. 15 share
(position, and the longer response at a moderate or large length difference) within 0.5 ± this."""
NEAR_TIE_UTILITY = 0.5
"""Two responses are a near-tie when their hidden utilities (0-5 scale, simulated worlds only)
differ by less than this: the simulated human annotator's tie margin
(:attr:`cheems_lib.world.annotators.HumanAnnotator.tie_margin`), the gap below which it calls a tie."""

CLAIM_COLUMNS = ["id", "paper_ref", "claim", "kind", "verdict", "estimate", "ci_low", "ci_high", "seeds", "n",
                 "chapter", "statistic", "paper", "reason", "p", "paper_words", "mechanism"]
"""Columns of a saved claim in the ledger's frame (:func:`to_frame`); ``n`` is the count of units (prompts, or
training sets) the interval resamples, empty where unknown; ``statistic`` is what the estimate measures,
``paper`` the paper's words or numbers, ``reason`` why a claim is not a finding; ``p`` its bootstrap p-value
(:func:`~cheems_lib.estimates.p_value`); ``paper_words`` the registry's quote of the paper and ``mechanism``, for a
finding on a simulated world, what in the simulator could decide it by construction (``none`` when nothing does).
"""
MULTIPLICITY_COLUMNS = ["family", "p_holm", "holm", "decides_at_n"]
"""Columns :func:`multiplicity` adds over the whole ledger: the claim's family (*simulated* or *real data*, from its
source: :func:`cheems_lib.analyses.claim_registry.families`), the Holm-adjusted p within its family, the verdict under
Holm's rule, and for an inconclusive finding the count of units that would decide it
(:func:`~cheems_lib.estimates.units_to_decide`)."""
CSV_COLUMNS = CLAIM_COLUMNS + MULTIPLICITY_COLUMNS
"""Columns of ``tables/claims.csv`` (plus ``source``, which every download carries)."""


def claim_sentences(claim: "Claim") -> dict[str, str]:
    """The sentence of each verdict of a claim tested on an interval (:meth:`Claim.test`), generated from its words
    (``claim``, the registry's ``statement`` by default: a statement, or a question ending in "?"), statistic,
    direction and margin: what every claim without sentences of its own shows (:attr:`Claim.sentence`). Format
    strings, as ``says``; empty for a claim with no direction.

    >>> c = Claim("x-y", "ours (relates to §1)", "a beats b", "question", "supported", estimate=0.1, ci_low=0.05,
    ...           ci_high=0.15, seeds=3, n=80, statistic="accuracy of a minus b", direction="greater")
    >>> c.sentence
    'Supported: A beats b. Accuracy of a minus b: 0.100 [0.050, 0.150] (95% interval resampling prompts; training seeds: 3), above 0.'
    >>> c.claim, c.verdict = "does a beat b?", "contradicted"
    >>> c.sentence.split(": 0.100")[0]
    'Does a beat b? No, the reverse. Accuracy of a minus b'
    """
    m = f"{claim.margin:g}"
    sides = {"greater": (f"above {m}", f"below -{m}" if claim.margin else "below 0",
                         f"neither above {m} nor below -{m}" if claim.margin else "includes 0"),
             "less": (f"below -{m}" if claim.margin else "below 0", f"above {m}",
                      f"neither below -{m} nor above {m}" if claim.margin else "includes 0"),
             "equal": (f"within ±{m}", f"wholly beyond ±{m}", f"neither within ±{m} nor wholly beyond it")
             }.get(claim.direction)
    if sides is None:
        return {}
    # the words and the statistic are text, not templates: braces in them are kept as they are
    what = claim.claim.rstrip(".").replace("{", "{{").replace("}", "}}")
    stat = (claim.statistic[:1].upper() + claim.statistic[1:] if claim.statistic else "The statistic").replace(
        "{", "{{").replace("}", "}}")
    seeds = f"; training seeds: {claim.seeds}" if claim.seeds > 1 else ""
    interval = "{estimate:.3f} [{lo:.3f}, {hi:.3f}] (95% interval resampling " + f"{claim.unit}s{seeds})"
    if math.isnan(claim.ci_low) or math.isnan(claim.ci_high):  # decide() gives such an estimate "inconclusive"
        sides, interval = (sides[0], sides[1], "with no interval to decide by"), "{estimate:.3f}"
    head = what[:1].upper() + what[1:]
    if what.endswith("?"):  # a question of ours: answered, not asserted
        return {"supported": f"{head} Yes. {stat}: {interval}, {sides[0]}.",
                "contradicted": f"{head} No, the reverse. {stat}: {interval}, {sides[1]}.",
                "inconclusive": f"{head} These data do not tell. {stat}: {interval}, {sides[2]}."}
    return {"supported": f"Supported: {head}. {stat}: {interval}, {sides[0]}.",
            "contradicted": f"Contradicted: {stat}: {interval}, {sides[1]}, against the claim that {what}.",
            "inconclusive": f"Inconclusive: {stat}: {interval}, {sides[2]}, so these data do not tell whether {what}."}


def forced_verdicts() -> dict[str, str]:
    """``CHEEMS_FORCE_VERDICT`` as ``{claim id: verdict}`` (for tests of the generated prose)."""
    out = {}
    for item in filter(None, (s.strip() for s in os.environ.get("CHEEMS_FORCE_VERDICT", "").split(","))):
        cid, _, verdict = item.partition("=")
        if verdict not in VERDICTS:
            raise ValueError(f"CHEEMS_FORCE_VERDICT: {item!r} is not id=verdict with a verdict in {VERDICTS}")
        out[cid] = verdict
    return out


@dataclass
class Claim:
    """One paper claim, tested. ``says`` maps a verdict to the sentence the chapter shows (a
    format string with ``{estimate}``, ``{lo}``, ``{hi}``, ``{seeds}``, ``{n}``); :attr:`sentence` is the
    one for the computed verdict. ``n`` is the count of units the statistic rests on (``unit``,
    see :class:`~cheems_lib.estimates.Estimate`); an *insufficient data* verdict without its own ``says`` entry
    gets the generated :func:`~cheems_lib.estimates.insufficient_text`. ``p``, ``direction`` and ``margin`` are
    what the Claims page's multiplicity rule and power line need (:func:`multiplicity`): :meth:`test` fills them,
    and ``replicates``, the bootstrap replicates behind ``p`` (its resolution, :func:`~cheems_lib.estimates.smallest_p`);
    a claim decided by a composite rule (:func:`~cheems_lib.estimates.best_of`,
    :func:`~cheems_lib.estimates.all_of`) passes ``p=p_value(deciding difference, ...)``."""

    id: str
    paper_ref: str
    claim: str
    kind: str
    verdict: str
    estimate: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    seeds: int = 0
    n: int | None = None
    chapter: str = ""
    statistic: str = ""
    paper: str = ""
    reason: str = ""
    link: str = ""
    paper_words: str = ""
    mechanism: str = ""
    forced: bool = False
    unit: str = "prompt"
    p: float = math.nan
    replicates: int = 0
    direction: str = ""
    margin: float = 0.0
    says: dict[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self):
        if not ID_PATTERN.match(self.id):
            raise ValueError(f"claim id {self.id!r} must be lower-case words joined by hyphens")
        if self.kind and self.kind not in KINDS:  # empty: the registry fills it (Ledger.add)
            raise ValueError(f"claim {self.id}: kind {self.kind!r} is not one of {KINDS}")
        if self.verdict not in VERDICTS:
            raise ValueError(f"claim {self.id}: verdict {self.verdict!r} is not one of {VERDICTS}")
        if self.n is not None:  # a count from a table row may come as a numpy number or NaN
            self.n = None if isinstance(self.n, float) and math.isnan(self.n) else int(self.n)
        # the paper is never credited with the project's questions (one that cannot be tested stays untestable);
        # an empty paper_ref is filled from the registry (Ledger.add), which checks the same
        if self.paper_ref and self.kind and self.kind not in ("untestable", "robustness") and \
                (self.kind == "question") != self.paper_ref.startswith(OURS_PREFIX):
            raise ValueError(f"claim {self.id}: paper_ref {self.paper_ref!r} with kind {self.kind!r} (fix: a question "
                             f"claim, and only one, has a paper_ref starting {OURS_PREFIX!r})")
        forced = forced_verdicts().get(self.id)
        if forced and forced != self.verdict:
            self.verdict, self.forced = forced, True

    @classmethod
    def test(cls, id: str, diff: Estimate, direction: str = "", *, margin: float = 0.0, seed: int = 0,
             **fields) -> "Claim":
        """A claim decided by :func:`~cheems_lib.estimates.decide` on ``diff`` in ``direction`` (default: its
        registry entry's); ``fields`` are the other attributes. Without ``says`` its sentences are generated
        (:func:`claim_sentences`), and without ``paper_ref``, ``claim`` or ``kind`` the ledger takes them from the
        registry (:func:`cheems_lib.analyses.claim_registry.check`)."""
        direction = direction or entry(id).direction
        for name in ("paper_ref", "claim", "kind"):
            fields.setdefault(name, "")
        lo, hi = diff.interval(seed=seed)
        return cls(id=id, verdict=decide(diff, direction, margin=margin, seed=seed), estimate=diff.value,
                   ci_low=lo, ci_high=hi, seeds=diff.seeds, n=diff.n, unit=diff.unit,
                   p=p_value(diff, direction, margin=margin, seed=seed), direction=direction, margin=margin,
                   replicates=int(diff.boot.shape[1]), **fields)

    @classmethod
    def untestable(cls, id: str, paper_ref: str, claim: str, reason: str, **fields) -> "Claim":
        """A claim these files cannot test, e.g. ``reason="needs cheems_bench_gpt/"``; its sentence says why.
        A ``kind`` in ``fields`` (the kind it has where it can be tested) is replaced by *untestable*."""
        fields.pop("kind", None)
        return cls(id=id, paper_ref=paper_ref, claim=claim, kind="untestable", verdict="inconclusive", reason=reason,
                   **fields)

    @property
    def sentence(self) -> str:
        if self.kind == "untestable" and self.verdict not in self.says:
            return f"Untestable here ({self.reason}): {self.claim}."
        if self.verdict == INSUFFICIENT and INSUFFICIENT not in self.says:
            text = insufficient_text(self.n, self.unit, self.claim)
            return text + (" (verdict forced for a test)" if self.forced else "")
        template = (self.says.get(self.verdict) or claim_sentences(self).get(self.verdict)
                    or "{statistic}: {estimate:.3f} [{lo:.3f}, {hi:.3f}]")
        text = template.format(estimate=self.estimate, lo=self.ci_low, hi=self.ci_high, seeds=self.seeds,
                               statistic=self.statistic, verdict=self.verdict, n=self.n)
        return text + (" (verdict forced for a test)" if self.forced else "")

    def to_json(self) -> dict:
        out = asdict(self)
        out.pop("says")
        out["sentence"] = self.sentence
        return out


class Ledger:
    """The claims one chapter tests: add them, glue their sentences, save them for the Claims page."""

    def __init__(self, chapter: str, source: str, *, registered: bool = True):
        """``registered``: check every claim against the registry (:func:`claim_registry.check`); off only for
        tests of the ledger itself, whose claims are made up."""
        self.chapter, self.source, self.claims, self.registered = chapter, source, {}, registered

    def add(self, claim: Claim, *, glue: bool = True) -> Claim:
        """Record ``claim`` (its chapter set to this ledger's), checked against and completed from its registry
        entry (:func:`cheems_lib.analyses.claim_registry.check`), and glue ``claim-<id>`` (its sentence),
        ``verdict-<id>`` and ``kind-<id>``."""
        if claim.id in self.claims:
            raise ValueError(f"claim {claim.id!r} added twice in chapter {self.chapter!r}")
        if self.registered:
            check(claim, chapter=self.chapter, simulated=simulated_source(self.source))
        if not claim.kind:
            raise ValueError(f"claim {claim.id}: no kind (fix: give one, or record it in a registered ledger)")
        if claim.kind != "finding" and not claim.reason:
            raise ValueError(f"claim {claim.id}: a {claim.kind} claim needs its reason")
        claim.chapter = self.chapter
        self.claims[claim.id] = claim
        if glue:
            from myst_nb import glue as myst_glue

            myst_glue(f"claim-{claim.id}", claim.sentence, display=False)
            myst_glue(f"verdict-{claim.id}", claim.verdict, display=False)
            myst_glue(f"kind-{claim.id}", claim.kind, display=False)
        return claim

    def frame(self):
        return to_frame(list(self.claims.values()))

    def styled(self, columns: Sequence[str], *, caption: str | None = None, na_rep: str = "–"):
        """The chapter's claims table: ``columns`` of :meth:`frame`, three decimals, no index, for
        ``publish.table``."""
        styler = self.frame()[list(columns)].style.format(precision=3, na_rep=na_rep).hide(axis="index")
        return styler.set_caption(caption) if caption else styler

    def save(self, root: str | Path = ".", *, glue: bool = True) -> Path:
        """Write ``book/_extra/claims/<chapter>.json`` (:func:`cheems_lib.publishing.claims_files.write_claims`)
        and glue its ``run`` digest as ``claims-run-<chapter>`` into the notebook that runs this, so the Claims page
        uses the file only with the page that shows it."""
        out, run = write_claims(root, self.chapter, self.source, [c.to_json() for c in self.claims.values()])
        if glue:
            from myst_nb import glue as myst_glue

            myst_glue(f"claims-run-{self.chapter}", run, display=False)
        return out


def to_frame(claims: Sequence[Claim | dict]):
    """The ledger as a DataFrame: :data:`CLAIM_COLUMNS` first, then the other fields."""
    import pandas as pd

    rows = [c.to_json() if isinstance(c, Claim) else dict(c) for c in claims]
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=CLAIM_COLUMNS)
    # a file saved before a column existed (e.g. ``n``) gets it empty
    frame = frame.reindex(columns=CLAIM_COLUMNS + [c for c in frame.columns if c not in CLAIM_COLUMNS])
    frame["n"] = frame["n"].astype("Int64")
    return frame

# ---- multiplicity and power over the whole ledger (the Claims page) --------------------------------------------

HOLM_KINDS = ("finding",)
"""The kinds whose verdicts form the family Holm's rule adjusts: the claims that are evidence. A calibrated,
structural or untestable claim's verdict is no test of the paper, so it is not counted."""
_DECIDED = ("supported", "contradicted")


def multiplicity(frame, *, alpha: float = HOLM_ALPHA, kinds: Sequence[str] = HOLM_KINDS):
    """The ledger ``frame`` (:func:`to_frame`, every chapter's claims) with :data:`MULTIPLICITY_COLUMNS`.

    Claims computed on a simulated world and on real files are two families, adjusted apart (a simulated world's
    verdicts and a real file's are different kinds of evidence; ``family``, from the ``source`` column). Within
    each, the adjusted claims are those of ``kinds`` with a p-value (:func:`~cheems_lib.estimates.p_value`).
    ``p_holm``: its Holm-adjusted p within its family (:func:`~cheems_lib.estimates.holm_adjust`). ``holm``: its verdict under Holm's rule at
    ``alpha``: a supported or contradicted verdict whose adjusted p exceeds ``alpha`` becomes *inconclusive*, every
    other verdict stays (the rule only withholds decisions); empty outside the family. ``decides_at_n``: for an
    inconclusive claim of the family, :func:`~cheems_lib.estimates.units_to_decide` (the count of its ``unit``),
    else empty."""
    out = frame.copy()
    if out.empty:
        for col in MULTIPLICITY_COLUMNS:
            out[col] = []
        return out
    out["family"] = families(out["source"]) if "source" in out else families(["simulated world"] * len(out))
    p = out["p"].astype(float) if "p" in out else np.full(len(out), math.nan)
    family = out["kind"].isin(list(kinds)).to_numpy() & np.isfinite(p.to_numpy() if hasattr(p, "to_numpy") else p)
    adjusted = np.full(len(out), math.nan)
    for name in set(out["family"]):
        members = family & (out["family"] == name).to_numpy()
        adjusted[members] = holm_adjust(np.asarray(p, float)[members])
    out["p_holm"] = adjusted
    holds = [v if not f else v if v not in _DECIDED or a <= alpha + 1e-12 else "inconclusive"
             for v, f, a in zip(out["verdict"], family, adjusted)]
    out["holm"] = [h if f else "" for h, f in zip(holds, family)]
    direction = out["direction"].fillna("") if "direction" in out else [""] * len(out)
    margin = out["margin"].fillna(0.0) if "margin" in out else [0.0] * len(out)
    out["decides_at_n"] = [units_to_decide(float(r.estimate), float(r.ci_low), float(r.ci_high),
                                           None if pd_na(r.n) else int(r.n), d, float(m))
                           if f and r.verdict == "inconclusive" else None
                           for r, f, d, m in zip(out.itertuples(), family, direction, margin)]
    out["decides_at_n"] = out["decides_at_n"].astype("Int64")
    return out


def pd_na(value) -> bool:
    """Is ``value`` missing (None, NaN or pandas' NA)?"""
    try:
        return value is None or bool(value != value) or str(value) == "<NA>"
    except TypeError:
        return str(value) == "<NA>"
