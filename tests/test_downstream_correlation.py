"""Fig. 5's correlation: the benchmark table, paired correlations, the plots and the claims."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cheems_lib.analyses import downstream_controls, downstream_correlation, downstream_population, downstream_robustness
from cheems_lib import metrics
from cheems_lib.correlation import correlation

from conftest import make_record
from fig5_study import _scores



def test_benchmark_table_matches_metrics():
    """The table's accuracy and exact match are cheems_lib.metrics' on the same scores."""
    recs = [make_record("p", "abc", rank={"a": 0, "b": 1, "c": 2})]
    scores = {"m": {("p", "a"): 3.0, ("p", "b"): 1.0, ("p", "c"): 2.0}}
    t = downstream_population.benchmark_table({"B": recs}, scores)
    assert t.loc["m", "B acc"] == pytest.approx(metrics.accuracy([recs[0].rank], [{"a": 3, "b": 1, "c": 2}]))
    assert t.loc["m", "B exact"] == 0.0


def test_correlate_known_relations():
    """Monotone relations give Spearman ±1, a noise column falls below the reference, fewer than 3 models refuse."""
    models = [f"m{i}" for i in range(12)]
    x = np.arange(12.0)
    bench = pd.DataFrame({"up": x, "down": -x ** 3, "noise": np.random.default_rng(0).normal(size=12)}, index=models)
    down = pd.DataFrame({"task": np.exp(x / 4)}, index=models)
    c = downstream_correlation.correlate(bench, down, n_boot=300, seed=0, reference="up").set_index(["benchmark", "method"])
    assert c.loc[("up", "spearman"), "r"] == pytest.approx(1.0)
    assert c.loc[("down", "spearman"), "r"] == pytest.approx(-1.0)
    assert c.loc[("up", "pearson"), "r"] < 1.0  # exp is monotone, not linear
    assert c.loc[("up", "spearman"), "diff"] == 0 and c.loc[("noise", "spearman"), "diff_hi"] < 0
    r = c.loc[("noise", "pearson")]
    assert r["lo"] <= r["r"] <= r["hi"]
    with pytest.raises(ValueError, match="at least 3 models"):
        downstream_correlation.correlate(bench.iloc[:2], down.iloc[:2])


class TestPairedCorrelations:
    def test_same_models_same_seed_are_paired(self):
        """A correlation minus itself is zero in every replicate; correlate's diff is that paired difference."""
        models = [f"m{i}" for i in range(9)]
        rng = np.random.default_rng(4)
        bench = pd.DataFrame({"a": rng.normal(size=9), "b": rng.normal(size=9)}, index=models)
        down = pd.DataFrame({"t1": rng.normal(size=9), "t2": rng.normal(size=9)}, index=models)
        a = correlation(bench["a"], down["t1"], n_boot=300, seed=5)
        assert np.all(np.nan_to_num((a - a).boot) == 0)
        diff = a - correlation(bench["b"], down["t1"], n_boot=300, seed=5)
        c = downstream_correlation.correlate(bench, down, n_boot=300, seed=5, reference="b").set_index(["benchmark", "task", "method"])
        row = c.loc[("a", "t1", "spearman")]
        assert (row["diff"], row["diff_lo"], row["diff_hi"]) == pytest.approx((diff.value, *diff.interval()))

    def test_task_average_is_the_mean_over_tasks(self):
        """task_average averages each task's correlation, point and replicates alike."""
        models = [f"m{i}" for i in range(8)]
        rng = np.random.default_rng(6)
        bench = pd.DataFrame({"a": rng.normal(size=8)}, index=models)
        down = pd.DataFrame({"t1": rng.normal(size=8), "t2": rng.normal(size=8)}, index=models[::-1])
        avg = downstream_correlation.task_average(bench, down, "a", n_boot=100, seed=1)
        per = [correlation(bench["a"], down.loc[models, t], n_boot=100, seed=1) for t in ("t1", "t2")]
        assert avg.value == pytest.approx((per[0].value + per[1].value) / 2)
        np.testing.assert_allclose(avg.boot, (per[0].boot + per[1].boot) / 2)


