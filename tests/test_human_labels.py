"""Real human scores (WritingPreferenceBench zh): the split, length, the agreement of two scorings, their claims."""
from __future__ import annotations

import itertools
import json
import lzma
import math

import numpy as np
import pytest

from cheems_lib import estimates
from cheems_lib.analyses import claims, human_labels as hl
from cheems_lib.records import Record, Response
from cheems_lib.world.best_of_n import prompt_resamples

from conftest import ROOT

HUMAN_FILE = ROOT / "data/real/writingpref/writingpref_zh.jsonl.xz"


def _scored(pid: str, lengths: dict[str, int], scores: dict[str, int], second: dict[str, int] | None = None,
            tag: str = "诗歌") -> Record:
    """A record in the shipped shape: answers of the given lengths, ranked by their human scores."""
    levels = sorted(set(scores.values()), reverse=True)
    extra = {"human_scores": scores, **({"second_scores": second} if second is not None else {})}
    return Record(prompt=pid, id=pid, responses=[Response(m, "字" * n) for m, n in lengths.items()],
                  rank={m: levels.index(s) for m, s in scores.items()}, category=[tag], extra=extra)


@pytest.fixture
def no_glue(monkeypatch):
    """Claims glue their sentences into a notebook; outside one, nothing."""
    import myst_nb

    monkeypatch.setattr(myst_nb, "glue", lambda *a, **k: None)


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
        assert hl.weighted_kappa([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]]) == pytest.approx(0.8)

    def test_matches_the_literal_double_sum(self):
        """On random scorings, the table form equals the item-by-item double sum (the same formula, written out)."""
        rng = np.random.default_rng(0)
        for _ in range(20):
            first, second = rng.integers(0, 4, 30).tolist(), rng.integers(0, 4, 30).tolist()
            table = np.zeros((4, 4))
            np.add.at(table, (first, second), 1)
            assert hl.weighted_kappa(table) == pytest.approx(_kappa_literal(first, second))

    def test_perfect_independent_and_degenerate(self):
        """Perfect agreement is 1, a table equal to its margins' product is 0, one score everywhere is NaN."""
        assert hl.weighted_kappa(np.diag([3, 1, 4, 2])) == pytest.approx(1.0)
        assert hl.weighted_kappa(np.outer([1, 2, 3, 4], [4, 3, 2, 1])) == pytest.approx(0.0)
        assert math.isnan(hl.weighted_kappa([[5, 0, 0, 0], [0] * 4, [0] * 4, [0] * 4]))


class TestSplitHalves:
    def test_each_prompt_once_and_each_tag_split_evenly(self):
        """Every prompt lands in exactly one half, in file order; every tag is split as evenly as its count allows; the
        halves differ by at most one prompt."""
        recs = [_scored(f"p{i}", {"a": 1}, {"a": 1}, tag=f"t{i % 7}") for i in range(33)]
        for seed in range(5):
            a, b = hl.split_halves(recs, seed=seed)
            assert sorted(r.id for r in a + b) == sorted(r.id for r in recs) and abs(len(a) - len(b)) <= 1
            assert [r.id for r in a] == [r.id for r in recs if r in a]
            for tag in {r.top_category for r in recs}:
                assert abs(sum(r.top_category == tag for r in a) - sum(r.top_category == tag for r in b)) <= 1

    def test_seeded(self):
        """The same seed gives the same halves, another seed other halves."""
        recs = [_scored(f"p{i}", {"a": 1}, {"a": 1}, tag=f"t{i % 3}") for i in range(30)]
        ids = lambda s: [r.id for r in hl.split_halves(recs, seed=s)[0]]  # noqa: E731
        assert ids(4) == ids(4) and ids(4) != ids(5)


