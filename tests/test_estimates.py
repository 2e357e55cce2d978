"""cheems_lib.estimates: interval statistics, paired bootstrap replicates, the verdict rule, p-values and power."""
from __future__ import annotations

import math

import numpy as np
import pytest

from cheems_lib import estimates
from cheems_lib.estimates import Estimate, all_of, best_of, decide, ratio_estimate, subset_estimate
from cheems_lib.metrics import evaluate_subset
from conftest import make_record


def _est(values, seeds=1):
    values = np.asarray(values, float).reshape(seeds, -1)
    return Estimate(values.mean(axis=1), values)


class TestDecide:
    def test_greater(self):
        """An interval wholly above zero supports 'greater', wholly below contradicts it, else inconclusive."""
        assert decide(_est(np.linspace(0.01, 0.05, 200)), "greater") == "supported"
        assert decide(_est(np.linspace(-0.05, -0.01, 200)), "greater") == "contradicted"
        assert decide(_est(np.linspace(-0.05, 0.05, 200)), "greater") == "inconclusive"

    def test_less_mirrors_greater(self):
        """'less' is 'greater' of the negated difference."""
        for vals in (np.linspace(0.01, 0.05, 200), np.linspace(-0.05, -0.01, 200), np.linspace(-0.05, 0.05, 200)):
            assert decide(_est(vals), "less") == decide(_est(-vals), "greater")

    def test_equal_uses_the_margin(self):
        """'equal' is supported inside ±margin, contradicted wholly outside, inconclusive across the edge."""
        assert decide(_est(np.linspace(-0.01, 0.01, 200)), "equal", margin=0.02) == "supported"
        assert decide(_est(np.linspace(0.03, 0.05, 200)), "equal", margin=0.02) == "contradicted"
        assert decide(_est(np.linspace(0.01, 0.03, 200)), "equal", margin=0.02) == "inconclusive"

    def test_no_replicates_is_inconclusive(self):
        """A point estimate without replicates can never support or contradict."""
        assert decide(Estimate.single(0.5), "greater") == "inconclusive"


class TestEstimate:
    def test_paired_difference_of_identical_statistics_is_zero(self):
        """Two statistics bootstrapped with the same seed on the same prompts share resamples."""
        num, den = np.arange(1, 41) % 7, np.full(40, 6)
        strata = np.repeat(["a", "b"], 20)
        a = ratio_estimate(num, den, strata=strata, n_boot=300, seed=3)
        b = ratio_estimate(num, den, strata=strata, n_boot=300, seed=3)
        assert np.all((a - b).boot == 0)
        c = ratio_estimate(num, den, strata=strata, n_boot=300, seed=4)
        assert np.any((a - c).boot != 0)

    def test_ratio_estimate_resamples_prompts_not_decisions(self):
        """Clustered decisions: the bootstrap keeps a prompt's decisions together, so the interval is wider
        than a binomial one when prompts differ."""
        num = np.array([10, 0] * 50)  # each prompt all-or-nothing
        den = np.full(100, 10)
        est = ratio_estimate(num, den, n_boot=2000, seed=0)
        lo, hi = est.interval()
        binomial = 1.96 * math.sqrt(0.25 / 1000)
        assert est.value == 0.5
        assert (hi - lo) / 2 > 2 * binomial

    def test_metrics_and_claims_use_the_same_resamples(self):
        """subset_estimate of two score sets evaluated with the same seed is paired: identical scores, zero difference."""
        recs = [make_record(f"p{i}", "abc", rank={"a": 0, "b": 1, "c": 2}, category=(cat,))
                for i, cat in enumerate(["理解", "数学"] * 10)]
        rng = np.random.default_rng(0)
        scores = {(r.id, x): float(rng.normal()) for r in recs for x in "abc"}
        res = [{"s": evaluate_subset(recs, scores, n_boot=200, seed=5)}]
        diff = subset_estimate(res, "accuracy") - subset_estimate(res, "accuracy")
        assert np.all(diff.boot == 0) and diff.value == 0

    def test_hierarchical_interval_covers_seed_spread(self):
        """With seeds that disagree, the seed-pooled interval is wider than any one seed's."""
        rng = np.random.default_rng(0)
        per_seed = np.stack([m + rng.normal(0, 0.005, 1000) for m in (0.40, 0.50, 0.60)])
        est = Estimate(per_seed.mean(axis=1), per_seed)
        lo, hi = est.interval()
        assert est.seeds == 3 and math.isclose(est.value, per_seed.mean(), rel_tol=1e-12)
        assert hi - lo > 0.1 > max(np.quantile(r, 0.975) - np.quantile(r, 0.025) for r in per_seed)

    def test_mismatched_shapes_refuse_to_pair(self):
        """Estimates from different seeds or replicate counts cannot be subtracted."""
        with pytest.raises(ValueError, match="cannot pair"):
            _est(np.zeros(10)) - _est(np.zeros(20))


    def test_ratio_of_estimates_is_paired(self):
        """A ratio of two estimates from the same resamples divides replicate by replicate (chosen / rejected
        lengths drawn with one seed), and dividing by a number scales point and replicates."""
        num = ratio_estimate([3, 5, 8, 2], n_boot=200, seed=4)
        den = ratio_estimate([1, 5, 4, 2], n_boot=200, seed=4)
        both = ratio_estimate([3, 5, 8, 2], [1, 5, 4, 2], n_boot=200, seed=4)
        assert (num / den).value == pytest.approx(both.value)
        np.testing.assert_allclose((num / den).boot, both.boot)
        np.testing.assert_allclose((num / 2.0).boot, num.boot / 2)
        with pytest.raises(ValueError, match="cannot pair"):
            num / _est(np.zeros(10))


