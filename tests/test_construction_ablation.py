"""Table 4's ablation: the side-by-side table, the per-seed figure and the claims, on made-up estimates."""
from __future__ import annotations

import numpy as np
import pytest

from cheems_lib.analyses import construction_ablation as ablation
from cheems_lib import paper
from cheems_lib.estimates import Estimate
from cheems_lib.analyses.claims import Ledger
from cheems_lib.distant_supervision import ABLATION, filter_by_reward
from cheems_lib.distant_supervision import ablation as ds_ablation
from cheems_lib.analyses.leaderboard import leaderboard_frame
from cheems_lib.metrics import SubsetResult
from cheems_lib.world.simulation import WorldConfig, build_world

SOURCE = "simulated world (size smoke, seed 0)"
NOISE = np.random.default_rng(0).normal(0, 0.01, (2, 200))  # shared by every row: paired resamples
OWN = np.random.default_rng(1).normal(0, 0.005, (len(ABLATION), 2, 200))  # each row's own part of its replicates


def _overall(values: list[float]) -> dict[str, Estimate]:
    """Per Table 4 row, an Overall estimate over two seeds (±0.005 around ``value``), paired with the others, on
    200 prompts. The replicates share most of their noise across rows (paired resamples) and add their own, so a
    difference of two rows varies from replicate to replicate (with all noise shared its interval would have no
    width: insufficient data)."""
    return {name: Estimate(np.array([v - 0.005, v + 0.005]), v + NOISE + OWN[k], n=200)
            for k, (name, v) in enumerate(zip(ABLATION, values))}


@pytest.fixture(scope="module")
def t4():
    return paper.table("table4_ablation").set_index("training_data")


def test_beside_paper(t4):
    """One row per training set in the results' order; the paper's columns are Table 4's, ours the board's "mean [interval]"."""
    noise = np.random.default_rng(1).normal(0, 0.01, 100)
    results = {name: [{sub: SubsetResult(0.5 + k / 20, 0.3, {}, 10, 0, 0.5 + k / 20 + noise, 0.3 + noise)
                       for sub in ("open", "human")} for _ in range(2)] for k, name in enumerate(ABLATION)}
    side = ablation.beside_paper(results, t4, seed=0)
    assert side["training data"].tolist() == list(ABLATION) and (side["seeds"] == 2).all()
    assert set(ablation.PAPER_COLUMNS) <= set(side.columns)
    assert side["paper overall"].tolist() == t4.loc[list(ABLATION), "overall"].tolist()
    ours = leaderboard_frame(results).set_index("model").loc[ABLATION[2]]
    assert side.loc[2, "ours overall"] == f"{ours['overall']:.3f} [{ours['overall_lo']:.3f}, {ours['overall_hi']:.3f}]"


def test_beside_paper_with_the_null_controls(t4):
    """Given the benchmark, the null controls follow the training sets in their own section: null_controls' values,
    the paper's columns "–" (it reports none), chance marked exact."""
    from cheems_lib.analyses.leaderboard import CONTROLS_SECTION
    from cheems_lib.baselines import CHANCE, CONTROLS, null_controls
    from conftest import make_record

    results = {name: [{sub: SubsetResult(0.5, 0.3, {}, 10, 0) for sub in ("open", "human")}] for name in ABLATION}
    bench = {k: [make_record(f"{k}{i}", "abc", rank={"a": 0, "b": 1, "c": 1}) for i in range(3)] for k in ("open", "human")}
    bench["open"][0].responses[0].content = "the longest response of all"
    side = ablation.beside_paper(results, t4, seed=0, bench=bench)
    controls = side[side["section"] == CONTROLS_SECTION]
    assert list(side["section"][:len(ABLATION)]) == ["training data (ours)"] * len(ABLATION)
    assert list(controls["training data"]) == list(CONTROLS) and set(controls["paper overall"]) == {"–"}
    ref = null_controls(bench, seed=0).set_index(["control", "subset", "category"])
    longest = controls.set_index("training data").loc["baseline:longest"]
    assert longest["ours open acc"] == f"{ref.loc[('baseline:longest', 'open', ''), 'accuracy']:.3f}"
    assert controls.set_index("training data").loc[CHANCE, "ours human acc"] == "0.500 (exact)"


