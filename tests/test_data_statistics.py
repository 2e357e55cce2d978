"""cheems_lib.analyses.data_statistics: Table 1 beside the paper, the comparison bound, the data chapter's claims and plots."""
from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from cheems_lib import estimates
from cheems_lib.analyses import claims, data_statistics
from cheems_lib.analyses.calibration import calibrated_claims, paper_table1, table1, table1_per_prompt  # noqa: E402
from cheems_lib.conflicts import resolve_records  # noqa: E402
from cheems_lib.records import Record, Response  # noqa: E402

GPT, OPEN = "cheems_preference/gpt.jsonl", "cheems_bench/open.jsonl"


def _record(pid, lengths, annotations, category="理解"):
    return Record(prompt="p" * 5, id=pid, responses=[Response(i, "x" * n) for i, n in zip("abcde", lengths)],
                  annotations=annotations, category=[category])


@pytest.fixture
def files():
    """A GPT preference file (3 and 4 responses, 3 comparisons each), an open-prompt file (5 responses, fully
    ordered) and its GPT-annotated variant."""
    gpt = [_record("1", [10, 4, 1], [("a", "b", "1"), ("b", "c", "1")]),
           _record("2", [3, 6, 9, 2], [("a", "b", "0"), ("c", "d", "1"), ("b", "c", "2")], category="数学")]
    bench = [_record("3", [5, 6, 7, 8, 9], [("a", "b", "1"), ("b", "c", "1"), ("c", "d", "1"), ("d", "e", "1")])]
    resolve_records(gpt + bench)
    return {GPT: gpt, OPEN: bench, "cheems_bench_gpt/open.jsonl": bench}


def _times(files: dict, k: int) -> dict:
    """``files`` with each record repeated ``k`` times under new ids, on enough prompts
    (:data:`cheems_lib.estimates.MIN_UNITS`) for a verdict; every second copy has lost its last annotation (ranked
    again), so copies differ in comparisons and in chosen and rejected lengths (identical copies would give every
    bootstrap resample the same value: insufficient data). Record 1's copies have 3 or 1 comparisons, record 2's 3
    (other lengths), record 3's 10 or 6."""
    from dataclasses import replace

    out = {path: [replace(r, id=f"{r.id}-{i}", annotations=r.annotations[:len(r.annotations) - i % 2], rank=None)
                  for i in range(k) for r in recs] for path, recs in files.items()}
    for recs in out.values():
        resolve_records(recs)
    return out


class _Ledger(claims.Ledger):
    """A ledger that does not glue (no notebook here)."""

    def add(self, claim, *, glue=False):
        return super().add(claim, glue=False)


class TestBesidePaper:
    def test_other_data_columns_are_those_the_manifest_marks(self, files):
        """Only a column of the table whose file the world says holds other data is kept, with what it holds,
        in Table 1's order; a comparable file or one outside the table is left out."""
        class World:
            def other_data(self, path):
                return {OPEN: "translated prompts", "cheems_bench/human.jsonl": "other data"}.get(path)

        ours = table1(files)
        assert "cheemsbench_human_instruction" not in ours.columns  # its file is absent
        assert data_statistics.other_data_columns(World(), ours) == {"cheemsbench_open_prompt": "translated prompts"}
        assert data_statistics.other_data_columns(type("Comparable", (), {"other_data": lambda self, p: None})(),
                                                  ours) == {}

    def test_rows_are_file_and_statistic_with_the_ratio(self, files):
        """Each (file, statistic) row holds the paper's value, ours and their ratio."""
        ours, paper = table1(files), paper_table1()
        side = data_statistics.beside_paper(ours, paper)
        assert side.index.names == ["file", "statistic"] and list(side.columns) == ["paper", "ours", "ours / paper"]
        row = side.loc[("cheemspreference_gpt", "responses_per_prompt")]
        assert row["paper"] == paper.loc["responses_per_prompt", "cheemspreference_gpt"] and row["ours"] == 3.5
        assert np.allclose(side["ours / paper"], side["ours"] / side["paper"])
        assert len(side) == len(ours.index) * len(ours.columns)

    def test_styler_shows_counts_as_integers_and_wrappable_labels(self, files):
        """Prompts and comparisons print as integers (1,146, not 1,146.00), other statistics and ratios
        with two decimals, a missing paper value as a dash; labels have spaces where the names have underscores."""
        side = data_statistics.beside_paper(table1(files), paper_table1(), {"cheemsbench_open_prompt": "other"})
        html = data_statistics.table1_styler(side).to_html()
        paper = paper_table1()
        assert f">{paper.loc['prompts', 'cheemspreference_gpt']:,.0f}<" in html
        assert f">{paper.loc['comparisons_excluding_ties', 'cheemspreference_gpt']:,.0f}<" in html
        assert f">{paper.loc['avg_chars_prompt', 'cheemspreference_gpt']:,.2f}<" in html
        assert ">2<" in html and ">3.50<" in html  # ours: 2 prompts, 3.5 responses per prompt
        assert ">–<" in html and "nan" not in html and ">comparisons excluding ties<" in html
        assert not re.search(r">[\d,]+\.00<", html.split("ours / paper")[0])