class TestAllOf:
    def test_every_entry_must_hold(self):
        """'every column within tolerance' is supported only if each is; one contradicted entry decides, and
        the deciding entry is the worst one."""
        base = np.linspace(-0.01, 0.01, 400)
        ok = {"a": _est(base), "b": _est(base + 0.005)}
        assert all_of(ok, "equal", margin=0.05)[:2] == ("supported", "b")
        mixed = {**ok, "c": _est(base + 0.2), "d": _est(base + 0.1)}
        assert all_of(mixed, "equal", margin=0.05)[:2] == ("contradicted", "c")
        unsure = {**ok, "e": _est(np.linspace(0, 0.1, 400))}
        assert all_of(unsure, "equal", margin=0.05)[:2] == ("inconclusive", "e")


class TestCategoryEstimate:
    def _results(self, seeds=2):
        recs = [make_record(f"p{i}", "abc", rank={"a": 0, "b": 1, "c": 2}, category=(cat,))
                for i, cat in enumerate(["数学", "代码", "理解", "安全"] * 8)]
        out = []
        for s in range(seeds):
            rng = np.random.default_rng(s)
            scores = {(r.id, x): float(rng.normal()) for r in recs for x in "abc"}
            out.append({"s": evaluate_subset(recs, scores, n_boot=100, seed=7)})
        return out

    def test_point_is_the_macro_mean_of_the_group(self):
        """A group's point estimate is the mean of its categories' accuracies, per seed."""
        res = self._results()
        est = estimates.category_estimate(res, ["数学", "代码"])
        want = [np.mean([r["s"].by_category[c]["accuracy"] for c in ("数学", "代码")]) for r in res]
        assert est.seeds == 2 and np.allclose(est.point, want)

    def test_groups_of_the_same_results_are_paired(self):
        """All categories as one group equal the subset accuracy, replicate by replicate (same resamples)."""
        res = self._results()
        every = estimates.category_estimate(res, ["数学", "代码", "理解", "安全", "不存在"])
        assert np.allclose((every - subset_estimate(res, "accuracy")).boot, 0)

    def test_a_group_with_no_prompts_is_an_error(self):
        """Asking for categories the benchmark lacks names the fix."""
        with pytest.raises(ValueError, match="fix: choose categories"):
            estimates.category_estimate(self._results(), ["创意写作"])


class TestCombining:
    def test_mean_of_pairs_seed_by_seed(self):
        """mean_of averages points and replicates elementwise, keeping the seeds apart."""
        a, b = _est(np.arange(20.0), seeds=2), _est(np.arange(20.0) * 3, seeds=2)
        m = estimates.mean_of([a, b])
        assert np.allclose(m.boot, (a.boot + b.boot) / 2) and np.allclose(m.point, (a.point + b.point) / 2)
        with pytest.raises(ValueError):
            estimates.mean_of([])

    def test_broadcast_repeats_a_one_seed_estimate(self):
        """A baseline (one run) is repeated per training seed so it pairs with a trained model."""
        base = Estimate.single(0.5, np.linspace(0.4, 0.6, 50))
        wide = base.broadcast(3)
        assert wide.seeds == 3 and np.allclose(wide.boot, base.boot[0]) and wide.value == 0.5
        assert ((_est(np.linspace(0.6, 0.8, 150), seeds=3) - wide).seeds == 3)
        with pytest.raises(ValueError, match="one-seed"):
            wide.broadcast(2)


