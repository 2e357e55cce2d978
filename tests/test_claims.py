"""cheems_lib.analyses.claims: the one rule every claim is tested with."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from cheems_lib.analyses import claims
from cheems_lib.analyses.claims import Claim, Estimate, Ledger, all_of, best_of, decide, ratio_estimate, subset_estimate
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
        est = claims.category_estimate(res, ["数学", "代码"])
        want = [np.mean([r["s"].by_category[c]["accuracy"] for c in ("数学", "代码")]) for r in res]
        assert est.seeds == 2 and np.allclose(est.point, want)

    def test_groups_of_the_same_results_are_paired(self):
        """All categories as one group equal the subset accuracy, replicate by replicate (same resamples)."""
        res = self._results()
        every = claims.category_estimate(res, ["数学", "代码", "理解", "安全", "不存在"])
        assert np.allclose((every - subset_estimate(res, "accuracy")).boot, 0)

    def test_a_group_with_no_prompts_is_an_error(self):
        """Asking for categories the benchmark lacks names the fix."""
        with pytest.raises(ValueError, match="fix: choose categories"):
            claims.category_estimate(self._results(), ["创意写作"])


class TestCombining:
    def test_mean_of_pairs_seed_by_seed(self):
        """mean_of averages points and replicates elementwise, keeping the seeds apart."""
        a, b = _est(np.arange(20.0), seeds=2), _est(np.arange(20.0) * 3, seeds=2)
        m = claims.mean_of([a, b])
        assert np.allclose(m.boot, (a.boot + b.boot) / 2) and np.allclose(m.point, (a.point + b.point) / 2)
        with pytest.raises(ValueError):
            claims.mean_of([])

    def test_broadcast_repeats_a_one_seed_estimate(self):
        """A baseline (one run) is repeated per training seed so it pairs with a trained model."""
        base = Estimate.single(0.5, np.linspace(0.4, 0.6, 50))
        wide = base.broadcast(3)
        assert wide.seeds == 3 and np.allclose(wide.boot, base.boot[0]) and wide.value == 0.5
        assert ((_est(np.linspace(0.6, 0.8, 150), seeds=3) - wide).seeds == 3)
        with pytest.raises(ValueError, match="one-seed"):
            wide.broadcast(2)

    def test_comparison_says_one_sentence_per_verdict(self):
        """The templates cover every verdict and fill in the estimate."""
        says = claims.comparison_says("A", "B")
        assert set(says) | {claims.INSUFFICIENT} == set(claims.VERDICTS)  # its sentence is the library's
        c = Claim("a-b", "§1", "c", "finding", "contradicted", estimate=-0.1, ci_low=-0.2, ci_high=-0.05, seeds=3, says=says)
        assert c.sentence.startswith("A scores lower Overall than B") and "-0.100 [-0.200, -0.050]" in c.sentence


class TestBestOf:
    def test_best_needs_every_paired_interval(self):
        """'best' is supported only when the expected entry beats every rival by paired intervals."""
        base = np.linspace(0, 1, 500)
        ests = {"a": _est(base + 0.1), "b": _est(base), "c": _est(base + 0.05)}
        assert best_of(ests, "a")[0] == "supported"
        assert best_of(ests, "b")[0] == "contradicted"
        close = {"a": _est(base), "b": _est(base[::-1])}
        assert best_of(close, "a")[0] == "inconclusive"


class TestClaim:
    def test_kinds_other_than_finding_need_a_reason(self):
        """A structural, calibrated or untestable claim without its reason is refused."""
        with pytest.raises(ValueError, match="needs its reason"):
            Claim("x-y", "§1", "c", "structural", "supported")
        Claim("x-y", "§1", "c", "finding", "supported")

    def test_ids_are_lower_case_and_hyphenated(self):
        """Stable ids: lower-case words joined by hyphens."""
        with pytest.raises(ValueError, match="lower-case"):
            Claim("Tab4_best", "§1", "c", "finding", "supported")

    def test_sentence_follows_the_verdict(self):
        """The glued sentence is the template of the computed verdict, filled with the estimate."""
        diff = _est(np.linspace(0.01, 0.05, 200))
        c = Claim.test("a-b", diff, "greater", paper_ref="§1", claim="c", kind="finding",
                       says={"supported": "up by {estimate:.2f}", "contradicted": "down", "inconclusive": "unclear"})
        assert c.sentence == "up by 0.03"

    def test_forced_verdict_changes_sentence_and_is_marked(self, monkeypatch):
        """CHEEMS_FORCE_VERDICT flips the verdict (for prose tests) and the claim says it was forced."""
        monkeypatch.setenv("CHEEMS_FORCE_VERDICT", "a-b=contradicted")
        c = Claim.test("a-b", _est(np.linspace(0.01, 0.05, 200)), "greater", paper_ref="§1", claim="c",
                       kind="finding", says={"supported": "up", "contradicted": "down"})
        assert c.verdict == "contradicted" and c.forced and c.sentence.startswith("down")
        monkeypatch.setenv("CHEEMS_FORCE_VERDICT", "a-b=maybe")
        with pytest.raises(ValueError, match="CHEEMS_FORCE_VERDICT"):
            claims.forced_verdicts()


def _page_shows(root, chapter, run):
    """A minimal executed notebook ``book/<chapter>.ipynb`` whose run glued ``run`` (as myst_nb's glue writes it)."""
    out = {"output_type": "display_data", "data": {"application/papermill.record/text/plain": repr(run)},
           "metadata": {"scrapbook": {"name": f"claims-run-{chapter}", "mime_prefix": "application/papermill.record/"}}}
    nb = {"cells": [{"cell_type": "code", "source": "ledger.save()", "outputs": [out], "metadata": {}}], "metadata": {}}
    (root / "book" / f"{chapter}.ipynb").write_text(json.dumps(nb), encoding="utf-8")


def _ledger(estimate_at=0.01):
    ledger = Ledger("preference", "simulated world (size smoke, seed 0)")
    ledger.add(Claim.test("tab4-x", _est(np.linspace(estimate_at, 0.05, 100)), "greater", paper_ref="Table 4",
                          claim="x helps", kind="finding"), glue=False)
    ledger.add(Claim("fig7-y", "§6.4", "y", "untestable", "inconclusive", reason="no pretrained tiny models"), glue=False)
    return ledger


def test_ledger_round_trip(tmp_path):
    """A chapter's saved ledger is read back by the Claims page with the ledger's source, columns first."""
    ledger = _ledger()
    path = ledger.save(tmp_path, glue=False)
    _page_shows(tmp_path, "preference", json.loads(path.read_text(encoding="utf-8"))["run"])
    rows = claims.load_all(tmp_path, ["preference"])
    assert [r["id"] for r in rows] == ["tab4-x", "fig7-y"]
    assert all(r["source"].startswith("simulated") and r["chapter"] == "preference" for r in rows)
    frame = claims.to_frame(rows)
    assert list(frame.columns[:len(claims.CLAIM_COLUMNS)]) == claims.CLAIM_COLUMNS
    with pytest.raises(ValueError, match="twice"):
        ledger.add(Claim("fig7-y", "§6.4", "y", "finding", "supported"), glue=False)


def test_a_claims_file_of_another_run_than_the_page_is_not_used(tmp_path):
    """The file says which run wrote it; when that is not the run the page records (another run overwrote
    it, the page was never built, or the file was edited) it is named stale and its claims are left out;
    the Claims page's cache input changes with the file's bytes."""
    shown = json.loads(_ledger().save(tmp_path, glue=False).read_text(encoding="utf-8"))["run"]
    _page_shows(tmp_path, "preference", shown)
    before = claims.inputs_digest(tmp_path)
    other = _ledger(0.02).save(tmp_path, glue=False)  # e.g. a plain papermill run with other parameters
    assert json.loads(other.read_text(encoding="utf-8"))["run"] != shown
    assert claims.inputs_digest(tmp_path) != before
    rows, stale = claims.load_shown(claims.claims_dir(tmp_path), tmp_path / "book", ["preference"])
    assert rows == [] and "not written by the run that book/preference.ipynb shows" in stale["preference"]
    assert "cheems book --chapter preference --force" in stale["preference"]
    (tmp_path / "book" / "preference.ipynb").unlink()
    assert claims.load_shown(claims.claims_dir(tmp_path), tmp_path / "book", ["preference"])[1].keys() == {"preference"}
    body = json.loads(other.read_text(encoding="utf-8"))
    _page_shows(tmp_path, "preference", body["run"])
    body["claims"][0]["verdict"] = "contradicted"  # edited by hand: its run no longer matches its content
    other.write_text(json.dumps(body), encoding="utf-8")
    assert claims.load_all(tmp_path, ["preference"]) == []


def test_ledger_styled_shows_the_chosen_columns():
    """The chapters' claims table keeps the chosen columns in order, rounds to three decimals and has a caption."""
    ledger = Ledger("preference", "simulated world (size smoke, seed 0)")
    ledger.add(Claim.test("tab4-x", _est(np.linspace(0.01, 0.05, 100)), "greater", paper_ref="Table 4",
                          claim="x helps", kind="finding"), glue=False)
    styler = ledger.styled(["id", "verdict", "estimate"], caption="Claims of this chapter")
    assert list(styler.data.columns) == ["id", "verdict", "estimate"]
    html = styler.to_html()
    assert "Claims of this chapter" in html and f"{ledger.claims['tab4-x'].estimate:.3f}" in html


class TestInsufficientData:
    """The one rule for a statistic resting on too few units (issue 25, item 7)."""

    def test_one_decision_is_insufficient_data_with_the_counts(self):
        """One prompt with one decision (interval [-0.5, -0.5]) gets insufficient data, not 'supported',
        and its sentence gives the count and the number it needs."""
        share = ratio_estimate([0], [1], n_boot=200)
        assert share.n == 1 and share.interval() == (0.0, 0.0)
        claim = Claim.test("fig15-x", share - 0.5, "less", paper_ref="x", claim="humans prefer the shorter one",
                           kind="finding", says={"supported": "as in the paper"})
        assert claim.verdict == claims.INSUFFICIENT and claim.n == 1
        assert claim.sentence == ("Insufficient data: 1 prompt, needs at least 10 (a bootstrap over fewer gives no "
                                  "real 95% interval), so this run does not test humans prefer the shorter one.")
        assert claim.to_json()["n"] == 1

    def test_at_the_minimum_the_interval_decides(self):
        """n at MIN_UNITS gives the normal verdict; one less gives insufficient data."""
        values = np.array([1.0] * (claims.MIN_UNITS - 1) + [0.0])
        enough = ratio_estimate(values, n_boot=500)
        assert enough.n == claims.MIN_UNITS and decide(enough - 0.2, "greater") == "supported"
        fewer = ratio_estimate(values[1:], n_boot=500)
        assert decide(fewer - 0.2, "greater") == claims.INSUFFICIENT

    def test_degenerate_interval_without_a_count_is_insufficient(self):
        """An estimate that does not know its count, whose resamples all give one value, is insufficient data;
        with a known count at the minimum, a zero-width interval is the data's own and decides."""
        flat = Estimate.single(-0.5, [-0.5] * 100)
        assert flat.n is None and decide(flat, "less") == claims.INSUFFICIENT
        assert Claim.test("x-y", flat, "less", paper_ref="x", claim="c", kind="finding").sentence.startswith(
            "Insufficient data: every bootstrap resample gives the same value")
        assert decide(Estimate.single(-0.5, [-0.5] * 100, n=claims.MIN_UNITS), "less") == "supported"

    def test_the_count_follows_arithmetic_and_seeds(self):
        """A paired difference, a mean and a stack of seeds keep the fewest units of their parts."""
        a, b = Estimate.single(0.5, [0.5] * 4, n=30), Estimate.single(0.1, [0.1] * 4, n=12)
        assert (a - b).n == (b - a).n == (a / b).n == claims.mean_of([a, b]).n == 12
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
        assert best_of(thin, "a")[0] == claims.INSUFFICIENT
        assert all_of(thin, "greater")[0] == claims.INSUFFICIENT

    def test_forced_insufficient_data(self, monkeypatch):
        """CHEEMS_FORCE_VERDICT accepts the new verdict and the sentence follows."""
        monkeypatch.setenv("CHEEMS_FORCE_VERDICT", "x-y=insufficient data")
        claim = Claim.test("x-y", Estimate.single(0.5, np.linspace(0.4, 0.6, 50), n=40), "greater", paper_ref="x",
                           claim="c", kind="finding")
        assert claim.verdict == claims.INSUFFICIENT and claim.forced
        assert claim.sentence.startswith("Insufficient data: 40 prompts") and claim.sentence.endswith("for a test)")

    def test_old_claim_files_without_n_load(self):
        """A claims file saved before the n column still makes a frame with the documented columns."""
        frame = claims.to_frame([{"id": "x-y", "verdict": "supported", "kind": "finding"}])
        assert list(frame.columns[:len(claims.CLAIM_COLUMNS)]) == claims.CLAIM_COLUMNS and frame["n"].isna().all()


# ---- multiplicity (Holm) and the power line (issue 26, item 4) -----------------------------------------------

class TestMultiplicity:
    @pytest.mark.parametrize("direction,margin", [("greater", 0.0), ("less", 0.0), ("greater", 0.02),
                                                  ("equal", 0.05), ("equal", 0.2)])
    def test_p_value_agrees_with_the_interval_verdict(self, direction, margin):
        """Over many replicate clouds, a verdict the interval decides has p ≤ 0.05 and an inconclusive one p > 0.05
        (up to the one replicate the percentile interpolation can straddle): the p states the same test."""
        rng = np.random.default_rng(3)
        for centre in np.linspace(-0.2, 0.2, 41):
            d = Estimate.single(centre, rng.normal(centre, 0.05, 1000), n=50)
            p, verdict = claims.p_value(d, direction, margin=margin), decide(d, direction, margin=margin)
            if verdict in ("supported", "contradicted"):
                assert p <= 0.05, (centre, verdict, p)
            else:
                assert p >= 0.05 - 2 / 1000, (centre, verdict, p)

    def test_claim_test_records_p_direction_and_margin(self):
        """Claim.test keeps what the Claims page's multiplicity rule needs; too few units give no p."""
        c = Claim.test("tab4-x", _est(np.linspace(0.01, 0.05, 100)), "greater", paper_ref="§6.3", claim="x",
                       kind="finding")
        assert c.p == 0 and c.direction == "greater" and c.to_json()["p"] == 0
        thin = Claim.test("tab4-y", Estimate.single(0.1, np.linspace(0, 0.2, 100), n=3), "greater", paper_ref="§6.3",
                          claim="y", kind="finding")
        assert thin.verdict == claims.INSUFFICIENT and math.isnan(thin.p)

    def test_holm_matches_the_step_down_by_hand(self):
        """Adjusted p: sorted p_(i) × (m - i + 1), running maximum, capped at 1; NaNs are not in the family."""
        p = [0.04, 0.001, math.nan, 0.02, 0.5]
        assert claims.holm_adjust(p)[[1, 3, 0, 4]].tolist() == pytest.approx([0.004, 0.06, 0.08, 0.5])
        assert math.isnan(claims.holm_adjust(p)[2])

    def test_multiplicity_withholds_decisions_only_in_the_family(self):
        """Only findings with a p are adjusted; a decided verdict whose adjusted p exceeds 0.05 becomes
        inconclusive, nothing becomes decided, other kinds keep an empty holm; the sentence counts the change."""
        import pandas as pd

        frame = pd.DataFrame({"id": list("abcde"), "kind": ["finding"] * 3 + ["calibrated", "finding"],
                              "verdict": ["supported", "contradicted", "inconclusive", "supported", "inconclusive"],
                              "p": [0.001, 0.04, 0.3, 0.001, math.nan], "estimate": [0.1, -0.1, 0.01, 0.1, 0.0],
                              "ci_low": [0.05, -0.2, -0.01, 0.05, math.nan], "ci_high": [0.15, -0.01, 0.03, 0.15, math.nan],
                              "n": pd.array([40, 40, 100, 40, None], dtype="Int64")})
        out = claims.multiplicity(frame)
        assert out["holm"].tolist() == ["supported", "inconclusive", "inconclusive", "", ""]
        assert out["p_holm"].tolist()[:3] == pytest.approx([0.003, 0.08, 0.3]) and out["p_holm"][3:].isna().all()
        assert out["decides_at_n"].tolist()[:2] == [pd.NA, pd.NA] and out["decides_at_n"][2] == 400
        sentence = claims.holm_rule(out)
        assert "over the 3 claims of kind finding" in sentence and "1 claim of kind finding without a p-value" in sentence
        assert sentence.endswith("1 of the 2 decided verdicts becomes inconclusive.")

    def test_the_csv_carries_the_claim_text_and_the_adjusted_verdict(self):
        """tables/claims.csv names the statistic, the paper's numbers, the reason, p and the Holm columns."""
        assert {"statistic", "paper", "reason", "p"} <= set(claims.CLAIM_COLUMNS)
        assert claims.CSV_COLUMNS == claims.CLAIM_COLUMNS + ["p_holm", "holm", "decides_at_n"]


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
        need = claims.units_to_decide(d.value, lo, hi, d.n, "greater")
        assert 200 < need < 20000
        for count, verdict in ((need * 11 // 10, "supported"), (need // 2, "inconclusive")):
            more = np.resize(per_prompt, count)
            more += 0.05 - more.mean()
            assert decide(ratio_estimate(more, n_boot=2000, seed=1), "greater") == verdict, count

    def test_no_count_decides_an_effect_on_the_boundary(self):
        """An estimate on the boundary (or inside ±margin of a one-sided claim) is never decided by more prompts;
        an equivalence claim inside its margin needs both sides to fit."""
        assert claims.units_to_decide(0.0, -0.1, 0.1, 50, "greater") is None
        assert claims.units_to_decide(0.01, -0.1, 0.1, 50, "greater", margin=0.02) is None
        assert claims.units_to_decide(0.0, -0.04, 0.02, 10, "equal", margin=0.01) == 160
        assert claims.units_to_decide(0.1, 0.0, 0.2, None, "greater") is None


def test_question_kind_goes_with_the_projects_own_paper_ref():
    """A question (the project's own, not the paper's) has paper_ref OURS, and no other kind may use it; sweeps and
    questions are kinds of their own, beside the findings."""
    Claim("tab3-x", claims.OURS, "x", "question", "supported", reason="ours")
    with pytest.raises(ValueError, match="question claim, and only one"):
        Claim("tab3-x", "§6.1, Table 3", "x", "question", "supported", reason="ours")
    with pytest.raises(ValueError, match="question claim, and only one"):
        Claim("tab3-x", claims.OURS, "x", "finding", "supported")
    assert {"robustness", "question", "arithmetic"} <= set(claims.KINDS)


def test_claims_csv_carries_statistic_paper_and_reason():
    """tables/claims.csv's columns include what each estimate measures, the paper's words and why a claim is not a
    finding (issue 26), filled from the saved claims."""
    assert {"statistic", "paper", "reason"} <= set(claims.CLAIM_COLUMNS)
    c = Claim("x-y", "§1", "c", "structural", "supported", statistic="s", paper="p", reason="r")
    row = claims.to_frame([c])[claims.CLAIM_COLUMNS].iloc[0]
    assert (row["statistic"], row["paper"], row["reason"]) == ("s", "p", "r")
