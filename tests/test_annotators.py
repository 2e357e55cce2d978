"""Simulated annotators: protocols and the biases of Fig. 15."""
from __future__ import annotations

import numpy as np

from cheems_lib.annotators import (GPTAnnotator, HumanAnnotator, annotate_all_pairs, annotate_complete,
                                   annotate_rounds, length_preference, triplewise_rounds)
from cheems_lib.conflicts import resolve


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
    rng = np.random.default_rng(2)
    anns = [a for _ in range(300) for a in annotate_all_pairs(np.zeros(5), np.full(5, 100), rng, GPTAnnotator())]
    assert np.mean([p == "2" for *_, p in anns]) > 0.6
