"""Downstream correlation: the tables, paired correlations, and the study the chapter runs (scores, plots, claims)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cheems_lib.analyses import downstream
from cheems_lib import metrics
from cheems_lib.correlation import correlation

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
        per = [correlation(bench["a"], down.loc[models, t], n_boot=100, seed=1) for t in ("t1", "t2")]
        assert avg.value == pytest.approx((per[0].value + per[1].value) / 2)
        np.testing.assert_allclose(avg.boot, (per[0].boot + per[1].boot) / 2)


def _scores(gpt: bool = True, n_sets: int = 6, seeds: int = 2) -> downstream.Scores:
    """Synthetic scores: CheemsBench ranks the models as both tasks do, the other columns are noise."""
    rng = np.random.default_rng(0)
    models = [f"set{s} · seed {k}" for s in range(n_sets) for k in range(seeds)]
    quality = np.arange(len(models), dtype=float)
    cols = ["CheemsBench", "Open Prompt", "Human Instruction"] + (
        ["CheemsBench GPT", "Open Prompt GPT", "Human Instruction GPT"] if gpt else [])
    bench = {f"{c} {m}": quality + rng.normal(0, 0.5, len(models)) for c in cols for m in ("acc", "exact")}
    bench.update({c: rng.normal(size=len(models)) for c in downstream.COMPARATORS})
    down = pd.DataFrame({"Human win rate": quality / 20, "MT-bench-like grade": 5 + quality / 5}, index=models)
    return downstream.Scores(pd.DataFrame(bench, index=models), down, {m: "g" for m in models},
                             [m.split(" ")[0] for m in models])


def _world(gpt_files: bool):
    """A world-like namespace: CheemsBench's subsets and, optionally, their GPT-annotated copies."""
    from types import SimpleNamespace

    op, hu = [make_record("o", "ab", rank={"a": 0, "b": 1})], [make_record("h", "abc", rank={"a": 0, "b": 1, "c": 1})]
    files = {"cheems_bench_gpt/open.jsonl": op[:], "cheems_bench_gpt/human.jsonl": hu[:]} if gpt_files else {}
    return SimpleNamespace(bench_records=op + hu, bench={"open": op, "human": hu}, files=files, summary=None,
                           device=None, dtype=None)


def _comparators():
    """Comparator-like namespaces with one pair, one pairwise set and one Best-of-N set."""
    from types import SimpleNamespace

    pair = make_record("rb", "xy", rank={"x": 0, "y": 1})
    bon = make_record("rmb", "uvw", rank={"u": 0, "v": 1, "w": 1})
    pw = make_record("rmb", "uv", rank={"u": 0, "v": 1})
    return (SimpleNamespace(sets={"pairs": [pair]}, records=[pair], panel=["rb judge"]),
            SimpleNamespace(sets={"pairwise": [pw], "bon": [bon]}, records=[bon], panel=["rmb judge"]))