class TestBestOf:
    def test_best_needs_every_paired_interval(self):
        """'best' is supported only when the expected entry beats every rival by paired intervals."""
        base = np.linspace(0, 1, 500)
        wobble = 0.01 * np.sin(np.arange(500))  # paired differences that vary, as real ones do
        ests = {"a": _est(base + 0.1 + wobble), "b": _est(base), "c": _est(base + 0.05 - wobble)}
        assert best_of(ests, "a")[0] == "supported"
        assert best_of(ests, "b")[0] == "contradicted"
        close = {"a": _est(base), "b": _est(base[::-1])}
        assert best_of(close, "a")[0] == "inconclusive"


class TestInsufficientData:
    """The one rule for a statistic resting on too few units."""

    def test_at_the_minimum_the_interval_decides(self):
        """n at MIN_UNITS gives the normal verdict; one less gives insufficient data."""
        values = np.array([1.0] * (estimates.MIN_UNITS - 1) + [0.0])
        enough = ratio_estimate(values, n_boot=500)
        assert enough.n == estimates.MIN_UNITS and decide(enough - 0.2, "greater") == "supported"
        fewer = ratio_estimate(values[1:], n_boot=500)
        assert decide(fewer - 0.2, "greater") == estimates.INSUFFICIENT

    def test_the_count_follows_arithmetic_and_seeds(self):
        """A paired difference, a mean and a stack of seeds keep the fewest units of their parts."""
        a, b = Estimate.single(0.5, [0.5] * 4, n=30), Estimate.single(0.1, [0.1] * 4, n=12)
        assert (a - b).n == (b - a).n == (a / b).n == estimates.mean_of([a, b]).n == 12
        assert (a - 0.5).n == 30 and Estimate.stack([a, b]).n == 12 and a.broadcast(3).n == 30
        assert (Estimate.single(0.1, [0.1] * 4) - a).n == 30

    def test_subset_and_category_estimates_count_prompts_with_comparisons(self):
        """subset_estimate's n is the prompts with a comparison of its thinnest subset."""
        recs = [make_record(f"p{i}", "ab", rank={"a": 0, "b": 1}) for i in range(12)]
        scores = {(r.id, rid): float(rid == "a") for r in recs for rid in ("a", "b")}
        res = {"open": evaluate_subset(recs, scores, n_boot=20), "human": evaluate_subset(recs[:3], scores, n_boot=20)}
        assert subset_estimate([res], "accuracy", ["open"]).n == 12
        assert subset_estimate([res], "accuracy").n == 3

    def test_best_of_and_all_of_say_insufficient_data(self):
        """A comparison on too few units makes best_of and all_of insufficient data."""
        thin = {"a": Estimate.single(0.9, np.linspace(0.8, 1, 50), n=3),
                "b": Estimate.single(0.1, np.linspace(0, 0.2, 50), n=3)}
        assert best_of(thin, "a")[0] == estimates.INSUFFICIENT
        assert all_of(thin, "greater")[0] == estimates.INSUFFICIENT


class TestPValues:
    """Bootstrap p-values and Holm's step-down."""

    @pytest.mark.parametrize("direction,margin", [("greater", 0.0), ("less", 0.0), ("greater", 0.02),
                                                  ("equal", 0.05), ("equal", 0.2)])
    def test_p_value_agrees_with_the_interval_verdict(self, direction, margin):
        """Over many replicate clouds, a verdict the interval decides has p ≤ 0.05 and an inconclusive one p > 0.05
        (up to the one replicate the percentile interpolation can straddle): the p states the same test."""
        rng = np.random.default_rng(3)
        for centre in np.linspace(-0.2, 0.2, 41):
            d = Estimate.single(centre, rng.normal(centre, 0.05, 1000), n=50)
            p, verdict = estimates.p_value(d, direction, margin=margin), decide(d, direction, margin=margin)
            if verdict in ("supported", "contradicted"):
                assert p <= 0.05, (centre, verdict, p)
            else:
                assert p >= 0.05 - 2 / 1000, (centre, verdict, p)

    def test_holm_matches_the_step_down_by_hand(self):
        """Adjusted p: sorted p_(i) × (m - i + 1), running maximum, capped at 1; NaNs are not in the family."""
        p = [0.04, 0.001, math.nan, 0.02, 0.5]
        assert estimates.holm_adjust(p)[[1, 3, 0, 4]].tolist() == pytest.approx([0.004, 0.06, 0.08, 0.5])
        assert math.isnan(estimates.holm_adjust(p)[2])


