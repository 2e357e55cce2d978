"""The claims ledger: one rule for testing every claim of the paper.

A claim compares a statistic with a reference value or with another model's statistic.
Every statistic is an :class:`Estimate`: a point value per training seed and bootstrap
replicates per seed. The replicates come from a bootstrap over prompts, stratified by
category like :mod:`cheems_lib.metrics`, and a comparison subtracts replicates drawn from the
*same* resamples (paired): :func:`cheems_lib.metrics.evaluate_subset` and
:func:`ratio_estimate` draw their resamples from ``seed`` and the prompts' categories only,
never from the scores, so two models evaluated with the same ``seed`` on the same records
share them. With several training seeds the interval is hierarchical: each replicate draws
the seeds with replacement, then uses that replicate's prompt resample within each seed.

The verdict of a claim (:func:`decide`) is one of :data:`VERDICTS`:

- direction ``greater`` (``less``): *supported* when the whole interval of the difference
  lies above (below) zero, *contradicted* when it lies wholly on the other side, else
  *inconclusive*;
- direction ``equal`` (no effect, e.g. "humans show no position preference"): *supported*
  when the interval lies inside ``±margin``, *contradicted* when it lies wholly outside it,
  else *inconclusive*;
- before either: *insufficient data* when the statistic rests on fewer than :data:`MIN_UNITS`
  independent units (``Estimate.n``: the prompts, or training sets, its bootstrap resamples),
  or, for an estimate that does not know its count, when the bootstrap interval collapses to
  one value (every resample gives the same number). Its sentence is generated here
  (:func:`insufficient_text`: "Insufficient data: 1 prompt, needs at least 10 ..."), so every
  chapter that glues claim sentences has one without typing it.

Its kind is one of :data:`KINDS`: ``calibrated`` (the simulator was fitted to this number,
so agreement is not evidence), ``finding`` (a claim of the paper that emerges from the simulated
mechanisms), ``robustness`` (a sweep of another claim over a simulator parameter: does its verdict
hold? not a claim of the paper, and never counted as a finding), ``question`` (the project's own
question, not a claim of the paper: its ``paper_ref`` says "ours (not a claim of the paper)" and
its reason names what the paper's table can and cannot say about it), ``arithmetic`` (a claim about
the paper's own printed numbers, read from ``data/paper/``: it checks the paper's words against its
tables, never our data, so it has no interval), ``structural`` (true by construction, e.g. a design
input of the simulator that no number was fitted to; the reason says why), ``untestable`` (cannot
be tested on these data; the reason says why). Every kind but ``finding`` needs its reason.

A chapter collects its claims in a :class:`Ledger`, glues one sentence per claim (generated
from the verdict, never typed) and saves them to ``book/_extra/claims/<chapter>.json``; the
Claims page reads them all (:func:`load_shown`) and exports ``tables/claims.csv``.

The ledger uses only the run that each page shows. A claims file says which run wrote it:
``run`` is the digest of what that run saved (chapter, source, claims), and :meth:`Ledger.save`
glues the same digest (``claims-run-<chapter>``) into the executed notebook. A file whose
``run`` differs from the one recorded in ``book/<chapter>.ipynb`` (written by a plain
papermill run, or by a run whose notebook was not kept) is not used: the Claims page names
the chapter as stale and says how to rebuild it. ``cheems book`` keys the Claims page on the
bytes of the claim files and the runs the pages record (:func:`inputs_digest`).

Each verdict is one 95% interval, and the ledger holds many. The Claims page adds a multiplicity rule over
the findings (:func:`multiplicity`: Holm's step-down on each claim's bootstrap p-value, :func:`p_value`) and,
for each inconclusive finding, the count of prompts or seeds that would decide it at the observed effect
(:func:`scale_to_decide`, rule :data:`POWER_RULE`). Every verdict also rests on one simulated world: the ``full``
profiles rebuild the findings on more worlds and the Claims page shows their spread and any verdict that flips
(:mod:`cheems_lib.publishing.replicates`); other builds say there that they leave these out.

For tests, ``CHEEMS_FORCE_VERDICT="claim-id=contradicted,..."`` forces verdicts (any of
:data:`VERDICTS`, ``claim-id=insufficient data`` too); a forced claim is marked ``forced``
everywhere it is shown.

>>> d = Estimate.single(0.04, np.array([0.01, 0.02, 0.05, 0.07]))
>>> decide(d, "greater")
'supported'
"""
from __future__ import annotations

import ast
import hashlib
import json
import math
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..metrics import stratified_draws

