"""Metrics of paper §3.3 / spec §3 against hand computations and invariances."""
from __future__ import annotations

import random

import numpy as np
import pytest

from cheems_lib.metrics import accuracy, evaluate_subset, exact_match, overall, overall_ci
from cheems_lib.records import DataError
from conftest import make_record


def _scores(records, table):
    return {(r.id, rid): table[r.id][rid] for r in records for rid in r.rank}


class TestAccuracy:
    def test_hand_case_with_score_tie(self):
        """a>b right, a>c wrong because the scores tie: 1/2."""
        assert accuracy([{"a": 0, "b": 1, "c": 1}], [{"a": 2, "b": 1, "c": 2}]) == 0.5

    def test_pooled_not_averaged(self):
        """Accuracy pools comparisons: (3 + 0) / (3 + 1), not mean(1, 0)."""
        ranks = [{"a": 0, "b": 1, "c": 2}, {"a": 0, "b": 1}]
        scores = [{"a": 3, "b": 2, "c": 1}, {"a": 0, "b": 1}]
        assert accuracy(ranks, scores) == 0.75

    def test_all_tied_prompt_has_no_comparison(self):
        """A prompt whose responses all tie has no comparison (accuracy is nan)."""
        assert np.isnan(accuracy([{"a": 0, "b": 0}], [{"a": 1, "b": 2}]))


class TestExactMatch:
    def test_tie_fails_exact_match(self):
        """Unlike the official code, a score tie fails exact match as well as accuracy."""
        assert exact_match([{"a": 0, "b": 1}], [{"a": 1, "b": 1}]) == 0.0

    def test_all_tied_prompts_are_excluded(self):
        """Prompts without comparisons are not in the denominator."""
        ranks = [{"a": 0, "b": 1}, {"a": 0, "b": 0}, {"a": 0, "b": 1}]
        scores = [{"a": 2, "b": 1}, {"a": 0, "b": 0}, {"a": 0, "b": 1}]
        assert exact_match(ranks, scores) == 0.5


class TestEvaluateSubset:
    def _data(self):
        recs = [make_record("m1", "abc", rank={"a": 0, "b": 1, "c": 2}, category=["数学"]),
                make_record("m2", "ab", rank={"a": 0, "b": 1}, category=["数学", "代数"]),
                make_record("w1", "ab", rank={"a": 0, "b": 1}, category=["写作"]),
                make_record("w2", "ab", rank={"a": 0, "b": 0}, category=["写作"])]
        table = {"m1": {"a": 3, "b": 1, "c": 2}, "m2": {"a": 1, "b": 0}, "w1": {"a": 0, "b": 1}, "w2": {"a": 0, "b": 0}}
        return recs, _scores(recs, table)

    def test_macro_average_over_top_level_categories(self):
        """数学: acc (2+1)/(3+1)=0.75, em 1/2; 写作: acc 0, em 0 -> subset 0.375 / 0.25."""
        recs, scores = self._data()
        res = evaluate_subset(recs, scores, n_boot=0)
        assert res.by_category["数学"] == {"accuracy": 0.75, "exact_match": 0.5, "prompts": 2, "comparisons": 4}
        assert res.by_category["写作"]["prompts"] == 1
        assert res.accuracy == pytest.approx(0.375) and res.exact_match == pytest.approx(0.25)
        assert res.prompts_without_comparisons == 1

    def test_overall_is_mean_of_subset_scores(self):
        """The overall score is the mean of the subsets' accuracy and exact match."""
        recs, scores = self._data()
        a = evaluate_subset(recs, scores, n_boot=0)
        assert overall([a, a]) == pytest.approx((0.375 + 0.25) / 2)

    def test_missing_score_is_an_error(self):
        """Evaluation names the prompt and response of a missing score."""
        recs, scores = self._data()
        del scores[("m1", "c")]
        with pytest.raises(DataError, match='no score for prompt "m1" response "c"'):
            evaluate_subset(recs, scores, n_boot=0)

    def test_bootstrap_is_seeded_and_brackets_the_estimate(self):
        """Bootstrap intervals repeat with a seed and contain the estimate."""
        rng = random.Random(0)
        recs = [make_record(str(i), "abcd", rank={c: rng.randint(0, 3) for c in "abcd"}, category=[rng.choice("xyz")])
                for i in range(200)]
        scores = {(r.id, c): rng.random() for r in recs for c in "abcd"}
        a = evaluate_subset(recs, scores, n_boot=300, seed=1)
        b = evaluate_subset(recs, scores, n_boot=300, seed=1)
        lo, hi = a.to_json()["accuracy_ci"]
        assert a.to_json() == b.to_json() and lo < a.accuracy < hi
        assert overall_ci([a, b])[0] < overall([a, b]) < overall_ci([a, b])[1]

    def test_category_replicates_are_the_subset_replicates(self):
        """boot_category_accuracy holds each category's share of the same resamples: their mean is boot_accuracy."""
        rng = random.Random(2)
        recs = [make_record(str(i), "abc", rank={c: rng.randint(0, 2) for c in "abc"}, category=[rng.choice("xy")])
                for i in range(60)]
        scores = {(r.id, c): rng.random() for r in recs for c in "abc"}
        res = evaluate_subset(recs, scores, n_boot=50, seed=3)
        assert sorted(res.boot_category_accuracy) == sorted(res.by_category)
        assert np.allclose(np.mean(list(res.boot_category_accuracy.values()), axis=0), res.boot_accuracy)
        assert evaluate_subset(recs, scores, n_boot=0).boot_category_accuracy == {}


class TestInvariances:
    """Registry of invariances every metric must have."""

    def _random(self, seed):
        rng = random.Random(seed)
        recs = [make_record(str(i), "abcde"[: rng.randint(2, 5)], category=[rng.choice("xy")]) for i in range(60)]
        for r in recs:
            r.rank = {c: rng.randint(0, 2) for c in r.response_ids}
        scores = {(r.id, c): float(rng.randint(0, 4)) for r in recs for c in r.response_ids}
        return recs, scores

    @pytest.mark.parametrize("seed", range(5))
    def test_prompt_order(self, seed):
        """Shuffling prompts changes nothing."""
        recs, scores = self._random(seed)
        before = evaluate_subset(recs, scores, n_boot=0).to_json()
        random.Random(seed).shuffle(recs)
        assert evaluate_subset(recs, scores, n_boot=0).to_json() == before

    @pytest.mark.parametrize("seed", range(5))
    def test_response_order(self, seed):
        """Shuffling responses within prompts (and their rank entries) changes nothing."""
        recs, scores = self._random(seed)
        before = evaluate_subset(recs, scores, n_boot=0).to_json()
        rng = random.Random(seed)
        for r in recs:
            rng.shuffle(r.responses)
            r.rank = dict(sorted(r.rank.items(), key=lambda kv: rng.random()))
        assert evaluate_subset(recs, scores, n_boot=0).to_json() == before

    @pytest.mark.parametrize("seed", range(5))
    def test_monotone_score_transform(self, seed):
        """Only the order of scores matters: a strictly increasing transform changes nothing."""
        recs, scores = self._random(seed)
        before = evaluate_subset(recs, scores, n_boot=0).to_json()
        assert evaluate_subset(recs, {k: np.exp(v) * 3 - 1 for k, v in scores.items()}, n_boot=0).to_json() == before
