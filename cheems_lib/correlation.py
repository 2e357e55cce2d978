"""Correlation across reward models with a clustered, paired bootstrap (paper §6.2, Fig. 5).

Fig. 5 correlates each benchmark's scores with each downstream task across reward models.
:func:`correlation` returns that correlation (Spearman or Pearson) as a
:class:`cheems_lib.estimates.Estimate` whose replicates resample models, or clusters of models
(e.g. the training seeds of one training set, which share their data), with replacement. The
resamples depend only on the seed, the number of models and the clusters, so two correlations
over the same models are paired and their difference is a paired bootstrap difference.

When ``y`` is itself a mean over prompts (a Best-of-N task value), ``y_boot`` gives its value in
each replicate under a resample of those prompts: each replicate then resamples models and
prompts together (one prompt resample per replicate, the same for every model and every
benchmark, so differences stay paired).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from .estimates import Estimate

__all__ = ["correlation"]


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


def _midranks_rows(y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """:func:`_midranks` when the values differ per replicate too: row ``b`` ranks ``y[b]`` with weights ``w[b]``.

    >>> _midranks_rows(np.array([[3.0, 1.0, 3.0], [1.0, 2.0, 3.0]]), np.array([[1.0, 1.0, 1.0], [2.0, 0.0, 1.0]]))
    array([[2.5, 1. , 2.5],
           [1. , 2. , 3. ]])
    """
    less = (y[:, None, :] < y[:, :, None]).astype(float)  # less[b, i, j]: y[b, j] < y[b, i]
    equal = (y[:, None, :] == y[:, :, None]).astype(float)
    return np.einsum("bij,bj->bi", less, w) + (np.einsum("bij,bj->bi", equal, w) + 1) / 2


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
                seed: int = 0, clusters: Sequence | None = None, y_boot: np.ndarray | None = None):
    """Correlation of ``x`` and ``y`` across models, as a :class:`cheems_lib.estimates.Estimate`.

    ``method``: ``spearman`` (Pearson r of the ranks, ties at their mean rank) or ``pearson``.
    The replicates resample models (or ``clusters`` of models, one label per model) with
    replacement (its ``n``: the models, or clusters, resampled); a replicate where a side is
    constant is NaN. The resamples depend only on
    ``seed``, the number of models and ``clusters``, so two correlations over the same
    models are paired: ``correlation(a, y) - correlation(b, y)`` is the paired difference.
    ``y_boot`` (``(n_boot, models)``, optional): ``y`` recomputed in each replicate on resampled
    prompts; replicate ``b`` then correlates ``x`` with ``y_boot[b]`` under its model weights.

    >>> round(correlation([1, 2, 3, 4], [1, 3, 2, 4], n_boot=0).value, 2)
    0.8
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"x and y must be two columns over the same models, got shapes {x.shape} and {y.shape}")
    if x.size < 3:
        raise ValueError(f"need at least 3 models to correlate, got {x.size}")
    if method not in ("spearman", "pearson"):
        raise ValueError(f"unknown method {method!r}; use spearman or pearson")
    one = np.ones((1, x.size))
    w = _draw_weights(x.size, clusters, n_boot, seed) if n_boot else np.empty((0, x.size))
    if y_boot is not None:
        y_boot = np.asarray(y_boot, dtype=float)
        if y_boot.shape != w.shape:
            raise ValueError(f"y_boot has shape {y_boot.shape}; need (n_boot, models) = {w.shape}")

    def r(weights, ys=None):
        if method == "spearman":
            ry = _midranks(y, weights) if ys is None else _midranks_rows(ys, weights)
            return _weighted_pearson(_midranks(x, weights), ry, weights)
        ys = np.broadcast_to(y, weights.shape) if ys is None else ys
        return _weighted_pearson(np.broadcast_to(x, weights.shape), ys, weights)

    n, unit = (len(set(clusters)), "training set") if clusters is not None else (x.size, "model")
    return Estimate.single(float(r(one)[0]), r(w, y_boot), n=n, unit=unit)