class TestComparisonBound:
    def test_hand_example(self):
        """Mean 2.5: half the prompts 2 responses (1 pair), half 3 (3 pairs): at most 2; variance 0.25 for 2."""
        assert data_statistics.comparison_bound(2.5, 2.0) == pytest.approx((2.0, 0.25))

    @pytest.mark.parametrize("mean", [5.0, 5.07, 5.29, 7.5])
    def test_bound_is_the_two_point_distribution(self, mean):
        """The bound is E[C(n, 2)] of the floor/ceil mix at that mean, and it needs exactly that mix's variance."""
        k, frac = int(mean), mean - int(mean)
        n, p = np.array([k, k + 1]), np.array([1 - frac, frac])
        pairs, var = (p * n * (n - 1) / 2).sum(), (p * n * n).sum() - mean ** 2
        bound, needed = data_statistics.comparison_bound(mean, pairs)
        assert bound == pytest.approx(pairs) and needed == pytest.approx(var)

    def test_bound_texts_use_the_paper(self):
        """The glued numbers are the paper's preference columns through comparison_bound, two decimals."""
        paper = paper_table1()
        texts = data_statistics.bound_texts(paper)
        m, t = (paper.loc[stat, "cheemspreference_gpt"] for stat in ("responses_per_prompt", "comparisons_per_prompt"))
        bound, var = data_statistics.comparison_bound(m, t)
        assert texts["mean_g"] == f"{m:.2f}" and texts["bound_g"] == f"{bound:.2f}" and texts["var_g"] == f"{var:.2f}"
        assert set(texts) == {f"{k}_{s}" for k in ("mean", "target", "bound", "var") for s in "hg"} | {"count_range"}


class TestClaims:
    def test_comparison_claims_per_file_then_all(self, files):
        """One claim per file in Table 1 order, an untestable one per absent file (naming it), then the
        all-files claim; estimates are ours / paper - 1."""
        ledger, paper = _Ledger("data", "test"), paper_table1()
        files = _times(files, 10)
        ours = table1(files)
        table = data_statistics.add_comparison_claims(ledger, files, ours, paper, simulated=True, n_boot=50, seed=0)
        assert list(ledger.claims) == ["tab1-comparisons-open-prompt", "tab1-comparisons-preference-gpt",
                                       "tab1-comparisons-human-instruction", "tab1-comparisons-preference-human",
                                       "tab1-comparisons", "s41-more-than-five-responses"]
        absent = ledger.claims["tab1-comparisons-human-instruction"]
        assert absent.kind == "untestable" and absent.reason == "needs cheems_bench/human.jsonl"
        assert absent.sentence.startswith("Untestable here (needs cheems_bench/human.jsonl)")
        gpt = ledger.claims["tab1-comparisons-preference-gpt"]
        assert gpt.estimate == pytest.approx(2.5 / paper.loc["comparisons_per_prompt", "cheemspreference_gpt"] - 1)
        assert gpt.verdict == "contradicted" and gpt.kind == "calibrated"
        assert gpt.reason == calibrated_claims()["tab1-comparisons"]
        # per prompt: open (10 + 6) / 2; GPT (3 + 1 + 3 + 3) / 4
        assert table["file"].tolist() == [OPEN, GPT] and table["ours"].tolist() == pytest.approx([8, 2.5])
        assert table["ours if every pair were ordered"].tolist() == pytest.approx([10, 4.5])
        assert ledger.claims["tab1-comparisons"].estimate == gpt.estimate  # the farthest from the paper

    def test_comparison_claims_are_findings_on_real_files(self, files):
        """On files the simulator did not write, the claims are findings (untestable for the absent files)."""
        ledger = _Ledger("data", "test")
        data_statistics.add_comparison_claims(ledger, files, table1(files), paper_table1(), simulated=False,
                                              n_boot=20, seed=0)
        assert {c.kind for c in ledger.claims.values() if not c.reason.startswith("needs ")} == {"finding"}

    def test_length_claims_estimate_the_paired_ratio(self, files):
        """The gap is mean chosen / mean rejected length - 1, the size claim that ratio over the paper's - 1."""
        ledger, paper = _Ledger("data", "test"), paper_table1()
        files = _times(files, 10)
        data_statistics.add_length_claims(ledger, files, paper, simulated=True, n_boot=50, seed=0)
        per = table1_per_prompt(files[GPT])
        ratio = per["chosen"].sum() / per["rejected"].sum()
        paper_ratio = paper.loc["avg_chars_chosen", "cheemspreference_gpt"] / paper.loc["avg_chars_rejected",
                                                                                         "cheemspreference_gpt"]
        assert ledger.claims["tab1-gpt-length-gap"].estimate == pytest.approx(ratio - 1)
        assert ledger.claims["tab1-gpt-length-ratio"].estimate == pytest.approx(ratio / paper_ratio - 1)
        assert ledger.claims["tab1-gpt-length-gap"].verdict == "supported"

    def test_claims_on_two_prompts_have_insufficient_data(self, files):
        """Two GPT prompts give no verdict on Table 1: every tested claim says insufficient data, with the count."""
        ledger, paper = _Ledger("data", "test"), paper_table1()
        data_statistics.add_comparison_claims(ledger, files, table1(files), paper, simulated=False, n_boot=50, seed=0)
        data_statistics.add_length_claims(ledger, files, paper, simulated=False, n_boot=50, seed=0)
        tested = [c for c in ledger.claims.values() if c.kind != "untestable"]
        assert tested and all(c.verdict == estimates.INSUFFICIENT for c in tested)
        gap = ledger.claims["tab1-gpt-length-gap"]
        assert gap.n == 2 and gap.sentence.startswith("Insufficient data: 2 prompts, needs at least 10")

    def test_length_claims_without_a_gpt_subset_are_untestable(self, files):
        """Files with no GPT-annotated preference subset give two untestable, inconclusive claims."""
        ledger = _Ledger("data", "test")
        data_statistics.add_length_claims(ledger, {OPEN: files[OPEN]}, paper_table1(), simulated=True, n_boot=20,
                                          seed=0)
        assert [(c.kind, c.verdict) for c in ledger.claims.values()] == [("untestable", "inconclusive")] * 2

    def test_length_direction_claims_follow_the_papers_table1(self, files):
        """One claim per human-labelled file, in the direction the paper's Table 1 gives (benchmark: chosen shorter;
        human preference subset: chosen longer), estimated as mean chosen / mean rejected length - 1; untestable for
        an absent file."""
        ledger, paper = _Ledger("data", "test"), paper_table1()
        files = _times(files, 10)
        data_statistics.add_length_direction_claims(ledger, files, paper, n_boot=50, seed=0)
        assert list(ledger.claims) == [f"tab1-length-direction-{data_statistics.FILE_NAMES[c][0]}"
                                       for c in data_statistics.LENGTH_DIRECTION_FILES]
        for col in data_statistics.LENGTH_DIRECTION_FILES:
            claim = ledger.claims[f"tab1-length-direction-{data_statistics.FILE_NAMES[col][0]}"]
            longer = paper.loc["avg_chars_chosen", col] > paper.loc["avg_chars_rejected", col]
            assert ("longer" if longer else "shorter") in claim.claim
            if col == "cheemsbench_open_prompt":
                per = table1_per_prompt(files[OPEN])
                assert claim.kind == "finding"
                assert claim.estimate == pytest.approx(per["chosen"].sum() / per["rejected"].sum() - 1)
            else:
                assert claim.kind == "untestable" and claim.reason.startswith("needs ")
        assert "shorter" in ledger.claims["tab1-length-direction-open-prompt"].claim
        assert "longer" in ledger.claims["tab1-length-direction-preference-human"].claim


