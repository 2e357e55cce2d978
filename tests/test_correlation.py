"""Correlation across models: Spearman and Pearson as references compute them, clustered bootstrap replicates."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cheems_lib.correlation import correlation


def _spearman(x, y):
    """Reference: Pearson r of pandas' average ranks."""
    return np.corrcoef(pd.Series(x).rank().to_numpy(), pd.Series(y).rank().to_numpy())[0, 1]


class TestCorrelation:
    def test_replicates_equal_spearman_of_the_resampled_models(self):
        """Each replicate is the Spearman r of the models drawn (with repeats and ties), as in a literal bootstrap."""
        rng = np.random.default_rng(1)
        x, y = rng.integers(0, 5, 15).astype(float), rng.normal(size=15)  # ties in x
        est = correlation(x, y, n_boot=50, seed=7)
        draw = np.random.default_rng(7).integers(15, size=(50, 15))
        expected = [_spearman(x[d], y[d]) for d in draw]
        assert est.value == pytest.approx(_spearman(x, y))
        np.testing.assert_allclose(est.boot[0], expected, rtol=1e-9, atol=1e-12)

    def test_pearson_point_and_constant_replicates(self):
        """Pearson matches numpy; a replicate that draws one model only is NaN, not a number."""
        x, y = np.arange(5.0), np.array([0.0, 2.0, 1.0, 5.0, 3.0])
        est = correlation(x, y, method="pearson", n_boot=4000, seed=0)
        assert est.value == pytest.approx(np.corrcoef(x, y)[0, 1])
        assert np.isnan(est.boot).any() and np.isfinite(est.boot).mean() > 0.99
        with pytest.raises(ValueError, match="unknown method"):
            correlation(x, y, method="kendall")

    def test_clusters_of_identical_copies_equal_the_unclustered_bootstrap(self):
        """Two identical seeds per training set, resampled as one cluster, give the single copies' replicates."""
        rng = np.random.default_rng(2)
        x, y = rng.normal(size=10), rng.normal(size=10)
        single = correlation(x, y, n_boot=200, seed=3)
        doubled = correlation(np.repeat(x, 2), np.repeat(y, 2), n_boot=200, seed=3,
                              clusters=np.repeat(np.arange(10), 2))
        np.testing.assert_allclose(doubled.boot, single.boot, atol=1e-12)
        unclustered = correlation(np.repeat(x, 2), np.repeat(y, 2), n_boot=200, seed=3)
        lo, hi = unclustered.interval()
        assert hi - lo < np.subtract(*single.interval()[::-1])  # ignoring the clusters understates the spread

    @pytest.mark.parametrize("method", ["spearman", "pearson"])
    def test_y_boot_that_repeats_y_changes_nothing(self, method):
        """Prompt-resampled task values equal to the task values in every replicate give the plain bootstrap."""
        rng = np.random.default_rng(2)
        x, y = rng.normal(size=9), rng.normal(size=9)
        plain = correlation(x, y, method=method, n_boot=100, seed=4)
        same = correlation(x, y, method=method, n_boot=100, seed=4, y_boot=np.tile(y, (100, 1)))
        np.testing.assert_allclose(same.boot, plain.boot, atol=1e-12)
        assert same.value == plain.value
        with pytest.raises(ValueError, match="y_boot has shape"):
            correlation(x, y, n_boot=100, y_boot=np.tile(y, (99, 1)))

    def test_y_boot_replicate_is_the_correlation_with_that_row(self):
        """Replicate b correlates x with y_boot[b] under its model weights: with one model per cluster and the same
        seed, it equals the weighted Spearman of x and that row (midranks per row, ties at their mean)."""
        from cheems_lib.correlation import _draw_weights, _midranks, _midranks_rows, _weighted_pearson

        rng = np.random.default_rng(5)
        x, y_boot = rng.normal(size=7), rng.integers(0, 3, size=(20, 7)).astype(float)  # ties in y
        est = correlation(x, y_boot[0], n_boot=20, seed=1, y_boot=y_boot)
        w = _draw_weights(7, None, 20, 1)
        for b in (0, 5, 19):
            ry = _midranks(y_boot[b], w[b:b + 1])
            np.testing.assert_allclose(_midranks_rows(y_boot[b:b + 1], w[b:b + 1]), ry)
            ref = _weighted_pearson(_midranks(x, w[b:b + 1]), ry, w[b:b + 1])[0]
            np.testing.assert_allclose(est.boot[0, b], ref, equal_nan=True)
