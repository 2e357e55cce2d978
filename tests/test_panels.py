"""Tests of cheems_lib.world.panels: the declared priors of drawn judges and panels."""
from __future__ import annotations

from cheems_lib.world import panels
from cheems_lib.world.annotators import GPTAnnotator, HumanAnnotator


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
