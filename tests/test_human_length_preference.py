"""Human length preference on real scores (Fig. 15): longer wins by hand, the claims and their sentences."""
from __future__ import annotations

from cheems_lib.analyses import claims, human_length_preference

from human_scores import _scored, no_glue  # noqa: F401 (a fixture)


class TestLength:
    def test_longer_wins_by_hand(self):
        """Scores a 3, b 1, c 1 with lengths 200, 500, 100: pairs a>b (a shorter, difference 300, ratio 2.5) and a>c (a
        longer, difference 100, ratio 2); b and c tie, so they give no pair."""
        rec = _scored("p", {"a": 200, "b": 500, "c": 100}, {"a": 3, "b": 1, "c": 1})
        assert [x.tolist() for x in human_length_preference.longer_wins([rec])] == [[1.0], [2.0]]
        assert [x.tolist() for x in human_length_preference.longer_wins([rec], 1, 150)] == [[1.0], [1.0]]
        assert [x.tolist() for x in human_length_preference.longer_wins([rec], 250)] == [[0.0], [1.0]]
        assert [x.tolist() for x in human_length_preference.longer_wins([rec], 2.2, ratio=True)] == [[0.0], [1.0]]
        assert human_length_preference.length_gap([rec])[0].tolist() == [(200 - 500) + (200 - 100)]

    def test_equal_lengths_never_count(self):
        """Two answers of the same length are no decision about length."""
        rec = _scored("p", {"a": 50, "b": 50}, {"a": 2, "b": 0})
        assert human_length_preference.longer_wins([rec])[1].tolist() == [0.0] and human_length_preference.length_gap([rec])[1].tolist() == [1.0]

    def test_bands_count_every_strict_pair_once_per_kind_and_none_without_records(self):
        """Each kind of band holds every strictly ordered pair once (the bands cover all lengths); no file, no bands."""
        rec = _scored("p", {"a": 200, "b": 500, "c": 100}, {"a": 3, "b": 1, "c": 1})
        bands = human_length_preference.length_bands([rec] * 3, n_boot=20)
        assert list(bands) == ["length difference", "length ratio"]
        assert [sum(pairs for _, pairs, _ in shown) for shown in bands.values()] == [6, 6]
        assert human_length_preference.length_bands(None) is None


class TestClaims:
    def test_kinds_and_verdicts_on_a_length_preferring_file(self, no_glue):
        """Forty prompts where the longer answer scores higher in three of four (the fourth scores the other way): the
        overall and moderate shares are supported, the paper's 'shorter at a large difference' contradicted; the overall
        one is our question, Fig. 15's two are findings."""
        recs = [_scored(f"p{i}", {"a": 100, "b": 200, "c": 900},
                        {"a": 3, "b": 1, "c": 0} if i % 4 == 0 else {"a": 0, "b": 1, "c": 3}) for i in range(40)]
        ledger = claims.Ledger("human_labels", "test")
        human_length_preference.add_length_claims(ledger, recs, n_boot=200)
        got = {cid: (c.kind, c.verdict) for cid, c in ledger.claims.items()}
        assert got == {"human-length-longer-wins": ("question", "supported"),
                       "human-length-moderate": ("finding", "supported"),
                       "human-length-shorter-at-large": ("finding", "contradicted")}

    def test_length_sentence_says_minus_one_half_and_the_denominator(self, no_glue):
        """Eight prompts of ten where the longer answer scores higher: a share of 0.8, said as minus one half."""
        recs = [_scored(f"p{i}", {"a": 100, "b": 200}, {"a": 3, "b": 0} if i % 5 == 0 else {"a": 0, "b": 3})
                for i in range(10)]
        ledger = claims.Ledger("human_labels", "test")
        human_length_preference.add_length_claims(ledger, recs, n_boot=50)
        sentence = ledger.claims["human-length-longer-wins"].sentence
        assert "(equal-length pairs left out) minus 0.5 is +0.300" in sentence and "from one half" not in sentence