__all__ = ["KINDS", "VERDICTS", "OURS", "CI", "N_BOOT", "POSITION_EQUIVALENCE", "GPT_POSITION_TARGET", "CONFLICT_TOLERANCE",
           "TABLE1_TOLERANCE", "MIN_UNITS", "INSUFFICIENT", "MODERATE_LENGTH_DIFFERENCE", "LARGE_LENGTH_DIFFERENCE", "PRONOUNCED_BIAS", "NEAR_TIE_UTILITY",
           "CLAIM_COLUMNS", "MULTIPLICITY_COLUMNS", "CSV_COLUMNS", "HOLM_ALPHA", "HOLM_KINDS", "p_value", "holm_adjust",
           "units_to_decide", "scale_to_decide", "multiplicity", "holm_rule", "POWER_RULE", "pd_na",
           "Estimate", "ratio_estimate", "subset_estimate", "category_estimate", "mean_of", "decide",
           "comparison_says", "insufficient", "insufficient_text", "best_of", "all_of", "Claim", "Ledger", "load_all", "load_shown", "shown_run",
           "inputs_digest", "to_frame", "forced_verdicts", "claims_dir"]

KINDS = ("calibrated", "finding", "robustness", "question", "arithmetic", "structural", "untestable")
VERDICTS = ("supported", "contradicted", "inconclusive", "insufficient data")
OURS = "ours (not a claim of the paper)"
"""The ``paper_ref`` of every ``question`` claim (the project's own question), and only of those."""
INSUFFICIENT = "insufficient data"
"""The verdict of a claim whose statistic rests on too few units (see :data:`MIN_UNITS`)."""

# Every threshold a claim uses, in one place.
CI = 0.95
"""Coverage of every interval."""
N_BOOT = 1000
"""Bootstrap replicates unless a chapter's ``n_boot`` says otherwise."""
MIN_UNITS = 10
"""A claim is decided only on a statistic resting on at least this many independent units (prompts,
or training sets): a percentile bootstrap over fewer cannot give a 95% interval with real coverage
(n units have few distinct resamples, and the interval comes out too narrow; one unit gives a
single point), so such a claim gets the verdict *insufficient data* instead of a false one."""
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
                 "chapter", "statistic", "paper", "reason", "p"]
"""Columns of a saved claim in the ledger's frame (:func:`to_frame`); ``n`` is the count of units (prompts, or
training sets) the interval resamples, empty where unknown; ``statistic`` is what the estimate measures,
``paper`` the paper's words or numbers, ``reason`` why a claim is not a finding; ``p`` its bootstrap p-value
(:func:`p_value`)."""
MULTIPLICITY_COLUMNS = ["p_holm", "holm", "decides_at_n"]
"""Columns :func:`multiplicity` adds over the whole ledger: the Holm-adjusted p, the verdict under Holm's rule,
and for an inconclusive finding the count of units that would decide it (:func:`units_to_decide`)."""
CSV_COLUMNS = CLAIM_COLUMNS + MULTIPLICITY_COLUMNS
"""Columns of ``tables/claims.csv`` (plus ``source``, which every download carries)."""
_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Estimate:
    """A statistic per training seed (``point``, shape ``(seeds,)``) with bootstrap replicates
    over prompts (``boot``, shape ``(seeds, n_boot)``; row ``s`` uses the same prompt resamples
    as every other row and every estimate it is compared with).

    ``n`` is how many independent units the replicates resample (``unit``: ``"prompt"``, or
    ``"training set"`` for a correlation over models); None when unknown. Arithmetic keeps the
    smallest ``n`` of its sides: a comparison is only as well founded as its thinner side."""

    point: np.ndarray
    boot: np.ndarray
    n: int | None = None
    unit: str = "prompt"

    def __post_init__(self):
        point, boot = np.atleast_1d(np.asarray(self.point, float)), np.asarray(self.boot, float)
        boot = boot.reshape(point.size, -1) if boot.size else np.empty((point.size, 0))
        object.__setattr__(self, "point", point)
        object.__setattr__(self, "boot", boot)
        if self.n is not None:
            object.__setattr__(self, "n", int(self.n))

    @classmethod
    def single(cls, point: float, boot: np.ndarray | Sequence[float] = (), *, n: int | None = None,
               unit: str = "prompt") -> "Estimate":
        """One seed (or a statistic that involves no training), resampling ``n`` units."""
        return cls(np.array([point], float), np.asarray(boot, float).reshape(1, -1), n, unit)

    @classmethod
    def stack(cls, per_seed: Sequence["Estimate"]) -> "Estimate":
        """Estimates of the same statistic from several training seeds, one seed each."""
        if not per_seed:
            raise ValueError("no estimates to stack")
        return cls(np.concatenate([e.point for e in per_seed]), np.concatenate([e.boot for e in per_seed]),
                   _fewest(per_seed), per_seed[0].unit)

    def broadcast(self, seeds: int) -> "Estimate":
        """This one-seed estimate repeated for ``seeds`` training seeds, to pair it with a trained
        model's estimate (e.g. a baseline, which involves no training)."""
        if self.seeds != 1:
            raise ValueError(f"only a one-seed estimate can be broadcast (this one has {self.seeds} seeds)")
        return Estimate(np.repeat(self.point, seeds), np.repeat(self.boot, seeds, axis=0), self.n, self.unit)

    @property
    def seeds(self) -> int:
        return int(self.point.size)

    @property
    def value(self) -> float:
        """The estimate: mean over seeds."""
        return float(self.point.mean())

    def _paired(self, other: "Estimate", point: np.ndarray, boot: np.ndarray) -> "Estimate":
        return Estimate(point, boot, _fewest([self, other]), self.unit if self.n is not None else other.unit)

    def __sub__(self, other: "Estimate | float") -> "Estimate":
        if isinstance(other, Estimate):
            if other.point.shape != self.point.shape or other.boot.shape != self.boot.shape:
                raise ValueError(f"cannot pair estimates of shapes {self.boot.shape} and {other.boot.shape} "
                                 "(fix: evaluate both on the same seeds with the same n_boot)")
            return self._paired(other, self.point - other.point, self.boot - other.boot)
        return Estimate(self.point - other, self.boot - other, self.n, self.unit)

    def __neg__(self) -> "Estimate":
        return Estimate(-self.point, -self.boot, self.n, self.unit)

    def __add__(self, other: "Estimate | float") -> "Estimate":
        return self - (-other)

    def __truediv__(self, other: "Estimate | float") -> "Estimate":
        """A ratio: of two estimates drawn from the same resamples (paired, like ``-``), or by a number
        (e.g. ours / the paper's value)."""
        if isinstance(other, Estimate):
            if other.point.shape != self.point.shape or other.boot.shape != self.boot.shape:
                raise ValueError(f"cannot pair estimates of shapes {self.boot.shape} and {other.boot.shape} "
                                 "(fix: draw both with the same seed, strata and n_boot)")
            with np.errstate(invalid="ignore", divide="ignore"):
                return self._paired(other, self.point / other.point, self.boot / other.boot)
        with np.errstate(invalid="ignore", divide="ignore"):
            return Estimate(self.point / float(other), self.boot / float(other), self.n, self.unit)

    def replicates(self, *, seed: int = 0) -> np.ndarray:
        """Bootstrap distribution of the seed mean: hierarchical over seeds when there are several."""
        k, b = self.boot.shape
        if b == 0:
            return np.empty(0)
        if k == 1:
            return self.boot[0]
        pick = np.random.default_rng(seed).integers(k, size=(b, k))
        return self.boot[pick, np.arange(b)[:, None]].mean(axis=1)

    def interval(self, *, ci: float = CI, seed: int = 0) -> tuple[float, float]:
        """Percentile interval of :meth:`replicates` (NaNs when there are no replicates)."""
        reps = self.replicates(seed=seed)
        reps = reps[np.isfinite(reps)]
        if reps.size == 0:
            return math.nan, math.nan
        lo, hi = np.quantile(reps, [(1 - ci) / 2, (1 + ci) / 2])
        return float(lo), float(hi)


