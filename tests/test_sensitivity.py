"""Sensitivity sweeps: the verdict summary, the refused ratios, what a shared-noise world changes, the sweep's
figure and its claim."""
from __future__ import annotations

from dataclasses import replace

import matplotlib
import numpy as np
import pandas as pd
import pytest

from cheems_lib import estimates
from cheems_lib.analyses import claim_registry, claims, sensitivity
from cheems_lib.world.annotators import HumanAnnotator
from cheems_lib.world.simulation import WorldConfig, build_world


def _sweep(verdicts, values=(0.0, 0.3, 0.8)):
    return pd.DataFrame({"value": values, "estimate": [0.1] * len(values), "ci_low": [0.0] * len(values),
                         "ci_high": [0.2] * len(values), "seeds": [1] * len(values), "verdict": verdicts})


@pytest.mark.parametrize("verdicts, expected", [
    (["supported", "supported", "supported"], "supported"),
    (["contradicted", "contradicted", "contradicted"], "supported"),
    (["contradicted", "supported", "inconclusive"], "contradicted"),
    (["inconclusive", "supported", "supported"], "inconclusive"),
    (["inconclusive", "inconclusive", "inconclusive"], "inconclusive"),
    (["supported", "inconclusive", "supported"], "inconclusive"),
])
def test_summary_says_whether_the_verdict_at_the_worlds_value_holds(verdicts, expected):
    """A sweep is robust when every value repeats the definite verdict at the world's own value, flips on the
    opposite one; an inconclusive verdict at the world's own value is never 'robust', even when every point shares it."""
    verdict, base = sensitivity.summarize(_sweep(verdicts), 0.3)
    assert verdict == expected and base["value"] == 0.3 and base["verdict"] == verdicts[1]


def test_summary_needs_the_worlds_own_value():
    """A sweep without the world's own value cannot say whether that verdict holds."""
    with pytest.raises(ValueError, match="no point at the world's own value"):
        sensitivity.summarize(_sweep(["supported"] * 3), 0.5)


def test_ratio_beyond_the_world_is_refused():
    """Asking for more GPT prompts than the world holds is an error naming the fix, not a silent cut."""
    with pytest.raises(ValueError, match=r"needs 40 GPT-annotated prompts for the 10 human ones, and the world "
                                         r"\(size smoke\) has 30 \(fix: a larger world size\)"):
        sensitivity.ratio_sweep(_World(), [4.0])


class _World:
    """A world's prompt counts: 10 human-annotated, 30 GPT-annotated."""

    size = "smoke"
    human = [object()] * 10

    def gpt(self):
        return [object()] * 30


def test_unfit_says_why_a_ratio_cannot_be_trained():
    """A ratio the world holds is fit (None); one beyond it gets the reason the chapter's untestable claim shows."""
    assert sensitivity.unfit(_World(), 3.0) is None and sensitivity.unfit(_World(), 2.96) is None
    assert sensitivity.unfit(_World(), 8.55) == ("GPT : human 8.55 : 1 needs 86 GPT-annotated prompts for the 10 human "
                                                 "ones, and the world (size smoke) has 30 (fix: a larger world size)")


def test_ratio_values_add_one_and_the_papers_and_keep_what_the_world_holds():
    """1 : 1 and the paper's ratio join the asked ones, once each and ascending; ratios beyond the world drop out."""
    assert sensitivity.ratio_values(_World(), [3, 2.0, 1], 2.5) == [1.0, 2.0, 2.5, 3.0]
    assert sensitivity.ratio_values(_World(), [], 8.55) == [1.0]


