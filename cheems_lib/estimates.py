"""Interval statistics: estimates with paired bootstrap replicates, and the rule that turns an interval into a verdict.

Every statistic is an :class:`Estimate`: a point value per training seed and bootstrap
replicates per seed. The replicates come from a bootstrap over prompts, stratified by
category like :mod:`cheems_lib.metrics`, and a comparison subtracts replicates drawn from the
*same* resamples (paired): :func:`cheems_lib.metrics.evaluate_subset` and
:func:`ratio_estimate` draw their resamples from ``seed`` and the prompts' categories only,
never from the scores, so two models evaluated with the same ``seed`` on the same records
share them. With several training seeds the interval is hierarchical: each replicate draws
the seeds with replacement, then uses that replicate's prompt resample within each seed.

The verdict of a difference (:func:`decide`) is one of :data:`VERDICTS`:

- direction ``greater`` (``less``): *supported* when the whole interval of the difference
  lies above (below) zero, *contradicted* when it lies wholly on the other side, else
  *inconclusive*;
- direction ``equal`` (no effect, e.g. "humans show no position preference"): *supported*
  when the interval lies inside ``±margin``, *contradicted* when it lies wholly outside it,
  else *inconclusive*;
- before either: *insufficient data* when the statistic rests on fewer than :data:`MIN_UNITS`
  independent units (``Estimate.n``: the prompts, or training sets, its bootstrap resamples),
  or when the bootstrap interval collapses to one value (every resample gives the same number,
  whatever the count: a zero-width interval claims a certainty no sample has). Its sentence is
  generated here (:func:`insufficient_text`: "Insufficient data: 1 prompt, needs at least 10 ..."),
  so every chapter that glues verdict sentences has one without typing it. ``cheems evaluate``
  leaves out its intervals by the same rule (:func:`cheems_lib.metrics.checked_interval`).

Strata smaller than :data:`cheems_lib.metrics.MIN_STRATUM` units are pooled before resampling
(:func:`cheems_lib.metrics.stratify`); an estimate so drawn says which in ``Estimate.note``.

:func:`best_of` and :func:`all_of` decide composite statements ("a is the best", "every entry holds").
Each verdict is one 95% interval; :func:`p_value` gives its bootstrap p-value, :func:`holm_adjust` Holm's
step-down over many, and :func:`scale_to_decide` (rule :data:`POWER_RULE`) how many more units would decide
an inconclusive one. These are methods on any numbers: the claims ledger
(:mod:`cheems_lib.analyses.claims`) builds on them, and so do top-level methods such as
:mod:`cheems_lib.correlation`.

>>> d = Estimate.single(0.04, np.array([0.01, 0.02, 0.05, 0.07]))
>>> decide(d, "greater")
'supported'
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from .metrics import MIN_STRATUM, MIN_UNITS, no_width, stratified_draws

__all__ = ["VERDICTS", "INSUFFICIENT", "CI", "N_BOOT", "HOLM_ALPHA", "POWER_RULE", "Estimate", "smallest_p", "replicates_for",
           "ratio_estimate", "subset_estimate", "category_estimate", "mean_of", "insufficient", "counted",
           "insufficient_text", "decide", "best_of", "all_of", "p_value", "holm_adjust", "scale_to_decide",
           "units_to_decide"]

VERDICTS = ("supported", "contradicted", "inconclusive", "insufficient data")
"""The verdicts :func:`decide` gives."""
INSUFFICIENT = "insufficient data"
"""The verdict of a statistic that rests on too few units (see :data:`MIN_UNITS`)."""

# Every statistical setting of a verdict, in one place (the claims' own thresholds are in analyses.claims).
CI = 0.95
"""Coverage of every interval."""
N_BOOT = 1000
"""Bootstrap replicates unless a chapter's ``n_boot`` says otherwise."""
HOLM_ALPHA = round(1 - CI, 10)
"""Family-wise error rate of Holm's step-down (:func:`holm_adjust`, applied over the ledger by
:func:`cheems_lib.analyses.claims.multiplicity`): the level of one interval's verdict."""


