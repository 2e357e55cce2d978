"""Two human scorings of the same answers (Table 5's analogue): kappa, rescoring, the shift, the claims and tables."""
from __future__ import annotations

import itertools
import json
import lzma
import math

import numpy as np
import pytest

from cheems_lib import estimates
from cheems_lib.analyses import claims, human_agreement, human_length_preference
from cheems_lib.world.best_of_n import prompt_resamples

from conftest import ROOT
from human_scores import _scored, HUMAN_FILE, no_glue  # noqa: F401 (a fixture)


def _kappa_literal(first: list[int], second: list[int], k: int = 4) -> float:
    """Quadratic-weighted kappa from the pairs of scores, by the textbook double sum (Cohen 1968), one item at a time."""
    n = len(first)
    observed = sum((a - b) ** 2 for a, b in zip(first, second)) / n
    expected = sum((a - b) ** 2 for a in first for b in second) / n ** 2
    return 1 - observed / expected


class TestWeightedKappa:
    def test_hand_example(self):
        """Four answers scored (0, 0), (1, 1), (2, 3), (3, 2): observed weighted disagreement (1/9 + 1/9) / 4 = 1/18;
        both margins uniform, so expected = (1/16) * sum over the 4x4 cells of (i - j)^2 / 9 = 40 / 144 = 5/18;
        kappa = 1 - (1/18) / (5/18) = 0.8."""
        assert human_agreement.weighted_kappa([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]]) == pytest.approx(0.8)

    def test_matches_the_literal_double_sum(self):
        """On random scorings, the table form equals the item-by-item double sum (the same formula, written out)."""
        rng = np.random.default_rng(0)
        for _ in range(20):
            first, second = rng.integers(0, 4, 30).tolist(), rng.integers(0, 4, 30).tolist()
            table = np.zeros((4, 4))
            np.add.at(table, (first, second), 1)
            assert human_agreement.weighted_kappa(table) == pytest.approx(_kappa_literal(first, second))

    def test_perfect_independent_and_degenerate(self):
        """Perfect agreement is 1, a table equal to its margins' product is 0, one score everywhere is NaN."""
        assert human_agreement.weighted_kappa(np.diag([3, 1, 4, 2])) == pytest.approx(1.0)
        assert human_agreement.weighted_kappa(np.outer([1, 2, 3, 4], [4, 3, 2, 1])) == pytest.approx(0.0)
        assert math.isnan(human_agreement.weighted_kappa([[5, 0, 0, 0], [0] * 4, [0] * 4, [0] * 4]))


class TestRescoring:
    def test_counts_by_hand(self):
        """Prompt p: first a 3, b 1, c 1; second a 2, b 2, c 0. Pairs: a-b strict then tied, a-c strict both alike,
        b-c tied then strict: 3 pairs, 1 strict in both, 0 reversed, 2 tie changes; with ties Algorithm 1 cannot
        reproduce both (a tie and a strict call on one pair), without ties the calls a>b, a>c, b>c agree.
        Prompt q: a 3, b 0 then a 0, b 3: one pair, reversed, a conflict either way. Prompt r has one twice-scored
        answer: left out."""
        p = _scored("p", {"a": 1, "b": 2, "c": 3}, {"a": 3, "b": 1, "c": 1}, second={"a": 2, "b": 2, "c": 0})
        q = _scored("q", {"a": 1, "b": 2}, {"a": 3, "b": 0}, second={"a": 0, "b": 3})
        r = _scored("r", {"a": 1, "b": 2}, {"a": 3, "b": 0}, second={"a": 1})
        got = human_agreement.rescoring([p, q, r])
        assert got.pairs.tolist() == [3, 1] and got.strict.tolist() == [1, 1] and got.reversed.tolist() == [0, 1]
        assert got.tie_changed.tolist() == [2, 0]
        assert got.conflicted.tolist() == [1, 1] and got.strict_conflicted.tolist() == [0, 1]
        assert got.table[0][3, 2] == 1 and got.table[0][1, 2] == 1 and got.table[0][1, 0] == 1
        assert got.exact(n_boot=0).value == 0.0  # no answer got the same score twice

    def test_kappa_estimate_is_the_pooled_kappa_and_resamples_prompts(self):
        """The point is the kappa of the summed table; each replicate is the kappa of the table of its resampled prompts."""
        rng = np.random.default_rng(2)
        recs = [_scored(f"p{i}", dict.fromkeys("abcde", 1), dict(zip("abcde", rng.integers(0, 4, 5).tolist())),
                        second=dict(zip("abcde", rng.integers(0, 4, 5).tolist()))) for i in range(12)]
        got = human_agreement.rescoring(recs)
        est = got.kappa(n_boot=5, seed=3)
        assert est.value == pytest.approx(human_agreement.weighted_kappa(got.table.sum(axis=0))) and est.n == 12
        counts = prompt_resamples(12, 5, seed=3, stream="weighted kappa")
        assert est.boot[0, 2] == pytest.approx(human_agreement.weighted_kappa(np.tensordot(counts[2], got.table, axes=1)))

    def test_no_second_scores_gives_nothing(self):
        """Records without second_scores make an empty rescoring (the chapter then skips the section)."""
        assert len(human_agreement.rescoring([_scored("p", {"a": 1, "b": 2}, {"a": 1, "b": 0})]).table) == 0