def _fewest(estimates: Sequence[Estimate]) -> int | None:
    """The smallest known ``n`` of ``estimates`` (None when none knows its count)."""
    known = [e.n for e in estimates if e.n is not None]
    return min(known) if known else None


def ratio_estimate(numerator: Sequence[float], denominator: Sequence[float] | None = None, *,
                   strata: Sequence | None = None, n_boot: int = N_BOOT, seed: int = 0) -> Estimate:
    """``sum(numerator) / sum(denominator)`` over prompts, with a bootstrap over prompts.

    One entry per prompt (e.g. decisions won by the second-shown response, and decisions), so
    decisions within a prompt are resampled together. ``denominator`` defaults to ones (a mean
    over prompts). ``strata`` (e.g. categories) keeps each stratum's size in every replicate.
    Its ``n`` counts the prompts that take part: those with a non-zero denominator.

    >>> ratio_estimate([1, 2], [2, 2], n_boot=0).value
    0.75
    >>> ratio_estimate([1, 0, 2], [2, 0, 2], n_boot=0).n
    2
    """
    num = np.asarray(numerator, float)
    den = np.ones_like(num) if denominator is None else np.asarray(denominator, float)
    point = num.sum() / den.sum() if den.sum() else math.nan
    n = int(np.count_nonzero(den))
    if not n_boot or num.size == 0:
        return Estimate.single(point, n=n)
    strata_arr = np.zeros(num.size, int) if strata is None else np.asarray(strata, dtype=object)
    top, bottom = np.zeros(n_boot), np.zeros(n_boot)
    for _, idx, draw in stratified_draws(strata_arr, n_boot, seed):
        top += num[idx][draw].sum(axis=1)
        bottom += den[idx][draw].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return Estimate.single(point, top / bottom, n=n)


