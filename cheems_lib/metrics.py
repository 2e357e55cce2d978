"""CheemsBench metrics (paper §3.3, spec §3): accuracy, exact match, macro-averages, overall.

For one prompt, every pair of responses with different ranks is a comparison; it is
correct when the better-ranked response has the *strictly* higher score::

    accuracy(category)    = sum_prompts correct / sum_prompts comparisons
    exact_match(category) = mean over prompts with >= 1 comparison of [all correct]
    subset metric         = unweighted mean over top-level categories
    overall               = mean over subsets of (accuracy + exact_match) / 2

Worked example: ranks ``{a: 0, b: 1, c: 1}`` and scores ``{a: 2, b: 1, c: 2}`` give two
comparisons, ``a>b`` right and ``a>c`` wrong (a score tie is wrong), so accuracy 0.5
and exact match 0.

The official code lets a score tie pass exact match while failing accuracy; we count a
tie wrong in both, so the two metrics are consistent. Uncertainty is a percentile
bootstrap over prompts, stratified by category so every replicate keeps the taxonomy.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from .conflicts import ordered_pairs
from .records import DataError, Record, show, strict_pairs

__all__ = ["prompt_outcomes", "stratified_draws", "accuracy", "exact_match", "SubsetResult", "evaluate_subset",
           "overall", "overall_ci", "lookup_scores"]


def prompt_outcomes(ranks: Sequence[Mapping[str, int]], scores: Sequence[Mapping[str, float]],
                    *, pairs: Sequence[Sequence[tuple[str, str]]] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per prompt: (correct comparisons, comparisons).

    ``pairs`` optionally replaces the pairs derived from ``ranks`` (for the ``implied`` view).
    """
    correct = np.zeros(len(ranks), dtype=np.int64)
    total = np.zeros(len(ranks), dtype=np.int64)
    for p, (rank, score) in enumerate(zip(ranks, scores)):
        ps = pairs[p] if pairs is not None else strict_pairs(rank)
        total[p] = len(ps)
        correct[p] = sum(score[a] > score[b] for a, b in ps)
    return correct, total


def accuracy(ranks: Sequence[Mapping[str, int]], scores: Sequence[Mapping[str, float]]) -> float:
    """Pooled pairwise accuracy (paper Eq. 1): correct comparisons / comparisons.

    >>> accuracy([{"a": 0, "b": 1, "c": 1}], [{"a": 2.0, "b": 1.0, "c": 2.0}])
    0.5
    """
    correct, total = prompt_outcomes(ranks, scores)
    return float(correct.sum() / total.sum()) if total.sum() else float("nan")


def exact_match(ranks: Sequence[Mapping[str, int]], scores: Sequence[Mapping[str, float]]) -> float:
    """Share of prompts (with at least one comparison) whose comparisons are all correct (Eq. 2).

    >>> exact_match([{"a": 0, "b": 1}, {"a": 0, "b": 0}], [{"a": 2.0, "b": 1.0}, {"a": 0.0, "b": 0.0}])
    1.0
    """
    correct, total = prompt_outcomes(ranks, scores)
    has = total > 0
    return float((correct[has] == total[has]).mean()) if has.any() else float("nan")


@dataclass
class SubsetResult:
    """Metrics of one benchmark subset (one data file), with bootstrap replicates."""

    accuracy: float
    exact_match: float
    by_category: dict[str, dict[str, float | int]]
    prompts: int
    prompts_without_comparisons: int
    boot_accuracy: np.ndarray = field(repr=False, default_factory=lambda: np.empty(0))
    boot_exact_match: np.ndarray = field(repr=False, default_factory=lambda: np.empty(0))
    boot_category_accuracy: dict[str, np.ndarray] = field(repr=False, default_factory=dict)
    """Per top-level category, its accuracy in each replicate (the resamples behind ``boot_accuracy``)."""

    @property
    def score(self) -> float:
        """(accuracy + exact match) / 2, this subset's share of ``overall``."""
        return (self.accuracy + self.exact_match) / 2

    def to_json(self, ci: float = 0.95) -> dict:
        out = {"accuracy": self.accuracy, "exact_match": self.exact_match,
               "by_category": self.by_category, "prompts": self.prompts,
               "prompts_without_comparisons": self.prompts_without_comparisons}
        if self.boot_accuracy.size:
            out["accuracy_ci"] = _interval(self.boot_accuracy, ci)
            out["exact_match_ci"] = _interval(self.boot_exact_match, ci)
        return out


def _interval(samples: np.ndarray, ci: float) -> list[float]:
    lo, hi = np.quantile(samples, [(1 - ci) / 2, (1 + ci) / 2])
    return [float(lo), float(hi)]