@dataclass(frozen=True)
class Estimate:
    """A statistic per training seed (``point``, shape ``(seeds,)``) with bootstrap replicates
    over prompts (``boot``, shape ``(seeds, n_boot)``; row ``s`` uses the same prompt resamples
    as every other row and every estimate it is compared with).

    ``n`` is how many independent units the replicates resample (``unit``: ``"prompt"``, or
    ``"training set"`` for a correlation over models); None when unknown. Arithmetic keeps the
    smallest ``n`` of its sides: a comparison is only as well founded as its thinner side.
    ``note`` says how the resampling departed from the strata asked for (strata pooled because
    they were too small: :func:`ratio_estimate`, :func:`subset_estimate`, :func:`category_estimate`);
    arithmetic keeps the notes of both sides."""

    point: np.ndarray
    boot: np.ndarray
    n: int | None = None
    unit: str = "prompt"
    note: str = ""

    def __post_init__(self):
        point, boot = np.atleast_1d(np.asarray(self.point, float)), np.asarray(self.boot, float)
        boot = boot.reshape(point.size, -1) if boot.size else np.empty((point.size, 0))
        object.__setattr__(self, "point", point)
        object.__setattr__(self, "boot", boot)
        if self.n is not None:
            object.__setattr__(self, "n", int(self.n))

    @classmethod
    def single(cls, point: float, boot: np.ndarray | Sequence[float] = (), *, n: int | None = None,
               unit: str = "prompt", note: str = "") -> "Estimate":
        """One seed (or a statistic that involves no training), resampling ``n`` units."""
        return cls(np.array([point], float), np.asarray(boot, float).reshape(1, -1), n, unit, note)

    @classmethod
    def stack(cls, per_seed: Sequence["Estimate"]) -> "Estimate":
        """Estimates of the same statistic from several training seeds, one seed each."""
        if not per_seed:
            raise ValueError("no estimates to stack")
        return cls(np.concatenate([e.point for e in per_seed]), np.concatenate([e.boot for e in per_seed]),
                   _fewest(per_seed), per_seed[0].unit, _notes(per_seed))

    def broadcast(self, seeds: int) -> "Estimate":
        """This one-seed estimate repeated for ``seeds`` training seeds, to pair it with a trained
        model's estimate (e.g. a baseline, which involves no training)."""
        if self.seeds != 1:
            raise ValueError(f"only a one-seed estimate can be broadcast (this one has {self.seeds} seeds)")
        return Estimate(np.repeat(self.point, seeds), np.repeat(self.boot, seeds, axis=0), self.n, self.unit,
                        self.note)

    @property
    def seeds(self) -> int:
        return int(self.point.size)

    @property
    def value(self) -> float:
        """The estimate: mean over seeds."""
        return float(self.point.mean())

    def _paired(self, other: "Estimate", point: np.ndarray, boot: np.ndarray) -> "Estimate":
        return Estimate(point, boot, _fewest([self, other]), self.unit if self.n is not None else other.unit,
                        _notes([self, other]))

    def __sub__(self, other: "Estimate | float") -> "Estimate":
        if isinstance(other, Estimate):
            if other.point.shape != self.point.shape or other.boot.shape != self.boot.shape:
                raise ValueError(f"cannot pair estimates of shapes {self.boot.shape} and {other.boot.shape} "
                                 "(fix: evaluate both on the same seeds with the same n_boot)")
            return self._paired(other, self.point - other.point, self.boot - other.boot)
        return Estimate(self.point - other, self.boot - other, self.n, self.unit, self.note)

    def __neg__(self) -> "Estimate":
        return Estimate(-self.point, -self.boot, self.n, self.unit, self.note)

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
            return Estimate(self.point / float(other), self.boot / float(other), self.n, self.unit, self.note)

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


def _notes(estimates: Sequence[Estimate]) -> str:
    """The distinct notes of ``estimates``, in order, joined by "; "."""
    return "; ".join(dict.fromkeys(e.note for e in estimates if e.note))