class TestKeepAnswers:
    def test_cuts_answers_ranking_and_scores_together(self):
        """A prompt with more answers than asked keeps that many, its rank and both score fields cut to them; a prompt
        with fewer is kept whole; the draw is seeded."""
        big = _scored("p", {m: 10 * (k + 1) for k, m in enumerate("abcdef")}, dict(zip("abcdef", [3, 2, 2, 1, 0, 0])),
                      second={"a": 1, "f": 2})
        small = _scored("q", {"a": 1, "b": 2}, {"a": 1, "b": 0})
        out = hl.keep_answers([big, small], 3, seed=1)
        kept = out[0].response_ids
        assert len(kept) == 3 and set(out[0].rank) == set(out[0].extra["human_scores"]) == set(kept)
        assert set(out[0].extra["second_scores"]) <= set(kept) and out[1] is small
        assert [r.response_ids for r in hl.keep_answers([big], 3, seed=1)] == [kept]


class TestLength:
    def test_longer_wins_by_hand(self):
        """Scores a 3, b 1, c 1 with lengths 200, 500, 100: pairs a>b (a shorter, difference 300, ratio 2.5) and a>c (a
        longer, difference 100, ratio 2); b and c tie, so they give no pair."""
        rec = _scored("p", {"a": 200, "b": 500, "c": 100}, {"a": 3, "b": 1, "c": 1})
        assert [x.tolist() for x in hl.longer_wins([rec])] == [[1.0], [2.0]]
        assert [x.tolist() for x in hl.longer_wins([rec], 1, 150)] == [[1.0], [1.0]]
        assert [x.tolist() for x in hl.longer_wins([rec], 250)] == [[0.0], [1.0]]
        assert [x.tolist() for x in hl.longer_wins([rec], 2.2, ratio=True)] == [[0.0], [1.0]]
        assert hl.length_gap([rec])[0].tolist() == [(200 - 500) + (200 - 100)]

    def test_equal_lengths_never_count(self):
        """Two answers of the same length are no decision about length."""
        rec = _scored("p", {"a": 50, "b": 50}, {"a": 2, "b": 0})
        assert hl.longer_wins([rec])[1].tolist() == [0.0] and hl.length_gap([rec])[1].tolist() == [1.0]


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
        got = hl.rescoring([p, q, r])
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
        got = hl.rescoring(recs)
        est = got.kappa(n_boot=5, seed=3)
        assert est.value == pytest.approx(hl.weighted_kappa(got.table.sum(axis=0))) and est.n == 12
        counts = prompt_resamples(12, 5, seed=3, stream="weighted kappa")
        assert est.boot[0, 2] == pytest.approx(hl.weighted_kappa(np.tensordot(counts[2], got.table, axes=1)))

    def test_no_second_scores_gives_nothing(self):
        """Records without second_scores make an empty rescoring (the chapter then skips the section)."""
        assert len(hl.rescoring([_scored("p", {"a": 1, "b": 2}, {"a": 1, "b": 0})]).table) == 0


class TestClaims:
    def test_missing_file_makes_every_claim_untestable(self, no_glue):
        """Without the human file each claim is untestable and says which file it needs."""
        ledger = claims.Ledger("human_labels", "test")
        why = "needs the human scores, x.jsonl, which does not exist"
        hl.add_length_claims(ledger, None, missing=why)
        hl.add_agreement_claims(ledger, None, missing=why)
        assert len(ledger.claims) == 6
        assert all(c.kind == "untestable" and c.reason == why for c in ledger.claims.values())

    def test_kinds_and_verdicts_on_a_length_preferring_file(self, no_glue):
        """Forty prompts where the longer answer scores higher in three of four (the fourth scores the other way): the
        overall and moderate shares are supported, the paper's 'shorter at a large difference' contradicted; the overall
        one is our question, Fig. 15's two are findings."""
        recs = [_scored(f"p{i}", {"a": 100, "b": 200, "c": 900},
                        {"a": 3, "b": 1, "c": 0} if i % 4 == 0 else {"a": 0, "b": 1, "c": 3}) for i in range(40)]
        ledger = claims.Ledger("human_labels", "test")
        hl.add_length_claims(ledger, recs, n_boot=200)
        got = {cid: (c.kind, c.verdict) for cid, c in ledger.claims.items()}
        assert got == {"human-length-longer-wins": ("question", "supported"),
                       "human-length-moderate": ("finding", "supported"),
                       "human-length-shorter-at-large": ("finding", "contradicted")}

    def test_paper_numbers_come_from_data_paper(self):
        """Table 1's human-annotated lengths and Table 5's human ratios are read from the CSVs, not typed."""
        import csv

        rows = {r["statistic"]: r for r in csv.DictReader(open(ROOT / "data/paper/table1_statistics.csv", encoding="utf-8"))}
        t1 = hl.table1_lengths()
        assert t1.loc["cheemsbench_open_prompt", "chosen"] == float(rows["avg_chars_chosen"]["cheemsbench_open_prompt"])
        t5 = {r["subset"]: float(r["conflict_ratio"]) for r in csv.DictReader(
            open(ROOT / "data/paper/table5_conflict_ratio.csv", encoding="utf-8")) if r["annotator"] == "human"}
        assert hl.table5_human() == t5


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
    got = hl.rescoring(read_records(HUMAN_FILE))
    assert got.table.sum() == twice and got.reversed.sum() == reversed_pairs and len(got.table) == len(raw)


