"""cheems_lib.analyses.claims: claims, their kinds and sentences, the ledger and the Claims page's multiplicity."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from cheems_lib import estimates
from cheems_lib.analyses import claim_registry, claims
from cheems_lib.analyses.claims import Claim, Ledger
from cheems_lib.estimates import Estimate, decide, ratio_estimate
from cheems_lib.publishing.claims_files import load_all
from test_claims_files import _page_shows


def _est(values, seeds=1):
    values = np.asarray(values, float).reshape(seeds, -1)
    return Estimate(values.mean(axis=1), values)


class TestClaimSentences:
    @pytest.mark.parametrize("direction, margin, verdict, words", [
        ("greater", 0.0, "supported", "Supported: A beats b. Overall of a minus b: -0.100 [-0.200, -0.050] (95% "
                                      "interval resampling prompts; training seeds: 3), above 0."),
        ("greater", 0.0, "contradicted", "Contradicted: Overall of a minus b: -0.100 [-0.200, -0.050] (95% interval "
                                         "resampling prompts; training seeds: 3), below 0, against the claim that a "
                                         "beats b."),
        ("greater", 0.0, "inconclusive", "includes 0, so these data do not tell whether a beats b."),
        ("greater", 0.1, "inconclusive", "neither above 0.1 nor below -0.1, so"),
        ("less", 0.0, "contradicted", "above 0, against the claim"),
        ("less", 0.1, "supported", "below -0.1."),
        ("equal", 0.03, "supported", "within ±0.03."),
        ("equal", 0.03, "inconclusive", "neither within ±0.03 nor wholly beyond it, so"),
    ])
    def test_one_sentence_per_verdict_from_the_claims_words(self, direction, margin, verdict, words):
        """Every verdict of a claim tested on an interval gets a sentence from its words, statistic, direction and
        margin, with the interval filled in; sentences a chapter gives itself win."""
        c = Claim("a-b", "§1", "a beats b", "finding", verdict, estimate=-0.1, ci_low=-0.2, ci_high=-0.05, seeds=3,
                  n=50, statistic="Overall of a minus b", direction=direction, margin=margin)
        assert words in c.sentence and set(claims.claim_sentences(c)) == {"supported", "contradicted",
                                                                           "inconclusive"}
        c.says = {verdict: "its own"}
        assert c.sentence == "its own"

    @pytest.mark.parametrize("verdict, answer", [("supported", "Yes."), ("contradicted", "No, the reverse."),
                                                  ("inconclusive", "These data do not tell.")])
    def test_a_question_is_answered_not_asserted(self, verdict, answer):
        c = Claim("a-b", "ours (relates to §1)", "does a beat b?", "question", verdict, estimate=0.1, ci_low=0.0,
                  ci_high=0.2, statistic="accuracy of a minus b {x}", direction="greater")
        assert c.sentence.startswith(f"Does a beat b? {answer} Accuracy of a minus b {{x}}: 0.100 [0.000, 0.200]")

    def test_no_interval_is_said_so(self):
        c = Claim("a-b", "§1", "a beats b", "finding", "inconclusive", estimate=0.1, statistic="d", direction="greater")
        assert c.sentence == "Inconclusive: D: 0.100, with no interval to decide by, so these data do not tell whether a beats b."

    def test_a_claim_tested_on_no_direction_shows_its_statistic(self):
        c = Claim("a-b", "§1", "c", "finding", "supported", estimate=0.5, ci_low=0.4, ci_high=0.6, statistic="share")
        assert claims.claim_sentences(c) == {} and c.sentence == "share: 0.500 [0.400, 0.600]"


class TestClaim:
    def test_kinds_other_than_finding_need_a_reason(self):
        """A structural, calibrated or untestable claim without its reason is refused when it is recorded (a
        registered ledger fills the reason from the registry first)."""
        with pytest.raises(ValueError, match="needs its reason"):
            Ledger("x", "test", registered=False).add(Claim("x-y", "§1", "c", "structural", "supported"), glue=False)
        Ledger("x", "test", registered=False).add(Claim("x-y", "§1", "c", "finding", "supported"), glue=False)

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


def _ledger(estimate_at=0.01):
    ledger = Ledger("preference", "simulated world (size smoke, seed 0)", registered=False)  # made-up claims
    ledger.add(Claim.test("tab4-x", _est(np.linspace(estimate_at, 0.05, 100)), "greater", paper_ref="Table 4",
                          claim="x helps", kind="finding"), glue=False)
    ledger.add(Claim("fig7-y", "§6.4", "y", "untestable", "inconclusive", reason="no pretrained tiny models"), glue=False)
    return ledger


def test_ledger_round_trip(tmp_path):
    """A chapter's saved ledger is read back by the Claims page with the ledger's source, columns first."""
    ledger = _ledger()
    path = ledger.save(tmp_path, glue=False)
    _page_shows(tmp_path, "preference", json.loads(path.read_text(encoding="utf-8"))["run"])
    rows = load_all(tmp_path, ["preference"])
    assert [r["id"] for r in rows] == ["tab4-x", "fig7-y"]
    assert all(r["source"].startswith("simulated") and r["chapter"] == "preference" for r in rows)
    frame = claims.to_frame(rows)
    assert list(frame.columns[:len(claims.CLAIM_COLUMNS)]) == claims.CLAIM_COLUMNS
    with pytest.raises(ValueError, match="twice"):
        ledger.add(Claim("fig7-y", "§6.4", "y", "finding", "supported"), glue=False)


def test_ledger_styled_shows_the_chosen_columns():
    """The chapters' claims table keeps the chosen columns in order, rounds to three decimals and has a caption."""
    ledger = Ledger("preference", "simulated world (size smoke, seed 0)", registered=False)  # made-up claims
    ledger.add(Claim.test("tab4-x", _est(np.linspace(0.01, 0.05, 100)), "greater", paper_ref="Table 4",
                          claim="x helps", kind="finding"), glue=False)
    styler = ledger.styled(["id", "verdict", "estimate"], caption="Claims of this chapter")
    assert list(styler.data.columns) == ["id", "verdict", "estimate"]
    html = styler.to_html()
    assert "Claims of this chapter" in html and f"{ledger.claims['tab4-x'].estimate:.3f}" in html


