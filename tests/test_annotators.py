"""Simulated annotators: protocols and the biases of Fig. 15."""
from __future__ import annotations

import numpy as np

from cheems_lib.world.annotators import (GPTAnnotator, HumanAnnotator, annotate_all_pairs, annotate_complete,
                                   annotate_rounds, decisions_per_prompt, length_bias_curve, length_preference,
                                   position_share, triplewise_rounds)
from cheems_lib.conflicts import resolve
from cheems_lib.records import Record, Response


def test_triplewise_rounds_cover_every_pair_of_five():
    """Five adjacent triples: adjacent pairs twice, the others once, all ten covered."""
    counts = {}
    for t in triplewise_rounds(5):
        for i in range(3):
            for j in range(i + 1, 3):
                key = frozenset((t[i], t[j]))
                counts[key] = counts.get(key, 0) + 1
    assert len(counts) == 10 and sorted(counts.values()) == [1] * 5 + [2] * 5


def test_each_human_round_is_consistent():
    """Within one round the three judgments form a weak order (no cycle inside a round)."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        u = rng.normal(size=5) * 0.5
        anns = annotate_rounds(u, rng.integers(50, 200, 5), rng, HumanAnnotator(noise=0.3))
        for r in range(5):
            part = anns[3 * r: 3 * r + 3]
            ids = sorted({x for a in part for x in a[:2]})
            strict = [a for a in part if a[2] != "0"]
            rank = resolve([str(i) for i in ids], [(str(a), str(b), p) for a, b, p in part])
            assert all((rank[str(a)] < rank[str(b)]) if p == "1" else (rank[str(a)] > rank[str(b)]) for a, b, p in strict)


def test_noiseless_annotators_recover_the_utility_order():
    """Without noise or biases every annotator prefers the higher-utility response."""
    rng = np.random.default_rng(1)
    u = np.array([4.0, 3.0, 2.0, 1.0, 0.0])
    lens = np.full(5, 100)
    human = HumanAnnotator(shared_noise=0, noise=0, length_bias=0)
    gpt = GPTAnnotator(noise=0, position_bias=0, length_bias=0)
    for fn, ann in ((annotate_rounds, human), (annotate_complete, human), (annotate_all_pairs, gpt)):
        for a, b, p in fn(u, lens, rng, ann):
            assert p == ("1" if u[a] > u[b] else "2")


def test_length_preference_shapes():
    """Human: longer wins at moderate differences, shorter at large ones; GPT: longer always."""
    h, g = HumanAnnotator(), GPTAnnotator()
    assert length_preference(h.length_peak, h) > 0 > length_preference(2.0 * h.length_peak, h)
    assert length_preference(-h.length_peak, h) < 0 < length_preference(-2.0 * h.length_peak, h)
    assert 0 < length_preference(g.length_peak, g) < length_preference(4 * g.length_peak, g)


def test_gpt_prefers_second_position():
    """The GPT annotator's position bias favours the response shown second (Fig. 15d)."""
    rng = np.random.default_rng(2)
    anns = [a for _ in range(300) for a in annotate_all_pairs(np.zeros(5), np.full(5, 100), rng, GPTAnnotator())]
    assert np.mean([p == "2" for *_, p in anns]) > 0.6


def test_decisions_per_prompt_agree_with_the_pooled_shares():
    """Per-prompt counts: ties left out, the length window applied to len(A) - len(B), and their sums give
    position_share and the length curve's share for A."""
    recs = [Record(prompt="p", id=str(k), responses=[Response("a", "x" * 10), Response("b", "x" * 4), Response("c", "x")],
                   annotations=anns)
            for k, anns in enumerate([[("a", "b", "1"), ("b", "a", "2"), ("a", "c", "0")],
                                      [("c", "b", "2"), ("b", "c", "1"), ("a", "c", "2")]])]
    first, n = decisions_per_prompt(recs)
    assert first.tolist() == [1, 1] and n.tolist() == [2, 3]
    assert 1 - first.sum() / n.sum() == position_share(recs)
    first, n = decisions_per_prompt(recs, 1, 7)
    assert first.tolist() == [1, 1] and n.tolist() == [1, 1]
    assert first.sum() / n.sum() == length_bias_curve(recs, np.array([1, 7]))[0]["share_first"]
