"""Downstream correlation (paper §6.2, Fig. 5): which benchmark predicts Best-of-N quality?

The paper scores 26 reward models on several benchmarks and on three Best-of-32 tasks,
and correlates the two across models. The models here are the population of
:func:`cheems_lib.experiments.population` (every model the other chapters train, each
training seed a model of its own), and the benchmarks compared with CheemsBench are built
independently in :mod:`cheems_lib.comparators`. This module provides the rest:

- :func:`benchmark_table`: every model's accuracy and exact match on every benchmark;
- :func:`correlation`: the Spearman or Pearson correlation of two columns across models as a
  :class:`cheems_lib.claims.Estimate`, bootstrapped over models or over clusters of models
  (e.g. the training seeds of one training set); two correlations drawn with the same
  ``seed`` and clusters share their resamples, so their difference is paired;
- :func:`task_average`: a benchmark's correlation averaged over the downstream tasks;
- :func:`correlate`: every benchmark column against every task, with intervals and the paired
  difference to a reference benchmark.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from .records import Record

__all__ = ["benchmark_table", "correlation", "task_average", "correlate"]


def benchmark_table(benchmarks: Mapping[str, Sequence[Record]], scores_by_model: Mapping[str, Mapping], *,
                    exact: Sequence[str] | None = None):
    """Models x benchmark metrics: ``<benchmark> acc`` for each, ``<benchmark> exact`` for those in ``exact``."""
    import pandas as pd

    from .metrics import evaluate_subset

    exact = list(benchmarks) if exact is None else list(exact)
    rows = {}
    for model, scores in scores_by_model.items():
        row = {}
        for name, recs in benchmarks.items():
            res = evaluate_subset(recs, scores, n_boot=0)
            row[f"{name} acc"] = res.accuracy
            if name in exact:
                row[f"{name} exact"] = res.exact_match
        rows[model] = row
    return pd.DataFrame.from_dict(rows, orient="index")




def _draw_weights(n: int, clusters: Sequence | None, n_boot: int, seed: int) -> np.ndarray:
    """``(n_boot, n)``: how often each model is in each bootstrap replicate.

    Clusters (one label per model; default: each model its own) are drawn with replacement
    and a drawn cluster brings all its models, so models that share their training data
    (the training seeds of one set) are resampled together.
    """
    import pandas as pd

    labels = np.arange(n) if clusters is None else pd.factorize(np.asarray(list(clusters), dtype=object))[0]
    if labels.size != n:
        raise ValueError(f"clusters has {labels.size} labels for {n} models (fix: one label per model, in row order)")
    k = int(labels.max()) + 1 if n else 0
    draw = np.random.default_rng(seed).integers(k, size=(n_boot, k))
    counts = np.zeros((n_boot, k))
    np.add.at(counts, (np.arange(n_boot)[:, None], draw), 1.0)
    return counts[:, labels]


def _midranks(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Rank of each ``x_i`` in the sample that holds model ``j`` ``w[b, j]`` times (ties: mean rank).

    >>> _midranks(np.array([3.0, 1.0, 3.0]), np.array([[1.0, 1.0, 1.0], [2.0, 0.0, 1.0]]))
    array([[2.5, 1. , 2.5],
           [2. , 0.5, 2. ]])
    """
    less = (x[None, :] < x[:, None]).astype(float)  # less[i, j]: x_j < x_i
    equal = (x[None, :] == x[:, None]).astype(float)
    return w @ less.T + (w @ equal.T + 1) / 2