class TestInsufficientData:
    """The one rule for a statistic resting on too few units ."""

    def test_one_decision_is_insufficient_data_with_the_counts(self):
        """One prompt with one decision (interval [-0.5, -0.5]) gets insufficient data, not 'supported',
        and its sentence gives the count and the number it needs."""
        share = ratio_estimate([0], [1], n_boot=200)
        assert share.n == 1 and share.interval() == (0.0, 0.0)
        claim = Claim.test("fig15-x", share - 0.5, "less", paper_ref="x", claim="humans prefer the shorter one",
                           kind="finding", says={"supported": "as in the paper"})
        assert claim.verdict == estimates.INSUFFICIENT and claim.n == 1
        assert claim.sentence == ("Insufficient data: 1 prompt, needs at least 10 (a bootstrap over fewer gives no "
                                  "real 95% interval), so this run does not test humans prefer the shorter one.")
        assert claim.to_json()["n"] == 1

    def test_degenerate_interval_without_a_count_is_insufficient(self):
        """An estimate whose resamples all give one value is insufficient data, whether or not it knows its
        count: with a count at the minimum too, a zero-width interval is never a verdict, and the sentence
        says why."""
        flat = Estimate.single(-0.5, [-0.5] * 100)
        assert flat.n is None and decide(flat, "less") == estimates.INSUFFICIENT
        assert Claim.test("x-y", flat, "less", paper_ref="x", claim="c", kind="finding").sentence.startswith(
            "Insufficient data: every bootstrap resample gives the same value")
        counted = Estimate.single(-0.5, [-0.5] * 100, n=estimates.MIN_UNITS)
        assert decide(counted, "less") == estimates.INSUFFICIENT
        assert Claim.test("x-y", counted, "less", paper_ref="x", claim="c", kind="finding").sentence.startswith(
            "Insufficient data: 10 prompts, but every bootstrap resample gives the same value")

    def test_forced_insufficient_data(self, monkeypatch):
        """CHEEMS_FORCE_VERDICT accepts the new verdict and the sentence follows."""
        monkeypatch.setenv("CHEEMS_FORCE_VERDICT", "x-y=insufficient data")
        claim = Claim.test("x-y", Estimate.single(0.5, np.linspace(0.4, 0.6, 50), n=40), "greater", paper_ref="x",
                           claim="c", kind="finding")
        assert claim.verdict == estimates.INSUFFICIENT and claim.forced
        assert claim.sentence.startswith("Insufficient data: 40 prompts") and claim.sentence.endswith("for a test)")

    def test_old_claim_files_without_n_load(self):
        """A claims file saved before the n column still makes a frame with the documented columns."""
        frame = claims.to_frame([{"id": "x-y", "verdict": "supported", "kind": "finding"}])
        assert list(frame.columns[:len(claims.CLAIM_COLUMNS)]) == claims.CLAIM_COLUMNS and frame["n"].isna().all()


