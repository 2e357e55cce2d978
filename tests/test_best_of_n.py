"""Best-of-N: candidates are seeded, selection picks the top score, and oracle >= random."""
from __future__ import annotations

import numpy as np
import pytest

from cheems_lib.world import best_of_n as bon
from cheems_lib.input_files import DataError

from conftest import make_record


def test_select_best_picks_highest_first_on_tie():
    """select_best takes the top score, the first on a tie, and names a missing score."""
    recs = [make_record("p", "abc"), make_record("q", "xy")]
    scores = {("p", "a"): 0.1, ("p", "b"): 2.0, ("p", "c"): -1.0, ("q", "x"): 1.0, ("q", "y"): 1.0}
    assert bon.select_best(recs, scores).tolist() == [1, 0]
    del scores[("q", "y")]
    with pytest.raises(DataError, match="no score for .*q.*y"):
        bon.select_best(recs, scores)


@pytest.mark.parametrize("task", list(bon.TASKS))
def test_candidates_are_seeded_and_judged(task):
    """Candidates repeat with a seed, change with another, and carry one verdict per sample."""
    a = bon.sample_candidates(task, prompts=6, n=5, seed=3)
    b = bon.sample_candidates(task, prompts=6, n=5, seed=3)
    c = bon.sample_candidates(task, prompts=6, n=5, seed=4)
    assert [r.to_json() for r in a.records] == [r.to_json() for r in b.records]
    assert np.array_equal(a.outcome, b.outcome) and not np.array_equal(a.utility, c.utility)
    assert a.utility.shape == a.outcome.shape == (6, 5)
    assert all(len(r.responses) == 5 and r.id.startswith(task) for r in a.records)
    if bon.TASKS[task].judge == "human":
        assert set(np.unique(a.outcome)) <= {0.0, 1.0} and len(a.baselines) == 6
    else:
        assert a.outcome.min() >= 1 and a.outcome.max() <= 10 and a.baselines is None


@pytest.mark.parametrize("task", list(bon.TASKS))
@pytest.mark.parametrize("seed", [0, 1])
def test_oracle_beats_random(task, seed):
    """Picking by true utility does at least as well as picking at random, inside its interval."""
    c = bon.sample_candidates(task, prompts=60, n=16, seed=seed)
    oracle = bon.evaluate(c, bon.oracle_choice(c), n_boot=200, seed=seed)
    rand = bon.evaluate(c, bon.random_choice(c, seed=seed), n_boot=200, seed=seed)
    assert oracle["value"] >= rand["value"]
    assert oracle["lo"] <= oracle["value"] <= oracle["hi"]


def test_select_best_with_utility_scores_is_the_oracle():
    """select_best fed the true utilities picks what the oracle picks."""
    c = bon.sample_candidates("mt_bench_sim", prompts=10, n=8, seed=0)
    scores = {(r.id, x.id): float(c.utility[p, j]) for p, r in enumerate(c.records) for j, x in enumerate(r.responses)}
    assert np.array_equal(bon.select_best(c.records, scores), bon.oracle_choice(c))


def test_evaluate_rejects_bad_picks():
    """evaluate refuses out-of-range picks and scores fixed picks as their mean outcome."""
    c = bon.sample_candidates("human_win_rate", prompts=3, n=4, seed=0)
    with pytest.raises(ValueError, match="picks must be 3 indices"):
        bon.evaluate(c, np.array([0, 1, 4]))
    assert bon.evaluate(c, np.zeros(3, dtype=int), n_boot=0)["value"] == c.outcome[:, 0].mean()