def subset_estimate(per_seed: Sequence[Mapping[str, object]], metric: str = "overall",
                    subsets: Sequence[str] | None = None) -> Estimate:
    """A benchmark metric over seeds from :class:`cheems_lib.metrics.SubsetResult` objects.

    ``per_seed[s]`` maps subset name to that seed's result (all evaluated with the same
    bootstrap ``seed``). ``metric``: ``overall`` (the paper's Overall), ``accuracy`` or
    ``exact_match`` (means over the subsets), each over ``subsets`` (default: all). Its ``n`` is
    the fewest prompts with a comparison of any chosen subset (each subset is resampled alone).
    """
    def one(results: Mapping[str, object]) -> Estimate:
        chosen = [results[s] for s in (subsets or list(results))]
        n = min(r.prompts - r.prompts_without_comparisons for r in chosen)
        if metric == "overall":
            point = np.mean([(r.accuracy + r.exact_match) / 2 for r in chosen])
            boot = np.mean([(r.boot_accuracy + r.boot_exact_match) / 2 for r in chosen], axis=0)
        elif metric in ("accuracy", "exact_match"):
            point = np.mean([getattr(r, metric) for r in chosen])
            boot = np.mean([getattr(r, f"boot_{metric}") for r in chosen], axis=0)
        else:
            raise ValueError(f"unknown metric {metric!r}; use overall, accuracy or exact_match")
        return Estimate.single(float(point), boot, n=n)

    return Estimate.stack([one(r) for r in per_seed])


def category_estimate(per_seed: Sequence[Mapping[str, object]], categories: Sequence[str],
                      subsets: Sequence[str] | None = None) -> Estimate:
    """Accuracy on a group of top-level ``categories``, over seeds, from :class:`SubsetResult` objects.

    Within a subset: the mean accuracy of the group's categories present there (macro, like the
    subset metric); then the mean over the ``subsets`` (default: all) that hold any of them. The
    replicates are the metric's own resamples (``boot_category_accuracy``), so two groups of the
    same results subtract paired. Its ``n`` is the fewest prompts of the group in any subset that
    holds it.
    """
    def one(results: Mapping[str, object]) -> Estimate:
        points, boots, counts = [], [], []
        for name in subsets or list(results):
            r = results[name]
            cats = [c for c in categories if c in r.by_category]
            if cats:
                points.append(np.mean([r.by_category[c]["accuracy"] for c in cats]))
                counts.append(sum(int(r.by_category[c].get("prompts", 0)) for c in cats))
                if r.boot_category_accuracy:
                    boots.append(np.mean([r.boot_category_accuracy[c] for c in cats], axis=0))
        if not points:
            raise ValueError(f"no prompts of categories {list(categories)} in subsets {list(subsets or results)} "
                             "(fix: choose categories the benchmark holds)")
        return Estimate.single(float(np.mean(points)), np.mean(boots, axis=0) if boots else (), n=min(counts))

    return Estimate.stack([one(r) for r in per_seed])


def mean_of(estimates: Sequence[Estimate]) -> Estimate:
    """The mean of several statistics (e.g. one per model), paired seed by seed and replicate by replicate."""
    if not estimates:
        raise ValueError("no estimates to average")
    total = estimates[0]
    for e in estimates[1:]:
        total = total + e
    return total / len(estimates)


def insufficient(est: Estimate, *, ci: float = CI, seed: int = 0) -> bool:
    """Does ``est`` rest on too few units for a verdict? True when its ``n`` is below
    :data:`MIN_UNITS`, or, when its count is unknown, when its bootstrap interval collapses to one
    value. (With a known count at the minimum a zero-width interval is the data's own: e.g. every
    prompt has the same number of comparisons.)

    >>> insufficient(Estimate.single(-0.5, [-0.5] * 100, n=1))
    True
    >>> insufficient(Estimate.single(-0.5, [-0.5] * 100))
    True
    >>> insufficient(Estimate.single(0.1, np.linspace(0, 0.2, 100), n=MIN_UNITS))
    False
    """
    if est.n is not None:
        return est.n < MIN_UNITS
    lo, hi = est.interval(ci=ci, seed=seed)
    return bool(np.isfinite(lo) and lo == hi)


def _count(n: int, unit: str) -> str:
    """``"1 prompt"``, ``"3 training sets"``."""
    return f"{n:,} {unit}" if n == 1 else f"{n:,} {unit}s"


def insufficient_text(n: int | None, unit: str = "prompt", what: str = "") -> str:
    """The sentence of an *insufficient data* verdict: the count and the number it needs (``what``,
    optional, names what is not tested).

    >>> insufficient_text(1, "prompt")
    'Insufficient data: 1 prompt, needs at least 10 (a bootstrap over fewer gives no real 95% interval).'
    """
    tail = f", so this run does not test {what}" if what else ""
    if n is None:
        return (f"Insufficient data: every bootstrap resample gives the same value, so the 95% interval has no "
                f"width{tail}.")
    return (f"Insufficient data: {_count(n, unit)}, needs at least {MIN_UNITS} (a bootstrap over fewer gives no real "
            f"95% interval){tail}.")


