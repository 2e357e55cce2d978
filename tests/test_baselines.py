"""Baseline scorers."""
from __future__ import annotations

from cheems_lib.baselines import NgramProbe, length_scores, random_scores
from cheems_lib.metrics import accuracy
from conftest import make_record


def test_length_baselines_are_opposites():
    """The longest and shortest baselines rank two responses in opposite orders."""
    recs = [make_record("p", "ab")]
    recs[0].responses[0].content = "短"
    assert length_scores(recs)[("p", "a")] < length_scores(recs)[("p", "b")]
    assert length_scores(recs, prefer="shorter")[("p", "a")] > length_scores(recs, prefer="shorter")[("p", "b")]


def test_random_scores_are_seeded():
    """The random baseline repeats with a seed and changes with another."""
    recs = [make_record(str(i), "abc") for i in range(5)]
    assert random_scores(recs, seed=1) == random_scores(recs, seed=1) != random_scores(recs, seed=2)


def test_ngram_probe_learns_a_visible_marker():
    """Responses containing 好 are better: the probe ranks them first on unseen prompts."""
    def world(n, offset):
        recs = []
        for i in range(n):
            r = make_record(f"{offset}{i}", "ab", rank={"a": 0, "b": 1})
            r.responses[0].content = f"回答{i}很好很好"
            r.responses[1].content = f"回答{i}不行不行"
            recs.append(r)
        return recs
    train, test = world(30, "t"), world(10, "e")
    probe = NgramProbe(n_features=512).fit(train, {(r.id, x.id): 1.0 if x.id == "a" else 0.0 for r in train for x in r.responses})
    s = probe.score(test)
    assert accuracy([r.rank for r in test], [{x.id: s[(r.id, x.id)] for x in r.responses} for r in test]) == 1.0
