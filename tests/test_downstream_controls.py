"""The controls of Fig. 5's claims: null controls in the per-model table, CheemsBench at equal size, the control rows."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cheems_lib.analyses import downstream_controls, downstream_population

from conftest import make_record
from fig5_study import _comparators, _picked_scores, _world



class TestNullControls:
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
        nulls = downstream_controls.null_controls(world, setting, seed=0)
        assert list(nulls.bench.index) == ["pick-longest", "pick-shortest", "random"]
        assert nulls.down.loc["pick-longest", "MT-bench-like grade"] == 7.0
        assert nulls.down.loc["pick-shortest", "MT-bench-like grade"] == 3.0
        sets = downstream_population.benchmark_sets(world, rb, rmb)
        records = world.bench_records + rb.records + rmb.records
        ref = downstream_population.benchmark_table(sets, {"pick-longest": length_scores(records)})
        assert nulls.bench.loc["pick-longest", "CheemsBench acc"] == ref.loc["pick-longest", "CheemsBench acc"]
        from cheems_lib.baselines import random_scores

        rms = downstream_population.RewardModels({"m1": "a", "m2": "b"}, {"m1": "B", "m2": "A"}, {"m1": "m1", "m2": "m2"})
        models = downstream_population.tabulate(sets, {m: random_scores(records, seed=k) for k, m in enumerate(rms.paths)},
                                                {m: {"mt_bench_sim": random_scores(c.records, seed=k)} for k, m in enumerate(rms.paths)},
                                     setting.tasks, rms)
        table = downstream_controls.models_table(models, world, setting, seed=0)
        assert list(table.index[:2]) == ["m2", "m1"]  # by group first
        assert list(table.index[2:]) == ["pick-longest", "pick-shortest", "random", "chance (exact)"]
        assert (table["group"][2:] == downstream_controls.CONTROLS_GROUP).all()
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
        sets = downstream_population.benchmark_sets(world, rb, rmb)
        records = world.bench_records + rb.records + rmb.records
        picks_second = {("t", "p"): 0.0, ("t", "q"): 1.0}
        rms = downstream_population.RewardModels({"low": "a", "high": "b"}, {"low": "G", "high": "G"}, {"low": "a", "high": "b"})
        from cheems_lib.baselines import random_scores

        models = downstream_population.tabulate(sets, {m: random_scores(records, seed=1) for m in rms.paths},
                                                {"low": {"human_win_rate": {k: -v for k, v in picks_second.items()}},
                                      "high": {"human_win_rate": picks_second}}, setting.tasks, rms)
        table = downstream_controls.models_table(models, world, setting)
        assert list(table.index[:2]) == ["high", "low"] and table["Human win rate"].iloc[0] == 1.0
        assert list(table.columns) == ["group", *models.down.columns, *models.bench.columns]  # the tasks in view


class TestEqualSize:
    def test_full_size_is_the_benchmark_table_accuracy(self):
        """Cut to all its prompts, CheemsBench's accuracy is benchmark_table's (macro over categories)."""
        recs = [make_record("p", "abc", rank={"a": 0, "b": 1, "c": 2}, category=["理解"]),
                make_record("q", "ab", rank={"a": 0, "b": 1}, category=["数学"]),
                make_record("r", "ab", rank={"a": 0, "b": 1}, category=["数学"])]
        scores = {"m": {("p", "a"): 3.0, ("p", "b"): 1.0, ("p", "c"): 2.0, ("q", "a"): 0.0, ("q", "b"): 1.0,
                        ("r", "a"): 2.0, ("r", "b"): 1.0}}
        table = downstream_population.benchmark_table({"CheemsBench": recs}, scores)
        s = downstream_population.Scores(table, None, {}, [], pairs=downstream_population.pair_counts(recs, scores, ["m"]))
        assert s.pairs[1].tolist() == [3.0, 1.0, 1.0] and s.pairs[0].tolist() == [[2.0, 0.0, 1.0]]
        at = downstream_controls.cheemsbench_at_size(s, prompts=3, draws=4)
        np.testing.assert_allclose(at, table.loc["m", "CheemsBench acc"])  # (2/3 + 1/2) / 2

    def test_cuts_take_the_prompts_or_the_fewest_prompts_reaching_the_pairs(self):
        """A prompt cut keeps k prompts; a pair cut keeps the fewest prompts (in random order) whose pairs reach the
        target: hand-made with one model that is right on exactly one prompt."""
        total = np.array([5.0, 5.0, 5.0, 5.0])
        correct = np.array([[5.0, 0.0, 0.0, 0.0]])
        s = downstream_population.Scores(pd.DataFrame(index=["m"]), None, {}, [], pairs=(correct, total, np.array(["a"] * 4, object)))
        one = downstream_controls.cheemsbench_at_size(s, prompts=1, draws=400)[:, 0]
        assert set(one) == {0.0, 1.0} and 0.15 < one.mean() < 0.35  # one prompt in four is the right one
        two = downstream_controls.cheemsbench_at_size(s, pairs=6, draws=400)[:, 0]  # 6 pairs need two prompts of 5
        assert set(two) == {0.0, 0.5} and 0.15 < two.mean() < 0.35  # in the cut half the time, then 1/2
        with pytest.raises(ValueError, match="prompts or pairs"):
            downstream_controls.cheemsbench_at_size(s, prompts=1, pairs=1)

    def test_table_and_controls(self):
        """The equal-size table has one row per comparator; every control is a robustness claim with its reason, and the
        judge-identity and length-controlled rows recompute from the same picks."""
        from cheems_lib.analyses.claims import Ledger

        s = _picked_scores(n_sets=12, prompts=40)
        table = downstream_controls.equal_size_table(s, n_boot=100, seed=0)
        assert table["comparator"].tolist() == [c.removesuffix(" acc") for c in downstream_population.COMPARATORS]
        assert list(table.columns[3:]) == ["CheemsBench, full size", "CheemsBench at its prompts",
                                           "CheemsBench at its pairs", "the comparator"]
        s.bench["CheemsBench GPT acc"] = s.bench["CheemsBench acc"][::-1].to_numpy()
        s.bench[downstream_population.ANNOTATED_COMPARATORS[0]] = s.bench["RewardBench-like acc"][::-1].to_numpy()
        ledger = Ledger("downstream", "test")
        flipped = {"Human win rate": 1 - s.outcomes["Human win rate"]}
        downstream_controls.add_controls(ledger, s, length_controlled=s.outcomes, identity=flipped, n_boot=100, seed=0, seeds=1)
        assert set(ledger.claims) == set(downstream_controls.CONTROL_CLAIMS)
        assert {c.kind for c in ledger.claims.values()} == {"robustness"} and all(c.reason for c in ledger.claims.values())
        same = ledger.claims["fig5-human-beats-gpt-length-controlled"]  # outcomes unchanged: the main claim's numbers
        assert same.sentence.startswith("Length-controlled Best-of-N: ")
        assert ledger.claims["fig5-human-beats-gpt-judge-identity"].estimate == pytest.approx(
            -ledger.claims["fig5-human-beats-gpt-length-controlled"].estimate)  # flipped task: the sign flips


def test_the_annotated_comparators_leave_out_the_built_in_sections():
    """The RewardBench-like comparator's ``annotated`` set holds exactly its pairs of sections whose label an annotator
    decides; the population scores it as its own benchmark, and the annotated claim is tested against it."""
    from cheems_lib.world import comparators

    rb = comparators.rewardbench_like(0, 120)
    builds = {s.name: s.build for s in comparators.REWARDBENCH_SECTIONS}
    annotated = rb.sets["annotated"]
    assert annotated and {builds[r.category[0]] for r in annotated}.isdisjoint(comparators.BUILT_IN_BUILDS)
    assert len(annotated) == sum(builds[r.category[0]] not in comparators.BUILT_IN_BUILDS for r in rb.records)
    assert downstream_population.ANNOTATED_COMPARATORS[0] == f"{downstream_population.ANNOTATED_RB} acc"
    assert downstream_population.ANNOTATED_RB in downstream_population.PAIRWISE
