"""cheems_lib.analyses.annotation_bias: Fig. 15's shares from annotation files, its panels and the biases chapter's claims."""
from __future__ import annotations

import numpy as np
import pytest

from cheems_lib import estimates
from cheems_lib.analyses import claims
from cheems_lib.analyses.annotation_bias import BiasSample, add_claims, gpt_length_sentence, plot_fig15
from cheems_lib.world.annotators import decisions_per_prompt
from cheems_lib.records import Record, Response

# response lengths a: 10, b: 4, c: 1 characters; strict decisions won by A: 1 of 2, then 1 of 3
ANNOTATIONS = [[("a", "b", "1"), ("b", "a", "2"), ("a", "c", "0")],
               [("c", "b", "2"), ("b", "c", "1"), ("a", "c", "2")]]


def _records(prefix: str) -> list[Record]:
    return [Record(prompt="p", id=f"{prefix}{k}", category=["理解"], annotations=anns,
                   responses=[Response("a", "x" * 10), Response("b", "x" * 4), Response("c", "x")])
            for k, anns in enumerate(ANNOTATIONS)]


def _files(gpt: bool = True) -> dict:
    files = {"cheems_bench/open.jsonl": _records("o"), "cheems_bench/human.jsonl": _records("h")[:1]}
    if gpt:
        files["cheems_bench_gpt/open.jsonl"] = _records("o")
    return files


def test_from_files_keeps_annotators_with_records():
    """Both human files are pooled with file/category strata; an annotator without files is left out."""
    sample = BiasSample.from_files(_files(gpt=False), n_boot=10)
    assert list(sample.records) == ["Human"] and len(sample.records["Human"]) == 3
    assert sample.strata["Human"] == ["cheems_bench/open.jsonl/理解"] * 2 + ["cheems_bench/human.jsonl/理解"]


def test_strict_decisions_hand_count():
    """Ties are left out (2 + 3 + 2 human decisions); an annotator without files has none."""
    assert BiasSample.from_files(_files(gpt=False)).strict_decisions() == {"Human": 7, "GPT": 0}


def test_shares_are_pooled_decisions():
    """Share for A pools decisions over prompts; the second-shown share is its complement."""
    sample = BiasSample.from_files(_files(), n_boot=50)
    assert sample.share_first("GPT").value == pytest.approx(2 / 5)
    assert sample.share_second("GPT").value == pytest.approx(3 / 5)
    lo, hi = sample.share_second("GPT").interval()
    assert lo <= 3 / 5 <= hi


def test_length_windows_are_in_real_characters():
    """With length_scale 0.5 the window [2, 14) real characters is [1, 7) simulated ones."""
    sample = BiasSample.from_files(_files(), length_scale=0.5, n_boot=0)
    first, n = sample.decisions("Human", 2, 14)
    expected = decisions_per_prompt(sample.records["Human"], 1, 7)
    assert first.tolist() == expected[0].tolist() and n.tolist() == expected[1].tolist()


def test_length_curve_skips_empty_bins():
    """One row per bin with decisions, its share equal to share_first over that bin."""
    sample = BiasSample.from_files(_files(), n_boot=20)
    edges = np.array([-20, -5, 0, 5, 20, 40])
    curve = sample.length_curve("Human", edges)
    assert curve[:, 0].tolist() == [-12.5, -2.5, 2.5, 12.5]
    assert curve[:, 1] == pytest.approx([sample.share_first("Human", lo, hi).value
                                         for lo, hi in zip(edges[:-2], edges[1:-1])])


def test_plot_fig15_plots_the_estimates():
    """Four panels; the length panel's points are the curve, the position bars the two shares."""
    import matplotlib

    matplotlib.use("Agg")
    sample = BiasSample.from_files(_files(), n_boot=20)
    fig = plot_fig15(sample, max_length_difference=20, n_bins=4)
    assert len(fig.axes) == 4 and fig.axes[0].get_title() == "(a) Human annotator - length bias"
    expected = sample.length_curve("Human", np.linspace(-20, 20, 5))
    assert fig.axes[0].lines[0].get_ydata() == pytest.approx(expected[:, 1])
    second = sample.share_second("GPT").value
    assert [b.get_height() for b in fig.axes[3].patches] == pytest.approx([1 - second, second])
    with pytest.raises(ValueError, match="n_bins"):
        plot_fig15(sample, n_bins=0)