class TestStudy:
    def test_benchmark_sets_with_and_without_gpt_copies(self):
        """Every benchmark is named once; the GPT-annotated copies appear only when the world has their files."""
        rb, rmb = _comparators()
        plain = downstream.benchmark_sets(_world(False), rb, rmb)
        assert list(plain) == ["CheemsBench", "Open Prompt", "Human Instruction", "RewardBench-like",
                               "RMB-like pairwise", "RMB-like BoN"]
        assert len(plain["CheemsBench"]) == 2 and plain["RMB-like BoN"] == rmb.sets["bon"]
        gpt = downstream.benchmark_sets(_world(True), rb, rmb)
        assert [b for b in gpt if "GPT" in b] == ["CheemsBench GPT", "Open Prompt GPT", "Human Instruction GPT"]

    def test_reward_models_names_groups_and_training_sets(self):
        """Each spec is named by set and seed with its group and set; an extra model is its own external set."""
        from types import SimpleNamespace

        specs = [SimpleNamespace(name=n, group="Table 4", config=SimpleNamespace(seed=k)) for n in "ab" for k in (0, 1)]
        rms = downstream.reward_models(specs, ["p0", "p1", "p2", "p3"], extra=["hub/model"])
        assert list(rms.paths) == ["a · seed 0", "a · seed 1", "b · seed 0", "b · seed 1", "hub/model"]
        assert rms.paths["b · seed 0"] == "p2" and rms.paths["hub/model"] == "hub/model"
        assert rms.training_set["a · seed 1"] == "a" and rms.groups["hub/model"] == "external"

    def test_tabulate_and_score_match_the_metrics(self, monkeypatch):
        """Benchmark columns are benchmark_table's (RMB BoN accuracy = its exact match); task values are evaluate()'s."""
        from cheems_lib.world import best_of_n

        rb, rmb = _comparators()
        world = _world(False)
        c = best_of_n.Candidates(best_of_n.TASKS["mt_bench_sim"], [make_record("t", "pq")], np.zeros((1, 2)),
                                 np.array([[3.0, 7.0]]), None)
        truth = {("o", "a"): 1.0, ("o", "b"): 0.0, ("h", "a"): 0.0, ("h", "b"): 1.0, ("h", "c"): 2.0,
                 ("rb", "x"): 1.0, ("rb", "y"): 0.0, ("rmb", "u"): 2.0, ("rmb", "v"): 0.0, ("rmb", "w"): 1.0,
                 ("t", "p"): 0.0, ("t", "q"): 1.0}
        flipped = {k: -v for k, v in truth.items()}
        by_path = {"good": truth, "bad": flipped}
        monkeypatch.setattr(downstream, "score_all", lambda jobs, **kw: [{
            (r.id, x.id): by_path[path][(r.id, x.id)] for r in recs for x in r.responses} for path, recs in jobs])
        models = downstream.RewardModels({"m1": "good", "m2": "bad"}, {"m1": "A", "m2": "B"}, {"m1": "s1", "m2": "s2"})
        s = downstream.score(models, world, rb, rmb, {"mt_bench_sim": c})
        sets = downstream.benchmark_sets(world, rb, rmb)
        ref = downstream.benchmark_table(sets, {"m1": truth, "m2": flipped})
        assert s.bench.loc["m1", "RMB-like BoN acc"] == ref.loc["m1", "RMB-like BoN exact"] == 1.0
        assert s.bench.loc["m2", "CheemsBench acc"] == ref.loc["m2", "CheemsBench acc"]
        assert "RewardBench-like exact" not in s.bench.columns
        assert s.down["MT-bench-like grade"].tolist() == [7.0, 3.0] and s.clusters == ["s1", "s2"]
        assert s.table().columns[0] == "group" and s.table()["group"].tolist() == ["A", "B"]

    def test_null_controls_pick_by_length_and_stay_out_of_the_models(self):
        """The null rows score the same benchmarks and samples by length (and at random): pick-longest picks each
        prompt's longest sample and gets length's accuracy; models_table puts them below every reward model."""
        from types import SimpleNamespace

        from cheems_lib.baselines import length_scores
        from cheems_lib.records import Response
        from cheems_lib.world import best_of_n

        rb, rmb = _comparators()
        world = _world(False)
        long_last = make_record("t", "pq")
        long_last.responses = [Response("p", "short"), Response("q", "a much longer sample")]
        c = best_of_n.Candidates(best_of_n.TASKS["mt_bench_sim"], [long_last], np.zeros((1, 2)), np.array([[3.0, 7.0]]), None)
        setting = SimpleNamespace(rewardbench=rb, rmb=rmb, tasks={"mt_bench_sim": c})
        nulls = downstream.null_controls(world, setting, seed=0)
        assert list(nulls.bench.index) == ["pick-longest", "pick-shortest", "random"]
        assert nulls.down.loc["pick-longest", "MT-bench-like grade"] == 7.0
        assert nulls.down.loc["pick-shortest", "MT-bench-like grade"] == 3.0
        sets = downstream.benchmark_sets(world, rb, rmb)
        records = world.bench_records + rb.records + rmb.records
        ref = downstream.benchmark_table(sets, {"pick-longest": length_scores(records)})
        assert nulls.bench.loc["pick-longest", "CheemsBench acc"] == ref.loc["pick-longest", "CheemsBench acc"]
        from cheems_lib.baselines import random_scores

        rms = downstream.RewardModels({"m1": "a", "m2": "b"}, {"m1": "B", "m2": "A"}, {"m1": "m1", "m2": "m2"})
        models = downstream.tabulate(sets, {m: random_scores(records, seed=k) for k, m in enumerate(rms.paths)},
                                     {m: {"mt_bench_sim": random_scores(c.records, seed=k)} for k, m in enumerate(rms.paths)},
                                     setting.tasks, rms)
        table = downstream.models_table(models, world, setting, seed=0)
        assert list(table.index[:2]) == ["m2", "m1"]  # by group first
        assert list(table.index[2:]) == ["pick-longest", "pick-shortest", "random", "chance (exact)"]
        assert (table["group"][2:] == downstream.CONTROLS_GROUP).all()
        pd.testing.assert_frame_equal(table.loc[list(nulls.bench.index), list(nulls.bench.columns)], nulls.bench,
                                      check_dtype=False)
        # chance: accuracy 1/2 on every benchmark; exact match 1/k! of a strict ranking of k (open: 2 responses,
        # human: 3 with a tie, 1!2!/3! = 1/3); a random pick's expected grade (3 + 7) / 2
        chance = table.loc["chance (exact)"]
        assert chance["CheemsBench acc"] == chance["RewardBench-like acc"] == 0.5
        assert chance["Open Prompt exact"] == 0.5 and chance["Human Instruction exact"] == pytest.approx(1 / 3)
        assert chance["RMB-like BoN acc"] == pytest.approx(1 / 3) and chance["MT-bench-like grade"] == 5.0

    def test_models_table_puts_the_best_win_rate_first_in_each_group(self):
        """Within a group the reward models run from the highest Human win rate down."""
        from types import SimpleNamespace

        from cheems_lib.world import best_of_n

        rb, rmb = _comparators()
        world = _world(False)
        c = best_of_n.Candidates(best_of_n.TASKS["human_win_rate"], [make_record("t", "pq")], np.zeros((1, 2)),
                                 np.array([[0.0, 1.0]]), None)
        setting = SimpleNamespace(rewardbench=rb, rmb=rmb, tasks={"human_win_rate": c})
        sets = downstream.benchmark_sets(world, rb, rmb)
        records = world.bench_records + rb.records + rmb.records
        picks_second = {("t", "p"): 0.0, ("t", "q"): 1.0}
        rms = downstream.RewardModels({"low": "a", "high": "b"}, {"low": "G", "high": "G"}, {"low": "a", "high": "b"})
        from cheems_lib.baselines import random_scores

        models = downstream.tabulate(sets, {m: random_scores(records, seed=1) for m in rms.paths},
                                     {"low": {"human_win_rate": {k: -v for k, v in picks_second.items()}},
                                      "high": {"human_win_rate": picks_second}}, setting.tasks, rms)
        table = downstream.models_table(models, world, setting)
        assert list(table.index[:2]) == ["high", "low"] and table["Human win rate"].iloc[0] == 1.0
        assert list(table.columns) == ["group", *models.down.columns, *models.bench.columns]  # the tasks in view

    def test_prose_values(self):
        """Population size, training sets and groups are counted from the scores; responses from the world."""
        s = _scores(n_sets=3, seeds=2)
        s.groups = {m: ("Table 4" if i < 4 else "Table 3") for i, m in enumerate(s.bench.index)}
        v = downstream.prose_values(s, _world(False), range(2))
        assert (v["n_models"], v["n_sets"], v["n_bench_responses"]) == (6, 3, 5)
        assert v["groups_text"] == "4 from Table 4, 2 from Table 3"

    def test_benchmark_annotators_and_judge_sharing(self):
        """CheemsBench's annotators come from the world's config (unknown without one); the sentence names shares."""
        from cheems_lib.world.annotators import HumanAnnotator

        rb, rmb = _comparators()
        world = _world(False)
        assert downstream.benchmark_annotators(world, rb, rmb)["CheemsBench (human)"] is None
        world.summary = {"config": {"human": {"noise": 0.2}}}
        ann = downstream.benchmark_annotators(world, rb, rmb)
        assert ann["CheemsBench (human)"] == [HumanAnnotator(noise=0.2)] and ann["CheemsBench GPT"] is None
        assert ann["RMB-like"] == ["rmb judge"]
        assert "share no parameter" in downstream.judge_sharing({"A": "none", "B": "real annotators: unknown"})
        assert downstream.judge_sharing({"A": "none", "B": "noise, tie_margin"}) == \
            "The win-rate judges share noise, tie_margin with B."

    def test_plot_correlations_draws_r_and_intervals(self):
        """Two heatmaps (Spearman, Pearson) whose cells are correlate()'s r in the given row order, annotated."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        s = _scores()
        corr = downstream.correlate(s.bench, s.down, n_boot=50, seed=0)
        order = list(s.bench.columns)[::-1]
        fig = downstream.plot_correlations(corr, order)
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
        fig = downstream.plot_scatter(table, ["CheemsBench acc", "RewardBench-like acc"], "Human win rate")
        assert len(fig.axes) == 2 and fig.axes[0].get_legend() is not None and fig.axes[1].get_legend() is None
        pts = np.concatenate([c.get_offsets() for c in fig.axes[1].collections])
        np.testing.assert_allclose(pts, table[["RewardBench-like acc", "Human win rate"]].to_numpy())
        plt.close(fig)

    @pytest.mark.parametrize("gpt", [True, False])
    def test_add_claims(self, gpt):
        """A benchmark that ranks the models as the tasks do beats noise comparators; no GPT copy: untestable."""
        from cheems_lib.analyses.claims import Ledger

        ledger = Ledger("downstream", "test")
        downstream.add_claims(ledger, _scores(gpt, n_sets=10), n_boot=200, seed=0, seeds=2)
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
        downstream.add_claims(ledger, _scores(True, n_sets=6), n_boot=200, seed=0, seeds=2)
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
        downstream.add_claims(ledger, s, n_boot=200, seed=0, seeds=2)
        claim = ledger.claims["fig5-cheemsbench-best-every-task"]
        versus = {}
        for task in s.down.columns:
            sp = {c: downstream.task_average(s.bench, s.down[[task]], c, n_boot=200, seed=0, clusters=s.clusters)
                  for c in ["CheemsBench acc", *downstream.COMPARATORS]}
            versus.update({(task, c): sp["CheemsBench acc"] - sp[c] for c in downstream.COMPARATORS})
        verdict, _, diff = all_of(versus, "greater")
        assert (claim.kind, claim.verdict) == ("finding", verdict) and claim.estimate == pytest.approx(diff.value)
        assert "whether in Chinese or English tasks" in claim.paper
        assert ledger.claims["fig5-chinese-and-english-tasks"].kind == "untestable"
        untested = Ledger("downstream", "test")
        downstream.add_untestable_claims(untested, "needs x")
        assert {c.kind for c in untested.claims.values()} == {"untestable"}
        assert len(untested.claims) == 4 + len(downstream._CONTROL_CLAIMS) + len(downstream.NOISE_TARGETS)
        assert untested.claims["fig5-human-beats-gpt-vs-shared-noise"].reason == "needs x"  # the generated reason

    @pytest.mark.parametrize("gpt", [True, False])
    def test_comparisons_are_correlate_differences(self, gpt):
        """One row per reference, metric, subset and task, each correlate()'s paired Spearman difference as text."""
        s = _scores(gpt)
        detail = downstream.comparisons(s, n_boot=50, seed=1)
        assert len(detail) == (len(downstream.COMPARATORS) + gpt) * 2 * 3 * 2
        row = detail.iloc[-1]
        c = downstream.correlate(s.bench[[row["benchmark"], row["compared with"]]], s.down, n_boot=50, seed=1,
                                 reference=row["compared with"], clusters=s.clusters)
        r = c[(c["method"] == "spearman") & (c["benchmark"] == row["benchmark"]) & (c["task"] == row["task"])].iloc[0]
        assert row["difference in Spearman r [95% interval]"] == \
            f"{r['diff']:+.2f} [{r['diff_lo']:+.2f}, {r['diff_hi']:+.2f}]"