def lookup_scores(records: Sequence[Record], scores: Mapping[tuple[str, str], float], *,
                  scores_path: str = "scores") -> list[dict[str, float]]:
    """Per record, ``{response_id: score}`` for its ranked responses; a missing score is an error."""
    out = []
    for rec in records:
        if rec.rank is None:
            raise DataError(rec.origin or None, None, f"prompt {show(rec.id)} has no 'rank'",
                            "read the file with cheems_lib.world_files.read_ranked(path), which ranks it from its "
                            "annotations with Algorithm 1")
        s = {}
        for rid in rec.rank:
            try:
                s[rid] = scores[(rec.id, rid)]
            except KeyError:
                raise DataError(scores_path, None, f"no score for prompt {show(rec.id)} response {show(rid)} "
                                f"(ranked in {rec.origin or 'the data'})", "score every ranked response") from None
        out.append(s)
    return out


def stratified_draws(strata: Sequence, n_boot: int, seed: int | np.random.Generator = 0, *,
                     mask: np.ndarray | None = None) -> list[tuple[object, np.ndarray, np.ndarray | None]]:
    """Per stratum (sorted): its members' indices and ``(n_boot, members)`` resample indices into them.

    The one resampling scheme of every interval: :func:`evaluate_subset` and
    :func:`cheems_lib.estimates.ratio_estimate` call it, so the same ``seed`` and strata give the same
    resamples (paired comparisons). ``mask`` leaves entries out; ``n_boot=0`` gives no draws.
    """
    strata = np.asarray(strata, dtype=object)
    keep = np.ones(strata.size, bool) if mask is None else np.asarray(mask, bool)
    rng = np.random.default_rng(seed)
    out = []
    for s in sorted(set(strata[keep].tolist())):
        idx = np.flatnonzero(keep & (strata == s))
        out.append((s, idx, rng.integers(0, idx.size, size=(n_boot, idx.size)) if n_boot else None))
    return out


def evaluate_subset(records: Sequence[Record], scores: Mapping[tuple[str, str], float], *,
                    view: str = "layers", n_boot: int = 1000, seed: int | np.random.Generator = 0,
                    scores_path: str = "scores") -> SubsetResult:
    """Accuracy and exact match of one subset, macro-averaged over top-level categories.

    ``n_boot`` bootstrap replicates (0 disables them) resample prompts with replacement
    within each category. ``view`` is ``"layers"`` or ``"implied"`` (see
    :func:`cheems_lib.conflicts.ordered_pairs`).
    """
    per_prompt = lookup_scores(records, scores, scores_path=scores_path)
    ranks = [rec.rank for rec in records]
    pairs = [ordered_pairs(rec, view="implied") for rec in records] if view == "implied" else None
    correct, total = prompt_outcomes(ranks, per_prompt, pairs=pairs)
    cats = np.array([rec.top_category for rec in records], dtype=object)
    has = total > 0
    by_category, boot_acc, boot_em, boot_cat = {}, [], [], {}
    for cat, idx, draw in stratified_draws(cats, n_boot, seed, mask=has):
        c, t = correct[idx], total[idx]
        exact = (c == t).astype(float)
        by_category[cat] = {"accuracy": float(c.sum() / t.sum()), "exact_match": float(exact.mean()),
                            "prompts": int(idx.size), "comparisons": int(t.sum())}
        if n_boot:
            boot_cat[cat] = c[draw].sum(1) / t[draw].sum(1)
            boot_acc.append(boot_cat[cat])
            boot_em.append(exact[draw].mean(1))
    acc = float(np.mean([v["accuracy"] for v in by_category.values()])) if by_category else float("nan")
    em = float(np.mean([v["exact_match"] for v in by_category.values()])) if by_category else float("nan")
    return SubsetResult(acc, em, by_category, prompts=len(records),
                        prompts_without_comparisons=int((~has).sum()),
                        boot_accuracy=np.mean(boot_acc, axis=0) if boot_acc else np.empty(0),
                        boot_exact_match=np.mean(boot_em, axis=0) if boot_em else np.empty(0),
                        boot_category_accuracy=boot_cat)


def overall(results: Sequence[SubsetResult]) -> float:
    """The paper's Overall: mean over subsets of (accuracy + exact match) / 2."""
    return float(np.mean([r.score for r in results]))


def overall_ci(results: Sequence[SubsetResult], ci: float = 0.95) -> list[float] | None:
    """Bootstrap interval of :func:`overall` (subsets are resampled independently)."""
    if not all(r.boot_accuracy.size for r in results):
        return None
    boots = np.mean([(r.boot_accuracy + r.boot_exact_match) / 2 for r in results], axis=0)
    return _interval(boots, ci)
