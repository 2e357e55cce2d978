"""Fig. 5's scored population: the benchmarks, the reward models, their scores and the prompt bootstrap."""
from __future__ import annotations

import numpy as np
import pandas as pd

from cheems_lib.analyses import downstream_correlation, downstream_population

from conftest import make_record
from fig5_study import _comparators, _picked_scores, _scores, _world



class TestStudy:
    def test_benchmark_sets_with_and_without_gpt_copies(self):
        """Every benchmark is named once; the GPT-annotated copies appear only when the world has their files."""
        rb, rmb = _comparators()
        plain = downstream_population.benchmark_sets(_world(False), rb, rmb)
        assert list(plain) == ["CheemsBench", "Open Prompt", "Human Instruction", "RewardBench-like",
                               "RMB-like pairwise", "RMB-like BoN"]
        assert len(plain["CheemsBench"]) == 2 and plain["RMB-like BoN"] == rmb.sets["bon"]
        gpt = downstream_population.benchmark_sets(_world(True), rb, rmb)
        assert [b for b in gpt if "GPT" in b] == ["CheemsBench GPT", "Open Prompt GPT", "Human Instruction GPT"]

    def test_reward_models_names_groups_and_training_sets(self):
        """Each spec is named by set and seed with its group and set; an extra model is its own external set."""
        from types import SimpleNamespace

        specs = [SimpleNamespace(name=n, group="Table 4", config=SimpleNamespace(seed=k)) for n in "ab" for k in (0, 1)]
        rms = downstream_population.reward_models(specs, ["p0", "p1", "p2", "p3"], extra=["hub/model"])
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
        monkeypatch.setattr(downstream_population, "score_all", lambda jobs, **kw: [{
            (r.id, x.id): by_path[path][(r.id, x.id)] for r in recs for x in r.responses} for path, recs in jobs])
        models = downstream_population.RewardModels({"m1": "good", "m2": "bad"}, {"m1": "A", "m2": "B"}, {"m1": "s1", "m2": "s2"})
        s = downstream_population.score(models, world, rb, rmb, {"mt_bench_sim": c})
        sets = downstream_population.benchmark_sets(world, rb, rmb)
        ref = downstream_population.benchmark_table(sets, {"m1": truth, "m2": flipped})
        assert s.bench.loc["m1", "RMB-like BoN acc"] == ref.loc["m1", "RMB-like BoN exact"] == 1.0
        assert s.bench.loc["m2", "CheemsBench acc"] == ref.loc["m2", "CheemsBench acc"]
        assert "RewardBench-like exact" not in s.bench.columns
        assert s.down["MT-bench-like grade"].tolist() == [7.0, 3.0] and s.clusters == ["s1", "s2"]
        assert s.table().columns[0] == "group" and s.table()["group"].tolist() == ["A", "B"]

    def test_prose_values(self):
        """Population size, training sets and groups are counted from the scores; responses from the world."""
        s = _scores(n_sets=3, seeds=2)
        s.groups = {m: ("Table 4" if i < 4 else "Table 3") for i, m in enumerate(s.bench.index)}
        v = downstream_population.prose_values(s, _world(False), range(2))
        assert (v["n_models"], v["n_sets"], v["n_bench_responses"]) == (6, 3, 5)
        assert v["groups_text"] == "4 from Table 4, 2 from Table 3"

    def test_setting_holds_every_benchmarks_annotators(self, monkeypatch):
        """The setting's comparators and judges are drawn from the seed; beside them it keeps each benchmark's
        annotators: CheemsBench's from the world's summary (None for real files) and the comparators' panels."""
        from types import SimpleNamespace

        from cheems_lib.world import best_of_n, comparators, panels

        rb, rmb = _comparators()
        drawn = []
        monkeypatch.setattr(comparators, "for_world", lambda world, **kw: drawn.append(kw) or (rb, rmb))
        monkeypatch.setattr(best_of_n, "sample_tasks", lambda **kw: {"task": kw["n"]})
        world = SimpleNamespace(**vars(_world(False)), length_scale=1.0)
        setting = downstream_population.setting(world, seed=3, rewardbench_pairs=10, rmb_prompts=12, bon_n=4)
        assert drawn == [{"seed": 3, "rewardbench_pairs": 10, "rmb_prompts": 12}] and setting.tasks == {"task": 4}
        assert setting.annotators == panels.benchmark_annotators(world, rb, rmb)
        assert setting.annotators["RewardBench-like"] == rb.panel and setting.annotators["CheemsBench (human)"] is None
        assert list(setting.judges) == [panels.WIN_RATE_JUDGES, panels.MT_JUDGE]


class TestPromptBootstrap:
    def test_task_values_are_the_mean_outcome_of_the_picks(self):
        """Hand-made: two prompts, two samples; a model's value is the mean outcome of what it picked."""
        s = downstream_population.Scores(pd.DataFrame(index=["a", "b"]), None, {}, [], {"t": np.array([[0, 1], [1, 1]])},
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
        assert list(boot.columns) == list(s.bench.index) and downstream_population.Scores(s.bench, s.down, {}, []).prompt_boot(30) is None

    def test_interval_widens_when_prompts_are_resampled(self):
        """Toy case (10 held-out prompts): resampling prompts as well as training sets widens the interval of the
        correlation, which holding the prompts fixed understates."""
        s = _picked_scores()
        kw = {"n_boot": 400, "seed": 0, "clusters": s.clusters}
        fixed = downstream_correlation.task_average(s.bench, s.down, "CheemsBench acc", **kw)
        both = downstream_correlation.task_average(s.bench, s.down, "CheemsBench acc", down_boot=s.prompt_boot(400, 0), **kw)
        assert fixed.value == both.value
        width = [np.subtract(*e.interval()[::-1]) for e in (fixed, both)]
        assert width[1] > width[0]