def _weighted_pearson(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Pearson r of each row of ``x`` and ``y`` with the row's weights; NaN where a side is constant."""
    total = w.sum(axis=1, keepdims=True)
    dx = x - (w * x).sum(axis=1, keepdims=True) / total
    dy = y - (w * y).sum(axis=1, keepdims=True) / total
    vx, vy = (w * dx * dx).sum(axis=1), (w * dy * dy).sum(axis=1)
    # a constant side leaves only rounding error in its variance
    flat = (vx <= 1e-12 * (w * x * x).sum(axis=1)) | (vy <= 1e-12 * (w * y * y).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (w * dx * dy).sum(axis=1) / np.sqrt(vx * vy)
    return np.where(flat, np.nan, r)


def correlation(x: Sequence[float], y: Sequence[float], *, method: str = "spearman", n_boot: int = 1000,
                seed: int = 0, clusters: Sequence | None = None):
    """Correlation of ``x`` and ``y`` across models, as a :class:`cheems_lib.claims.Estimate`.

    ``method``: ``spearman`` (Pearson r of the ranks, ties at their mean rank) or ``pearson``.
    The replicates resample models (or ``clusters`` of models, one label per model) with
    replacement; a replicate where a side is constant is NaN. The resamples depend only on
    ``seed``, the number of models and ``clusters``, so two correlations over the same
    models are paired: ``correlation(a, y) - correlation(b, y)`` is the paired difference.

    >>> round(correlation([1, 2, 3, 4], [1, 3, 2, 4], n_boot=0).value, 2)
    0.8
    """
    from .claims import Estimate

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"x and y must be two columns over the same models, got shapes {x.shape} and {y.shape}")
    if x.size < 3:
        raise ValueError(f"need at least 3 models to correlate, got {x.size}")
    if method not in ("spearman", "pearson"):
        raise ValueError(f"unknown method {method!r}; use spearman or pearson")
    one = np.ones((1, x.size))
    w = _draw_weights(x.size, clusters, n_boot, seed) if n_boot else np.empty((0, x.size))

    def r(weights):
        if method == "spearman":
            return _weighted_pearson(_midranks(x, weights), _midranks(y, weights), weights)
        return _weighted_pearson(np.broadcast_to(x, weights.shape), np.broadcast_to(y, weights.shape), weights)

    return Estimate.single(float(r(one)[0]), r(w))


def task_average(bench, down, column: str, *, method: str = "spearman", n_boot: int = 1000, seed: int = 0,
                 clusters: Sequence | None = None):
    """The correlation of ``bench[column]`` with each task column of ``down``, averaged over the tasks
    (an :class:`~cheems_lib.claims.Estimate`, paired with any other benchmark's by the same resamples)."""
    from .claims import Estimate

    down = down.loc[bench.index]
    per_task = [correlation(bench[column], down[t], method=method, n_boot=n_boot, seed=seed, clusters=clusters)
                for t in down.columns]
    if not per_task:
        raise ValueError("down has no task columns")
    return Estimate(np.mean([e.point for e in per_task], axis=0), np.mean([e.boot for e in per_task], axis=0))


def correlate(bench, down, *, n_boot: int = 1000, seed: int = 0, ci: float = 0.95, reference: str | None = None,
              clusters: Sequence | None = None):
    """Spearman and Pearson correlation of every benchmark column with every task column.

    ``bench`` and ``down`` are DataFrames indexed by model (the same models). Intervals are
    percentile bootstraps over models, or over ``clusters`` of models (:func:`correlation`);
    replicates where a column is constant are dropped and counted in ``boot_used``. With
    ``reference`` (a column of ``bench``), each row also gets the paired bootstrap difference
    ``r - r(reference)`` and its interval.

    Returns a long DataFrame: benchmark, task, method, r, lo, hi, boot_used
    (and diff, diff_lo, diff_hi).
    """
    import pandas as pd

    down = down.loc[bench.index]
    kw = {"n_boot": n_boot, "seed": seed, "clusters": clusters}
    rows = []
    for task in down.columns:
        for method in ("spearman", "pearson"):
            ref = correlation(bench[reference], down[task], method=method, **kw) if reference else None
            for b in bench.columns:
                est = correlation(bench[b], down[task], method=method, **kw)
                row = {"benchmark": b, "task": task, "method": method, "r": est.value,
                       "boot_used": int(np.isfinite(est.boot).sum())}
                row["lo"], row["hi"] = est.interval(ci=ci)
                if ref is not None:
                    diff = est - ref
                    row["diff"] = diff.value
                    row["diff_lo"], row["diff_hi"] = diff.interval(ci=ci)
                rows.append(row)
    return pd.DataFrame(rows)
