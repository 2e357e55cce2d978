"""Algorithm 1 (spec §2): three implementations agree, and the ratios match hand counts."""
from __future__ import annotations

import itertools

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cheems_lib.conflicts import (conflict_stats, literal_agreement, near_tie_counts, ordered_pairs, preference_graph,
                                  prompt_conflicts, reproduced, resolve, resolve_literal, resolve_records)
from conftest import make_record
from cheems_lib.records import strict_pairs


@st.composite
def annotated_prompt(draw, max_k=8):
    k = draw(st.integers(1, max_k))
    ids = [f"r{i}" for i in range(k)]
    pairs = list(itertools.permutations(ids, 2))
    anns = draw(st.lists(st.tuples(st.sampled_from(pairs) if pairs else st.nothing(), st.sampled_from("120")),
                         max_size=3 * k) if pairs else st.just([]))
    return ids, [(a, b, p) for (a, b), p in anns]


class TestResolve:
    def test_worked_example(self):
        """The docstring example: the cycle a>b>c>a merges, d is one round below."""
        anns = [("a", "b", "1"), ("b", "c", "1"), ("c", "a", "1"), ("c", "d", "1")]
        assert resolve("abcd", anns) == {"a": 0, "b": 0, "c": 0, "d": 1}

    def test_never_compared_response_is_not_ranked(self):
        """A response in no annotation is left out of the ranking (as a graph node it would be a source, tied
        with the best from no evidence), by all three implementations, and counted."""
        assert resolve("abc", [("a", "b", "1")]) == {"a": 0, "b": 1}
        assert resolve_literal("abc", [("a", "b", "1")]) == {"a": 0, "b": 1}
        rec = make_record("p", "abc", [("a", "b", "1")])
        stats = resolve_records([rec])
        assert rec.rank == {"a": 0, "b": 1} and strict_pairs(rec.rank, rec.response_ids) == [("a", "b")]
        assert stats["unranked_responses"] == 1 and stats["unannotated_prompts"] == 0

    def test_tie_merges(self):
        """A tie is an edge both ways, i.e. a 2-cycle: equal ranks."""
        assert resolve("abc", [("a", "b", "0"), ("b", "c", "1")]) == {"a": 0, "b": 0, "c": 1}

    def test_rounds_are_longest_paths_not_shortest(self):
        """a>b>c and a>c: c is peeled in round 2, after b."""
        assert resolve("abc", [("a", "b", "1"), ("b", "c", "1"), ("a", "c", "1")]) == {"a": 0, "b": 1, "c": 2}

    @settings(max_examples=300, deadline=None)
    @given(annotated_prompt())
    def test_literal_equals_condensation_equals_batch(self, prompt):
        """Cycle-by-cycle merging (paper), SCC condensation (networkx) and the batched matrix engine agree."""
        ids, anns = prompt
        expected = resolve_literal(ids, anns)
        assert resolve(ids, anns) == expected
        rec = make_record("p", ids, anns)
        resolve_records([rec])
        assert rec.rank == expected

    @settings(max_examples=200, deadline=None)
    @given(annotated_prompt())
    def test_ranking_is_a_valid_layering(self, prompt):
        """Responses on a common cycle share a rank; every other edge goes strictly down; rank 0 exists."""
        ids, anns = prompt
        rank = resolve(ids, anns)
        g = preference_graph(ids, anns)
        comp = {n: i for i, c in enumerate(nx.strongly_connected_components(g)) for n in c}
        for u, v in g.edges:
            assert rank[u] == rank[v] if comp[u] == comp[v] else rank[u] < rank[v]
        assert min(rank.values(), default=0) == 0
        assert set(rank) == {x for a, b, _ in anns for x in (a, b)}  # exactly the responses compared


class TestResolveRecords:
    def test_mixed_sizes_and_many_prompts(self):
        """Batching by size gives the same ranks as one-at-a-time resolution."""
        import random

        rng = random.Random(0)
        recs = []
        for p in range(300):
            ids = [f"x{i}" for i in range(rng.randint(1, 9))]
            anns = [(a, b, rng.choice("0112")) for a, b in itertools.combinations(ids, 2) if rng.random() < .5]
            recs.append(make_record(str(p), ids, anns))
        resolve_records(recs)
        assert all(r.rank == resolve(r.response_ids, r.annotations) for r in recs)

    def test_unannotated_record_keeps_existing_rank(self):
        """Without annotations an existing rank is kept (nothing to recompute) and counted."""
        kept = make_record("k", "ab", rank={"a": 1, "b": 0})
        fresh = make_record("f", "ab")
        stats = resolve_records([kept, fresh])
        assert kept.rank == {"a": 1, "b": 0} and fresh.rank == {}
        assert stats["unannotated_prompts"] == 2 and stats["conflict_ratio"] == 0.0