class TestJudgePanel:
    def test_independent_of_the_benchmark_annotators(self):
        """The win-rate judges share no parameter value with CheemsBench's human annotator or a comparator's panel."""
        from cheems_lib.world import comparators
        from cheems_lib.world.annotators import HumanAnnotator
        from cheems_lib.world.panels import shared_parameters

        judges = bon.judge_panel(0)
        assert len(judges) == bon.JUDGE_PANEL_SIZE
        assert shared_parameters(judges, [HumanAnnotator()]) == []
        assert shared_parameters(judges, comparators.rewardbench_like(0, 5).panel) == []

    def test_seed_determined(self):
        """The same seed gives the same judges, another seed other ones."""
        assert bon.judge_panel(2) == bon.judge_panel(2) != bon.judge_panel(3)

    def test_candidates_use_the_panel(self):
        """The human verdicts come from the panel passed in: a judge that calls everything a tie gives no wins."""
        from cheems_lib.world.annotators import HumanAnnotator

        blind = [HumanAnnotator(tie_margin=100.0)]
        assert bon.sample_candidates("human_win_rate", prompts=5, n=6, seed=0, panel=blind).outcome.sum() == 0
        assert bon.sample_candidates("human_win_rate", prompts=20, n=6, seed=0).outcome.sum() > 0


class TestTasksAndRange:
    def test_sample_tasks_is_sample_candidates_of_every_task(self):
        """sample_tasks gives each task of TASKS exactly what sample_candidates gives it with the same judges."""
        judges = bon.judge_panel(1)
        both = bon.sample_tasks(prompts=4, mt_prompts=4, n=3, seed=2, panel=judges)
        assert list(both) == list(bon.TASKS) and set(bon.TASK_LABELS) == set(bon.TASKS)
        for name, c in both.items():
            alone = bon.sample_candidates(name, prompts=4, n=3, seed=2, panel=judges)
            assert [r.to_json() for r in c.records] == [r.to_json() for r in alone.records]
            assert np.array_equal(c.outcome, alone.outcome)

    def test_task_range_is_oracle_and_random_evaluated(self):
        """Each task's two rows are evaluate() of the oracle's and the random chooser's picks, text included."""
        tasks = bon.sample_tasks(prompts=60, n=6, seed=0)  # enough prompts that the oracle beats random despite the judges' noise
        frame = bon.task_range(tasks, n_boot=50, seed=3)
        assert frame["task"].tolist() == [bon.TASK_LABELS[t] for t in tasks for _ in range(2)]
        for i, (name, c) in enumerate(tasks.items()):
            oracle = bon.evaluate(c, bon.oracle_choice(c), n_boot=50, seed=3)
            rand = bon.evaluate(c, bon.random_choice(c, seed=3), n_boot=50, seed=3)
            assert frame.loc[2 * i, ["value", "lo", "hi"]].tolist() == [oracle["value"], oracle["lo"], oracle["hi"]]
            assert frame.loc[2 * i + 1, "value"] == rand["value"] <= oracle["value"]
        assert frame.loc[0, "value [95% interval]"] == f"{frame.loc[0, 'value']:.3f} [{frame.loc[0, 'lo']:.3f}, " \
                                                      f"{frame.loc[0, 'hi']:.3f}]"
        assert bon.task_range(tasks, n_boot=0).loc[0, "value [95% interval]"] == f"{frame.loc[0, 'value']:.3f}"


class TestMTJudge:
    @pytest.mark.parametrize("seed", [0, 1, 7])
    def test_shares_no_parameter_with_either_annotator(self, seed):
        """The MT-bench-like judge is drawn from the GPT-like ranges, never CheemsBench's GPT (or human) annotator:
        it shares no parameter value with either, and stays inside the declared ranges."""
        from cheems_lib.world.annotators import GPTAnnotator, HumanAnnotator
        from cheems_lib.world.panels import RANGES, shared_parameters

        judge = bon.mt_judge(seed)
        assert shared_parameters([judge], [GPTAnnotator()]) == [] and shared_parameters([judge], [HumanAnnotator()]) == []
        assert all(lo <= getattr(judge, k) <= hi for k, (lo, hi) in RANGES["gpt"].items())
        assert bon.mt_judge(seed) == judge != bon.mt_judge(seed + 1)

    def test_default_grader_is_the_drawn_judge(self):
        """Without a judge passed in, the MT-bench-like task is graded by mt_judge(seed), not GPTAnnotator()."""
        from cheems_lib.world.annotators import GPTAnnotator

        c = bon.sample_candidates("mt_bench_sim", prompts=30, n=6, seed=5)
        assert np.array_equal(c.outcome, bon.regrade(c, gpt=bon.mt_judge(5)).outcome)
        assert not np.array_equal(c.outcome, bon.regrade(c, gpt=GPTAnnotator()).outcome)