class TestFigures:
    def test_response_counts_are_shares_per_file(self, files):
        """Bars are each file's share of prompts per response count (GPT: 3 and 4 at 1/2; open: 5 at 1)."""
        fig = data_statistics.response_counts_figure(files)
        ax = fig.axes[0]
        heights = sorted(p.get_height() for p in ax.patches if p.get_height() > 0)
        assert heights == pytest.approx([0.5, 0.5, 1.0])
        assert ax.get_xlabel() == "responses per prompt" and ax.get_ylabel() == "share of prompts"
        plt.close(fig)

    def test_category_counts_and_their_bars(self, files):
        """Prompts per file and category (GPT benchmark variants left out); the bars are the shares."""
        cats = data_statistics.category_counts(files)
        got = {(r.file, r.gloss): (r.prompts, r.share) for r in cats.itertuples()}
        assert got == {(GPT, "understanding"): (1, 0.5), (GPT, "math"): (1, 0.5), (OPEN, "understanding"): (1, 1.0)}
        assert set(cats["category"]) == {"理解 (understanding)", "数学 (math)"}
        fig = data_statistics.categories_figure(cats)
        heights = sorted(p.get_height() for p in fig.axes[0].patches if p.get_height() > 0)
        assert heights == pytest.approx(sorted(cats["share"]))
        plt.close(fig)

    def test_lengths_are_rescaled_and_cut_at_the_99th_percentile(self, files):
        """Lengths are divided by the scale, one row per response of each file (GPT benchmark variants left
        out); the x axis ends at their 99th percentile."""
        lengths = data_statistics.response_lengths(files, 0.5)
        chars = [len(x.content) / 0.5 for p in (GPT, OPEN) for r in files[p] for x in r.responses]
        assert sorted(lengths["chars"]) == pytest.approx(sorted(chars))
        assert set(lengths["file"]) == {GPT, OPEN}
        fig = data_statistics.lengths_figure(lengths)
        assert fig.axes[0].get_xlim() == pytest.approx((0, np.quantile(chars, 0.99)))
        plt.close(fig)
