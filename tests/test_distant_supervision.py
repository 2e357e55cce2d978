"""Distant supervision and length debiasing: acyclic results, exact balance, every count accounted for."""
from __future__ import annotations

import json

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cheems_lib.conflicts import preference_graph
from cheems_lib.distant_supervision import (build_preference, chosen_length_counts, filter_by_reward,
                                            length_debias, strict_comparisons)
from cheems_lib.input_files import DataError
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


def test_a_response_whose_comparisons_were_all_dropped_is_not_ranked_best():
    """a > b and c > b; the reward model disagrees with c > b, c's only comparison: c is left unranked and makes
    no training pair (before, it was a source tied with the best and 'beat' b)."""
    from cheems_lib.distant_supervision import filter_by_reward
    from cheems_lib.records import strict_pairs

    rec = make_record("p", "abc", [("a", "b", "1"), ("c", "b", "1")])
    scores = {("p", "a"): 2.0, ("p", "b"): 1.0, ("p", "c"): 0.0}  # disagrees with c > b
    [out], report = filter_by_reward([rec], scores)
    assert out.rank == {"a": 0, "b": 1} and strict_pairs(out.rank, out.response_ids) == [("a", "b")]
    assert report["unranked_responses_after"] == 1