def decide(diff: Estimate, direction: str, *, margin: float = 0.0, ci: float = CI, seed: int = 0) -> str:
    """The verdict for a difference (statistic minus reference) claimed ``greater``, ``less`` or ``equal``:
    *insufficient data* first (:func:`insufficient`), then by the interval (see the module doc)."""
    if insufficient(diff, ci=ci, seed=seed):
        return INSUFFICIENT
    lo, hi = diff.interval(ci=ci, seed=seed)
    if math.isnan(lo):
        return "inconclusive"
    if direction == "greater":
        return "supported" if lo > margin else "contradicted" if hi < -margin else "inconclusive"
    if direction == "less":
        return "supported" if hi < -margin else "contradicted" if lo > margin else "inconclusive"
    if direction == "equal":
        return "supported" if -margin < lo and hi < margin else "contradicted" if lo > margin or hi < -margin else "inconclusive"
    raise ValueError(f"direction {direction!r}: use greater, less or equal")


def best_of(estimates: Mapping[str, Estimate], expected: str, *, ci: float = CI, seed: int = 0) -> tuple[str, Estimate]:
    """Is ``expected`` the best? Verdict and the paired difference to the strongest rival.

    *supported* when ``expected`` beats every other entry (each paired difference's interval
    above zero), *contradicted* when some other entry beats it, else *inconclusive*: "best" is
    decided by paired intervals, never by point estimates alone. *insufficient data* when any
    comparison rests on too few units (that comparison is returned).
    """
    rivals = {n: estimates[expected] - e for n, e in estimates.items() if n != expected}
    if not rivals:
        raise ValueError("best_of needs at least one rival")
    verdicts = {n: decide(d, "greater", ci=ci, seed=seed) for n, d in rivals.items()}
    thin = [n for n, v in verdicts.items() if v == INSUFFICIENT]
    if thin:
        return INSUFFICIENT, rivals[thin[0]]
    closest = min(rivals, key=lambda n: rivals[n].value)
    if all(v == "supported" for v in verdicts.values()):
        return "supported", rivals[closest]
    if any(v == "contradicted" for v in verdicts.values()):
        return "contradicted", rivals[closest]
    return "inconclusive", rivals[closest]


def all_of(estimates: Mapping[str, Estimate], direction: str, *, margin: float = 0.0, ci: float = CI,
           seed: int = 0) -> tuple[str, str, Estimate]:
    """Does every entry hold (e.g. each Table 1 column within tolerance)? Verdict, the deciding entry's name
    and its estimate.

    *supported* when every entry's :func:`decide` verdict is, *contradicted* when some entry's is,
    else *inconclusive*; *insufficient data* when some entry rests on too few units. The deciding
    entry is the one with the worst verdict (insufficient data, contradicted, then inconclusive),
    and among those the farthest from holding.
    """
    if not estimates:
        raise ValueError("all_of needs at least one estimate")
    verdicts = {n: decide(e, direction, margin=margin, ci=ci, seed=seed) for n, e in estimates.items()}
    badness = {INSUFFICIENT: 3, "contradicted": 2, "inconclusive": 1, "supported": 0}
    far = {"greater": lambda e: -e.value, "less": lambda e: e.value, "equal": lambda e: abs(e.value)}[direction]
    worst = max(estimates, key=lambda n: (badness[verdicts[n]], far(estimates[n])))
    return verdicts[worst], worst, estimates[worst]