def _write_human_file(path, records) -> None:
    """A compressed records file in the shipped shape (what data/real/writingpref holds)."""
    with lzma.open(path, "wt", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r.to_json(), ensure_ascii=False) + "\n")


class TestOpenData:
    def test_reads_splits_and_names_its_sources(self, tmp_path):
        """A synthetic .jsonl.xz in the shipped shape is read (first N prompts), split into halves, and the source
        names it with its SHA-256 and attribution, and the preference file with its labels; prose values are counts."""
        from types import SimpleNamespace

        from cheems_lib.publishing.provenance import sha256

        recs = [_scored(f"p{i}", {"a": 10 + i, "b": 20, "c": 5}, {"a": i % 4, "b": 2, "c": 0}, tag=f"t{i % 3}")
                for i in range(14)]
        path = tmp_path / "human.jsonl.xz"
        _write_human_file(path, recs)
        pref = tmp_path / "cheems_preference.jsonl"
        pref.write_text("", encoding="utf-8")
        world = SimpleNamespace(preference=[recs[0]], layout=SimpleNamespace(paths={"preference": pref}),
                                file_labels=lambda key: "model-generated")
        data = hl.open_data(world, str(path), prompts=12, seed=0)
        assert len(data.records) == 12 and len(data.train) + len(data.held_tagged) == 12
        assert all(r.category is None for r in data.held) and data.held_tagged[0].category is not None
        source = data.source(range(3), "fallback")
        assert f"sha256 {sha256(path)[:12]} (human scores: {hl.ATTRIBUTION})" in source
        assert source.startswith("data: ") and "(labels: model-generated); training seeds 0-2" in source
        values = data.prose_values()
        assert (values["n_prompts"], values["n_answers"], values["n_tags"], values["max_per_tag"]) == (12, 36, 3, 4)
        won, unequal = hl.longer_wins(data.records)
        assert values["n_equal_length"] == values["n_pairs"] - unequal.sum()
        assert values["share_longer_unequal"] == f"{won.sum() / unequal.sum():.4f}"
        assert values["share_longer_all"] == f"{won.sum() / values['n_pairs']:.4f}"
        assert data.split_table()["prompts"].sum() == 12

    def test_missing_file(self, tmp_path):
        """A missing human file reads as None: its claims' reason names it, the page says what was skipped."""
        from types import SimpleNamespace

        world = SimpleNamespace(preference=None, layout=None, file_labels=lambda key: "")
        data = hl.open_data(world, str(tmp_path / "none.jsonl.xz"))
        assert data.records is None and data.source([0], "fallback") == "fallback"
        assert "none.jsonl.xz" in data.needs and data.notes()[0].startswith("*Skipped:")


