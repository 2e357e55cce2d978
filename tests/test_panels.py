"""Tests of cheems_lib.world.panels: the declared priors of drawn judges and panels, and what Fig. 5's judges share
with the benchmarks' annotators."""
from __future__ import annotations

from cheems_lib.world import panels
from cheems_lib.world.annotators import GPTAnnotator, HumanAnnotator

from fig5_study import _comparators, _world


def test_every_range_holds_the_benchmark_annotators_own_value():
    """A drawn judge of a kind is neither more nor less of that kind by construction: each declared range holds the
    value of the benchmark's own annotator of that kind (a referee found the GPT-like length bias capped at 0.5
    below GPT's fitted 0.75, and the human noise floored above the human annotator's 0)."""
    own = {"human": HumanAnnotator(), "gpt": GPTAnnotator()}
    outside = [(kind, k, getattr(own[kind], k), (lo, hi)) for kind, ranges in panels.RANGES.items()
               for k, (lo, hi) in ranges.items() if not lo <= getattr(own[kind], k) <= hi]
    assert outside == []


def test_draws_share_no_value_with_the_benchmark_annotators():
    """Draws are uniform within the ranges, never copies of the benchmark's annotators (0 shared values)."""
    for kind in ("human", "gpt"):
        panel = panels.draw_panel(kind, seed=0, size=5, stream="test")
        own = HumanAnnotator() if kind == "human" else GPTAnnotator()
        for judge in panel:
            assert all(getattr(judge, k) != getattr(own, k) for k in panels.RANGES[kind])


class TestBenchmarkAnnotators:
    def test_benchmark_annotators_and_judge_sharing(self):
        """CheemsBench's annotators come from the world's config (unknown without one); the sentence names shares."""
        from cheems_lib.world.annotators import HumanAnnotator

        rb, rmb = _comparators()
        world = _world(False)
        assert panels.benchmark_annotators(world, rb, rmb)["CheemsBench (human)"] is None
        world.summary = {"config": {"human": {"noise": 0.2}}}
        ann = panels.benchmark_annotators(world, rb, rmb)
        assert ann["CheemsBench (human)"] == [HumanAnnotator(noise=0.2)] and ann["CheemsBench GPT"] is None
        assert ann["RMB-like"] == ["rmb judge"]
        assert "share no parameter" in panels.judge_sharing({"A": "none", "B": "real annotators: unknown"})
        assert panels.judge_sharing({"A": "none", "B": "noise, tie_margin"}) == \
            "The win-rate judges share noise, tie_margin with B."


class TestJudgeTable:
    def test_counts_parameters_shared_with_cheemsbench_annotators(self):
        """The count column is 0 for the drawn downstream judges and 4 for CheemsBench's GPT annotator as a judge."""
        from cheems_lib.world import best_of_n
        from cheems_lib.world.annotators import GPTAnnotator, HumanAnnotator

        annotators = {"CheemsBench (human)": [HumanAnnotator()], "CheemsBench GPT": [GPTAnnotator()], "RewardBench-like": None}
        t = panels.judge_table({"win": best_of_n.judge_panel(0), "mt": [best_of_n.mt_judge(0)],
                                "identity": [GPTAnnotator()]}, annotators)
        assert t[panels.SHARED_COLUMN].tolist() == [0, 0, 4]
        assert panels.judge_sharing(t.loc["mt"], who="The MT-bench-like judge").startswith(
            "The MT-bench-like judge shares no parameter value")
        unknown = panels.judge_table({"mt": [best_of_n.mt_judge(0)]}, {"CheemsBench GPT": None})
        assert unknown[panels.SHARED_COLUMN].tolist() == ["unknown"]