def test_shared_noise_changes_only_the_human_labels():
    """Re-simulating with another shared noise keeps every text and GPT label, and changes human rankings."""
    a = build_world(WorldConfig(size="smoke", seed=1)).files
    b = build_world(WorldConfig(size="smoke", seed=1, human=replace(HumanAnnotator(), shared_noise=0.9))).files
    for path in a:
        assert [r.responses for r in a[path]] == [r.responses for r in b[path]]
    assert a["cheems_preference/gpt.jsonl"] == b["cheems_preference/gpt.jsonl"]
    assert a["cheems_bench_gpt/open.jsonl"] == b["cheems_bench_gpt/open.jsonl"]
    assert [r.rank for r in a["cheems_preference/human.jsonl"]] != [r.rank for r in b["cheems_preference/human.jsonl"]]
    assert [r.rank for r in a["cheems_bench/open.jsonl"]] != [r.rank for r in b["cheems_bench/open.jsonl"]]


class _Ledger(claims.Ledger):
    """A ledger that does not glue (no notebook here)."""

    def add(self, claim, *, glue=False):
        return super().add(claim, glue=False)


def test_sweep_figure_plots_the_estimates_with_their_intervals():
    """Each point sits at its estimate with its interval as error bar, coloured by verdict; the marked value drawn."""
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sweep = _sweep(["supported", "inconclusive", "supported"]).assign(estimate=[0.1, 0.02, 0.15],
                                                                       ci_low=[0.05, -0.01, 0.1])
    fig = sensitivity.sweep_figure(sweep, "shared_noise", marked=0.3, model="tiny-xs")
    ax = fig.axes[0]
    points = {tuple(x) for c in ax.containers for x in np.column_stack(c.lines[0].get_data())}
    assert points == set(zip(sweep["value"], sweep["estimate"]))
    bars = {round(float(s[1][1] - s[0][1]), 9) for c in ax.containers for s in c.lines[2][0].get_segments()}
    assert bars == {round(h - lo, 9) for lo, h in zip(sweep["ci_low"], sweep["ci_high"])}
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == ["inconclusive", "supported"]
    assert "humans' shared noise" in ax.get_title() and "tiny-xs" in ax.get_title()
    assert any(list(line.get_xdata()) == [0.3, 0.3] for line in ax.lines)
    plt.close(fig)
    empty = sensitivity.sweep_figure(None, "ratio", marked=8.5, model="tiny-xs")
    assert not empty.axes[0].axison and empty.axes[0].texts[0].get_text().startswith("real files")
    plt.close(empty)


def test_sweep_claim_records_the_summary():
    """The claim carries summarize's verdict and the row at the world's own value, and names the flips; a sweep
    is of kind robustness (never a finding), with its reason naming the swept claim."""
    ledger = _Ledger("sensitivity", "test")
    sweep = _sweep(["contradicted", "supported", "inconclusive"])
    sensitivity.add_sweep_claim(ledger, sweep, "ratio", own=0.3)
    claim = ledger.claims[sensitivity.ASSUMPTIONS["ratio"].claim_id]
    assert claim.verdict == "contradicted"
    assert claim.estimate == 0.1 and claim.kind == "robustness" and claim.link == "sensitivity-ratio"
    assert "0 (contradicted), 0.8 (inconclusive)" in claim.sentence
    assert "tab4-human-beats-gpt" in claim.reason and "not a claim of the paper" in claim.reason


def test_inconclusive_own_value_lists_every_verdict():
    """With an inconclusive verdict at the world's own value there are no flips to name: the sentence says there is
    no definite verdict to hold and lists each value's verdict (it used to end in an empty list, "everywhere: .")."""
    ledger = _Ledger("sensitivity", "test")
    sensitivity.add_sweep_claim(ledger, _sweep(["inconclusive"] * 3), "shared_noise", own=0.3)
    claim = ledger.claims[sensitivity.ASSUMPTIONS["shared_noise"].claim_id]
    assert claim.verdict == "inconclusive" and ": ." not in claim.sentence
    assert "no definite verdict to hold" in claim.sentence and "0.8 (inconclusive)" in claim.sentence


def test_unswept_claim_is_untestable():
    """On real files (no sweep) the claim is untestable and inconclusive, with the assumption's reason."""
    ledger = _Ledger("sensitivity", "test")
    sensitivity.add_sweep_claim(ledger, None, "shared_noise", own=0.5)
    (claim,) = ledger.claims.values()
    assert (claim.kind, claim.verdict) == ("untestable", "inconclusive")
    assert claim.reason == sensitivity.ASSUMPTIONS["shared_noise"].unswept_reason