def test_add_claims_estimates_and_kinds():
    """Five claims in order: the position claims estimate the second-shown share minus 0.5; on a simulated world
    GPT-4o's are calibrated (fitted) and the human ones structural (built in by design)."""
    sample = BiasSample.from_files(_files(), n_boot=50)
    ledger = claims.Ledger("biases", "simulated world (size smoke, seed 0)")
    add_claims(ledger, sample, simulated=True)
    assert list(ledger.claims) == ["fig15-gpt-position", "fig15-human-no-position", "fig15-length",
                                   "fig15-gpt-length", "fig15-human-shorter-at-large", "fig15-biases-not-pronounced"]
    assert ledger.claims["fig15-gpt-position"].estimate == pytest.approx(sample.share_second("GPT").value - 0.5)
    moderate = sample.share_first("Human", 1, claims.MODERATE_LENGTH_DIFFERENCE)
    assert ledger.claims["fig15-length"].estimate == pytest.approx(moderate.value - 0.5)
    kinds = {cid: c.kind for cid, c in ledger.claims.items()}
    assert kinds == {"fig15-gpt-position": "calibrated", "fig15-human-no-position": "structural",
                     "fig15-length": "structural", "fig15-gpt-length": "calibrated",
                     "fig15-human-shorter-at-large": "structural", "fig15-biases-not-pronounced": "structural"}


def test_not_pronounced_is_every_share_within_the_margin():
    """D.3's "not very pronounced": the estimate is the share farthest from 0.5 among both annotators' position,
    moderate and large length shares, decided by all_of within PRONOUNCED_BIAS; untestable without annotations."""
    sample = BiasSample.from_files(_files(), n_boot=50)
    ledger = claims.Ledger("biases", "test")
    add_claims(ledger, sample, simulated=False)
    claim = ledger.claims["fig15-biases-not-pronounced"]
    shares = {}
    for who in ("GPT", "Human"):
        shares[(who, "pos")] = sample.share_second(who) - 0.5
        shares[(who, "mod")] = sample.share_first(who, 1, claims.MODERATE_LENGTH_DIFFERENCE) - 0.5
        shares[(who, "large")] = sample.share_first(who, claims.LARGE_LENGTH_DIFFERENCE) - 0.5
    verdict, _, worst = estimates.all_of(shares, "equal", margin=claims.PRONOUNCED_BIAS)
    assert claim.kind == "finding" and claim.verdict == verdict and claim.estimate == pytest.approx(worst.value)
    assert "6 Fig. 15 shares" in claim.sentence or claim.verdict == estimates.INSUFFICIENT


def test_add_claims_without_gpt_annotations():
    """Without GPT-4o's files its two claims are untestable; the human ones are findings on real files."""
    ledger = claims.Ledger("biases", "data in /x")
    add_claims(ledger, BiasSample.from_files(_files(gpt=False), n_boot=20), simulated=False)
    kinds = {cid: c.kind for cid, c in ledger.claims.items()}
    assert kinds["fig15-gpt-position"] == kinds["fig15-gpt-length"] == "untestable"
    assert kinds["fig15-length"] == "finding"


def test_plot_fig15_without_gpt_files_says_what_it_needs():
    """Without GPT-4o's files its two panels say "no data: needs" the files, instead of empty axes."""
    import matplotlib

    matplotlib.use("Agg")
    fig = plot_fig15(BiasSample.from_files(_files(gpt=False), n_boot=20), max_length_difference=20, n_bins=4)
    texts = [[t.get_text() for t in ax.texts] for ax in fig.axes]
    needs = "no data: needs cheems_bench_gpt/open.jsonl or cheems_bench_gpt/human.jsonl"
    assert texts[2] == texts[3] == [needs] and texts[0] == texts[1] == []
    assert fig.axes[3].get_title() == "(d) GPT annotator - positional bias"


def test_plot_fig15_length_panel_without_decisions_in_range_says_so():
    """A length panel with no strict decision inside its range says what it needs (no empty curve)."""
    import matplotlib

    matplotlib.use("Agg")
    fig = plot_fig15(BiasSample.from_files(_files(), n_boot=20), max_length_difference=1, n_bins=2)
    assert fig.axes[0].texts[0].get_text().startswith("no data: needs a strict decision within ±1 characters")


