"""Downstream correlation: the tables, correlations with paired bootstraps."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cheems_lib import downstream, metrics

from conftest import make_record


def test_benchmark_table_matches_metrics():
    """The table's accuracy and exact match are cheems_lib.metrics' on the same scores."""
    recs = [make_record("p", "abc", rank={"a": 0, "b": 1, "c": 2})]
    scores = {"m": {("p", "a"): 3.0, ("p", "b"): 1.0, ("p", "c"): 2.0}}
    t = downstream.benchmark_table({"B": recs}, scores)
    assert t.loc["m", "B acc"] == pytest.approx(metrics.accuracy([recs[0].rank], [{"a": 3, "b": 1, "c": 2}]))
    assert t.loc["m", "B exact"] == 0.0


def test_correlate_known_relations():
    """Monotone relations give Spearman ±1, a noise column falls below the reference, fewer than 3 models refuse."""
    models = [f"m{i}" for i in range(12)]
    x = np.arange(12.0)
    bench = pd.DataFrame({"up": x, "down": -x ** 3, "noise": np.random.default_rng(0).normal(size=12)}, index=models)
    down = pd.DataFrame({"task": np.exp(x / 4)}, index=models)
    c = downstream.correlate(bench, down, n_boot=300, seed=0, reference="up").set_index(["benchmark", "method"])
    assert c.loc[("up", "spearman"), "r"] == pytest.approx(1.0)
    assert c.loc[("down", "spearman"), "r"] == pytest.approx(-1.0)
    assert c.loc[("up", "pearson"), "r"] < 1.0  # exp is monotone, not linear
    assert c.loc[("up", "spearman"), "diff"] == 0 and c.loc[("noise", "spearman"), "diff_hi"] < 0
    r = c.loc[("noise", "pearson")]
    assert r["lo"] <= r["r"] <= r["hi"]
    with pytest.raises(ValueError, match="at least 3 models"):
        downstream.correlate(bench.iloc[:2], down.iloc[:2])


def _spearman(x, y):
    """Reference: Pearson r of pandas' average ranks."""
    return np.corrcoef(pd.Series(x).rank().to_numpy(), pd.Series(y).rank().to_numpy())[0, 1]


class TestCorrelation:
    def test_replicates_equal_spearman_of_the_resampled_models(self):
        """Each replicate is the Spearman r of the models drawn (with repeats and ties), as in a literal bootstrap."""
        rng = np.random.default_rng(1)
        x, y = rng.integers(0, 5, 15).astype(float), rng.normal(size=15)  # ties in x
        est = downstream.correlation(x, y, n_boot=50, seed=7)
        draw = np.random.default_rng(7).integers(15, size=(50, 15))
        expected = [_spearman(x[d], y[d]) for d in draw]
        assert est.value == pytest.approx(_spearman(x, y))
        np.testing.assert_allclose(est.boot[0], expected, rtol=1e-9, atol=1e-12)

    def test_pearson_point_and_constant_replicates(self):
        """Pearson matches numpy; a replicate that draws one model only is NaN, not a number."""
        x, y = np.arange(5.0), np.array([0.0, 2.0, 1.0, 5.0, 3.0])
        est = downstream.correlation(x, y, method="pearson", n_boot=4000, seed=0)
        assert est.value == pytest.approx(np.corrcoef(x, y)[0, 1])
        assert np.isnan(est.boot).any() and np.isfinite(est.boot).mean() > 0.99
        with pytest.raises(ValueError, match="unknown method"):
            downstream.correlation(x, y, method="kendall")

    def test_clusters_of_identical_copies_equal_the_unclustered_bootstrap(self):
        """Two identical seeds per training set, resampled as one cluster, give the single copies' replicates."""
        rng = np.random.default_rng(2)
        x, y = rng.normal(size=10), rng.normal(size=10)
        single = downstream.correlation(x, y, n_boot=200, seed=3)
        doubled = downstream.correlation(np.repeat(x, 2), np.repeat(y, 2), n_boot=200, seed=3,
                                         clusters=np.repeat(np.arange(10), 2))
        np.testing.assert_allclose(doubled.boot, single.boot, atol=1e-12)
        unclustered = downstream.correlation(np.repeat(x, 2), np.repeat(y, 2), n_boot=200, seed=3)
        lo, hi = unclustered.interval()
        assert hi - lo < np.subtract(*single.interval()[::-1])  # ignoring the clusters understates the spread

    def test_same_models_same_seed_are_paired(self):
        """A correlation minus itself is zero in every replicate; correlate's diff is that paired difference."""
        models = [f"m{i}" for i in range(9)]
        rng = np.random.default_rng(4)
        bench = pd.DataFrame({"a": rng.normal(size=9), "b": rng.normal(size=9)}, index=models)
        down = pd.DataFrame({"t1": rng.normal(size=9), "t2": rng.normal(size=9)}, index=models)
        a = downstream.correlation(bench["a"], down["t1"], n_boot=300, seed=5)
        assert np.all(np.nan_to_num((a - a).boot) == 0)
        diff = a - downstream.correlation(bench["b"], down["t1"], n_boot=300, seed=5)
        c = downstream.correlate(bench, down, n_boot=300, seed=5, reference="b").set_index(["benchmark", "task", "method"])
        row = c.loc[("a", "t1", "spearman")]
        assert (row["diff"], row["diff_lo"], row["diff_hi"]) == pytest.approx((diff.value, *diff.interval()))

    def test_task_average_is_the_mean_over_tasks(self):
        """task_average averages each task's correlation, point and replicates alike."""
        models = [f"m{i}" for i in range(8)]
        rng = np.random.default_rng(6)
        bench = pd.DataFrame({"a": rng.normal(size=8)}, index=models)
        down = pd.DataFrame({"t1": rng.normal(size=8), "t2": rng.normal(size=8)}, index=models[::-1])
        avg = downstream.task_average(bench, down, "a", n_boot=100, seed=1)
        per = [downstream.correlation(bench["a"], down.loc[models, t], n_boot=100, seed=1) for t in ("t1", "t2")]
        assert avg.value == pytest.approx((per[0].value + per[1].value) / 2)
        np.testing.assert_allclose(avg.boot, (per[0].boot + per[1].boot) / 2)