def _ratio_sweep(ratio, diff, verdict="supported"):
    """A one-row ratio sweep at ``ratio`` whose estimate rides along as :func:`sensitivity.ratio_sweep` leaves it."""
    lo, hi = diff.interval(seed=0)
    sweep = pd.DataFrame([{"value": ratio, "gpt_prompts": round(ratio * 30), "estimate": diff.value, "ci_low": lo,
                           "ci_high": hi, "seeds": diff.seeds, "n": diff.n, "verdict": verdict}])
    sweep.attrs["diffs"] = {ratio: diff}
    return sweep


def test_paper_ratio_claim_is_a_finding_from_the_sweeps_point():
    """Table 4's first comparison at the paper's ratio is a finding of its own (not a sweep), with the 1:1 claim's
    statistic, decided from the replicates of the sweep's point at that ratio (so it carries a p-value for Holm's
    rule), and the paper's Table 4 numbers."""
    from cheems_lib import paper
    from cheems_lib.analyses.construction_ablation import paper_pair

    ratio = 8.546319018404908
    diff = estimates.Estimate.single(0.009, np.linspace(-0.005, 0.022, 200), n=2492)
    ledger = _Ledger("sensitivity", "test")
    sensitivity.add_paper_ratio_claim(ledger, _ratio_sweep(ratio, diff), sensitivity.SweepConfig(), ratio=ratio)
    claim = ledger.claims[sensitivity.PAPER_RATIO_ID]
    assert claim.id == "tab4-human-beats-gpt-paper-ratio" and claim.kind == "finding"
    assert claim.paper_ref.startswith("§6.3") and claim.verdict == estimates.decide(diff, "greater") == "inconclusive"
    assert claim.estimate == pytest.approx(0.009) and claim.n == 2492 and np.isfinite(claim.p)
    assert "Human subset minus GPT subset" in claim.statistic and "256 : 30, the paper's 8.55 : 1" in claim.statistic
    assert claim.paper == paper_pair(paper.table("table4_ablation").set_index("training_data"), "Human subset",
                                     "GPT subset")
    assert claim.sentence.startswith("Inconclusive: Overall of Human subset minus GPT subset (tiny-xs reward models)")
    assert claim.sentence.endswith("do not tell whether the GPT subset alone underperforms the human subset, at the "
                                   "paper's GPT : human ratio (8.55 : 1).")


@pytest.mark.parametrize("sweep, why, reason", [
    (None, None, "not trained at the paper's ratio: the sweep trains on the simulated subsets only"),
    ("other ratio", "GPT : human 8.55 : 1 needs 86 GPT-annotated prompts", "not trained at the paper's ratio: GPT : "
     "human 8.55 : 1 needs 86 GPT-annotated prompts"),
])
def test_paper_ratio_claim_is_untestable_where_the_ratio_was_not_trained(sweep, why, reason):
    """Real files (no sweep) or a world too small for the paper's ratio: the claim is in the ledger as untestable
    with the generated reason, never absent."""
    if sweep == "other ratio":
        sweep = _ratio_sweep(1.0, estimates.Estimate.single(0.1, np.linspace(0.05, 0.15, 50), n=100))
    ledger = _Ledger("sensitivity", "test")
    sensitivity.add_paper_ratio_claim(ledger, sweep, sensitivity.SweepConfig(), ratio=8.55, why=why)
    claim = ledger.claims[sensitivity.PAPER_RATIO_ID]
    assert (claim.kind, claim.verdict, claim.reason) == ("untestable", "inconclusive", reason)


