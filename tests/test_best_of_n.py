"""Best-of-N: candidates are seeded, selection picks the top score, and oracle >= random."""
from __future__ import annotations

import numpy as np
import pytest

from cheems_lib import best_of_n as bon
from cheems_lib.records import DataError

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
        from cheems_lib import comparators
        from cheems_lib.annotators import HumanAnnotator
        from cheems_lib.panels import shared_parameters

        judges = bon.judge_panel(0)
        assert len(judges) == bon.JUDGE_PANEL_SIZE
        assert shared_parameters(judges, [HumanAnnotator()]) == []
        assert shared_parameters(judges, comparators.rewardbench_like(0, 5).panel) == []

    def test_seed_determined(self):
        """The same seed gives the same judges, another seed other ones."""
        assert bon.judge_panel(2) == bon.judge_panel(2) != bon.judge_panel(3)

    def test_candidates_use_the_panel(self):
        """The human verdicts come from the panel passed in: a judge that calls everything a tie gives no wins."""
        from cheems_lib.annotators import HumanAnnotator

        blind = [HumanAnnotator(tie_margin=100.0)]
        assert bon.sample_candidates("human_win_rate", prompts=5, n=6, seed=0, panel=blind).outcome.sum() == 0
        assert bon.sample_candidates("human_win_rate", prompts=20, n=6, seed=0).outcome.sum() > 0


class TestTasksAndRange:
    def test_sample_tasks_is_sample_candidates_of_every_task(self):
        """sample_tasks gives each task of TASKS exactly what sample_candidates gives it with the same judges."""
        judges = bon.judge_panel(1)
        both = bon.sample_tasks(prompts=4, n=3, seed=2, panel=judges)
        assert list(both) == list(bon.TASKS) and set(bon.TASK_LABELS) == set(bon.TASKS)
        for name, c in both.items():
            alone = bon.sample_candidates(name, prompts=4, n=3, seed=2, panel=judges)
            assert [r.to_json() for r in c.records] == [r.to_json() for r in alone.records]
            assert np.array_equal(c.outcome, alone.outcome)

    def test_task_range_is_oracle_and_random_evaluated(self):
        """Each task's two rows are evaluate() of the oracle's and the random chooser's picks, text included."""
        tasks = bon.sample_tasks(prompts=12, n=6, seed=0)
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