@pytest.mark.skipif(not HUMAN_FILE.exists(), reason="data/real/writingpref is not in this checkout")
def test_shipped_file_rescoring_matches_a_json_count():
    """On the shipped file, the answers scored twice and the pairs both scorings order strictly and reversed, counted
    from the JSON alone, equal what rescoring finds."""
    from cheems_lib.records import read_records

    raw = [json.loads(line) for line in lzma.open(HUMAN_FILE, "rt", encoding="utf-8")]
    twice = reversed_pairs = 0
    for r in raw:
        both = [m for m in r["second_scores"] if m in r["human_scores"]]
        twice += len(both)
        for a, b in itertools.combinations(both, 2):
            d1 = r["human_scores"][a] - r["human_scores"][b]
            d2 = r["second_scores"][a] - r["second_scores"][b]
            reversed_pairs += d1 * d2 < 0
    got = human_agreement.rescoring(read_records(HUMAN_FILE))
    assert got.table.sum() == twice and got.reversed.sum() == reversed_pairs and len(got.table) == len(raw)


class TestShift:
    def test_by_hand(self):
        """Prompt p: (3, 2), (1, 2), (1, 0) -> shifts -1, +1, -1; prompt q: (3, 0), (0, 3) -> -3, +3. Mean over the five
        answers: (-1 + 1 - 1 - 3 + 3) / 5 = -0.2; one answer higher and one lower in each prompt."""
        p = _scored("p", {"a": 1, "b": 2, "c": 3}, {"a": 3, "b": 1, "c": 1}, second={"a": 2, "b": 2, "c": 0})
        q = _scored("q", {"a": 1, "b": 2}, {"a": 3, "b": 0}, second={"a": 0, "b": 3})
        got = human_agreement.rescoring([p, q])
        est = got.shift(n_boot=20, seed=1)
        assert est.value == pytest.approx(-0.2) and est.n == 2 and got.moves == (2, 3)
        values = human_agreement.agreement_values(got, est, got.kappa(n_boot=20), seed=1)
        assert (values["n_second_higher"], values["n_second_lower"]) == (2, 3)
        assert values["score_shift"].startswith("-0.200 [")


class TestClaims:
    def test_missing_file_makes_every_claim_untestable(self, no_glue):
        """Without the human file each claim is untestable and says which file it needs."""
        ledger = claims.Ledger("human_labels", "test")
        why = "needs the human scores, x.jsonl, which does not exist"
        human_length_preference.add_length_claims(ledger, None, missing=why)
        human_agreement.add_agreement_claims(ledger, None, missing=why)
        assert len(ledger.claims) == 6
        assert all(c.kind == "untestable" and c.reason == why for c in ledger.claims.values())

    def test_paper_numbers_come_from_data_paper(self):
        """Table 1's human-annotated lengths and Table 5's human ratios are read from the CSVs, not typed."""
        import csv

        rows = {r["statistic"]: r for r in csv.DictReader(open(ROOT / "data/paper/table1_statistics.csv", encoding="utf-8"))}
        t1 = human_length_preference.table1_lengths()
        assert t1.loc["cheemsbench_open_prompt", "chosen"] == float(rows["avg_chars_chosen"]["cheemsbench_open_prompt"])
        t5 = {r["subset"]: float(r["conflict_ratio"]) for r in csv.DictReader(
            open(ROOT / "data/paper/table5_conflict_ratio.csv", encoding="utf-8")) if r["annotator"] == "human"}
        assert human_agreement.table5_human() == t5


class TestConflictComparison:
    def test_strict_calls_are_compared_with_table5_and_ties_are_not(self, no_glue):
        """Forty prompts whose second scoring ties a pair the first orders (a tie change, no reversal), but for two
        whose second scoring reverses it: with ties every prompt conflicts, with strict calls only the two do. The
        claim compared with Table 5 uses the strict share (here 0.05, below Table 5), and the share with ties is named
        not comparable."""
        recs = [_scored(f"p{i}", {"a": 1, "b": 2}, {"a": 3, "b": 1},
                        second={"a": 1, "b": 3} if i % 20 == 0 else {"a": 2, "b": 2}) for i in range(40)]
        got = human_agreement.rescoring(recs)
        reversed_at = [float(i % 20 == 0) for i in range(40)]
        assert got.conflicted.tolist() == [1.0] * 40 and got.strict_conflicted.tolist() == reversed_at
        ledger = claims.Ledger("human_labels", "test")
        found = human_agreement.add_agreement_claims(ledger, got, n_boot=50)
        claim = ledger.claims["human-rescore-conflicts"]
        assert found["human-rescore-conflicts"].value == 0.05 and claim.verdict == "contradicted"
        assert claim.estimate == pytest.approx(0.05 - max(human_agreement.table5_human().values()))
        assert "strict pairwise calls (ties left out)" in claim.statistic and "by construction" in claim.reason
        shares = human_agreement.agreement_shares(got, found, n_boot=50)
        assert shares[human_agreement.CONFLICTS_TIES].value == 1.0 and shares[human_agreement.CONFLICTS_STRICT].value == 0.05
        assert "not comparable with Table 5" in human_agreement.CONFLICTS_TIES
        assert "independent" not in ledger.claims["human-rescore-kappa"].claim
        assert "another annotator" in ledger.claims["human-rescore-kappa"].claim