def test_paper_ratio_claim_is_robustness_where_the_book_already_trains_at_that_ratio():
    """Where the preference chapter's own GPT : human ratio is the paper's (the smoke world: 256 : 30), the claim at
    the paper's ratio repeats its test: kind robustness with the reason, so Holm's rule counts the comparison once;
    at another ratio (the default's 800 : 815) it stays a finding."""
    ratio = 8.546319018404908
    diff = estimates.Estimate.single(0.009, np.linspace(-0.005, 0.022, 200), n=2492)
    for book_ratio, kind in ((256 / 30, "robustness"), (800 / 815, "finding"), (None, "finding")):
        ledger = _Ledger("sensitivity", "test")
        sensitivity.add_paper_ratio_claim(ledger, _ratio_sweep(ratio, diff), sensitivity.SweepConfig(), ratio=ratio,
                                          book_ratio=book_ratio)
        claim = ledger.claims[sensitivity.PAPER_RATIO_ID]
        assert claim.kind == kind, book_ratio
        assert ("a second test of tab4-human-beats-gpt" in claim.reason) == (kind == "robustness")
    text = sensitivity.headline(_ledger_rows(paper_kind="robustness"))
    assert text.startswith("The preference chapter already trains at the paper's GPT : human ratio")
    assert "supported, 0.020 [0.010, 0.030] over 3 training seeds" in text and "tab4" not in text


def _ledger_rows(paper_kind="finding", paper_verdict="inconclusive", one_verdict="supported"):
    rows = [{"id": sensitivity.TAB4, "kind": "finding", "verdict": one_verdict, "estimate": 0.02, "ci_low": 0.01,
             "ci_high": 0.03, "seeds": 3, "reason": ""},
            {"id": sensitivity.PAPER_RATIO_ID, "kind": paper_kind, "verdict": paper_verdict, "estimate": 0.009,
             "ci_low": -0.005, "ci_high": 0.022, "seeds": 1, "reason": "why not"}]
    return pd.DataFrame(rows)


def test_headline_is_the_claim_at_the_papers_ratio():
    """The Claims page's headline names the claim at the paper's ratio with both verdicts, and says whether they
    differ; where the paper's ratio is untestable it names the 1:1 claim and says the paper's setting is untested."""
    text = sensitivity.headline(_ledger_rows())
    assert text.startswith("The headline is the test at the paper's GPT : human ratio: inconclusive, 0.009 [-0.005, 0.022] "
                           "over 1 training seed")
    assert "supported, 0.020 [0.010, 0.030] over 3 training seeds" in text and "The two verdicts differ" in text
    assert "tab4" not in text  # no claim ids in generated sentences
    assert "The two verdicts agree." in sensitivity.headline(_ledger_rows(paper_verdict="supported"))
    untested = sensitivity.headline(_ledger_rows(paper_kind="untestable"))
    assert untested.startswith("The headline is the preference chapter's test")
    assert "untestable, why not" in untested and "not tested in this build" in untested
    assert "no headline" in sensitivity.headline(_ledger_rows().iloc[:1])


def test_shared_noise_sweeps_build_each_world_once_for_both_claims(monkeypatch):
    """Every value re-simulates one world for both claims; Table 3's sets are the transfer chapter's pairwise sets
    (transfer.annotation_pairs) with that world's human labels, and the machine pairs come from one list at every
    value (the GPT labels do not change), as many as that world's human pairs; Table 4's GPT set is the same."""
    from cheems_lib.analyses import transfer, world_folder
    from cheems_lib.world import simulation
    from cheems_lib.world_files import LAYOUT

    world = world_folder.open_world("", "smoke", 0)
    built, seen = [], []
    real_build = simulation.build_world
    monkeypatch.setattr(sensitivity, "build_world", lambda cfg: built.append(cfg) or real_build(cfg))

    def fake(world_, first, second, bench, cfg, names):
        seen.append((names, list(first), list(second)))
        return {"estimate": 0.0, "ci_low": -1.0, "ci_high": 1.0, "seeds": 1, "n": 50, "verdict": "inconclusive",
                "diff": None}

    monkeypatch.setattr(sensitivity, "difference", fake)
    sweeps = sensitivity.shared_noise_sweeps(world, [0.0, 0.8])
    assert list(sweeps) == [sensitivity.TAB4, sensitivity.TAB3] and len(built) == 2
    assert all(list(s["value"]) == [0.0, 0.8] for s in sweeps.values())
    tab3 = [x for x in seen if x[0] == (transfer.PAIR_HUMAN, transfer.PAIR_MACHINE)]
    assert len(tab3) == 2 and tab3[0][1] != tab3[1][1]
    short, long_ = sorted((x[2] for x in tab3), key=len)
    assert long_[:len(short)] == short and all(len(x[1]) == len(x[2]) for x in tab3)
    tab4 = [x for x in seen if x[0] == sensitivity.TARGETS[sensitivity.TAB4].names]
    assert len(tab4) == 2 and tab4[0][2] == tab4[1][2] and tab4[0][1] != tab4[1][1]
    human = real_build(built[1]).files[LAYOUT["pref_human"]]
    assert (tab3[1][1], tab3[1][2]) == transfer.annotation_pairs(human, world.gpt(), seed=0)
    with pytest.raises(ValueError, match="no sweep target 'nope'"):
        sensitivity.shared_noise_sweeps(world, [0.0], targets=("nope",))