class TestPowerLine:
    def test_units_to_decide_decides_when_the_prompts_are_there(self):
        """The rule (half-width ∝ 1/sqrt(n)) holds for a mean over prompts: at the count it names, with the same
        per-prompt spread and effect, the interval excludes zero; at half that count it does not."""
        rng = np.random.default_rng(0)
        per_prompt = rng.normal(0, 1, 200)
        per_prompt += 0.05 - per_prompt.mean()  # observed effect 0.05 on 200 prompts: inconclusive
        d = ratio_estimate(per_prompt, n_boot=2000, seed=1)
        lo, hi = d.interval()
        assert decide(d, "greater") == "inconclusive"
        need = estimates.units_to_decide(d.value, lo, hi, d.n, "greater")
        assert 200 < need < 20000
        for count, verdict in ((need * 11 // 10, "supported"), (need // 2, "inconclusive")):
            more = np.resize(per_prompt, count)
            more += 0.05 - more.mean()
            assert decide(ratio_estimate(more, n_boot=2000, seed=1), "greater") == verdict, count

    def test_no_count_decides_an_effect_on_the_boundary(self):
        """An estimate on the boundary (or inside ±margin of a one-sided claim) is never decided by more prompts;
        an equivalence claim inside its margin needs both sides to fit."""
        assert estimates.units_to_decide(0.0, -0.1, 0.1, 50, "greater") is None
        assert estimates.units_to_decide(0.01, -0.1, 0.1, 50, "greater", margin=0.02) is None
        assert estimates.units_to_decide(0.0, -0.04, 0.02, 10, "equal", margin=0.01) == 160
        assert estimates.units_to_decide(0.1, 0.0, 0.2, None, "greater") is None


def test_doctests():
    """The module's examples (the verdict rule, p-values, Holm, the power rule, counted) run as documented."""
    import doctest

    assert doctest.testmod(estimates).failed == 0


class TestOneIntervalRule:
    """No interval claims more than its data: small strata pooled, zero-width intervals never decide, and the
    bootstrap's memory bounded without moving a replicate."""

    @staticmethod
    def _old_ratio(num, den, strata, n_boot, seed):
        """ratio_estimate's replicates by the old formulas: one (n_boot, members) draw per sorted stratum."""
        rng = np.random.default_rng(seed)
        top, bottom = np.zeros(n_boot), np.zeros(n_boot)
        for s in sorted(set(strata)):
            idx = np.flatnonzero(np.asarray(strata, dtype=object) == s)
            draw = rng.integers(0, idx.size, size=(n_boot, idx.size))
            top += num[idx][draw].sum(axis=1)
            bottom += den[idx][draw].sum(axis=1)
        return top / bottom

    @pytest.mark.parametrize("chunk", [None, 1, 13, 4096])
    def test_chunked_ratio_estimate_equals_the_old_formulas(self, monkeypatch, chunk):
        """On random non-integer data with strata of MIN_STRATUM or more, the replicates are bit-identical to the old
        one-draw formulas whatever metrics.BOOT_CHUNK is (row sums do not depend on how many rows are summed)."""
        from cheems_lib import metrics

        if chunk is not None:
            monkeypatch.setattr(metrics, "BOOT_CHUNK", chunk)
        rng = np.random.default_rng(0)
        for seed in range(3):
            n = int(rng.integers(30, 90))
            num, den = rng.random(n) * 3.7, rng.random(n) + 0.1
            strata = rng.choice(["x", "y", "z"], n).tolist()
            est = ratio_estimate(num, den, strata=strata, n_boot=311, seed=seed)
            assert est.note == "" and np.array_equal(est.boot[0], self._old_ratio(num, den, strata, 311, seed))
            plain = ratio_estimate(num, den, n_boot=311, seed=seed)
            assert np.array_equal(plain.boot[0], self._old_ratio(num, den, [0] * n, 311, seed))

    def test_one_unit_strata_are_pooled_and_noted(self):
        """Twelve prompts, each its own stratum: the old bootstrap could not vary (an interval of no width, then
        'supported'); now the strata are resampled as one, the estimate's note says so, and the interval is real."""
        values = np.array([1.0] * 9 + [0.0] * 3)
        est = ratio_estimate(values, strata=[f"c{i:02d}" for i in range(12)], n_boot=500, seed=1)
        lo, hi = est.interval()
        assert lo < est.value < hi
        assert est.note == ("strata pooled for the bootstrap (some had fewer than 5 prompts): "
                            + ", ".join(f"c{i:02d}" for i in range(12)))
        assert (est - 0.5).note == est.note and Estimate.stack([est, est]).note == est.note
        assert decide(est - 0.5, "greater") != estimates.INSUFFICIENT

    def test_small_strata_join_the_smallest_stratum_when_still_too_few(self):
        """Two one-prompt strata (a pool of 2) join the smallest of the others, which keep their own draws."""
        from cheems_lib import metrics

        strata = ["a"] * 8 + ["b"] * 6 + ["c", "d"]
        assert [s.labels for s in metrics.stratify(strata)] == [("a",), ("b", "c", "d")]
        est = ratio_estimate(np.arange(16.0), strata=strata, n_boot=50)
        assert est.note.endswith(": b, c, d")

    def test_zero_width_interval_is_never_a_verdict(self):
        """decide() on an interval of no width gives insufficient data even with n >= MIN_UNITS (it was 'supported'
        for the shipped LLMZoo aspects' [0.741, 0.741] on 70 prompts); its p-value is NaN, its sentence says why."""
        flat = Estimate.single(0.7407, [0.7407] * 1000, n=70)
        for direction in ("greater", "less", "equal"):
            assert decide(flat, direction, margin=0.1) == estimates.INSUFFICIENT
        assert math.isnan(estimates.p_value(flat, "greater"))
        assert estimates.insufficient_text(70, "prompt") == (
            "Insufficient data: 70 prompts, but every bootstrap resample gives the same value (the 95% interval has "
            "no width).")
        every = ratio_estimate(np.ones(70), np.ones(70), n_boot=200)  # every prompt conflicts
        assert every.n == 70 and decide(every - 0.2593, "greater") == estimates.INSUFFICIENT
        assert best_of({"a": flat, "b": Estimate.single(0.1, [0.1] * 1000, n=70)}, "a")[0] == estimates.INSUFFICIENT

    def test_benchmark_estimates_note_the_pooled_categories(self):
        """subset_estimate and category_estimate name the categories a subset's bootstrap pooled; a category group's
        replicate averages the categories it drew (no NaN from a pooled category a resample missed)."""
        recs = [make_record(f"p{i}", "ab", rank={"a": 0, "b": 1}, category=["x"]) for i in range(20)]
        recs += [make_record(f"q{i}", "ab", rank={"a": 0, "b": 1}, category=[c]) for i, c in enumerate("yz")]
        scores = {(r.id, x): float((x == "a") == (i % 3 > 0)) for i, r in enumerate(recs) for x in "ab"}
        res = [{"s": evaluate_subset(recs, scores, n_boot=300, seed=1)}]
        assert res[0]["s"].pooled_categories == ("x", "y", "z")
        assert subset_estimate(res, "accuracy").note == ("categories pooled for the bootstrap (fewer than 5 prompts): "
                                                         "x, y, z (s)")
        group = estimates.category_estimate(res, ["x", "y"])
        assert group.note.endswith(": x, y") and np.isfinite(group.boot).all()
        assert estimates.category_estimate(res, ["y"]).n == 1


def test_an_interval_of_no_width_up_to_rounding_is_insufficient():
    """Replicates equal but for the last bits (the same numbers summed in another order) are no interval either."""
    diff = Estimate.single(0.1, np.linspace(.55, .65, 100) - np.linspace(.45, .55, 100), n=100)
    lo, hi = diff.interval()
    assert lo != hi and hi - lo < 1e-15
    assert decide(diff, "greater") == estimates.INSUFFICIENT
