"""Distant supervision and length debiasing: acyclic results, exact balance, every count accounted for."""
from __future__ import annotations

import json

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cheems_lib.conflicts import preference_graph
from cheems_lib.distant_supervision import (ablation, build_preference, chosen_length_counts, filter_by_reward,
                                            gpt_length_sentence, length_balance, length_debias, plot_length_balance,
                                            strict_comparisons)
from cheems_lib.records import DataError, Record, Response
from cheems_lib.world.simulation import WorldConfig, build_world
from conftest import make_record


@pytest.fixture(scope="module")
def world():
    return build_world(WorldConfig(size="smoke", seed=4))


def _truth(world):
    return {(t["prompt_id"], t["response_id"]): t["utility"] for t in world.truth}


class TestFilterByReward:
    def test_keeps_only_agreeing_and_acyclic(self, world):
        """Reward filtering keeps only comparisons the scores agree with, leaving no cycle."""
        gpt = world.files["cheems_preference/gpt.jsonl"]
        scores = _truth(world)
        out, rep = filter_by_reward(gpt, scores, margin=0.1)
        for rec in out:
            assert nx.is_directed_acyclic_graph(preference_graph(rec.response_ids, rec.annotations))
            assert all(scores[(rec.id, w)] - scores[(rec.id, l)] > 0.1 for w, l in strict_comparisons(rec))
        assert rep["comparisons_in"] == rep["kept"] + rep["dropped_disagreeing"] + rep["dropped_ties"]
        assert rep["comparisons_in"] == sum(len(r.annotations) for r in gpt)
        assert rep["cycles_after"] == 0 and rep["cycles_before"] > 0 and rep["conflict_ratio_after"] == 0

    @settings(max_examples=100, deadline=None)
    @given(st.lists(st.floats(-3, 3), min_size=2, max_size=6), st.randoms(use_true_random=False))
    def test_any_scores_give_a_dag(self, values, rnd):
        """Filtering by any scores leaves an acyclic preference graph."""
        ids = [f"r{i}" for i in range(len(values))]
        anns = [(a, b, rnd.choice("12")) for i, a in enumerate(ids) for b in ids[i + 1:]]
        rec = make_record("p", ids, anns)
        (out,), _ = filter_by_reward([rec], {("p", r): v for r, v in zip(ids, values)})
        assert nx.is_directed_acyclic_graph(preference_graph(ids, out.annotations))

    def test_missing_score_is_an_error(self):
        """Filtering names a response with no reward-model score."""
        rec = make_record("p", "ab", [("a", "b", "1")])
        with pytest.raises(DataError, match="no reward-model score"):
            filter_by_reward([rec], {("p", "a"): 1.0})


class TestLengthDebias:
    def test_balances_exactly_and_is_seeded(self, world):
        """Length debiasing leaves as many longer as shorter chosen responses, seeded."""
        gpt = world.files["cheems_preference/gpt.jsonl"]
        out, rep = length_debias(gpt, seed=1)
        assert rep["chosen_longer_after"] == rep["chosen_shorter_after"]
        assert rep["comparisons_in"] == rep["kept"] + rep["dropped"]
        longer = shorter = 0
        for rec in out:
            size = {x.id: len(x.content) for x in rec.responses}
            for w, l in strict_comparisons(rec):
                longer += size[w] > size[l]
                shorter += size[w] < size[l]
        assert longer == shorter == rep["chosen_longer_after"]
        again, _ = length_debias(gpt, seed=1)
        assert [r.annotations for r in again] == [r.annotations for r in out]

    def test_length_counts_are_the_groups_debiasing_balances(self, world):
        """chosen_length_counts per prompt sums to the report's longer/shorter counts before debiasing."""
        gpt = world.files["cheems_preference/gpt.jsonl"]
        longer, shorter = chosen_length_counts(gpt)
        _, rep = length_debias(gpt, seed=1)
        assert longer.shape == shorter.shape == (len(gpt),)
        assert (int(longer.sum()), int(shorter.sum())) == (rep["chosen_longer_before"], rep["chosen_shorter_before"])