class TestPlotsAndClaims:
    def test_plot_correlations_draws_r_and_intervals(self):
        """Two heatmaps (Spearman, Pearson) whose cells are correlate()'s r in the given row order, annotated."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        s = _scores()
        corr = downstream_correlation.correlate(s.bench, s.down, n_boot=50, seed=0)
        order = list(s.bench.columns)[::-1]
        fig = downstream_correlation.plot_correlations(corr, order)
        heat = [ax for ax in fig.axes if ax.get_title()]
        assert [ax.get_title() for ax in heat] == ["Spearman correlation", "Pearson correlation"]
        d = corr[corr["method"] == "pearson"].pivot(index="benchmark", columns="task", values="r").loc[order]
        np.testing.assert_allclose(np.asarray(heat[1].collections[0].get_array()).reshape(d.shape), d.to_numpy())
        row = corr[(corr["method"] == "spearman") & (corr["benchmark"] == order[0])].iloc[0]
        assert heat[0].texts[0].get_text() == f"{row['r']:.2f}\n[{row['lo']:.2f}, {row['hi']:.2f}]"
        plt.close(fig)

    def test_plot_scatter_plots_each_model(self):
        """One panel per column; its points are each model's (benchmark score, task value)."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        table = _scores().table()
        fig = downstream_correlation.plot_scatter(table, ["CheemsBench acc", "RewardBench-like acc"], "Human win rate")
        assert len(fig.axes) == 2 and fig.axes[0].get_legend() is not None and fig.axes[1].get_legend() is None
        pts = np.concatenate([c.get_offsets() for c in fig.axes[1].collections])
        np.testing.assert_allclose(pts, table[["RewardBench-like acc", "Human win rate"]].to_numpy())
        plt.close(fig)

    @pytest.mark.parametrize("gpt", [True, False])
    def test_add_claims(self, gpt):
        """A benchmark that ranks the models as the tasks do beats noise comparators; no GPT copy: untestable."""
        from cheems_lib.analyses.claims import Ledger

        ledger = Ledger("downstream", "test")
        downstream_correlation.add_claims(ledger, _scores(gpt, n_sets=10), n_boot=200, seed=0, seeds=2)
        best, versus_gpt = ledger.claims["fig5-cheemsbench-best"], ledger.claims["fig5-human-beats-gpt"]
        assert best.verdict == "supported" and best.seeds == 2 and best.estimate > 0.5 and best.n == 10
        assert "across 20 reward models" in best.statistic and "Human win rate and MT-bench-like grade" in best.statistic
        assert best.sentence.startswith("CheemsBench's accuracy correlates more strongly")
        assert versus_gpt.kind == ("finding" if gpt else "untestable")

    def test_add_claims_on_few_training_sets_have_insufficient_data(self):
        """Six training sets are too few to resample: both claims say insufficient data, counting training sets."""
        from cheems_lib.estimates import INSUFFICIENT
        from cheems_lib.analyses.claims import Ledger

        ledger = Ledger("downstream", "test")
        downstream_correlation.add_claims(ledger, _scores(True, n_sets=6), n_boot=200, seed=0, seeds=2)
        tested = [c for c in ledger.claims.values() if c.kind != "untestable"]
        assert len(tested) == 3
        for claim in tested:
            assert claim.verdict == INSUFFICIENT and claim.sentence.startswith("Insufficient data: 6 training sets")

    def test_every_task_claim_is_all_of_the_per_task_comparisons(self):
        """§6.2 task by task: one paired Spearman difference per task and comparator, decided by all_of; the
        estimate is the deciding comparison's, and the language reading is untestable on a one-language world."""
        from cheems_lib.estimates import all_of
        from cheems_lib.analyses.claims import Ledger

        s = _scores(True, n_sets=10)
        ledger = Ledger("downstream", "test")
        downstream_correlation.add_claims(ledger, s, n_boot=200, seed=0, seeds=2)
        claim = ledger.claims["fig5-cheemsbench-best-every-task"]
        versus = {}
        for task in s.down.columns:
            sp = {c: downstream_correlation.task_average(s.bench, s.down[[task]], c, n_boot=200, seed=0, clusters=s.clusters)
                  for c in ["CheemsBench acc", *downstream_population.COMPARATORS]}
            versus.update({(task, c): sp["CheemsBench acc"] - sp[c] for c in downstream_population.COMPARATORS})
        verdict, _, diff = all_of(versus, "greater")
        assert (claim.kind, claim.verdict) == ("finding", verdict) and claim.estimate == pytest.approx(diff.value)
        assert "whether in Chinese or English tasks" in claim.paper
        assert ledger.claims["fig5-chinese-and-english-tasks"].kind == "untestable"
        untested = Ledger("downstream", "test")
        downstream_robustness.add_untestable_claims(untested, "needs x")
        assert {c.kind for c in untested.claims.values()} == {"untestable"}
        assert len(untested.claims) == 4 + len(downstream_controls.CONTROL_CLAIMS) + len(downstream_robustness.NOISE_TARGETS)
        assert untested.claims["fig5-human-beats-gpt-vs-shared-noise"].reason == "needs x"  # the generated reason

    def test_fig5_is_correlate_of_the_population(self):
        """Fig. 5's correlations: every benchmark column against every task, the RewardBench-like accuracy the
        reference, the training sets the clusters and the held-out prompts resampled with them."""
        from fig5_study import _picked_scores

        s = _picked_scores()
        s.down = pd.DataFrame({"Human win rate": np.linspace(0, 1, len(s.bench))}, index=s.bench.index)
        got = downstream_correlation.fig5(s, n_boot=40, seed=2)
        want = downstream_correlation.correlate(s.bench, s.down, n_boot=40, seed=2, reference="RewardBench-like acc",
                                                clusters=s.clusters, down_boot=s.prompt_boot(40, 2))
        pd.testing.assert_frame_equal(got, want)
        assert set(got["benchmark"]) == set(s.bench.columns) and "diff" in got

    @pytest.mark.parametrize("gpt", [True, False])
    def test_comparisons_are_correlate_differences(self, gpt):
        """One row per reference, metric, subset and task, each correlate()'s paired Spearman difference as text."""
        s = _scores(gpt)
        detail = downstream_correlation.comparisons(s, n_boot=50, seed=1)
        assert len(detail) == (len(downstream_population.COMPARATORS) + gpt) * 2 * 3 * 2
        row = detail.iloc[-1]
        c = downstream_correlation.correlate(s.bench[[row["benchmark"], row["compared with"]]], s.down, n_boot=50, seed=1,
                                             reference=row["compared with"], clusters=s.clusters)
        r = c[(c["method"] == "spearman") & (c["benchmark"] == row["benchmark"]) & (c["task"] == row["task"])].iloc[0]
        assert row["difference in Spearman r [95% interval]"] == \
            f"{r['diff']:+.2f} [{r['diff_lo']:+.2f}, {r['diff_hi']:+.2f}]"