class TestTables:
    def test_length_and_agreement_tables(self):
        """The band table has one row per band of both kinds; the gap table puts ours first and Table 1's three
        human-annotated sets below, each with the paper's chosen minus rejected; the agreement table ends with Table 5's
        two human ratios."""
        recs = [_scored(f"p{i}", {"a": 100, "b": 300, "c": 3000}, {"a": 0, "b": 1, "c": 3},
                        second={"a": 1, "b": 1, "c": 2}) for i in range(12)]
        bands = hl.length_bands(recs, n_boot=50)
        table, gap = hl.length_tables(recs, bands, n_boot=50)
        assert len(table) == len(hl.DIFFERENCE_BANDS) - 1 + len(hl.RATIO_BANDS) - 1
        assert table["strict pairs"].sum() == 2 * 3 * 12 and list(gap["set"])[1:] == [
            f"paper, Table 1: {name}" for name in hl.TABLE1_HUMAN]
        rescored = hl.rescoring(recs)
        found = {"human-rescore-reversed": estimates.ratio_estimate(rescored.reversed, rescored.strict, n_boot=50),
                 "human-rescore-conflicts": estimates.ratio_estimate(rescored.strict_conflicted, n_boot=50)}
        shares = hl.agreement_shares(rescored, found, n_boot=50)
        agreement = hl.agreement_table(shares, rescored.kappa(n_boot=50), rescored.shift(n_boot=50))
        assert list(agreement["paper"])[-2:] == [f"{v:.4f}" for v in hl.table5_human().values()]
        assert list(agreement["statistic"])[:2] == ["weighted kappa (quadratic)",
                                                    "mean score shift, second minus first (score points)"]
        assert agreement.set_index("statistic").loc[hl.CONFLICTS_STRICT, "over"] == "prompts"
        assert hl.agreement_values(rescored)["n_twice"] == 36