def test_claims_follow_the_rows(t4):
    """With the paper's ordering every tested claim is supported; RewardBench claims are untestable; counts add up."""
    ledger = Ledger("preference", SOURCE)
    counts = ablation.add_claims(ledger, _overall([0.60, 0.50, 0.55, 0.58, 0.62, 0.70]), t4)
    ids = list(ledger.claims)
    assert ids[:len(ablation.DIRECTIONS)] == [d[0] for d in ablation.DIRECTIONS]
    assert ids[len(ablation.DIRECTIONS):] == ["tab4-beats-rewardbench-rms", "tab4-human-weak-on-rewardbench",
                                              "abs-cheemsrm-state-of-the-art", "abs-cheemsrm-good-on-rewardbench",
                                              "tab4-combined-best"]
    assert counts == {"n_claims_supported": 8, "n_claims": 8}
    best = ledger.claims["tab4-combined-best"]
    # the closest of the rows no other claim compares CheemsPreference with (all strategies: its own claim)
    assert best.estimate == pytest.approx(0.12) and f"({ABLATION[3]})" in best.statistic
    assert ablation.best_rivals() == list(ABLATION[1:4])
    assert {ledger.claims[i].kind for i in ids[len(ablation.DIRECTIONS):-1]} == {"untestable"}
    assert ledger.claims["tab4-human-weak-on-rewardbench"].reason == ablation.NO_REWARDBENCH


def test_human_weak_on_rewardbench_is_tested_on_the_comparator(t4):
    """Given each row's accuracy on the RewardBench-like comparator, the human subset minus CheemsPreference is a paired
    finding (direction less), no longer 'no RewardBench'; the CheemsRM claims stay untestable with their reason."""
    ledger = Ledger("preference", SOURCE)
    rb = _overall([0.55, 0.60, 0.60, 0.60, 0.60, 0.65])
    counts = ablation.add_claims(ledger, _overall([0.60, 0.50, 0.55, 0.58, 0.62, 0.70]), t4, rewardbench=rb)
    weak = ledger.claims["tab4-human-weak-on-rewardbench"]
    assert (weak.kind, weak.verdict) == ("finding", "supported") and weak.estimate == pytest.approx(-0.10)
    assert "RewardBench-like comparator" in weak.statistic and counts["n_claims"] == 9
    assert "no CheemsRM" in ledger.claims["abs-cheemsrm-state-of-the-art"].reason


def test_claims_can_be_contradicted(t4):
    """GPT above the human subset contradicts the first claim, and a row above CheemsPreference contradicts "best"."""
    ledger = Ledger("preference", SOURCE)
    counts = ablation.add_claims(ledger, _overall([0.50, 0.60, 0.65, 0.75, 0.62, 0.70]), t4)
    assert ledger.claims["tab4-human-beats-gpt"].verdict == "contradicted"
    assert ledger.claims["tab4-combined-best"].verdict == "contradicted"  # distant supervision alone beats it
    assert counts == {"n_claims_supported": 4, "n_claims": 8}  # the four directions that hold are supported


def test_first_comparison_states_its_training_ratio_beside_the_papers(t4):
    """tab4-human-beats-gpt's statistic gives the GPT : human training ratio it was tested at and the paper's, read
    from Table 1 (not typed); the other comparisons carry no ratio."""
    from cheems_lib.analyses.calibration import paper_gpt_human_ratio

    ledger = Ledger("preference", SOURCE)
    prompts = dict(zip(ABLATION, [30, 256, 200, 180, 150, 210]))
    ablation.add_claims(ledger, _overall([0.60, 0.50, 0.55, 0.58, 0.62, 0.70]), t4, prompts=prompts)
    stat = ledger.claims["tab4-human-beats-gpt"].statistic
    assert f"{256 / 30:.2f} : 1" in stat and f"the paper's {paper_gpt_human_ratio():.2f} : 1" in stat
    assert "8.55" in stat  # Table 1: 27,861 GPT-annotated / 3,260 human-annotated prompts
    assert ": 1" not in ledger.claims["tab4-length-debias-helps"].statistic