class TestTables:
    def test_length_and_agreement_tables(self):
        """The band table has one row per band of both kinds; the gap table puts ours first and Table 1's three
        human-annotated sets below, each with the paper's chosen minus rejected; the agreement table ends with Table 5's
        two human ratios."""
        recs = [_scored(f"p{i}", {"a": 100, "b": 300, "c": 3000}, {"a": 0, "b": 1, "c": 3},
                        second={"a": 1, "b": 1, "c": 2}) for i in range(12)]
        bands = human_length_preference.length_bands(recs, n_boot=50)
        table, gap = human_length_preference.length_tables(recs, bands, n_boot=50)
        assert len(table) == len(human_length_preference.DIFFERENCE_BANDS) - 1 + len(human_length_preference.RATIO_BANDS) - 1
        assert table["strict pairs"].sum() == 2 * 3 * 12 and list(gap["set"])[1:] == [
            f"paper, Table 1: {name}" for name in human_length_preference.TABLE1_HUMAN]
        rescored = human_agreement.rescoring(recs)
        found = {"human-rescore-reversed": estimates.ratio_estimate(rescored.reversed, rescored.strict, n_boot=50),
                 "human-rescore-conflicts": estimates.ratio_estimate(rescored.strict_conflicted, n_boot=50)}
        shares = human_agreement.agreement_shares(rescored, found, n_boot=50)
        agreement = human_agreement.agreement_table(shares, rescored.kappa(n_boot=50), rescored.shift(n_boot=50))
        assert list(agreement["paper"])[-2:] == [f"{v:.4f}" for v in human_agreement.table5_human().values()]
        assert list(agreement["statistic"])[:2] == ["weighted kappa (quadratic)",
                                                    "mean score shift, second minus first (score points)"]
        assert agreement.set_index("statistic").loc[human_agreement.CONFLICTS_STRICT, "over"] == "prompts"
        assert human_agreement.agreement_values(rescored)["n_twice"] == 36


class TestCompare:
    def _data(self, recs):
        from cheems_lib.analyses.human_labels import HumanData

        return HumanData("h.jsonl", recs, [], [], None, [], "")

    def test_what_the_chapter_shows(self, no_glue):
        """Twelve prompts scored twice: compare adds the three claims, and its shares, shift, prose values and table
        are those of the functions it combines."""
        recs = [_scored(f"p{i}", {"a": 100, "b": 300, "c": 3000}, {"a": 0, "b": 1, "c": 3},
                        second={"a": 1, "b": 1 + i % 2, "c": 2}) for i in range(12)]
        ledger = claims.Ledger("human_labels", "test")
        got = human_agreement.compare(self._data(recs), ledger, n_boot=50, seed=1)
        assert got.twice and set(got.found) <= set(ledger.claims) and len(ledger.claims) == 3
        rescored = human_agreement.rescoring(recs)
        assert got.shift.value == rescored.shift(n_boot=50, seed=1).value
        shares = human_agreement.agreement_shares(rescored, got.found, n_boot=50, seed=1)
        assert {k: v.value for k, v in got.shares.items()} == {k: v.value for k, v in shares.items()}
        values = got.values(seed=1)
        assert values["n_twice"] == 36 and values["conflicts_strict"] == human_agreement.CONFLICTS_STRICT
        assert list(got.table(seed=1)["statistic"])[:2] == ["weighted kappa (quadratic)",
                                                             "mean score shift, second minus first (score points)"]

    def test_without_second_scores_or_file(self, no_glue):
        """No answer scored twice: the claims say so and nothing is shown; no file: they name the file."""
        recs = [_scored(f"p{i}", {"a": 1, "b": 2}, {"a": 3, "b": 0}) for i in range(4)]
        ledger = claims.Ledger("human_labels", "test")
        got = human_agreement.compare(self._data(recs), ledger, n_boot=50)
        assert not got.twice and got.shares is None and got.shift is None
        assert {c.reason for c in ledger.claims.values()} == {human_agreement.NO_TWICE}
        ledger = claims.Ledger("human_labels", "test")
        missing = self._data(None)
        human_agreement.compare(missing, ledger, n_boot=50)
        assert {c.reason for c in ledger.claims.values()} == {missing.needs}