class TestCheckScores:
    """A bad human file stops the chapter with one line naming the file, the line and the fix, never silent numbers."""

    def _write(self, path, rows) -> str:
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        return str(path)

    def _row(self, pid="p1", **fields):
        row = {"id": pid, "input": "写一首诗", "responses": [{"id": "a", "content": "长" * 9}, {"id": "b", "content": "短"}]}
        return row | fields

    def _error(self, tmp_path, rows, name="human.jsonl"):
        from types import SimpleNamespace

        from cheems_lib.records import DataError

        world = SimpleNamespace(preference=None, layout=None, file_labels=lambda key: "")
        path = self._write(tmp_path / name, rows)
        with pytest.raises(DataError) as err:
            hl.open_data(world, path)
        return path, str(err.value)

    def test_annotations_only_file_without_scores(self, tmp_path):
        """A file of annotations only (ranked on read with Algorithm 1) but no human scores: an error on its first
        record's line, not zero pairs and zero statistics."""
        rows = [self._row("p1", annotations=[["a", "b", "1"]]), self._row("p2", annotations=[["a", "b", "2"]])]
        path, msg = self._error(tmp_path, rows)
        assert msg.startswith(f"{path}:1: prompt \"p1\" has no \"human_scores\" object") and "(fix: " in msg
        assert "\n" not in msg

    def test_ranked_file_without_scores_and_bad_values(self, tmp_path):
        """A ranked file without human_scores (the Best-of-N would KeyError), a score that is not an integer 0-3, a
        response left unscored, and second_scores naming an unknown response: each names its line."""
        good = self._row("p1", rank={"a": 0, "b": 1}, human_scores={"a": 3, "b": 1})
        cases = [({"rank": {"a": 0, "b": 1}}, 'has no "human_scores" object'),
                 ({"rank": {"a": 0, "b": 1}, "human_scores": {"a": 3, "b": 1.5}}, '"human_scores" 1.5 for response "b", '
                                                                                 "not an integer 0-3"),
                 ({"rank": {"a": 0, "b": 1}, "human_scores": {"a": 4, "b": 1}}, "not an integer 0-3"),
                 ({"rank": {"a": 0, "b": 1}, "human_scores": {"a": True, "b": 1}}, "not an integer 0-3"),
                 ({"rank": {"a": 0, "b": 1}, "human_scores": {"a": 3}}, 'has no "human_scores" for response "b"'),
                 ({"rank": {"a": 0, "b": 1}, "human_scores": {"a": 3, "b": 1, "c": 0}}, '"c", which is not one of'),
                 ({"rank": {"a": 0, "b": 1}, "human_scores": {"a": 3, "b": 1}, "second_scores": {"z": 2}},
                  '"second_scores" for "z", which is not one of'),
                 ({"rank": {"a": 0, "b": 1}, "human_scores": {"a": 3, "b": 1}, "second_scores": {"a": "2"}},
                  '"second_scores" "2" for response "a"'),
                 ({"rank": {"a": 1, "b": 0}, "human_scores": {"a": 3, "b": 1}}, "otherwise than their human scores"),
                 ({"rank": {"a": 0, "b": 0}, "human_scores": {"a": 3, "b": 1}}, "otherwise than their human scores")]
        for k, (fields, says) in enumerate(cases):
            path, msg = self._error(tmp_path, [good, self._row("p2", **fields)], name=f"h{k}.jsonl")
            assert msg.startswith(f"{path}:2: prompt \"p2\" ") and says in msg and "(fix: " in msg, (fields, msg)

    def test_a_good_file_passes_and_second_scores_may_be_partial(self, tmp_path):
        """Scores for every response, rank in their order (ties tied), second scores for some responses only: read."""
        from types import SimpleNamespace

        world = SimpleNamespace(preference=None, layout=None, file_labels=lambda key: "")
        rows = [self._row("p1", rank={"a": 0, "b": 0}, human_scores={"a": 2, "b": 2}, second_scores={"b": 0}),
                self._row("p2", rank={"a": 0, "b": 1}, human_scores={"a": 3, "b": 0})]
        data = hl.open_data(world, self._write(tmp_path / "ok.jsonl", rows))
        assert len(data.records) == 2 and not data.reading

    @pytest.mark.skipif(not HUMAN_FILE.exists(), reason="data/real/writingpref is not in this checkout")
    def test_the_shipped_file_passes(self):
        from cheems_lib.world_files import read_ranked

        hl.check_scores(read_ranked(HUMAN_FILE), HUMAN_FILE)


class TestShift:
    def test_by_hand(self):
        """Prompt p: (3, 2), (1, 2), (1, 0) -> shifts -1, +1, -1; prompt q: (3, 0), (0, 3) -> -3, +3. Mean over the five
        answers: (-1 + 1 - 1 - 3 + 3) / 5 = -0.2; one answer higher and one lower in each prompt."""
        p = _scored("p", {"a": 1, "b": 2, "c": 3}, {"a": 3, "b": 1, "c": 1}, second={"a": 2, "b": 2, "c": 0})
        q = _scored("q", {"a": 1, "b": 2}, {"a": 3, "b": 0}, second={"a": 0, "b": 3})
        got = hl.rescoring([p, q])
        est = got.shift(n_boot=20, seed=1)
        assert est.value == pytest.approx(-0.2) and est.n == 2 and got.moves == (2, 3)
        values = hl.agreement_values(got, est, got.kappa(n_boot=20), seed=1)
        assert (values["n_second_higher"], values["n_second_lower"]) == (2, 3)
        assert values["score_shift"].startswith("-0.200 [")