class TestRegrade:
    @pytest.mark.parametrize("task", list(bon.TASKS))
    def test_same_judges_reproduce_and_samples_do_not_depend_on_the_judge(self, task):
        """Re-judging with the same judges gives the same verdicts; another judge keeps every sample (so no reward
        model is scored again) and changes only the verdicts."""
        from cheems_lib.world.annotators import GPTAnnotator, HumanAnnotator

        c = bon.sample_candidates(task, prompts=8, n=5, seed=2)
        assert np.array_equal(bon.regrade(c).outcome, c.outcome)
        other = bon.sample_candidates(task, prompts=8, n=5, seed=2, gpt=GPTAnnotator(), panel=[HumanAnnotator()])
        assert [r.to_json() for r in other.records] == [r.to_json() for r in c.records]
        assert np.array_equal(other.utility, c.utility) and other.baselines == c.baselines

    def test_held_out_mix_is_uniform_not_a_subsets_mix(self):
        """The win-rate prompts are drawn uniformly over the categories, not with the Human Instruction mix."""
        from cheems_lib.categories import CATEGORIES
        from cheems_lib.world.simulation import HUMAN_MIX

        mix = bon.TASKS["human_win_rate"].mix
        assert mix == {c: 1 / len(CATEGORIES) for c in CATEGORIES} and mix != HUMAN_MIX


def _toy(lengths, outcome):
    """Candidates of one-character responses repeated to ``lengths`` (prompts, N), with ``outcome``."""
    from cheems_lib.records import Record, Response

    recs = [Record(prompt=f"p{i}", responses=[Response(f"p{i}-{j}", "x" * int(n)) for j, n in enumerate(row)], id=f"p{i}")
            for i, row in enumerate(lengths)]
    return bon.Candidates(bon.TASKS["mt_bench_sim"], recs, np.zeros(np.shape(outcome)), np.asarray(outcome, float), None)


class TestLengthControlled:
    def test_removes_an_exact_log_length_effect(self):
        """Hand-made: outcome = prompt level + 2 log(length / prompt median): the adjusted outcome is the prompt level."""
        lengths = np.array([[10, 20, 40], [50, 100, 25]])
        level = np.array([[3.0], [6.0]])
        outcome = level + 2 * np.log(lengths / np.median(lengths, axis=1, keepdims=True))
        np.testing.assert_allclose(bon.length_controlled(_toy(lengths, outcome)), np.broadcast_to(level, (2, 3)))

    def test_leaves_outcomes_unrelated_to_length(self):
        """Hand-made: outcomes orthogonal to log length within each prompt (slope 0) are left as they are."""
        lengths = np.array([[10, 20, 40], [10, 20, 40]])
        outcome = np.array([[1.0, 5.0, 1.0], [2.0, 0.0, 2.0]])  # symmetric around the median: no linear trend
        np.testing.assert_allclose(bon.length_controlled(_toy(lengths, outcome)), outcome)


def test_prompt_resamples_is_one_count_matrix():
    """Each replicate draws as many prompts as there are, with replacement; seeded, and each stream its own."""
    a = bon.prompt_resamples(7, 50, seed=3, stream="t")
    assert a.shape == (50, 7) and np.all(a.sum(axis=1) == 7) and np.array_equal(a, bon.prompt_resamples(7, 50, seed=3, stream="t"))
    assert not np.array_equal(a, bon.prompt_resamples(7, 50, seed=3, stream="u")) and (a != 1).any()


def test_prompts_note_says_when_a_run_uses_fewer_prompts():
    """Below the default floor the sentence says the run uses fewer prompts; at or above it, it says the floor."""
    assert "fewer than the 500" in bon.prompts_note(12) and "12" in bon.prompts_note(12)
    assert "fewer" not in bon.prompts_note(bon.MIN_WIN_RATE_PROMPTS)