def test_rows_count_each_training_sets_prompts():
    """A training set's prompts are its records, one per prompt, by row in the rows' order."""
    from conftest import make_record
    from cheems_lib.analyses.experiments import Family

    variants = {"a": [make_record(str(i), "xy") for i in range(3)], "b": [], "c": [make_record("0", "xyz")]}
    rows = ablation.Rows(Family(variants, seeds=(0,)), {}, {}, None)
    assert rows.prompts == {"a": 3, "b": 0, "c": 1} and list(rows.prompts) == ["a", "b", "c"]


@pytest.fixture(scope="module")
def world():
    return build_world(WorldConfig(size="smoke", seed=4))


def _truth(world):
    return {(t["prompt_id"], t["response_id"]): t["utility"] for t in world.truth}


class TestLengthReport:
    def test_balance_rows_are_the_debiasing_reports(self, world):
        """Before/after counts of both debiasing runs, in reading order; after debiasing the two groups are equal."""
        human, gpt = world.files["cheems_preference/human.jsonl"], world.files["cheems_preference/gpt.jsonl"]
        _, reports = ds_ablation(human, gpt, _truth(world))
        balance = ablation.length_balance(reports)
        assert balance[["data", "when"]].values.tolist() == [["GPT subset", "before"], ["GPT subset", "after"],
                                                            ["after distant supervision", "before"],
                                                            ["after distant supervision", "after"]]
        only = reports["length_debias_only"]
        assert balance.loc[0, ["chosen longer", "chosen shorter"]].tolist() == [only["chosen_longer_before"],
                                                                                only["chosen_shorter_before"]]
        after = balance[balance["when"] == "after"]
        assert (after["chosen longer"] == after["chosen shorter"]).all()

    def test_plot_bars_are_the_counts(self, world):
        """One panel per data; its bars' heights are that panel's four counts."""
        human, gpt = world.files["cheems_preference/human.jsonl"], world.files["cheems_preference/gpt.jsonl"]
        balance = ablation.length_balance(ds_ablation(human, gpt, _truth(world))[1])
        fig = ablation.plot_length_balance(balance)
        assert len(fig.axes) == 2
        for ax, data in zip(fig.axes, ["GPT subset", "after distant supervision"]):
            assert data in ax.get_title()
            want = balance[balance["data"] == data][["chosen longer", "chosen shorter"]].to_numpy().ravel()
            assert sorted(bar.get_height() for bars in ax.containers for bar in bars) == sorted(want)
        fig.clf()


def test_cycle_claim_reads_the_filter_report(world):
    """§4.2's consistent partial order: structural, supported when the report after filtering has no cycle and conflict
    ratio 0 (as filter_by_reward guarantees), contradicted on a report that still has some, untestable without one."""
    _, rep = filter_by_reward(world.files["cheems_preference/gpt.jsonl"], _truth(world), margin=0.1)
    assert rep["cycles_before"] > 0
    ledger = Ledger("preference", "test")
    ablation.add_cycle_claim(ledger, rep)
    claim = ledger.claims["s42-no-cycles-after-ds"]
    assert (claim.kind, claim.verdict, claim.estimate) == ("structural", "supported", 0.0) and claim.reason
    bad = Ledger("preference", "test")
    ablation.add_cycle_claim(bad, {**rep, "cycles_after": 2, "conflict_ratio_after": 0.01})
    assert bad.claims["s42-no-cycles-after-ds"].verdict == "contradicted"
    none = Ledger("preference", "test")
    ablation.add_cycle_claim(none, None, reason="needs x")
    assert none.claims["s42-no-cycles-after-ds"].kind == "untestable"
