"""Algorithm 1 (spec §2): three implementations agree, and the ratios match hand counts."""
from __future__ import annotations

import itertools
import math

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cheems_lib.conflicts import (conflict_stats, literal_agreement, near_tie_counts, ordered_pairs, pair_view_counts,
                                  plot_worked_example, preference_graph, prompt_conflicts, prompt_table, reproduced,
                                  resolve, resolve_literal, resolve_records, worked_example)
from conftest import make_record


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

    def test_unannotated_response_is_round_zero(self):
        """A response in no annotation is a source, as in Algorithm 1."""
        assert resolve("abc", [("a", "b", "1")]) == {"a": 0, "b": 1, "c": 0}

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
        assert min(rank.values()) == 0


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
        assert kept.rank == {"a": 1, "b": 0} and fresh.rank == {"a": 0, "b": 0}
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


class TestChapterHelpers:
    """The conflicts chapter's worked example, random-graph comparison and file summaries."""

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

    def test_literal_agreement_counts_every_graph(self):
        """The literal loop and the condensation agree on every random graph (the proof), none drawn gives 0."""
        assert literal_agreement(150, seed=3) == 150 and literal_agreement(0) == 0

    def test_prompt_table_hand_count(self):
        """The cycle's three annotations are not reproduced; a tie is; an unannotated prompt has one round."""
        recs = [self._cycle(), make_record("2", "de", [("d", "e", "0")]), make_record("3", "ab")]
        resolve_records(recs)
        table = prompt_table(recs)
        assert table["not reproduced"].tolist() == [3, 0, 0] and table["rounds"].tolist() == [2, 1, 1]
        assert table["annotations"].tolist() == [4, 1, 0] and table["responses"].tolist() == [4, 2, 2]

    def test_pair_view_counts(self):
        """a>b and c>d: four layer pairs, two implied; no pairs at all gives a NaN share."""
        rec = make_record("p", "abcd", [("a", "b", "1"), ("c", "d", "1")])
        resolve_records([rec])
        assert pair_view_counts([rec]) == {"layers": 4, "implied": 2, "share": 0.5}
        assert math.isnan(pair_view_counts([])["share"])


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


def test_choose_example_follows_the_users_file_or_says_it_is_the_shipped_one():
    """The worked example comes from the first source with an annotated prompt (its largest cycle); the
    sentence names the file, and names the sources passed over when it falls back to the shipped example."""
    from cheems_lib import records
    from cheems_lib.conflicts import SHIPPED_EXAMPLE, choose_example
    from conftest import make_record

    shipped = ("the shipped example", records.read_records(SHIPPED_EXAMPLE))
    mine = [make_record("m1", "ab", [("a", "b", "1")]), make_record("m2", "abc", [("a", "b", "1"), ("b", "c", "1"),
                                                                                ("c", "a", "1")])]
    record, text = choose_example([("`mine.jsonl`", mine), shipped])
    assert record.id == "m2" and text.startswith("The example is prompt `m2` of `mine.jsonl`") and "3 responses" in text
    record, text = choose_example([("`empty.jsonl`", [make_record("e", "ab")]), shipped])
    assert record.id == "ex-poem" and text.startswith("`empty.jsonl` holds no annotated prompt. The example is prompt "
                                                      "`ex-poem` of the shipped example")
