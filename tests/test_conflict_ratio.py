"""cheems_lib.analyses.conflict_ratio: Table 5 with intervals, its figure and table, and the conflicts chapter's claims."""
from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from cheems_lib import estimates
from cheems_lib.analyses import calibration, claims
from cheems_lib.analyses.conflict_ratio import (add_equivalence_claim, add_near_tie_claim, add_table5_claims,
                                                conflict_estimate, pair_view_counts, paper_text, plot_table5,
                                                plot_worked_example, prompt_table, table5_estimates, table5_styler,
                                                worked_example)
from cheems_lib.conflicts import conflict_stats, resolve, resolve_records
from cheems_lib.paper import table as paper_table
from conftest import make_record

CYCLE = [("a", "b", "1"), ("b", "c", "1"), ("c", "a", "1")]  # three annotations, none reproduced
CHAIN = [("a", "b", "1"), ("b", "c", "1")]  # consistent
# conflicted prompts per file: human 1 of 4 and 2 of 3, GPT-4o 2 of 4 and 3 of 3
CONFLICTED = {("open_prompt", "human"): (1, 4), ("human_instruction", "human"): (2, 3),
              ("open_prompt", "gpt"): (2, 4), ("human_instruction", "gpt"): (3, 3)}


def _files(gpt: bool = True) -> dict:
    files = {}
    for (sub, who), (bad, n) in CONFLICTED.items():
        if who == "gpt" and not gpt:
            continue
        recs = [make_record(f"{sub}-{k}", "abc", CYCLE if k < bad else CHAIN) for k in range(n)]
        resolve_records(recs)
        files[calibration.TABLE5_FILES[(sub, who)]] = recs
    return files


def _world(gpt=True, truth=None, simulated=True):
    return SimpleNamespace(files=_files(gpt), summary={} if simulated else None, truth=truth)


def _ledger():
    return claims.Ledger("conflicts", "simulated world (size smoke, seed 0)")


def test_conflict_estimate_pools_the_subsets():
    """The pooled estimate is the share of conflicted prompts over both subsets, within its interval."""
    est = conflict_estimate(_files(), "gpt", n_boot=200, seed=0)
    assert est.value == pytest.approx(5 / 7)
    lo, hi = est.interval()
    assert lo <= est.value <= hi


def test_conflict_estimate_pairs_annotators_by_prompt():
    """With one seed both annotators' estimates resample the same prompts: identical files, identical replicates."""
    files = _files()
    for sub in ("open_prompt", "human_instruction"):
        files[calibration.TABLE5_FILES[(sub, "gpt")]] = files[calibration.TABLE5_FILES[(sub, "human")]]
    diff = conflict_estimate(files, "gpt", n_boot=100, seed=4) - conflict_estimate(files, "human", n_boot=100, seed=4)
    assert (diff.boot == 0).all()


def test_table5_estimates_match_conflict_stats():
    """Each row: ours is the file's conflict ratio inside its interval, the per-annotation ratio its pair ratio."""
    files = _files()
    t5 = table5_estimates(files, n_boot=100, seed=0)
    assert len(t5) == 4
    for _, r in t5.iterrows():
        stats = conflict_stats(files[r["file"]])
        bad, n = CONFLICTED[(r["subset"], r["annotator"])]
        assert r["ours"] == pytest.approx(bad / n) == pytest.approx(stats["conflict_ratio"])
        assert r["ours, per annotation"] == pytest.approx(stats["pair_conflict_ratio"])
        assert r["ci_low"] <= r["ours"] <= r["ci_high"]


def test_paper_text_lists_table5_in_order():
    """Every paper ratio appears with four decimals, grouped by subset in the CSV's order, annotators named."""
    text = paper_text()
    paper = paper_table("table5_conflict_ratio")
    first_seen = {s: i for i, s in enumerate(dict.fromkeys(paper["subset"]))}
    paper = paper.iloc[paper["subset"].map(first_seen).argsort(kind="stable")]
    assert text.startswith("Open Prompt: human ") and "; Human Instruction: human " in text
    positions = [text.index(f"{'GPT-4o' if a == 'gpt' else 'human'} {v:.4f}")
                 for a, v in zip(paper["annotator"], paper["conflict_ratio"])]
    assert positions == sorted(positions)


def test_plot_table5_bars_are_the_table():
    """Grey bars are the paper's ratios and blue bars ours, one row per subset and annotator."""
    import matplotlib
    from matplotlib.container import BarContainer

    matplotlib.use("Agg")
    t5 = table5_estimates(_files(), n_boot=50, seed=0)
    (ax,) = plot_table5(t5).axes
    paper_bars, our_bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert [b.get_width() for b in paper_bars] == pytest.approx(t5["paper"].tolist())
    assert [b.get_width() for b in our_bars] == pytest.approx(t5["ours"].tolist())
    assert [t.get_text() for t in ax.get_yticklabels()][0] == "Open Prompt / human"