# ---- multiplicity (Holm) and the power line -----------------------------------------------------------------------------

class TestMultiplicity:
    def test_claim_test_records_p_direction_and_margin(self):
        """Claim.test keeps what the Claims page's multiplicity rule needs; too few units give no p."""
        c = Claim.test("tab4-x", _est(np.linspace(0.01, 0.05, 100)), "greater", paper_ref="§6.3", claim="x",
                       kind="finding")
        assert c.p == 0 and c.direction == "greater" and c.to_json()["p"] == 0
        thin = Claim.test("tab4-y", Estimate.single(0.1, np.linspace(0, 0.2, 100), n=3), "greater", paper_ref="§6.3",
                          claim="y", kind="finding")
        assert thin.verdict == estimates.INSUFFICIENT and math.isnan(thin.p)

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
        from cheems_lib.analyses.claims_page import holm_text

        sentence = holm_text(out)  # the Claims page's statement of the rule, with this ledger's counts
        assert "Simulated: 3 findings with a p-value, 1 finding without one not counted" in sentence
        assert sentence.endswith("1 of 2 decided verdicts becomes inconclusive.")

    def test_the_csv_carries_the_claim_text_and_the_adjusted_verdict(self):
        """tables/claims.csv names the statistic, the paper's numbers, the reason, p and the Holm columns."""
        assert {"statistic", "paper", "reason", "p"} <= set(claims.CLAIM_COLUMNS)
        assert claims.CSV_COLUMNS == claims.CLAIM_COLUMNS + ["family", "p_holm", "holm", "decides_at_n"]


def test_question_kind_goes_with_the_projects_own_paper_ref():
    """A question (the project's own, not the paper's) has a paper_ref starting "ours", and no other kind may use it;
    sweeps, questions and simulator checks are kinds of their own, beside the findings."""
    ours = "ours (relates to §6.1, Table 3)"
    Claim("tab3-x", ours, "x", "question", "supported", reason="ours")
    with pytest.raises(ValueError, match="question claim, and only one"):
        Claim("tab3-x", "§6.1, Table 3", "x", "question", "supported", reason="ours")
    with pytest.raises(ValueError, match="question claim, and only one"):
        Claim("tab3-x", ours, "x", "finding", "supported")
    assert {"robustness", "question", "arithmetic", "simulator-check"} <= set(claim_registry.KINDS)


def test_claims_csv_carries_statistic_paper_and_reason():
    """tables/claims.csv's columns include what each estimate measures, the paper's words and why a claim is not a
    finding, filled from the saved claims."""
    assert {"statistic", "paper", "reason"} <= set(claims.CLAIM_COLUMNS)
    c = Claim("x-y", "§1", "c", "structural", "supported", statistic="s", paper="p", reason="r")
    row = claims.to_frame([c])[claims.CLAIM_COLUMNS].iloc[0]
    assert (row["statistic"], row["paper"], row["reason"]) == ("s", "p", "r")