def test_add_claims_on_few_prompts_have_insufficient_data():
    """Two prompts (a user's small folder) give no verdict: every tested claim says insufficient data with
    the count of prompts, never 'as in the paper'."""
    ledger = claims.Ledger("biases", "data in /x")
    add_claims(ledger, BiasSample.from_files(_files(), n_boot=50), simulated=False)
    for c in ledger.claims.values():
        assert c.verdict == estimates.INSUFFICIENT, c.id
        assert c.sentence.startswith("Insufficient data: ") and "needs at least 10" in c.sentence
        assert "paper" not in c.sentence


def test_longer_share_counts_by_hand():
    """Two prompts: the longer response wins 2 of 3 strict decisions (a tie and an equal-length
    pair are left out), so the share is 2/3; 0.5 is no preference."""
    from cheems_lib.analyses.annotation_bias import longer_share, longer_wins

    r1 = Record(prompt="q1", id="q1", responses=[Response("a", "xx"), Response("b", "xxxx"), Response("c", "yy")],
                annotations=[("a", "b", "2"), ("a", "c", "1"), ("b", "c", "0")])
    r2 = Record(prompt="q2", id="q2", responses=[Response("a", "xxxxx"), Response("b", "x")],
                annotations=[("a", "b", "2")])
    won, decided = longer_wins([r1, r2])
    assert won.tolist() == [1.0, 0.0] and decided.tolist() == [1.0, 1.0]
    r1.annotations.append(("c", "b", "2"))
    assert longer_share([r1, r2], n_boot=0).value == 2 / 3


def test_model_labels_are_never_called_human():
    """A sample whose benchmark labels are a model's (a real folder's manifest): panel titles and sentences name
    the model, and the three claims about human annotators are untestable with the reason."""
    from cheems_lib.analyses import annotation_bias

    sample = annotation_bias.BiasSample.from_files(_files(gpt=False), n_boot=100, labels=("gpt-3.5-turbo", True))
    assert sample.title("Human") == "cheems_bench/ (gpt-3.5-turbo)" and "human" not in sample.who("Human").lower()
    ledger = claims.Ledger("biases", "data in /x")
    annotation_bias.add_claims(ledger, sample, simulated=False)
    by_id = ledger.claims
    for cid in ("fig15-human-no-position", "fig15-length", "fig15-human-shorter-at-large"):
        assert by_id[cid].kind == "untestable" and by_id[cid].reason == "the benchmark's labels are gpt-3.5-turbo's, not human"
    people = annotation_bias.BiasSample.from_files(_files(gpt=False), n_boot=100, labels=("unknown labels", False))
    assert people.not_human("Human") is None and people.who("Human") == "the annotators of cheems_bench/ (unknown labels)"


@pytest.mark.parametrize("chosen, verdict_start", [
    ("long", "The simulated GPT-4o prefers longer answers"),
    ("short", "The simulated GPT-4o does not prefer longer answers"),
    ("mixed", "In the GPT subset the chosen"),
])
def test_gpt_length_sentence(chosen, verdict_start):
    """The sentence follows the verdict on the chosen-longer share: longer in four prompts of five, shorter in four
    of five, half and half."""
    recs = []
    for i in range(40):
        won = {"long": "ab"[i % 5 == 0], "short": "ba"[i % 5 == 0], "mixed": "ab"[i % 2]}[chosen]
        recs.append(Record(prompt=f"p{i}", id=f"p{i}", responses=[Response("a", "xx"), Response("b", "x")],
                           annotations=[(won, "ab".replace(won, ""), "1")], category=["理解"]))
    text = gpt_length_sentence(recs, n_boot=200, seed=0)
    assert text.startswith(verdict_start)
    longer = {"long": 32, "short": 8, "mixed": 20}[chosen]
    assert f"the longer one in {longer:,} comparisons and the shorter one in {40 - longer:,}" in text


def test_gpt_length_sentence_all_longer_is_insufficient():
    """Every prompt choosing the longer answer gives every resample the same share: an interval of no width, so
    insufficient data (with the count), not a preference."""
    recs = [Record(prompt=f"p{i}", id=f"p{i}", responses=[Response("a", "xx"), Response("b", "x")],
                   annotations=[("a", "b", "1")], category=["理解"]) for i in range(40)]
    text = gpt_length_sentence(recs, n_boot=200, seed=0)
    assert text.startswith("Insufficient data: 40 prompts, but every bootstrap resample gives the same value")