def test_table5_styler_formats_four_decimals():
    """The styled table shows ratios with four decimals and signed differences, without the index; the
    difference comes right after the paper's ratio and ours, the file last (in view at 1280 px)."""
    t5 = table5_estimates(_files(), n_boot=0, seed=0)
    styler = table5_styler(t5)
    html = styler.to_html()
    assert f"{t5['ours'][0]:.4f}" in html and f"{t5['difference'][0]:+.4f}" in html
    assert list(styler.data.columns)[:5] == ["subset", "annotator", "paper", "ours", "difference"]
    assert list(styler.data.columns)[-1] == "file" and sorted(styler.data.columns) == sorted(t5.columns)


def test_equivalence_claim():
    """Agreement on every random graph is supported with estimate 1; no graphs drawn is inconclusive."""
    ledger, empty = _ledger(), _ledger()
    add_equivalence_claim(ledger, 40, seed=1)
    add_equivalence_claim(empty, 0)
    claim, none = ledger.claims["alg1-scc-equivalence"], empty.claims["alg1-scc-equivalence"]
    assert claim.verdict == "supported" and claim.estimate == 1.0 and "all 40 random graphs" in claim.sentence
    assert none.verdict == "inconclusive" and math.isnan(none.estimate)


def test_table5_claims_estimates():
    """GPT-4o minus human pooled (5/7 - 3/7) and Human Instruction minus Open Prompt (2/3 - 1/4), calibrated
    on a simulated world."""
    ledger = _ledger()
    add_table5_claims(ledger, _world(), n_boot=200, seed=0)
    gpt, hi = ledger.claims["tab5-gpt-more-conflicts"], ledger.claims["tab5-human-instruction-more-conflicts"]
    assert gpt.estimate == pytest.approx(2 / 7) and hi.estimate == pytest.approx(2 / 3 - 1 / 4)
    assert gpt.kind == hi.kind == "calibrated" and gpt.paper == paper_text()


def test_table5_claims_without_gpt_files():
    """Without GPT-4o annotations the first claim is untestable; the human one is still tested, as a finding."""
    ledger = _ledger()
    add_table5_claims(ledger, _world(gpt=False, simulated=False), n_boot=50, seed=0)
    gpt = ledger.claims["tab5-gpt-more-conflicts"]
    assert gpt.kind == "untestable" and gpt.verdict == "inconclusive"
    assert ledger.claims["tab5-human-instruction-more-conflicts"].kind == "finding"


def test_near_tie_claim_hand_count():
    """Cycles compare equal utilities, chains utilities 1 apart: all 9 unreproduced annotations are near-ties
    against 9 of 17 overall; without hidden utilities the claim is untestable."""
    truth = {(r.id, x): (1.0 if r.annotations == CYCLE else {"a": 3.0, "b": 2.0, "c": 1.0}[x])
             for (_, who), path in calibration.TABLE5_FILES.items() if who == "human"
             for r in _files()[path] for x in "abc"}
    measured, real = _ledger(), _ledger()
    add_near_tie_claim(measured, _world(truth=truth), n_boot=100, seed=0)
    add_near_tie_claim(real, _world())
    claim = measured.claims["alg1-conflicts-near-ties"]
    assert claim.estimate == pytest.approx(1 - 9 / 17)
    # 3 prompts are below estimates.MIN_UNITS: the hand count stands, the verdict says the data is too small
    assert claim.verdict == "insufficient data" and "3 prompts, needs at least 10" in claim.sentence
    assert real.claims["alg1-conflicts-near-ties"].kind == "untestable"