def test_shared_noise_claims_sweep_the_worlds_own_value_too_and_record_both(monkeypatch):
    """Both claims come from one call of shared_noise_sweeps, at the asked values and the world's own, ascending;
    unswept (real files), nothing is simulated and both claims are untestable."""
    calls = []
    monkeypatch.setattr(sensitivity, "shared_noise_sweeps", lambda world, values, cfg: calls.append(values) or {
        sensitivity.TAB4: _sweep(["supported"] * 3), sensitivity.TAB3: _sweep(["contradicted", "supported", "supported"])})
    ledger = _Ledger("sensitivity", "test")
    tab4, tab3 = sensitivity.add_shared_noise_claims(ledger, "world", [0.8, 0.0, 0.8], own=0.3)
    assert calls == [[0.0, 0.3, 0.8]] and list(tab4["verdict"]) == ["supported"] * 3
    assert [(c.id, c.verdict) for c in ledger.claims.values()] == [
        ("tab4-human-beats-gpt-vs-shared-noise", "supported"), ("tab3-human-beats-machine-vs-shared-noise", "contradicted")]
    ledger = _Ledger("sensitivity", "test")
    assert sensitivity.add_shared_noise_claims(ledger, "world", [0.8], own=0.3, swept=False) == (None, None)
    assert len(calls) == 1 and {c.kind for c in ledger.claims.values()} == {"untestable"} and len(ledger.claims) == 2


def test_tab3_sweep_claim_is_robustness_of_our_question():
    """The shared-noise sweep of tab3-human-beats-machine is its own robustness claim (never a finding, never
    credited to the paper), linked to its section, with its reason naming the swept claim; drawn with its labels."""
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ledger = _Ledger("sensitivity", "test")
    sensitivity.add_sweep_claim(ledger, _sweep(["supported"] * 3), "shared_noise", own=0.3, target=sensitivity.TAB3)
    claim = ledger.claims["tab3-human-beats-machine-vs-shared-noise"]
    assert (claim.kind, claim.verdict, claim.link) == ("robustness", "supported", "sensitivity-shared-noise-tab3")
    # a sweep of our own question is ours: the registry says which part of the paper it relates to
    assert "tab3-human-beats-machine" in claim.reason and claim.paper_ref.startswith(claim_registry.OURS_PREFIX)
    assert "pairwise human-annotated set minus a pairwise machine-annotated set" in claim.statistic
    fig = sensitivity.sweep_figure(_sweep(["supported"] * 3), "shared_noise", marked=0.3, model="tiny-xs",
                                   target=sensitivity.TAB3)
    assert fig.axes[0].get_title().startswith("Our Table 3 question") and "machine" in fig.axes[0].get_ylabel()
    plt.close(fig)
    ledger = _Ledger("sensitivity", "test")
    sensitivity.add_sweep_claim(ledger, None, "shared_noise", own=0.3, target=sensitivity.TAB3)
    assert ledger.claims["tab3-human-beats-machine-vs-shared-noise"].kind == "untestable"