class TestConflictComparison:
    def test_strict_calls_are_compared_with_table5_and_ties_are_not(self, no_glue):
        """Forty prompts whose second scoring ties a pair the first orders (a tie change, no reversal), but for two
        whose second scoring reverses it: with ties every prompt conflicts, with strict calls only the two do. The
        claim compared with Table 5 uses the strict share (here 0.05, below Table 5), and the share with ties is named
        not comparable."""
        recs = [_scored(f"p{i}", {"a": 1, "b": 2}, {"a": 3, "b": 1},
                        second={"a": 1, "b": 3} if i % 20 == 0 else {"a": 2, "b": 2}) for i in range(40)]
        got = hl.rescoring(recs)
        reversed_at = [float(i % 20 == 0) for i in range(40)]
        assert got.conflicted.tolist() == [1.0] * 40 and got.strict_conflicted.tolist() == reversed_at
        ledger = claims.Ledger("human_labels", "test")
        found = hl.add_agreement_claims(ledger, got, n_boot=50)
        claim = ledger.claims["human-rescore-conflicts"]
        assert found["human-rescore-conflicts"].value == 0.05 and claim.verdict == "contradicted"
        assert claim.estimate == pytest.approx(0.05 - max(hl.table5_human().values()))
        assert "strict pairwise calls (ties left out)" in claim.statistic and "by construction" in claim.reason
        shares = hl.agreement_shares(got, found, n_boot=50)
        assert shares[hl.CONFLICTS_TIES].value == 1.0 and shares[hl.CONFLICTS_STRICT].value == 0.05
        assert "not comparable with Table 5" in hl.CONFLICTS_TIES
        assert "independent" not in ledger.claims["human-rescore-kappa"].claim
        assert "another annotator" in ledger.claims["human-rescore-kappa"].claim

    def test_length_sentence_says_minus_one_half_and_the_denominator(self, no_glue):
        """Eight prompts of ten where the longer answer scores higher: a share of 0.8, said as minus one half."""
        recs = [_scored(f"p{i}", {"a": 100, "b": 200}, {"a": 3, "b": 0} if i % 5 == 0 else {"a": 0, "b": 3})
                for i in range(10)]
        ledger = claims.Ledger("human_labels", "test")
        hl.add_length_claims(ledger, recs, n_boot=50)
        sentence = ledger.claims["human-length-longer-wins"].sentence
        assert "(equal-length pairs left out) minus 0.5 is +0.300" in sentence and "from one half" not in sentence


class TestPreferenceLabels:
    """The preference file's labels are named as the world states them: model labels only when the world says so."""

    def _data(self, tmp_path, labels, content):
        pref = tmp_path / "cheems_preference.jsonl"
        pref.write_text("", encoding="utf-8")
        rec = _scored("d", {"x": 1, "y": 2}, {"x": 1, "y": 0})
        return hl.HumanData("x", None, [], [], [rec], [pref], labels, hl.preference_name(labels, content), content)

    def test_data_real_manifest_says_model_labels(self, tmp_path):
        data = self._data(tmp_path, "model-generated", "DPO-zh chosen/rejected pairs (DPO-En-Zh-20k lineage)")
        assert data.preference_name == "DPO-zh (model labels)" and data.model_labelled and data.dpo
        assert data.labels_text == "model labels, not human labels: model-generated"
        assert data.conditions() == {"human": False, "preference": True, "pref-model": True, "dpo": True}
        assert data.notes()[1].startswith("Model labels, not human labels: ")
        assert data.transfer_words()["their_prompts"] == "DPO-zh's general and medical questions"

    @pytest.mark.parametrize("labels", ["labellers of the test", "the simulator's annotators", "unknown labels",
                                        "trained annotators"])
    def test_other_worlds_are_never_called_model_or_dpo(self, tmp_path, labels):
        """A release folder, a simulated world, a folder without manifest: neither DPO-zh nor 'model labels'."""
        data = self._data(tmp_path, labels, None)
        words = " ".join([data.preference_name, data.labels_text, *data.transfer_words().values(), data.notes()[1]])
        assert not data.model_labelled and not data.dpo and "DPO-zh" not in words and "model labels" not in words
        assert data.conditions()["pref-model"] is False and data.conditions()["dpo"] is False

    def test_no_preference_file(self):
        data = hl.HumanData("x", None, [], [], None, [], "")
        assert data.labels_text == "no preference file" and data.notes()[1].startswith("*Skipped:")
        assert data.conditions()["preference"] is False