class TestChapterHelpers:
    """The conflicts chapter's worked example and file summaries."""

    def _cycle(self):
        return make_record("1", "abcd", [("a", "b", "1"), ("b", "c", "1"), ("c", "a", "1"), ("c", "d", "1")])

    def test_worked_example_merges_the_cycle(self):
        """The cycle a>b>c>a is merged first; two rounds; the table lists responses best round first."""
        ex = worked_example(self._cycle())
        assert ex["merged"] == "a, b, c" and ex["rounds"] == 2
        assert ex["rank"] == resolve("abcd", self._cycle().annotations)
        assert ex["table"]["round"].tolist() == [0, 0, 0, 1] and ex["table"]["response"].iloc[-1] == "d"
        assert sorted(ex["after"].nodes) == ["a+b+c", "d"] and sorted(ex["before"].nodes) == list("abcd")

    def test_worked_example_without_a_cycle(self):
        """Nothing to merge: "none", and the graph after merging is the annotation graph."""
        ex = worked_example(make_record("2", "ab", [("a", "b", "1")]))
        assert ex["merged"] == "none" and ex["rounds"] == 2 and ex["after"] is ex["before"]

    def test_plot_worked_example_draws_both_graphs(self):
        """Two panels: the four annotated responses on the left, the merged node and d on the right."""
        import matplotlib

        matplotlib.use("Agg")
        fig = plot_worked_example(worked_example(self._cycle()))
        left, right = fig.axes
        assert len(left.collections[0].get_offsets()) == 4 and len(right.collections[0].get_offsets()) == 2
        assert right.get_title() == "after merging, columns = rounds"

    @pytest.mark.parametrize("annotations", [
        [("a", "b", "1"), ("b", "c", "1"), ("c", "a", "1"), ("c", "d", "1")],  # one merged node and d: one row
        [("a", "c", "1"), ("c", "e", "1"), ("e", "a", "1"), ("a", "b", "1"), ("b", "d", "1"), ("e", "d", "1")],
        [("a", "b", "1"), ("b", "c", "1"), ("c", "d", "1"), ("d", "e", "1")]])  # a chain: one node per column
    def test_plot_worked_example_keeps_every_node_inside_its_panel(self, annotations):
        """No node is clipped: every node's disc (its marker's radius around its centre, in pixels) lies
        inside its panel, also when every node sits on one row of the layout (the top of the discs was cut)."""
        import matplotlib
        import numpy as np

        matplotlib.use("Agg")
        fig = plot_worked_example(worked_example(make_record("1", "abcde", annotations)))
        fig.canvas.draw()
        for ax in fig.axes:
            nodes = ax.collections[0]
            centres = ax.transData.transform(nodes.get_offsets())
            radius = np.sqrt(nodes.get_sizes()) / 2 * fig.dpi / 72  # marker size is an area in points^2
            box = ax.bbox
            assert (centres[:, 0] - radius >= box.x0).all() and (centres[:, 0] + radius <= box.x1).all(), ax.get_title()
            assert (centres[:, 1] - radius >= box.y0).all() and (centres[:, 1] + radius <= box.y1).all(), ax.get_title()

    def test_prompt_table_hand_count(self):
        """The cycle's three annotations are not reproduced; a tie is; an unannotated prompt ranks nothing (no round)."""
        recs = [self._cycle(), make_record("2", "de", [("d", "e", "0")]), make_record("3", "ab")]
        resolve_records(recs)
        table = prompt_table(recs)
        assert table["not reproduced"].tolist() == [3, 0, 0] and table["rounds"].tolist() == [2, 1, 0]
        assert table["annotations"].tolist() == [4, 1, 0] and table["responses"].tolist() == [4, 2, 2]

    def test_pair_view_counts(self):
        """a>b and c>d: four layer pairs, two implied; no pairs at all gives a NaN share."""
        rec = make_record("p", "abcd", [("a", "b", "1"), ("c", "d", "1")])
        resolve_records([rec])
        assert pair_view_counts([rec]) == {"layers": 4, "implied": 2, "share": 0.5}
        assert math.isnan(pair_view_counts([])["share"])


def test_choose_example_follows_the_users_file_or_says_it_is_the_shipped_one():
    """The worked example comes from the first source with an annotated prompt (its largest cycle); the
    sentence names the file, and names the sources passed over when it falls back to the shipped example."""
    from cheems_lib import records
    from cheems_lib.analyses.conflict_ratio import SHIPPED_EXAMPLE, choose_example

    shipped = ("the shipped example", records.read_records(SHIPPED_EXAMPLE))
    mine = [make_record("m1", "ab", [("a", "b", "1")]), make_record("m2", "abc", [("a", "b", "1"), ("b", "c", "1"),
                                                                                ("c", "a", "1")])]
    record, text = choose_example([("`mine.jsonl`", mine), shipped])
    assert record.id == "m2" and text.startswith("The example is prompt `m2` of `mine.jsonl`") and "3 responses" in text
    record, text = choose_example([("`empty.jsonl`", [make_record("e", "ab")]), shipped])
    assert record.id == "ex-poem" and text.startswith("`empty.jsonl` holds no annotated prompt. The example is prompt "
                                                      "`ex-poem` of the shipped example")


def test_worked_example_shows_a_never_compared_response_as_not_ranked():
    """A response no annotation mentions is listed last as "not ranked" and drawn (grey, its own column), not ranked best."""
    import matplotlib

    matplotlib.use("Agg")
    from cheems_lib.analyses.conflict_ratio import plot_worked_example

    ex = worked_example(make_record("p", "abc", [("a", "b", "1")]))
    assert ex["rank"] == {"a": 0, "b": 1} and ex["rounds"] == 2
    assert ex["table"]["round"].tolist() == [0, 1, "not ranked"] and ex["table"]["response"].tolist() == ["a", "b", "c"]
    plot_worked_example(ex)