def _picked_scores(n_sets: int = 12, prompts: int = 10, seed: int = 0, records: int = 60) -> downstream.Scores:
    """Synthetic scores with picks: model ``i`` picks sample 1 (the better one) on a share ``i / n`` of the
    prompts; CheemsBench's per-prompt correct pairs follow the same quality; comparators are noise."""
    rng = np.random.default_rng(seed)
    models = [f"set{s} · seed 0" for s in range(n_sets)]
    quality = np.linspace(0.1, 0.9, n_sets)
    outcome = np.column_stack([rng.integers(0, 2, prompts), np.ones(prompts)]).astype(float)
    picks = (rng.random((n_sets, prompts)) < quality[:, None]).astype(int)
    total = rng.integers(1, 10, records).astype(float)
    correct = rng.binomial(total.astype(int)[None, :], quality[:, None]).astype(float)
    cats = np.array(["a", "b"] * (records // 2), dtype=object)
    bench = pd.DataFrame({c: rng.normal(size=n_sets) for c in downstream.COMPARATORS}, index=models)
    sc = downstream.Scores(bench, None, {m: "g" for m in models}, [m.split(" ")[0] for m in models],
                           {"Human win rate": picks}, {"Human win rate": outcome}, (correct, total, cats),
                           {c: {"prompts": 5, "pairs": 12} for c in downstream.COMPARATORS})
    sc.down = sc.task_values(sc.outcomes)
    sc.bench["CheemsBench acc"] = downstream.cheemsbench_at_size(sc, prompts=records, draws=1)[0]
    return sc


class TestPromptBootstrap:
    def test_task_values_are_the_mean_outcome_of_the_picks(self):
        """Hand-made: two prompts, two samples; a model's value is the mean outcome of what it picked."""
        s = downstream.Scores(pd.DataFrame(index=["a", "b"]), None, {}, [], {"t": np.array([[0, 1], [1, 1]])},
                              {"t": np.array([[0.0, 1.0], [2.0, 4.0]])})
        assert s.task_values(s.outcomes)["t"].tolist() == [(0.0 + 4.0) / 2, (1.0 + 4.0) / 2]

    def test_replicates_resample_prompts(self):
        """Each replicate's task value is the picks' mean over one shared resample of the prompts."""
        from cheems_lib.world.best_of_n import prompt_resamples

        s = _picked_scores()
        boot = s.prompt_boot(30, seed=2)["Human win rate"]
        counts = prompt_resamples(10, 30, seed=2, stream="Human win rate")
        picked = s.outcomes["Human win rate"][np.arange(10)[None, :], s.picks["Human win rate"]]
        np.testing.assert_allclose(boot.to_numpy(), counts @ picked.T / 10)
        assert list(boot.columns) == list(s.bench.index) and downstream.Scores(s.bench, s.down, {}, []).prompt_boot(30) is None

    def test_interval_widens_when_prompts_are_resampled(self):
        """Toy case (10 held-out prompts): resampling prompts as well as training sets widens the interval of the
        correlation, which holding the prompts fixed understates."""
        s = _picked_scores()
        kw = {"n_boot": 400, "seed": 0, "clusters": s.clusters}
        fixed = downstream.task_average(s.bench, s.down, "CheemsBench acc", **kw)
        both = downstream.task_average(s.bench, s.down, "CheemsBench acc", down_boot=s.prompt_boot(400, 0), **kw)
        assert fixed.value == both.value
        width = [np.subtract(*e.interval()[::-1]) for e in (fixed, both)]
        assert width[1] > width[0]


class TestEqualSize:
    def test_full_size_is_the_benchmark_table_accuracy(self):
        """Cut to all its prompts, CheemsBench's accuracy is benchmark_table's (macro over categories)."""
        recs = [make_record("p", "abc", rank={"a": 0, "b": 1, "c": 2}, category=["理解"]),
                make_record("q", "ab", rank={"a": 0, "b": 1}, category=["数学"]),
                make_record("r", "ab", rank={"a": 0, "b": 1}, category=["数学"])]
        scores = {"m": {("p", "a"): 3.0, ("p", "b"): 1.0, ("p", "c"): 2.0, ("q", "a"): 0.0, ("q", "b"): 1.0,
                        ("r", "a"): 2.0, ("r", "b"): 1.0}}
        table = downstream.benchmark_table({"CheemsBench": recs}, scores)
        s = downstream.Scores(table, None, {}, [], pairs=downstream._pair_counts(recs, scores, ["m"]))
        assert s.pairs[1].tolist() == [3.0, 1.0, 1.0] and s.pairs[0].tolist() == [[2.0, 0.0, 1.0]]
        at = downstream.cheemsbench_at_size(s, prompts=3, draws=4)
        np.testing.assert_allclose(at, table.loc["m", "CheemsBench acc"])  # (2/3 + 1/2) / 2

    def test_cuts_take_the_prompts_or_the_fewest_prompts_reaching_the_pairs(self):
        """A prompt cut keeps k prompts; a pair cut keeps the fewest prompts (in random order) whose pairs reach the
        target: hand-made with one model that is right on exactly one prompt."""
        total = np.array([5.0, 5.0, 5.0, 5.0])
        correct = np.array([[5.0, 0.0, 0.0, 0.0]])
        s = downstream.Scores(pd.DataFrame(index=["m"]), None, {}, [], pairs=(correct, total, np.array(["a"] * 4, object)))
        one = downstream.cheemsbench_at_size(s, prompts=1, draws=400)[:, 0]
        assert set(one) == {0.0, 1.0} and 0.15 < one.mean() < 0.35  # one prompt in four is the right one
        two = downstream.cheemsbench_at_size(s, pairs=6, draws=400)[:, 0]  # 6 pairs need two prompts of 5
        assert set(two) == {0.0, 0.5} and 0.15 < two.mean() < 0.35  # in the cut half the time, then 1/2
        with pytest.raises(ValueError, match="prompts or pairs"):
            downstream.cheemsbench_at_size(s, prompts=1, pairs=1)

    def test_table_and_controls(self):
        """The equal-size table has one row per comparator; every control is a robustness claim with its reason, and the
        judge-identity and length-controlled rows recompute from the same picks."""
        from cheems_lib.analyses.claims import Ledger

        s = _picked_scores(n_sets=12, prompts=40)
        table = downstream.equal_size_table(s, n_boot=100, seed=0)
        assert table["comparator"].tolist() == [c.removesuffix(" acc") for c in downstream.COMPARATORS]
        assert list(table.columns[3:]) == ["CheemsBench, full size", "CheemsBench at its prompts",
                                           "CheemsBench at its pairs", "the comparator"]
        s.bench["CheemsBench GPT acc"] = s.bench["CheemsBench acc"][::-1].to_numpy()
        ledger = Ledger("downstream", "test")
        flipped = {"Human win rate": 1 - s.outcomes["Human win rate"]}
        downstream.add_controls(ledger, s, length_controlled=s.outcomes, identity=flipped, n_boot=100, seed=0, seeds=1)
        assert set(ledger.claims) == set(downstream._CONTROL_CLAIMS)
        assert {c.kind for c in ledger.claims.values()} == {"robustness"} and all(c.reason for c in ledger.claims.values())
        same = ledger.claims["fig5-human-beats-gpt-length-controlled"]  # outcomes unchanged: the main claim's numbers
        assert same.sentence.startswith("Length-controlled Best-of-N: ")
        assert ledger.claims["fig5-human-beats-gpt-judge-identity"].estimate == pytest.approx(
            -ledger.claims["fig5-human-beats-gpt-length-controlled"].estimate)  # flipped task: the sign flips


class TestJudgeTable:
    def test_counts_parameters_shared_with_cheemsbench_annotators(self):
        """The count column is 0 for the drawn downstream judges and 4 for CheemsBench's GPT annotator as a judge."""
        from cheems_lib.world import best_of_n
        from cheems_lib.world.annotators import GPTAnnotator, HumanAnnotator

        annotators = {"CheemsBench (human)": [HumanAnnotator()], "CheemsBench GPT": [GPTAnnotator()], "RewardBench-like": None}
        t = downstream.judge_table({"win": best_of_n.judge_panel(0), "mt": [best_of_n.mt_judge(0)],
                                    "identity": [GPTAnnotator()]}, annotators)
        assert t[downstream.SHARED_COLUMN].tolist() == [0, 0, 4]
        assert downstream.judge_sharing(t.loc["mt"], who="The MT-bench-like judge").startswith(
            "The MT-bench-like judge shares no parameter value")
        unknown = downstream.judge_table({"mt": [best_of_n.mt_judge(0)]}, {"CheemsBench GPT": None})
        assert unknown[downstream.SHARED_COLUMN].tolist() == ["unknown"]


def _noise_study(seed: int = 0):
    """A small simulated world (its CheemsBench and GPT copy) and Scores of 16 models (8 training sets x 2 seeds)
    scored by hand: a model's score is the hidden utility plus noise that grows with the set's index, and its
    downstream value falls with that noise; the comparators' scores are noise."""
    from types import SimpleNamespace

    from cheems_lib.world.simulation import WorldConfig, build_world

    w = build_world(WorldConfig(size="smoke", seed=seed, counts={"bench_open": 16, "bench_human": 16,
                                                                 "pref_human": 2, "pref_gpt": 2}))
    bench = {"open": w.files["cheems_bench/open.jsonl"], "human": w.files["cheems_bench/human.jsonl"]}
    world = SimpleNamespace(size="smoke", seed=seed, bench=bench, bench_records=bench["open"] + bench["human"],
                            files=w.files, summary=w.summary)
    utility = {(t["prompt_id"], t["response_id"]): t["utility"] for t in w.truth}
    rb, rmb = _comparators()
    names = [f"set{s} · seed {k}" for s in range(8) for k in range(2)]
    rng = np.random.default_rng(1)
    scores = {m: {**{key: u + rng.normal(0, 0.2 + 0.3 * i // 2) for key, u in utility.items()},
                  **{(r.id, x.id): rng.normal() for r in rb.records + rmb.records for x in r.responses}}
              for i, m in enumerate(names)}
    models = downstream.RewardModels({m: m for m in names}, {m: "g" for m in names}, {m: m.split(" ")[0] for m in names})
    sc = downstream.tabulate(downstream.benchmark_sets(world, rb, rmb), scores, {m: {} for m in names}, {}, models)
    quality = -np.array([0.2 + 0.3 * (i // 2) for i in range(len(names))])
    sc.down = pd.DataFrame({"Human win rate": quality + rng.normal(0, 0.1, len(names)),
                            "MT-bench-like grade": quality + rng.normal(0, 0.1, len(names))}, index=names)
    sc.picks = sc.outcomes = None
    return world, sc


class TestSharedNoiseSweep:
    def test_relabeled_keeps_responses_and_changes_only_cheemsbench_labels(self):
        """At the world's own shared noise the re-annotated benchmark is the world's (the same columns); at another
        value only the human-annotated CheemsBench columns move, and the responses are the same."""
        from dataclasses import replace

        from cheems_lib.world.annotators import HumanAnnotator
        from cheems_lib.world.simulation import WorldConfig, human_labels

        world, sc = _noise_study()
        config = WorldConfig(size="smoke", seed=0, counts={"bench_open": 16, "bench_human": 16},
                             human=replace(HumanAnnotator(), shared_noise=2.0))
        files = human_labels(config)
        other = {"open": files["cheems_bench/open.jsonl"], "human": files["cheems_bench/human.jsonl"]}
        assert [[x.content for x in r.responses] for r in other["open"]] == \
            [[x.content for x in r.responses] for r in world.bench["open"]]
        assert any(a.annotations != b.annotations for a, b in zip(other["human"], world.bench["human"]))
        moved = downstream.relabeled(sc, other).bench
        changed = {c for c in sc.bench.columns if not np.allclose(moved[c], sc.bench[c])}
        assert changed and changed <= {f"{b} {m}" for b in ("CheemsBench", "Open Prompt", "Human Instruction")
                                       for m in ("acc", "exact")}
        pd.testing.assert_frame_equal(downstream.relabeled(sc, world.bench).bench, sc.bench)

    def test_sweep_over_two_values_yields_robustness_claims(self):
        """A sweep over two values and the world's own gives one robustness claim per swept Fig. 5 claim; the point
        at the own value is the main claim's own test, and the claim's reason says what is held fixed."""
        from cheems_lib.world.annotators import HumanAnnotator
        from cheems_lib.analyses.claims import Ledger

        world, sc = _noise_study()
        sweeps = downstream.noise_sweeps(sc, world, [0.0, 0.3, 1.5], HumanAnnotator(), n_boot=100, seed=0, seeds=2)
        assert set(sweeps) == {"fig5-human-beats-gpt", "fig5-cheemsbench-best"}
        assert all(s["value"].tolist() == [0.0, 0.3, 1.5] for s in sweeps.values())
        ledger = Ledger("downstream", "test")
        downstream.add_claims(ledger, sc, n_boot=100, seed=0, seeds=2)
        for claim, sweep in sweeps.items():
            assert sweep.set_index("value").loc[0.3, "estimate"] == pytest.approx(ledger.claims[claim].estimate)
        assert sweeps["fig5-human-beats-gpt"]["estimate"].nunique() == 3  # the labels, hence the statistic, change
        downstream.add_noise_claims(ledger, sweeps, own=0.3)
        added = [ledger.claims[f"{c}-vs-shared-noise"] for c in sweeps]
        assert [c.kind for c in added] == ["robustness"] * 2
        assert all("held fixed" in c.reason and c.link == "downstream-shared-noise" and c.seeds == 2 for c in added)
        assert added[0].estimate == pytest.approx(ledger.claims[added[0].id.removesuffix("-vs-shared-noise")].estimate)

    def test_untestable_without_a_sweep_and_refused_on_another_world(self):
        """Without sweeps both claims are untestable with the given reason; without the GPT copy only that one is;
        a world whose responses the simulator does not reproduce is refused."""
        from cheems_lib.world.annotators import HumanAnnotator
        from cheems_lib.analyses.claims import Ledger

        ledger = Ledger("downstream", "test")
        downstream.add_noise_claims(ledger, None, own=0.3, reason="these are real files")
        assert {(c.kind, c.reason) for c in ledger.claims.values()} == {("untestable", "these are real files")}
        world, sc = _noise_study()
        sweeps = downstream.noise_sweeps(sc.__class__(**{**sc.__dict__, "bench": sc.bench.drop(
            columns=[c for c in sc.bench.columns if "GPT" in c])}), world, [0.3], HumanAnnotator(), n_boot=100)
        assert list(sweeps) == ["fig5-cheemsbench-best"]
        ledger = Ledger("downstream", "test")
        downstream.add_noise_claims(ledger, sweeps, own=0.3)
        assert ledger.claims["fig5-human-beats-gpt-vs-shared-noise"].kind == "untestable"
        world.seed = 5
        with pytest.raises(ValueError, match="changed its prompts or responses"):
            downstream.noise_sweeps(sc, world, [0.3], HumanAnnotator(), n_boot=100)