class TestConflictStats:
    def test_hand_count(self):
        """Cycle a>b>c>a: its three annotations are not reproduced; c>d, the tie and b>a (p3) are."""
        p1 = make_record("1", "abcd", [("a", "b", "1"), ("b", "c", "1"), ("c", "a", "1"), ("c", "d", "1")])
        p2 = make_record("2", "de", [("d", "e", "0")])
        p3 = make_record("3", "ab", [("a", "b", "2")])
        stats = resolve_records([p1, p2, p3])
        assert stats["annotations"] == 6 and stats["unreproduced_annotations"] == 3
        assert stats["pair_conflict_ratio"] == pytest.approx(3 / 6)
        assert stats["conflicted_prompts"] == 1 and stats["conflict_ratio"] == pytest.approx(1 / 3)
        assert stats["tie_annotations"] == 1

    def test_reproduced_rules(self):
        """reproduced says which annotations the rank agrees with, ties included."""
        rank = {"a": 0, "b": 1, "c": 1}
        assert reproduced([("a", "b", "1"), ("a", "b", "2"), ("b", "c", "0"), ("a", "c", "0")], rank) == [True, False, True, False]

    def test_needs_rank(self):
        """conflict_stats refuses records that were not resolved."""
        with pytest.raises(ValueError, match="resolve it first"):
            conflict_stats([make_record("p", "ab", [("a", "b", "1")])])


class TestPromptConflicts:
    def _records(self):
        p1 = make_record("1", "abcd", [("a", "b", "1"), ("b", "c", "1"), ("c", "a", "1"), ("c", "d", "1")])
        p2 = make_record("2", "de", [("d", "e", "0")])
        p3 = make_record("3", "ab")
        resolve_records([p1, p2, p3])
        return [p1, p2, p3]

    def test_sums_give_conflict_stats(self):
        """Per-prompt counts add up to conflict_stats' ratios, unannotated prompts outside both denominators."""
        recs = self._records()
        per, stats = prompt_conflicts(recs), conflict_stats(recs)
        assert per["annotated"].tolist() == [1, 1, 0] and per["conflicted"].tolist() == [1, 0, 0]
        assert per["conflicted"].sum() / per["annotated"].sum() == pytest.approx(stats["conflict_ratio"])
        assert per["unreproduced"].sum() / per["annotations"].sum() == pytest.approx(stats["pair_conflict_ratio"])

    def test_near_ties_hand_count(self):
        """The cycle a>b>c>a is not reproduced; with utilities a=1, b=1.2, c=3, d=0 only a-b is a near-tie."""
        recs = self._records()
        utility = {("1", "a"): 1.0, ("1", "b"): 1.2, ("1", "c"): 3.0, ("1", "d"): 0.0, ("2", "d"): 2.0, ("2", "e"): 2.1}
        counts = near_tie_counts(recs, utility, 0.5)
        assert counts["all"].tolist() == [4, 1, 0] and counts["near_all"].tolist() == [1, 1, 0]
        assert counts["unreproduced"].tolist() == [3, 0, 0] and counts["near_unreproduced"].tolist() == [1, 0, 0]


class TestOrderedPairs:
    def test_implied_drops_layer_only_pairs(self):
        """a>b and c>d: layers add a>d and c>b, which no annotation implies."""
        rec = make_record("p", "abcd", [("a", "b", "1"), ("c", "d", "1")])
        resolve_records([rec])
        assert sorted(ordered_pairs(rec)) == [("a", "b"), ("a", "d"), ("c", "b"), ("c", "d")]
        assert sorted(ordered_pairs(rec, view="implied")) == [("a", "b"), ("c", "d")]

    @settings(max_examples=100, deadline=None)
    @given(annotated_prompt())
    def test_implied_is_transitive_closure_subset_of_layers(self, prompt):
        """Implied pairs = strict pairs of networkx's transitive closure, and a subset of the layer pairs."""
        ids, anns = prompt
        rec = make_record("p", ids, anns)
        resolve_records([rec])
        closure = nx.transitive_closure(preference_graph(ids, anns), reflexive=False)
        expected = {(u, v) for u, v in closure.edges if u != v and not closure.has_edge(v, u)}
        assert set(ordered_pairs(rec, view="implied")) == expected
        assert expected <= set(ordered_pairs(rec))

    def test_bad_view(self):
        """ordered_pairs refuses an unknown view."""
        with pytest.raises(ValueError, match="view"):
            ordered_pairs(make_record("p", "a", rank={"a": 0}), view="all")


def test_literal_agreement_counts_every_graph():
    """The literal loop and the condensation agree on every random graph (the proof), none drawn gives 0."""
    assert literal_agreement(150, seed=3) == 150 and literal_agreement(0) == 0


def test_merge_order_does_not_depend_on_the_hash_seed():
    """resolve_literal's merged graphs (which the worked-example figure draws) are the same under any
    PYTHONHASHSEED: set iteration over response ids must not decide edge order."""
    import os
    import subprocess
    import sys

    code = ("from cheems_lib.conflicts import resolve_literal\n"
            "ann = [('a','b','1'),('b','c','1'),('c','a','1'),('c','d','1'),('d','e','1'),('e','c','1'),('a','f','1')]\n"
            "steps = []\n"
            "resolve_literal(list('abcdef'), ann, steps=steps)\n"
            "print([(sorted(m), list(g.edges)) for m, g in steps])\n")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": str(s)}).stdout for s in range(6)}
    assert len(outs) == 1, outs
