"""Comparing models on one benchmark: paired differences from a baseline, and rank intervals.

Two models' intervals can overlap while one is better on the very same prompts, and a leaderboard's strict 1..N
order claims more than its data: both questions need the models compared *paired*, on the same bootstrap resamples
of the same prompts. Every evaluation of the library draws its resamples from the bootstrap seed and the prompts'
categories only (:func:`cheems_lib.metrics.stratified_draws`), so two models evaluated with the same seed on the
same records share them, and a difference of their replicates is the paired bootstrap of the difference.

- :func:`paired_differences`: each model minus a baseline model (``cheems evaluate --baseline NAME``): Overall,
  each data file's macro accuracy, exact match and micro accuracy, and each top-level category's accuracy, with
  95% intervals and bootstrap p-values (:func:`cheems_lib.estimates.p_value`, two-sided); the categories' p-values
  are adjusted by Holm's step-down over every category of every data file (:func:`cheems_lib.estimates.holm_adjust`),
  so "differs" holds for the family at level 0.05. Overall and the data files' metrics are single tests, not adjusted.
- :func:`rank_intervals`: each model's rank by a metric (1 + the models strictly above it, so equal values share a
  rank), its 95% interval from the models' ranks in each bootstrap replicate, and whether it is statistically tied
  with the first: the paired difference from the top model does not exclude zero.

With several training seeds a model's replicates are hierarchical (:meth:`cheems_lib.estimates.Estimate.replicates`),
and a one-seed model (a baseline, a loaded checkpoint) is paired with each seed of the others
(:meth:`~cheems_lib.estimates.Estimate.broadcast`). Models evaluated on different prompts (a judge shown fewer, a
score file whose invalid rows were skipped) cannot be paired: :func:`paired_differences` refuses them, and
:func:`rank_intervals` ranks their replicates beside the others' (drawn from the same seeded stream over other
prompts, so neither paired nor independent: an approximation) and does not say whether they are tied with the
first.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from ..estimates import (CI, category_estimate, decide, Estimate, holm_adjust, HOLM_ALPHA, insufficient,
                         insufficient_text, p_value, replicates_for, smallest_p, subset_estimate)

__all__ = ["same_prompts", "paired_differences", "difference_cell", "rank_intervals", "rank_text", "ranking_metric",
           "model_estimate"]


def same_prompts(a: Mapping[str, object], b: Mapping[str, object]) -> bool:
    """Whether two models' results (``{subset: SubsetResult}``, one seed) rest on the same prompts: the same data
    files, and per file the same prompts in the same order (``prompt_ids``) with the same comparisons in every
    category. A paired bootstrap needs them: resample ``i`` must draw the same prompt for both."""
    if set(a) != set(b):
        return False
    counts = lambda r: {c: (v["prompts"], v["comparisons"]) for c, v in r.by_category.items()}  # noqa: E731
    return all(a[s].prompt_ids == b[s].prompt_ids and counts(a[s]) == counts(b[s]) for s in a)


def _paired(estimate: Estimate, seeds: int) -> Estimate:
    return estimate.broadcast(seeds) if estimate.seeds == 1 and seeds > 1 else estimate


def difference_cell(diff: Estimate, *, seed: int = 0, ci: float = CI) -> dict:
    """One paired difference as ``cheems evaluate --baseline`` prints it: ``difference`` (mean over seeds), ``ci``
    (``[low, high]``) and ``p`` (two-sided bootstrap p-value; with no replicate on the far side of zero it is the
    bound :func:`cheems_lib.estimates.smallest_p`, which is all such a bootstrap can say), or ``ci_note`` instead of
    both when the data give no 95% interval (:func:`cheems_lib.estimates.insufficient`); the difference alone without
    replicates."""
    cell = {"difference": diff.value}
    if diff.boot.shape[1] == 0:  # no bootstrap asked for: the difference alone
        return cell
    if insufficient(diff, ci=ci, seed=seed):
        cell["ci_note"] = insufficient_text(diff.n, diff.unit)
        return cell
    cell["ci"] = list(diff.interval(ci=ci, seed=seed))
    # "greater" or "less": the two-sided p of either verdict; no replicate on the far side says only p <= 2 / n
    cell["p"] = max(p_value(diff, "greater", seed=seed), smallest_p(diff.boot.shape[1]))
    return cell


def paired_differences(results: Mapping[str, Sequence[Mapping[str, object]]], baseline: str, *, seed: int = 0,
                       ci: float = CI) -> dict[str, dict]:
    """Each model of ``results`` (``{name: [{subset: SubsetResult} per seed]}``, all bootstrapped with one seed)
    minus ``baseline`` (a name of ``results``), paired: ``{name: {"baseline", "overall" (two or more data files),
    "subsets": {<subset>: {"accuracy", "exact_match", "micro_accuracy", "by_category": {category: cell + "p_holm",
    "differs"}}}, "holm"}}``, each cell :func:`difference_cell`. The Holm family is one model's categories of every
    data file (not adjusted across models); ``holm`` says so, with the count, and says when the replicates are too
    few for its first threshold (:func:`cheems_lib.estimates.replicates_for`). A category only one of the two models
    has data for is left out. A model evaluated on other prompts than the baseline is a ValueError (nothing to
    pair)."""
    if baseline not in results:
        raise ValueError(f"no model named {baseline!r} to compare with (the models are {', '.join(results)})")
    base = results[baseline]
    out = {}
    for name, per_seed in results.items():
        if name == baseline:
            continue
        if not same_prompts(per_seed[0], base[0]):
            raise ValueError(f"{name} and {baseline} were evaluated on different prompts (a score file's invalid rows "
                             "skipped?), so they cannot be compared paired")
        seeds = max(len(per_seed), len(base))
        diff = lambda est_of: _paired(est_of(per_seed), seeds) - _paired(est_of(base), seeds)  # noqa: E731
        row: dict = {"baseline": baseline}
        subsets = list(per_seed[0])
        if len(subsets) >= 2:
            row["overall"] = difference_cell(diff(lambda r: subset_estimate(r, "overall")), seed=seed, ci=ci)
        tests, row["subsets"] = [], {}
        for sub in subsets:
            cells = {m: difference_cell(diff(lambda r, m=m: subset_estimate(r, m, [sub])), seed=seed, ci=ci)
                     for m in ("accuracy", "exact_match", "micro_accuracy")}
            cats = sorted(set(per_seed[0][sub].by_category) & set(base[0][sub].by_category))
            cells["by_category"] = {c: difference_cell(diff(lambda r, c=c: category_estimate(r, [c], [sub])),
                                                       seed=seed, ci=ci) for c in cats}
            tests += list(cells["by_category"].values())
            row["subsets"][sub] = cells
        row["holm"] = _holm(tests, per_seed[0][subsets[0]].boot_accuracy.size)
        out[name] = row
    return out


def _holm(tests: list[dict], n_boot: int) -> str:
    """Adjust the categories' p-values of one model (``tests``, :func:`difference_cell` cells) by Holm's step-down,
    adding ``p_holm`` and ``differs`` to each cell with a p-value; the sentence that says what was done."""
    adjusted = holm_adjust([cell.get("p", math.nan) for cell in tests])
    for cell, p in zip(tests, adjusted):
        if np.isfinite(p):
            cell["p_holm"], cell["differs"] = float(p), bool(p <= HOLM_ALPHA)
    m = int(np.isfinite(adjusted).sum())
    if not m:
        return "no category has a 95% interval (too few prompts, or no bootstrap replicates): none was tested"
    text = (f"categories' p-values adjusted by Holm's step-down over this model's {m} categories with an interval, "
            f"every data file's (not across models); differs: adjusted p <= {HOLM_ALPHA:g}")
    if n_boot < replicates_for(m):
        text += (f"; with {n_boot:,} replicates the smallest p is {smallest_p(n_boot):g}, above Holm's first "
                 f"threshold {HOLM_ALPHA / m:.2g}: use --bootstrap {replicates_for(m):,} or more")
    return text


def ranking_metric(subsets: Sequence[str]) -> str:
    """The metric a leaderboard ranks by: Overall with two or more data files, else the file's (macro) accuracy."""
    return "overall" if len(subsets) >= 2 else "accuracy"


