"""Baseline scorers."""
from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from cheems_lib.baselines import (CHANCE, CONTROLS, NgramProbe, chance_by_size, chance_level, length_scores,
                                  null_controls, random_scores)
from cheems_lib.metrics import accuracy, prompt_outcomes
from cheems_lib.records import strict_pairs
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



def test_ngram_probe_features_are_the_hashed_counts_by_definition():
    """Each text's features are its character 1-3-gram counts in crc32 buckets, L2-normalised, then a bias column:
    the same to the last bit as counting n-gram by n-gram (empty, one-character and repeated texts included)."""
    import zlib

    texts = ["回答很好很好", "", "a", "ab", "回答不行不行回答", "好" * 40, "混合 text, 标点！"]
    probe = NgramProbe(n_features=64)
    counts = np.zeros((len(texts), 64), np.float32)
    for i, t in enumerate(texts):
        for n in (1, 2, 3):
            for j in range(len(t) - n + 1):
                counts[i, zlib.crc32(t[j:j + n].encode("utf-8")) % 64] += 1.0
    expected = np.hstack([counts / np.maximum(np.linalg.norm(counts, axis=1, keepdims=True), 1e-9),
                          np.ones((len(texts), 1), np.float32)])
    assert np.array_equal(probe._features(texts), expected)

# Tie patterns (group sizes, best first) of small rankings: strict, with ties, one pair, all tied.
PATTERNS = [(1, 1), (1, 1, 1), (1, 2), (2, 1), (1, 1, 1, 1), (2, 2), (1, 2, 1), (1, 1, 1, 1, 1), (1, 3, 1), (3,)]


def _rank(pattern):
    return {f"r{g}{i}": g for g, n in enumerate(pattern) for i in range(n)}


class TestChanceLevel:
    @pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: "-".join(map(str, p)))
    def test_equals_enumeration_over_every_order(self, pattern):
        """Averaged over all k! score orders (each equally likely under random scores), the metrics'
        own accuracy and exact match equal chance_level's fractions exactly."""
        rank = _rank(pattern)
        ids = list(rank)
        orders = list(itertools.permutations(range(len(ids))))
        correct = exact = 0
        total = len(strict_pairs(rank))
        for order in orders:
            scores = dict(zip(ids, order))
            c, t = prompt_outcomes([rank], [scores])
            correct += int(c[0])
            exact += int(c[0] == t[0])
        level = chance_level(rank)
        if total == 0:
            assert level is None
            return
        assert level == (Fraction(correct, total * len(orders)), Fraction(exact, len(orders)))

    def test_hand_values(self):
        """1/k! for a strict ranking, 2!2!/5! = 1/30 for groups 2-1-2, 1/2 for one pair."""
        assert chance_level(_rank((1, 1, 1, 1, 1)))[1] == Fraction(1, 120)
        assert chance_level(_rank((2, 1, 2)))[1] == Fraction(1, 30)
        assert chance_level({"a": 0, "b": 1}) == (Fraction(1, 2), Fraction(1, 2))


def test_chance_by_size_by_hand():
    """One row per ranking size: strict 3-rankings have chance 1/6, a 1-2 ranking 1/3, so three prompts of size 3
    average (1/6 + 1/6 + 1/3) / 3; a prompt without a comparison is left out."""
    recs = [make_record("a", "abc", rank={"a": 0, "b": 1, "c": 2}), make_record("b", "abc", rank={"a": 0, "b": 1, "c": 2}),
            make_record("c", "abc", rank={"a": 0, "b": 1, "c": 1}), make_record("d", "ab", rank={"a": 0, "b": 0}),
            make_record("e", "ab", rank={"a": 1, "b": 0})]
    t = chance_by_size({"open": recs})
    assert t[["ranked responses", "prompts", "tie patterns", "chance exact match, strict ranking"]].values.tolist() == [
        [2, 1, 1, "1/2"], [3, 3, 2, "1/6"]]
    assert t["chance exact match, these rankings"].tolist() == pytest.approx([1 / 2, (1 / 6 + 1 / 6 + 1 / 3) / 3])
    assert set(t["chance accuracy"]) == {0.5}


def test_null_controls_by_hand():
    """Two categories: pick-longest is right on the prompt whose best answer is longest, pick-shortest on the
    other; chance is 1/2 and the mean of 1/k!; the subset row is the macro mean."""
    long_wins = make_record("p", "ab", rank={"a": 0, "b": 1}, category=("数学",))
    long_wins.responses[0].content = "a much longer answer"
    short_wins = make_record("q", "abc", rank={"a": 0, "b": 1, "c": 2}, category=("理解",))
    short_wins.responses[0].content, short_wins.responses[1].content, short_wins.responses[2].content = "x", "xx", "xxx"
    t = null_controls({"open": [long_wins, short_wins]}, seed=0).set_index(["control", "category"])
    assert t.loc[("baseline:longest", "数学"), "accuracy"] == 1.0 and t.loc[("baseline:longest", "理解"), "accuracy"] == 0.0
    assert t.loc[("baseline:shortest", "理解"), "exact_match"] == 1.0
    assert t.loc[("baseline:longest", ""), "accuracy"] == 0.5
    assert t.loc[(CHANCE, "数学"), "exact_match"] == 0.5 and t.loc[(CHANCE, "理解"), "exact_match"] == pytest.approx(1 / 6)
    assert t.loc[(CHANCE, ""), "exact_match"] == pytest.approx((0.5 + 1 / 6) / 2)
    assert set(t.index.get_level_values(0)) == set(CONTROLS)


def test_random_control_is_near_chance():
    """On many strict 5-rankings one seeded random draw lands near the exact chance (1/2, 1/120)."""
    recs = [make_record(str(i), "abcde", rank={x: j for j, x in enumerate("abcde")}) for i in range(400)]
    t = null_controls({"open": recs}, seed=3).set_index(["control", "category"])
    assert t.loc[("baseline:random", ""), "accuracy"] == pytest.approx(0.5, abs=0.03)
    assert t.loc[(CHANCE, ""), "exact_match"] == pytest.approx(1 / 120)
