"""Metrics of paper §3.3 / spec §3 against hand computations and invariances."""
from __future__ import annotations

import random

import numpy as np
import pytest

from cheems_lib.metrics import accuracy, evaluate_subset, exact_match, overall, overall_ci, overall_ci_note
from cheems_lib.input_files import DataError
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

    def test_micro_average_beside_macro(self):
        """Micro by hand on the same data: 3 correct of 5 comparisons; 1 of 3 prompts with a comparison exact."""
        recs, scores = self._data()
        res = evaluate_subset(recs, scores, n_boot=0)
        assert res.micro_accuracy == pytest.approx(3 / 5) and res.micro_exact_match == pytest.approx(1 / 3)
        assert res.to_json()["micro_accuracy"] == res.micro_accuracy

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


# ---- the bootstrap: one rule for every interval, and bounded memory ------------------------------------------


def _old_draws(strata, n_boot, seed, mask=None):
    """stratified_draws as it was: one ``(n_boot, members)`` draw per sorted label, nothing pooled."""
    strata = np.asarray(strata, dtype=object)
    keep = np.ones(strata.size, bool) if mask is None else np.asarray(mask, bool)
    rng = np.random.default_rng(seed)
    out = []
    for s in sorted(set(strata[keep].tolist())):
        idx = np.flatnonzero(keep & (strata == s))
        out.append((s, idx, rng.integers(0, idx.size, size=(n_boot, idx.size))))
    return out


def _old_replicates(recs, scores, n_boot, seed):
    """evaluate_subset's replicates by the old formulas (whole draws, np.mean over categories)."""
    from cheems_lib.metrics import lookup_scores, prompt_outcomes

    correct, total = prompt_outcomes([r.rank for r in recs], lookup_scores(recs, scores))
    cats = np.array([r.top_category for r in recs], dtype=object)
    boot_acc, boot_em = [], []
    for _, idx, draw in _old_draws(cats, n_boot, seed, mask=total > 0):
        c, t = correct[idx], total[idx]
        boot_acc.append(c[draw].sum(1) / t[draw].sum(1))
        boot_em.append((c == t).astype(float)[draw].mean(1))
    return np.mean(boot_acc, axis=0), np.mean(boot_em, axis=0), boot_acc


def _random_subset(seed, n=120, cats="xyz"):
    rng = random.Random(seed)
    recs = [make_record(str(i), "abcd", rank={c: rng.randint(0, 3) for c in "abcd"}, category=[rng.choice(cats)])
            for i in range(n)]
    return recs, {(r.id, c): rng.random() for r in recs for c in "abcd"}