def model_estimate(per_seed: Sequence[Mapping[str, object]], metric: str) -> Estimate:
    """A model's :func:`ranking_metric` (or any :func:`cheems_lib.estimates.subset_estimate` metric) over its seeds."""
    return subset_estimate(per_seed, metric)


def rank_intervals(estimates: Mapping[str, Estimate], *, seed: int = 0, ci: float = CI,
                   groups: Mapping[str, object] | None = None) -> dict[str, dict]:
    """Per model (``{name: Estimate}`` of one metric, higher better): ``rank`` (1 + the models whose estimate is
    strictly higher), ``rank_ci`` (``[best, worst]``, the percentile interval of its rank over the bootstrap
    replicates, where each replicate ranks every model by its replicate value) and ``tied_with_first``: True for the
    first itself; for another model, whether the paired difference first - model is not *supported* greater than
    zero by :func:`cheems_lib.estimates.decide`.

    ``groups`` (name -> the prompts it was evaluated on, any comparable key) marks models evaluated on other prompts
    than the first (a judge shown fewer): they cannot be compared paired, so their ``tied_with_first`` is None, and
    their rank interval sets replicates of other prompts side by side, an approximation. Without replicates, or for
    a model whose own estimate gives no 95% interval (:func:`cheems_lib.estimates.insufficient`: too few prompts),
    ``rank_ci`` and ``tied_with_first`` are None: the data cannot place it.

    >>> noise = np.linspace(-0.05, 0.05, 100)
    >>> e = {"a": Estimate.single(0.8, 0.8 + noise, n=50), "b": Estimate.single(0.5, 0.5 + noise[::-1], n=50),
    ...      "c": Estimate.single(0.78, 0.78 + noise[::-1], n=50)}
    >>> {k: (v["rank"], v["rank_ci"], v["tied_with_first"]) for k, v in rank_intervals(e).items()}
    {'a': (1, [1, 2], True), 'b': (3, [3, 3], False), 'c': (2, [1, 2], True)}
    """
    names = list(estimates)
    seeds = max(e.seeds for e in estimates.values())
    paired = {n: _paired(estimates[n], seeds) for n in names}
    point = np.array([paired[n].value for n in names])
    ranks = 1 + (point[None, :] > point[:, None]).sum(1)
    reps = [paired[n].replicates(seed=seed) for n in names]
    if any(r.size == 0 for r in reps) or len({r.size for r in reps}) != 1:
        boot_ranks = None
    else:
        table = np.vstack(reps)  # (models, replicates)
        table = table[:, np.isfinite(table).all(0)]
        boot_ranks = 1 + (table[None, :, :] > table[:, None, :]).sum(1) if table.size else None
    first = names[int(np.argmax(point))]
    same = (lambda n: groups[n] == groups[first]) if groups else (lambda n: True)  # noqa: E731
    out = {}
    for i, name in enumerate(names):
        interval, tied = None, True if ranks[i] == 1 else None
        if boot_ranks is not None and not insufficient(paired[name], ci=ci, seed=seed):
            lo, hi = (1 - ci) / 2, (1 + ci) / 2
            interval = [int(np.quantile(boot_ranks[i], lo, method="lower")),
                        int(np.quantile(boot_ranks[i], hi, method="higher"))]
            if ranks[i] != 1 and same(name):
                tied = decide(paired[first] - paired[name], "greater", ci=ci, seed=seed) != "supported"
        out[name] = {"rank": int(ranks[i]), "rank_ci": interval, "tied_with_first": tied}
    return out


def rank_text(cell: Mapping) -> str:
    """A rank as a leaderboard shows it: ``2 [1, 4]`` (with its interval), ``2`` without one; ``=1`` marks a model
    statistically tied with the first (``2 [1, 3] =1``)."""
    text = str(cell["rank"]) if cell.get("rank_ci") is None else f"{cell['rank']} [{cell['rank_ci'][0]}, " \
                                                                   f"{cell['rank_ci'][1]}]"
    return f"{text} =1" if cell.get("tied_with_first") and cell["rank"] != 1 else text