def comparison_says(a: str, b: str, *, what: str = "Overall") -> dict[str, str]:
    """Sentence templates for "``a`` scores higher ``what`` than ``b``", one per verdict (see :attr:`Claim.sentence`).

    >>> comparison_says("A", "B")["contradicted"].split(":")[0]
    'A scores lower Overall than B'
    >>> comparison_says("The x set", "y")["inconclusive"].split(",")[0]
    'The paired Overall difference between the x set and y'
    """
    interval = "{estimate:.3f} [{lo:.3f}, {hi:.3f}] (95% interval; training seeds: {seeds})"
    mid = a[:1].lower() + a[1:] if a.split(" ", 1)[0] in ("The", "A", "An") else a  # "The x" inside a sentence
    return {"supported": f"{a} scores higher {what} than {b}: the paired difference is {interval}.",
            "contradicted": f"{a} scores lower {what} than {b}: the paired difference is {interval}.",
            "inconclusive": f"The paired {what} difference between {mid} and {b}, {interval}, does not separate them."}


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
    see :class:`Estimate`); an *insufficient data* verdict without its own ``says`` entry gets the
    generated :func:`insufficient_text`. ``p``, ``direction`` and ``margin`` are what the Claims page's
    multiplicity rule and power line need (:func:`multiplicity`): :meth:`test` fills them; a claim decided
    by a composite rule (:func:`best_of`, :func:`all_of`) passes ``p=p_value(deciding difference, ...)``."""

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
    forced: bool = False
    unit: str = "prompt"
    p: float = math.nan
    direction: str = ""
    margin: float = 0.0
    says: dict[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self):
        if not _ID.match(self.id):
            raise ValueError(f"claim id {self.id!r} must be lower-case words joined by hyphens")
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.id}: kind {self.kind!r} is not one of {KINDS}")
        if self.verdict not in VERDICTS:
            raise ValueError(f"claim {self.id}: verdict {self.verdict!r} is not one of {VERDICTS}")
        if self.n is not None:  # a count from a table row may come as a numpy number or NaN
            self.n = None if isinstance(self.n, float) and math.isnan(self.n) else int(self.n)
        if self.kind != "finding" and not self.reason:
            raise ValueError(f"claim {self.id}: a {self.kind} claim needs its reason")
        # the paper is never credited with the project's questions (one that cannot be tested stays untestable)
        if (self.kind == "question") != (self.paper_ref == OURS) and self.kind != "untestable":
            raise ValueError(f"claim {self.id}: paper_ref {self.paper_ref!r} with kind {self.kind!r} (fix: a question "
                             f"claim, and only one, has paper_ref {OURS!r})")
        forced = forced_verdicts().get(self.id)
        if forced and forced != self.verdict:
            self.verdict, self.forced = forced, True

    @classmethod
    def test(cls, id: str, diff: Estimate, direction: str, *, margin: float = 0.0, seed: int = 0,
             **fields) -> "Claim":
        """A claim decided by :func:`decide` on ``diff``; ``fields`` are the other attributes."""
        lo, hi = diff.interval(seed=seed)
        return cls(id=id, verdict=decide(diff, direction, margin=margin, seed=seed), estimate=diff.value,
                   ci_low=lo, ci_high=hi, seeds=diff.seeds, n=diff.n, unit=diff.unit,
                   p=p_value(diff, direction, margin=margin, seed=seed), direction=direction, margin=margin, **fields)

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
        template = self.says.get(self.verdict) or "{statistic}: {estimate:.3f} [{lo:.3f}, {hi:.3f}]"
        text = template.format(estimate=self.estimate, lo=self.ci_low, hi=self.ci_high, seeds=self.seeds,
                               statistic=self.statistic, verdict=self.verdict, n=self.n)
        return text + (" (verdict forced for a test)" if self.forced else "")

    def to_json(self) -> dict:
        out = asdict(self)
        out.pop("says")
        out["sentence"] = self.sentence
        return out


def claims_dir(root: str | Path = ".") -> Path:
    """Where chapters save their claims: ``book/_extra/claims`` (published beside tables/)."""
    return Path(root) / "book" / "_extra" / "claims"


class Ledger:
    """The claims one chapter tests: add them, glue their sentences, save them for the Claims page."""

    def __init__(self, chapter: str, source: str):
        self.chapter, self.source, self.claims = chapter, source, {}

    def add(self, claim: Claim, *, glue: bool = True) -> Claim:
        """Record ``claim`` (its chapter set to this ledger's) and glue ``claim-<id>`` (its sentence)
        and ``verdict-<id>``."""
        if claim.id in self.claims:
            raise ValueError(f"claim {claim.id!r} added twice in chapter {self.chapter!r}")
        claim.chapter = self.chapter
        self.claims[claim.id] = claim
        if glue:
            from myst_nb import glue as myst_glue

            myst_glue(f"claim-{claim.id}", claim.sentence, display=False)
            myst_glue(f"verdict-{claim.id}", claim.verdict, display=False)
        return claim

    def frame(self):
        return to_frame(list(self.claims.values()))

    def styled(self, columns: Sequence[str], *, caption: str | None = None, na_rep: str = "–"):
        """The chapter's claims table: ``columns`` of :meth:`frame`, three decimals, no index, for
        ``publish.table``."""
        styler = self.frame()[list(columns)].style.format(precision=3, na_rep=na_rep).hide(axis="index")
        return styler.set_caption(caption) if caption else styler

    def save(self, root: str | Path = ".", *, glue: bool = True) -> Path:
        """Write ``book/_extra/claims/<chapter>.json`` atomically, with its ``run`` digest, and glue
        that digest as ``claims-run-<chapter>`` into the notebook that runs this (see the module doc)."""
        from ..outputs import atomic_open

        out = claims_dir(root) / f"{self.chapter}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        body = {"chapter": self.chapter, "source": self.source, "claims": [c.to_json() for c in self.claims.values()]}
        body["run"] = _run_digest(body)
        with atomic_open(out, "w", encoding="utf-8") as fh:
            json.dump(body, fh, ensure_ascii=False, indent=1, allow_nan=True)
        if glue:
            from myst_nb import glue as myst_glue

            myst_glue(f"claims-run-{self.chapter}", body["run"], display=False)
        return out


def _run_digest(body: Mapping) -> str:
    """sha256 (16 hex digits) of what a chapter's run saved: its chapter, source and claims."""
    blob = json.dumps({k: body.get(k) for k in ("chapter", "source", "claims")}, sort_keys=True, ensure_ascii=False,
                      allow_nan=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


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
    from ..publishing.chapters import CHAPTERS

    rows, stale = [], {}
    for name in chapters or [c.name for c in CHAPTERS]:
        path = Path(folder) / f"{name}.json"
        if not path.exists():
            continue
        body = json.loads(path.read_text(encoding="utf-8"))
        shown = shown_run(Path(book) / f"{name}.ipynb", name)
        if shown is None or body.get("run") != shown or _run_digest(body) != shown:
            page = f"{Path(book).name}/{name}.ipynb"
            stale[name] = (f"{path.name} was not written by the run that {page} shows "
                           f"(fix: cheems book --chapter {name} --force)")
            continue
        rows += [{**c, "source": body["source"]} for c in body["claims"]]
    return rows, stale


def load_all(root: str | Path = ".", chapters: Sequence[str] | None = None) -> list[dict]:
    """The claims of :func:`load_shown` under ``root`` (``book/_extra/claims``, ``book/``)."""
    return load_shown(claims_dir(root), Path(root) / "book", chapters)[0]


def inputs_digest(root: str | Path = ".") -> str:
    """sha256 of what the Claims page reads under ``root``: each claim file's bytes and the run
    each chapter's executed notebook records (part of the Claims page's cache key)."""
    from ..publishing.chapters import CHAPTERS

    h = hashlib.sha256()
    for name in [c.name for c in CHAPTERS]:
        path = claims_dir(root) / f"{name}.json"
        data = path.read_bytes() if path.exists() else b""
        h.update(f"{name}:{hashlib.sha256(data).hexdigest()}:{shown_run(Path(root) / 'book' / f'{name}.ipynb', name)}\n"
                 .encode())
    return h.hexdigest()


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

HOLM_ALPHA = round(1 - CI, 10)
"""Family-wise error rate of Holm's step-down (:func:`multiplicity`): the level of one interval's verdict."""
HOLM_KINDS = ("finding",)
"""The kinds whose verdicts form the family Holm's rule adjusts: the claims that are evidence. A calibrated,
structural or untestable claim's verdict is no test of the paper, so it is not counted."""
_DECIDED = ("supported", "contradicted")


def p_value(diff: Estimate, direction: str, *, margin: float = 0.0, seed: int = 0) -> float:
    """The bootstrap p-value of a claim's verdict from its replicates (:meth:`Estimate.replicates`, the ones its
    interval uses): the share of replicates on the other side of the boundary the verdict needs, doubled
    (two-sided, like the 95% interval), capped at 1. Of the two verdicts a claim can reach (supported,
    contradicted) it is the smaller p. ``greater``: supported needs replicates above ``margin`` (p = 2 × share at
    or below it), contradicted needs them below ``-margin``; ``less`` mirrors it; ``equal``: supported needs them
    inside ``±margin`` (p = 2 × the larger share outside one side), contradicted needs them wholly beyond one side.
    So a verdict its interval decides has p ≤ 1 - :data:`CI`. NaN when the claim gets *insufficient data* or has
    no replicates.

    >>> p_value(Estimate.single(0.1, [-0.1, 0.1, 0.2, 0.3]), "greater")
    0.5
    """
    if insufficient(diff, seed=seed):
        return math.nan
    reps = diff.replicates(seed=seed)
    reps = reps[np.isfinite(reps)]
    if reps.size == 0:
        return math.nan
    below = lambda x: float(np.mean(reps <= x))  # noqa: E731
    above = lambda x: float(np.mean(reps >= x))  # noqa: E731
    if direction == "greater":
        sides = (below(margin), above(-margin))
    elif direction == "less":
        sides = (above(-margin), below(margin))
    elif direction == "equal":
        sides = (max(below(-margin), above(margin)), min(below(margin), above(-margin)))
    else:
        raise ValueError(f"direction {direction!r}: use greater, less or equal")
    return min(1.0, 2 * min(sides))


def holm_adjust(p: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values over the finite entries of ``p`` (NaNs stay NaN and are not counted):
    sorted ascending, the i-th smallest (from 1) is multiplied by ``m - i + 1``, then made non-decreasing and
    capped at 1. A verdict holds at family-wise level a when its adjusted p is at most a.

    >>> holm_adjust([0.01, 0.04, float("nan"), 0.03]).round(2).tolist()
    [0.03, 0.06, nan, 0.06]
    """
    p = np.asarray(p, float)
    out = np.full(p.shape, math.nan)
    idx = np.flatnonzero(np.isfinite(p))
    order = idx[np.argsort(p[idx], kind="stable")]
    m = order.size
    out[order] = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
    return out


POWER_RULE = ("the half-width of a claim's 95% interval on the side facing the boundary its verdict needs (zero, or "
              "the claim's margin) shrinks as 1/sqrt(n) in the count n of independent units it resamples, with the "
              "estimate held at its observed value, so the interval leaves the boundary once n grows by (half-width / "
              "distance from the estimate to the boundary)²; it assumes all the width comes from the units scaled, so "
              "where prompts and training seeds both contribute it is a lower bound for either alone.")
"""The power line's rule (:func:`scale_to_decide`), as the Claims page states it."""


def scale_to_decide(estimate: float, lo: float, hi: float, direction: str = "", margin: float = 0.0) -> float:
    """How many times more independent units (prompts, or training sets; or training seeds where those dominate)
    would decide a claim at its observed effect. The rule: the interval's half-width on the side facing the
    boundary (``estimate - lo``, or ``hi - estimate``) shrinks as 1/sqrt(n) with the estimate fixed, so the
    boundary leaves the interval once n grows by (half-width / distance from the estimate to the boundary)². The
    boundaries are ``±margin`` (see :func:`decide`; an empty ``direction`` is a composite ``greater`` claim); for
    ``equal`` inside the margin both sides must fit. ``inf`` when no n decides it at this effect (the estimate
    sits on a boundary, or between ``±margin`` of a ``greater``/``less`` claim). It assumes all the interval's
    width comes from the units scaled, so it is a lower bound when seeds and prompts both contribute.

    >>> scale_to_decide(0.01, -0.01, 0.03, "greater")
    4.0
    """
    if not all(map(math.isfinite, (estimate, lo, hi))):
        return math.inf
    below, above = estimate - lo, hi - estimate

    def fit(half: float, room: float) -> float:
        return (half / room) ** 2 if room > 0 else math.inf

    if direction == "equal" and abs(estimate) < margin:
        return max(fit(above, margin - estimate), fit(below, estimate + margin))
    if estimate > margin:
        return fit(below, estimate - margin)
    if estimate < -margin:
        return fit(above, -margin - estimate)
    return math.inf


def units_to_decide(estimate: float, lo: float, hi: float, n: int | None, direction: str = "",
                    margin: float = 0.0) -> int | None:
    """The count of units (``n`` times :func:`scale_to_decide`, rounded up) that would decide the claim at its
    observed effect; None when ``n`` is unknown or no count decides it.

    >>> units_to_decide(0.01, -0.01, 0.03, 100, "greater")
    400
    """
    k = scale_to_decide(estimate, lo, hi, direction, margin)
    if n is None or not math.isfinite(k) or (isinstance(n, float) and math.isnan(n)):
        return None
    return int(math.ceil(int(n) * k - 1e-9))


def multiplicity(frame, *, alpha: float = HOLM_ALPHA, kinds: Sequence[str] = HOLM_KINDS):
    """The ledger ``frame`` (:func:`to_frame`, every chapter's claims) with :data:`MULTIPLICITY_COLUMNS`.

    The family is every claim of ``kinds`` with a p-value (:func:`p_value`). ``p_holm``: its Holm-adjusted p
    (:func:`holm_adjust`). ``holm``: its verdict under Holm's rule at ``alpha``: a supported or contradicted
    verdict whose adjusted p exceeds ``alpha`` becomes *inconclusive*, every other verdict stays (the rule only
    withholds decisions); empty outside the family. ``decides_at_n``: for an inconclusive claim of the family,
    :func:`units_to_decide` (the count of its ``unit``), else empty."""
    out = frame.copy()
    if out.empty:
        for col in MULTIPLICITY_COLUMNS:
            out[col] = []
        return out
    p = out["p"].astype(float) if "p" in out else np.full(len(out), math.nan)
    family = out["kind"].isin(list(kinds)).to_numpy() & np.isfinite(p.to_numpy() if hasattr(p, "to_numpy") else p)
    adjusted = np.full(len(out), math.nan)
    adjusted[family] = holm_adjust(np.asarray(p, float)[family])
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


def holm_rule(frame, *, alpha: float = HOLM_ALPHA, kinds: Sequence[str] = HOLM_KINDS) -> str:
    """The one sentence that states the multiplicity rule on ``frame`` (after :func:`multiplicity`) and how many
    verdicts it changes.

    >>> import pandas as pd
    >>> f = multiplicity(pd.DataFrame({"kind": ["finding"] * 3, "verdict": ["supported"] * 3, "p": [0.01, 0.03, 0.04],
    ...     "estimate": [1.0] * 3, "ci_low": [0.5, 0.1, 0.1], "ci_high": [1.5, 1.9, 1.9], "n": [20] * 3}))
    >>> holm_rule(f).split(": ")[-1]
    '2 of the 3 decided verdicts become inconclusive.'
    """
    fam = frame[frame["holm"] != ""] if len(frame) else frame
    m = len(fam)
    decided = int(fam["verdict"].isin(_DECIDED).sum()) if m else 0
    changed = int((fam["verdict"] != fam["holm"]).sum()) if m else 0
    left = int((frame["kind"].isin(list(kinds)) & (frame["holm"] == "")).sum()) if len(frame) else 0
    names = " or ".join(kinds)
    gap = (f" ({_count(left, 'claim')} of kind {names} without a p-value, e.g. untestable or with insufficient data, "
           "are not counted)") if left else ""
    return (f"Multiplicity: Holm's step-down over the {m} claims of kind {names} with a p-value{gap} (each p is the "
            f"share of its bootstrap replicates on the far side of the boundary its verdict needs, doubled) keeps a "
            f"supported or contradicted verdict only where its adjusted p is at most {alpha:g}, which holds the "
            f"chance of any false decision among them at {alpha:g}: {changed} of the {decided} decided verdicts "
            f"{'becomes' if changed == 1 else 'become'} inconclusive.")