class TestBootstrap:
    def test_row_chunks_draw_the_same_numbers(self):
        """numpy's Generator.integers drawn in chunks of rows gives the very numbers of one draw, and leaves the
        stream where one draw would (odd counts of 32-bit draws included): the premise of chunking."""
        for size, rows, chunk in ((1, 9, 2), (3, 7, 2), (7, 50, 3), (40, 33, 1), (1000, 5, 4)):
            whole = np.random.default_rng(5).integers(0, size, size=(rows, size))
            rng = np.random.default_rng(5)
            parts = [rng.integers(0, size, size=(min(chunk, rows - s), size)) for s in range(0, rows, chunk)]
            assert np.array_equal(np.concatenate(parts), whole)
            follow = np.random.default_rng(5)
            follow.integers(0, size, size=(rows, size))
            assert rng.integers(0, 10**6, size=5).tolist() == follow.integers(0, 10**6, size=5).tolist()

    @pytest.mark.parametrize("chunk", [None, 1, 7, 100])
    def test_chunked_bootstrap_equals_the_old_one_draw_formulas(self, monkeypatch, chunk):
        """With every category at MIN_STRATUM prompts or more, evaluate_subset's replicates are bit-identical to
        the old formulas (one (n_boot, members) draw per category), whatever the chunk size: the book's recorded
        ledger does not move."""
        from cheems_lib import metrics

        if chunk is not None:
            monkeypatch.setattr(metrics, "BOOT_CHUNK", chunk)
        for seed in range(3):
            recs, scores = _random_subset(seed)
            res = evaluate_subset(recs, scores, n_boot=257, seed=seed)
            acc, em, per_cat = _old_replicates(recs, scores, 257, seed)
            assert res.pooled_categories == ()
            assert np.array_equal(res.boot_accuracy, acc) and np.array_equal(res.boot_exact_match, em)
            assert all(np.array_equal(a, b) for a, b in zip(res.boot_category_accuracy.values(), per_cat))

    @pytest.mark.parametrize("cats", ["xyz", "xyzuvw"])
    def test_micro_replicates_pool_the_same_resamples(self, monkeypatch, cats):
        """Each replicate's micro accuracy and exact match are its drawn prompts' counts pooled over every stratum
        (pooled small categories included: 120 prompts over six categories leave some under MIN_STRATUM only by
        chance, so MIN_STRATUM is raised to force a pool), the resamples the macro replicates use."""
        from cheems_lib import metrics

        monkeypatch.setattr(metrics, "MIN_STRATUM", 25 if len(cats) > 3 else 5)
        recs, scores = _random_subset(3, cats=cats)
        res = evaluate_subset(recs, scores, n_boot=64, seed=4)
        correct, total = metrics.prompt_outcomes([r.rank for r in recs], metrics.lookup_scores(recs, scores))
        strata = np.array([r.top_category for r in recs], dtype=object)
        c, t, e = (np.zeros(64) for _ in range(3))
        for stratum, rows, draw in metrics.stratified_draws(strata, 64, 4, mask=total > 0):
            picked = stratum.members[draw]
            c[rows] += correct[picked].sum(1)
            t[rows] += total[picked].sum(1)
            e[rows] += (correct[picked] == total[picked]).sum(1)
        assert bool(res.pooled_categories) == (len(cats) > 3)
        assert np.allclose(res.boot_micro_accuracy, c / t, rtol=0, atol=1e-15)
        assert np.allclose(res.boot_micro_exact_match, e / (total > 0).sum(), rtol=0, atol=1e-15)
        lo, hi = res.to_json()["micro_accuracy_ci"]
        assert lo <= res.micro_accuracy <= hi

    def test_draws_stay_within_the_chunk(self, monkeypatch):
        """Each draw holds at most BOOT_CHUNK indices (one row when a stratum is larger), every replicate row of
        every stratum once, strata in order: the memory-bounded path."""
        from cheems_lib import metrics

        monkeypatch.setattr(metrics, "BOOT_CHUNK", 50)
        strata = ["a"] * 20 + ["b"] * 60 + ["c"] * 7
        seen = {}
        for stratum, rows, draw in metrics.stratified_draws(strata, 101, seed=1):
            assert draw.shape == (rows.stop - rows.start, stratum.members.size)
            assert draw.size <= max(50, stratum.members.size)
            seen.setdefault(stratum.labels, []).append((rows.start, rows.stop))
        assert list(seen) == [("a",), ("b",), ("c",)]
        for spans in seen.values():
            assert spans[0][0] == 0 and spans[-1][1] == 101 and all(a[1] == b[0] for a, b in zip(spans, spans[1:]))

    def test_peak_memory_does_not_grow_with_prompts_times_replicates(self, monkeypatch):
        """2,000 prompts x 20,000 replicates: the old draws alone took 320 MB; in chunks the peak stays near the
        replicates kept (per category, a few MB)."""
        import tracemalloc

        from cheems_lib import metrics

        monkeypatch.setattr(metrics, "BOOT_CHUNK", 1 << 14)
        recs, scores = _random_subset(0, n=2000, cats="wxyz")
        tracemalloc.start()
        try:
            res = evaluate_subset(recs, scores, n_boot=20_000, seed=0)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert res.boot_accuracy.shape == (20_000,) and peak < 30e6, peak

    def test_one_prompt_categories_are_pooled_and_named(self):
        """Categories of one prompt cannot vary alone: they are resampled as one stratum (here the pool of three
        singletons is still under MIN_STRATUM, so it joins the smallest category), the result names them, and
        their replicates vary; the big categories keep their own strata."""
        from cheems_lib import metrics

        recs, scores = _random_subset(1, n=60, cats="xy")
        for i, cat in enumerate("pqr"):
            recs.append(make_record(f"s{i}", "ab", rank={"a": 0, "b": 1}, category=[cat]))
            scores.update({(f"s{i}", "a"): 1.0, (f"s{i}", "b"): 0.0 if i else 2.0})
        res = evaluate_subset(recs, scores, n_boot=400, seed=2)
        smallest = min("xy", key=lambda c: res.by_category[c]["prompts"])
        assert res.pooled_categories == tuple(sorted([smallest, "p", "q", "r"]))
        assert res.to_json()["pooled_categories"] == list(res.pooled_categories)
        assert [s.labels for s in metrics.stratify([r.top_category for r in recs])][-1] == (smallest, "p", "q", "r")
        singles = np.array([res.boot_category_accuracy[c] for c in "pqr"])
        assert np.isnan(singles).any() and np.nanmin(singles) == 0 and np.nanmax(singles) == 1
        assert np.isfinite(res.boot_accuracy).all() and res.boot_accuracy.std() > 0
        lo, hi = res.to_json()["accuracy_ci"]
        assert lo < hi

    def test_pooled_replicates_are_the_macro_average_of_each_resample(self):
        """In a pooled stratum, a replicate's accuracy is the macro average over the categories it drew, computed
        here from the same draws by hand."""
        from cheems_lib import metrics
        from cheems_lib.metrics import lookup_scores, prompt_outcomes

        recs, scores = _random_subset(4, n=14, cats="uvwxyz")
        res = evaluate_subset(recs, scores, n_boot=60, seed=9)
        correct, total = prompt_outcomes([r.rank for r in recs], lookup_scores(recs, scores))
        cats = np.array([r.top_category for r in recs], dtype=object)
        expect = np.zeros(60)
        counts = np.zeros(60)
        for stratum, rows, draw in metrics.stratified_draws(cats, 60, 9, mask=total > 0):
            for r, row in zip(range(rows.start, rows.stop), draw):
                picked = stratum.members[row]
                accs = [correct[picked][cats[picked] == c].sum() / total[picked][cats[picked] == c].sum()
                        for c in sorted(set(cats[picked]))]
                expect[r] += sum(accs)
                counts[r] += len(accs)
        assert res.pooled_categories and np.allclose(res.boot_accuracy, expect / counts)

    def test_six_one_prompt_categories_report_insufficient_data(self):
        """6 prompts, one per category: no [x, x] interval but insufficient data with the count; the metrics stay."""
        recs = [make_record(f"p{i}", "ab", rank={"a": 0, "b": 1}, category=[c]) for i, c in enumerate("abcdef")]
        scores = {(r.id, x): float(x == "a" or i % 2) for i, r in enumerate(recs) for x in "ab"}
        out = evaluate_subset(recs, scores, n_boot=500, seed=0).to_json()
        assert "accuracy_ci" not in out and "exact_match_ci" not in out
        assert out["ci_note"] == ("insufficient data: 6 prompts with a comparison, needs at least 10 (a bootstrap over "
                                  "fewer gives no real 95% interval) (accuracy_ci, exact_match_ci, micro_accuracy_ci and "
                                  "micro_exact_match_ci left out)")
        assert out["pooled_categories"] == list("abcdef")
        assert {"accuracy", "exact_match", "by_category", "prompts", "prompts_without_comparisons"} <= set(out)
        assert evaluate_subset(recs, scores, n_boot=0).to_json().keys() == {
            "accuracy", "exact_match", "micro_accuracy", "micro_exact_match", "by_category", "prompts",
            "prompts_without_comparisons"}

    def test_an_interval_of_no_width_is_left_out(self):
        """12 prompts all right: every resample gives accuracy 1, so there is no interval to report, only why."""
        recs = [make_record(f"p{i}", "ab", rank={"a": 0, "b": 1}, category=["x"]) for i in range(12)]
        scores = {(r.id, x): float(x == "a") for r in recs for x in "ab"}
        res = evaluate_subset(recs, scores, n_boot=300)
        out = res.to_json()
        assert "accuracy_ci" not in out and "exact_match_ci" not in out
        assert out["ci_note"] == ("insufficient data: every bootstrap resample of the 12 prompts gives the same "
                                  "accuracy, so its 95% interval has no width (accuracy_ci left out); insufficient "
                                  "data: every bootstrap resample of the 12 prompts gives the same exact_match, so "
                                  "its 95% interval has no width (exact_match_ci left out); insufficient data: every "
                                  "bootstrap resample of the 12 prompts gives the same micro_accuracy, so its 95% "
                                  "interval has no width (micro_accuracy_ci left out); insufficient data: every "
                                  "bootstrap resample of the 12 prompts gives the same micro_exact_match, so its 95% "
                                  "interval has no width (micro_exact_match_ci left out)")
        assert overall_ci([res, res]) is None and "no width" in overall_ci_note([res, res])

    def test_overall_interval_needs_every_subset_to_have_enough_prompts(self):
        """Overall rests on the fewest prompts of any subset: one subset of 6 prompts withholds it and says why."""
        big, scores = _random_subset(0, n=60)
        small = [make_record(f"q{i}", "ab", rank={"a": 0, "b": 1}, category=["x"]) for i in range(6)]
        scores.update({(r.id, x): float(x == "a" or i % 2) for i, r in enumerate(small) for x in "ab"})
        a, b = evaluate_subset(big, scores, n_boot=200), evaluate_subset(small, scores, n_boot=200)
        assert overall_ci([a, a]) is not None and overall_ci_note([a, a]) == ""
        assert overall_ci([a, b]) is None
        assert overall_ci_note([a, b]).startswith("insufficient data: 6 prompts with a comparison, needs at least 10")
        assert overall_ci([a, evaluate_subset(big, scores, n_boot=0)]) is None
        assert overall_ci_note([a, evaluate_subset(big, scores, n_boot=0)]) == ""