def test_build_preference_and_cli(world, tmp_path):
    """build_preference and its CLI keep every record and give each a rank."""
    from cheems_lib.records import write_records
    from cheems_lib.score_file import write_scores
    from test_cli import run

    human, gpt = world.files["cheems_preference/human.jsonl"], world.files["cheems_preference/gpt.jsonl"]
    recs, rep = build_preference(human, gpt, _truth(world))
    assert len(recs) == len(human) + len(gpt) and all(r.rank is not None for r in recs)
    write_records(human, tmp_path / "h.jsonl")
    write_records(gpt, tmp_path / "g.jsonl")
    write_scores(((p, r, s) for (p, r), s in _truth(world).items()), tmp_path / "s.jsonl")
    out = run("preference", "--human", tmp_path / "h.jsonl", "--gpt", tmp_path / "g.jsonl", "--scores", tmp_path / "s.jsonl",
              "-o", tmp_path / "cp.jsonl")
    assert out.returncode == 0, out.stderr
    printed = json.loads(out.stdout)
    assert printed["records"] == len(recs) and printed["length_debias"] == rep["length_debias"]


class TestLengthReport:
    def test_balance_rows_are_the_debiasing_reports(self, world):
        """Before/after counts of both debiasing runs, in reading order; after debiasing the two groups are equal."""
        human, gpt = world.files["cheems_preference/human.jsonl"], world.files["cheems_preference/gpt.jsonl"]
        _, reports = ablation(human, gpt, _truth(world))
        balance = length_balance(reports)
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
        balance = length_balance(ablation(human, gpt, _truth(world))[1])
        fig = plot_length_balance(balance)
        assert len(fig.axes) == 2
        for ax, data in zip(fig.axes, ["GPT subset", "after distant supervision"]):
            assert data in ax.get_title()
            want = balance[balance["data"] == data][["chosen longer", "chosen shorter"]].to_numpy().ravel()
            assert sorted(bar.get_height() for bars in ax.containers for bar in bars) == sorted(want)
        fig.clf()

    @pytest.mark.parametrize("chosen, verdict_start", [
        ("long", "The simulated GPT-4o prefers longer answers"),
        ("short", "The simulated GPT-4o does not prefer longer answers"),
        ("mixed", "In the GPT subset the chosen"),
    ])
    def test_gpt_length_sentence(self, chosen, verdict_start):
        """The sentence follows the verdict on the chosen-longer share: all longer, all shorter, half and half."""
        recs = []
        for i in range(40):
            won = {"long": "a", "short": "b", "mixed": "ab"[i % 2]}[chosen]
            recs.append(Record(prompt=f"p{i}", id=f"p{i}", responses=[Response("a", "xx"), Response("b", "x")],
                               annotations=[(won, "ab".replace(won, ""), "1")], category=["理解"]))
        text = gpt_length_sentence(recs, n_boot=200, seed=0)
        assert text.startswith(verdict_start)
        longer = {"long": 40, "short": 0, "mixed": 20}[chosen]
        assert f"the longer one in {longer:,} comparisons and the shorter one in {40 - longer:,}" in text


def test_cycle_claim_reads_the_filter_report(world):
    """§4.2's consistent partial order: structural, supported when the report after filtering has no cycle and conflict
    ratio 0 (as filter_by_reward guarantees), contradicted on a report that still has some, untestable without one."""
    from cheems_lib.analyses.claims import Ledger
    from cheems_lib.distant_supervision import add_cycle_claim

    _, rep = filter_by_reward(world.files["cheems_preference/gpt.jsonl"], _truth(world), margin=0.1)
    assert rep["cycles_before"] > 0
    ledger = Ledger("preference", "test")
    add_cycle_claim(ledger, rep)
    claim = ledger.claims["s42-no-cycles-after-ds"]
    assert (claim.kind, claim.verdict, claim.estimate) == ("structural", "supported", 0.0) and claim.reason
    bad = Ledger("preference", "test")
    add_cycle_claim(bad, {**rep, "cycles_after": 2, "conflict_ratio_after": 0.01})
    assert bad.claims["s42-no-cycles-after-ds"].verdict == "contradicted"
    none = Ledger("preference", "test")
    add_cycle_claim(none, None, reason="needs x")
    assert none.claims["s42-no-cycles-after-ds"].kind == "untestable"