def ratio_estimate(numerator: Sequence[float], denominator: Sequence[float] | None = None, *,
                   strata: Sequence | None = None, n_boot: int = N_BOOT, seed: int = 0) -> Estimate:
    """``sum(numerator) / sum(denominator)`` over prompts, with a bootstrap over prompts.

    One entry per prompt (e.g. decisions won by the second-shown response, and decisions), so
    decisions within a prompt are resampled together. ``denominator`` defaults to ones (a mean
    over prompts). ``strata`` (e.g. categories) keeps each stratum's size in every replicate;
    strata too small to resample alone are pooled (:func:`cheems_lib.metrics.stratify`), and its
    ``note`` names them. Its ``n`` counts the prompts that take part: those with a non-zero
    denominator. The replicates are summed chunk by chunk (:data:`cheems_lib.metrics.BOOT_CHUNK`), so
    memory does not grow with prompts x ``n_boot``.

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
    pooled: list = []
    for stratum, rows, draw in stratified_draws(strata_arr, n_boot, seed):
        if rows.start == 0:  # a new stratum
            stratum_num, stratum_den = num[stratum.members], den[stratum.members]
            pooled += list(stratum.labels) if stratum.pooled else []
        top[rows] += stratum_num[draw].sum(axis=1)
        bottom[rows] += stratum_den[draw].sum(axis=1)
    note = (f"strata pooled for the bootstrap (some had fewer than {MIN_STRATUM} prompts): "
            f"{', '.join(map(str, sorted(pooled)))}" if pooled else "")
    with np.errstate(invalid="ignore", divide="ignore"):
        return Estimate.single(point, top / bottom, n=n, note=note)


def subset_estimate(per_seed: Sequence[Mapping[str, object]], metric: str = "overall",
                    subsets: Sequence[str] | None = None) -> Estimate:
    """A benchmark metric over seeds from :class:`cheems_lib.metrics.SubsetResult` objects.

    ``per_seed[s]`` maps subset name to that seed's result (all evaluated with the same
    bootstrap ``seed``). ``metric``: ``overall`` (the paper's Overall), ``accuracy`` or
    ``exact_match`` (the paper's macro averages), or ``micro_accuracy`` or ``micro_exact_match``
    (:attr:`cheems_lib.metrics.SubsetResult.micro_accuracy`), or ``overall_micro``
    (:func:`cheems_lib.metrics.overall_micro`), each the mean over ``subsets`` (default: all). Its ``n`` is
    the fewest prompts with a comparison of any chosen subset (each subset is resampled alone); its
    ``note`` names the categories a subset's bootstrap pooled (``SubsetResult.pooled_categories``).
    """
    def one(results: Mapping[str, object]) -> Estimate:
        chosen = [results[s] for s in (subsets or list(results))]
        n = min(r.prompts - r.prompts_without_comparisons for r in chosen)
        if metric == "overall":
            point = np.mean([(r.accuracy + r.exact_match) / 2 for r in chosen])
            boot = np.mean([(r.boot_accuracy + r.boot_exact_match) / 2 for r in chosen], axis=0)
        elif metric == "overall_micro":
            point = np.mean([(r.micro_accuracy + r.micro_exact_match) / 2 for r in chosen])
            boot = np.mean([(r.boot_micro_accuracy + r.boot_micro_exact_match) / 2 for r in chosen], axis=0)
        elif metric in ("accuracy", "exact_match", "micro_accuracy", "micro_exact_match"):
            point = np.mean([getattr(r, metric) for r in chosen])
            boot = np.mean([getattr(r, f"boot_{metric}") for r in chosen], axis=0)
        else:
            raise ValueError(f"unknown metric {metric!r}; use overall, overall_micro, accuracy, exact_match, "
                             "micro_accuracy or micro_exact_match")
        pooled = [f"{', '.join(r.pooled_categories)} ({name})" for name, r in zip(subsets or list(results), chosen)
                  if getattr(r, "pooled_categories", ())]
        note = (f"categories pooled for the bootstrap (fewer than {MIN_STRATUM} prompts): {'; '.join(pooled)}"
                if pooled else "")
        return Estimate.single(float(point), boot, n=n, note=note)

    return Estimate.stack([one(r) for r in per_seed])


def category_estimate(per_seed: Sequence[Mapping[str, object]], categories: Sequence[str],
                      subsets: Sequence[str] | None = None) -> Estimate:
    """Accuracy on a group of top-level ``categories``, over seeds, from :class:`SubsetResult` objects.

    Within a subset: the mean accuracy of the group's categories present there (macro, like the
    subset metric); then the mean over the ``subsets`` (default: all) that hold any of them. The
    replicates are the metric's own resamples (``boot_category_accuracy``), so two groups of the
    same results subtract paired; a replicate averages the categories it drew (a pooled category,
    ``SubsetResult.pooled_categories``, may be missing from one, and the ``note`` names the group's
    pooled categories). Its ``n`` is the fewest prompts of the group in any subset that holds it.
    """
    def one(results: Mapping[str, object]) -> Estimate:
        points, boots, counts, pooled = [], [], [], set()
        for name in subsets or list(results):
            r = results[name]
            cats = [c for c in categories if c in r.by_category]
            if cats:
                points.append(np.mean([r.by_category[c]["accuracy"] for c in cats]))
                counts.append(sum(int(r.by_category[c].get("prompts", 0)) for c in cats))
                pooled |= set(cats) & set(getattr(r, "pooled_categories", ()))
                if r.boot_category_accuracy:
                    boots.append(_drawn_mean([r.boot_category_accuracy[c] for c in cats]))
        if not points:
            raise ValueError(f"no prompts of categories {list(categories)} in subsets {list(subsets or results)} "
                             "(fix: choose categories the benchmark holds)")
        note = (f"categories pooled for the bootstrap (fewer than {MIN_STRATUM} prompts): {', '.join(sorted(pooled))}"
                if pooled else "")
        return Estimate.single(float(np.mean(points)), _drawn_mean(boots) if boots else (), n=min(counts), note=note)

    return Estimate.stack([one(r) for r in per_seed])


def _drawn_mean(replicates: Sequence[np.ndarray]) -> np.ndarray:
    """Per replicate, the mean of the entries that are not NaN (a pooled category its resample missed); the
    same numbers as ``np.mean`` when none is NaN, NaN where all are."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a replicate that drew none of the group
        return np.nanmean(replicates, axis=0)


def mean_of(estimates: Sequence[Estimate]) -> Estimate:
    """The mean of several statistics (e.g. one per model), paired seed by seed and replicate by replicate."""
    if not estimates:
        raise ValueError("no estimates to average")
    total = estimates[0]
    for e in estimates[1:]:
        total = total + e
    return total / len(estimates)


def insufficient(est: Estimate, *, ci: float = CI, seed: int = 0) -> bool:
    """Does ``est`` rest on too little for a verdict? True when its ``n`` is below :data:`MIN_UNITS`,
    or when its bootstrap interval collapses to one value, whatever the count: every resample gives
    the same number (e.g. every prompt conflicts, or has the same number of comparisons), and a
    zero-width interval would claim that a new sample could not give another. The rule of every
    interval the library reports (``cheems evaluate`` too: :func:`cheems_lib.metrics.checked_interval`).

    >>> insufficient(Estimate.single(-0.5, [-0.5] * 100, n=1))
    True
    >>> insufficient(Estimate.single(-0.5, [-0.5] * 100, n=70))
    True
    >>> insufficient(Estimate.single(0.1, np.linspace(0, 0.2, 100), n=MIN_UNITS))
    False
    """
    if est.n is not None and est.n < MIN_UNITS:
        return True
    return no_width(*est.interval(ci=ci, seed=seed))


def counted(n: int, unit: str) -> str:
    """``n`` and ``unit`` in words: ``"1 prompt"``, ``"3 training sets"``.

    >>> counted(1200, "prompt")
    '1,200 prompts'
    """
    return f"{n:,} {unit}" if n == 1 else f"{n:,} {unit}s"


def insufficient_text(n: int | None, unit: str = "prompt", what: str = "") -> str:
    """The sentence of an *insufficient data* verdict: the count and the number it needs (``what``,
    optional, names what is not tested). With the count unknown, or at least :data:`MIN_UNITS`, the
    verdict can only come from an interval of no width, and the sentence says so.

    >>> insufficient_text(1, "prompt")
    'Insufficient data: 1 prompt, needs at least 10 (a bootstrap over fewer gives no real 95% interval).'
    >>> insufficient_text(70, "prompt")
    'Insufficient data: 70 prompts, but every bootstrap resample gives the same value (the 95% interval has no width).'
    """
    tail = f", so this run does not test {what}" if what else ""
    if n is None:
        return f"Insufficient data: every bootstrap resample gives the same value (the 95% interval has no width){tail}."
    if n >= MIN_UNITS:
        return (f"Insufficient data: {counted(n, unit)}, but every bootstrap resample gives the same value (the 95% "
                f"interval has no width){tail}.")
    return (f"Insufficient data: {counted(n, unit)}, needs at least {MIN_UNITS} (a bootstrap over fewer gives no real "
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


# ---- p-values, multiplicity and power ----------------------------------------------------------------------------


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


def smallest_p(n_boot: int) -> float:
    """The smallest nonzero p-value :func:`p_value` can give from ``n_boot`` replicates: one replicate on the other
    side, doubled. A claim with no replicate on the other side gets 0, which says no more than this: Holm's first
    threshold over m claims (``HOLM_ALPHA / m``) can only be met by evidence when it is at least this, that is when
    ``n_boot >= 2 m / HOLM_ALPHA`` (:func:`replicates_for`).

    >>> smallest_p(1000)
    0.002
    """
    return 2.0 / n_boot


def replicates_for(m: int, *, alpha: float = HOLM_ALPHA) -> int:
    """The fewest bootstrap replicates whose :func:`smallest_p` is at most Holm's first threshold over ``m`` claims.

    >>> replicates_for(30)
    1200
    """
    return int(math.ceil(2 * m / alpha - 1e-9))


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
