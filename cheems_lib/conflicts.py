"""Conflict resolution: the paper's Algorithm 1 (§3.2, appendix C) and conflict ratios.

Annotations ``[a, b, p]`` become a preference graph: an edge winner -> loser for a strict
preference, edges both ways for a tie. Algorithm 1 merges every cycle into one node until
the graph is acyclic, then peels sources: round 0 is every node with no incoming edge,
round 1 the sources left after removing them, and so on. Merging cycles one at a time
ends in the strongly connected components (a cycle lies inside one component, and each
component is a union of cycles), so ::

    ranks = topological generations of the condensation of the preference graph

Example: ``a > b, b > c, c > a, c > d`` has the cycle ``a, b, c``; after merging,
``{a, b, c} -> d`` gives ``rank = {a: 0, b: 0, c: 0, d: 1}``.

A response that no annotation mentions is not ranked: it is left out of ``rank``, so it makes no
comparison for training or evaluation. As a node of the graph it would be a source and come out
in round 0, tied with the best response, from no evidence at all (a record ``a > b`` with a third
response ``c`` never compared would assert ``c > b``). Here the paper's algorithm is silent (its
data compares every response) and the project's contract used to give such a response round 0;
leaving it out is the reading that asserts nothing nobody said. Every reader counts the responses
left out (:func:`unranked_responses`, ``unranked_responses`` in :func:`conflict_stats`).

Three implementations, one result (the tests check they agree on random graphs):

- :func:`resolve` -- one prompt, networkx condensation; the readable definition.
- :func:`resolve_literal` -- one prompt, Algorithm 1 verbatim (DFS finds a cycle, merge,
  repeat), for the chapter and as the reference in tests and benchmarks.
- :func:`resolve_records` -- many prompts at once: reachability by batched boolean
  matrix products, grouped by prompt size, which is what makes ``cheems resolve`` fast.

:func:`literal_agreement` compares the literal loop with :func:`resolve` on random graphs. The
conflicts chapter's worked example and tables are in :mod:`cheems_lib.analyses.conflict_ratio`.
"""
from __future__ import annotations

import itertools
import random
from typing import Iterable, Sequence

import numpy as np

from .records import FIRST, SECOND, TIE, Record, strict_pairs

__all__ = [
    "preference_graph", "resolve", "resolve_literal", "resolve_records", "reproduced",
    "conflict_stats", "prompt_conflicts", "near_tie_counts", "ordered_pairs", "reachability",
    "literal_agreement", "mentioned", "unranked_responses",
]

Annotation = tuple[str, str, str]


def preference_graph(response_ids: Sequence[str], annotations: Iterable[Annotation]):
    """Directed graph winner -> loser; a tie adds both directions. Every response is a node."""
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(response_ids)
    for a, b, p in annotations:
        if p in (FIRST, TIE):
            g.add_edge(a, b)
        if p in (SECOND, TIE):
            g.add_edge(b, a)
    return g


def mentioned(annotations: Iterable[Annotation]) -> set[str]:
    """The responses some annotation compares: the ones Algorithm 1 can rank from evidence."""
    return {rid for a, b, _ in annotations for rid in (a, b)}


def unranked_responses(record: Record) -> int:
    """How many responses of ``record`` its ``rank`` leaves out (all of them when it has none): they take
    part in no comparison."""
    return sum(rid not in (record.rank or {}) for rid in record.response_ids)


def resolve(response_ids: Sequence[str], annotations: Iterable[Annotation]) -> dict[str, int]:
    """Algorithm 1 for one prompt: ranks from the condensation's topological generations, for the
    responses the annotations mention (a response in no annotation is left out, see the module doc).

    >>> resolve(["a", "b", "c", "d"], [("a", "b", "1"), ("b", "c", "1"), ("c", "a", "1"), ("d", "c", "2")])
    {'a': 0, 'b': 0, 'c': 0, 'd': 1}
    >>> resolve(["a", "b", "c"], [("a", "b", "1")])
    {'a': 0, 'b': 1}
    """
    import networkx as nx

    annotations = list(annotations)
    seen = mentioned(annotations)
    cond = nx.condensation(preference_graph(response_ids, annotations))
    rank: dict[str, int] = {}
    for depth, layer in enumerate(nx.topological_generations(cond)):
        for node in layer:
            for rid in cond.nodes[node]["members"]:
                rank[rid] = depth
    return {rid: rank[rid] for rid in response_ids if rid in seen}


def resolve_literal(response_ids: Sequence[str], annotations: Iterable[Annotation],
                    *, steps: list | None = None) -> dict[str, int]:
    """Algorithm 1 as printed: find one cycle by depth-first search, merge it, repeat.

    Slow on purpose (one DFS per merge). If ``steps`` is a list, each merge is appended
    as ``(members_of_the_new_node, graph_after_merge)`` so the chapter can draw it. Like :func:`resolve`,
    a response no annotation mentions is left out of the ranking.
    """
    import networkx as nx

    annotations = list(annotations)
    seen = mentioned(annotations)
    g = preference_graph(response_ids, annotations)
    members = {rid: frozenset([rid]) for rid in g.nodes}
    while True:
        try:
            cycle = nx.find_cycle(g)
        except nx.NetworkXNoCycle:
            break
        nodes = {u for u, _ in cycle}
        merged = frozenset().union(*(members.pop(n) for n in nodes))
        new = "+".join(sorted(merged))
        g.add_node(new)
        for n in sorted(nodes):  # sorted: string-set order varies with PYTHONHASHSEED; redirect every edge into / out of the cycle onto the merged node
            for u, _ in list(g.in_edges(n)):
                if u not in nodes:
                    g.add_edge(u, new)
            for _, v in list(g.out_edges(n)):
                if v not in nodes:
                    g.add_edge(new, v)
            g.remove_node(n)
        members[new] = merged
        if steps is not None:
            steps.append((merged, g.copy()))
    rank, depth = {}, 0
    while g:
        sources = [n for n in g if g.in_degree(n) == 0]
        for n in sources:
            for rid in members[n]:
                rank[rid] = depth
        g.remove_nodes_from(sources)
        depth += 1
    return {rid: rank[rid] for rid in response_ids if rid in seen}


def reachability(adjacency: np.ndarray) -> np.ndarray:
    """Reflexive-transitive closure of a stack of boolean adjacency matrices ``(..., k, k)``.

    Repeated squaring: ``ceil(log2 k)`` batched matrix products.
    """
    k = adjacency.shape[-1]
    reach = adjacency | np.eye(k, dtype=bool)
    while True:
        r = reach.astype(np.float32)
        nxt = (r @ r) > 0
        if np.array_equal(nxt, reach):
            return reach
        reach = nxt


def _heights(reach: np.ndarray) -> np.ndarray:
    """Peeling round of each node: the longest chain of strict predecessors (``(..., k)``)."""
    strict = reach & ~np.swapaxes(reach, -1, -2)  # i strictly above j
    height = np.zeros(reach.shape[:-1], dtype=np.int64)
    while True:
        nxt = np.where(strict, height[..., :, None] + 1, 0).max(axis=-2)
        if np.array_equal(nxt, height):
            return height
        height = nxt


def _adjacency(records: Sequence[Record], k: int) -> np.ndarray:
    """Stack the preference graphs of records that all have ``k`` responses."""
    adj = np.zeros((len(records), k, k), dtype=bool)
    ps, rows, cols = [], [], []
    for p, rec in enumerate(records):
        index = {rid: i for i, rid in enumerate(rec.response_ids)}
        for a, b, pref in rec.annotations:
            i, j = index[a], index[b]
            if pref != SECOND:
                ps.append(p), rows.append(i), cols.append(j)
            if pref != FIRST:
                ps.append(p), rows.append(j), cols.append(i)
    adj[ps, rows, cols] = True
    return adj


def resolve_records(records: Sequence[Record], *, overwrite: bool = True) -> dict[str, int | float]:
    """Resolve every record's annotations in place (sets ``rank``) and return :func:`conflict_stats`.

    A record without annotations keeps the ``rank`` it has; if it has none, it gets an empty
    one (no evidence ranks any of its responses). Such records are counted as
    ``unannotated_prompts``; a response no annotation mentions is left out of ``rank`` and
    counted in ``unranked_responses``. With ``overwrite=False`` existing ranks are kept.
    """
    by_size: dict[int, list[Record]] = {}
    for rec in records:
        if not rec.annotations:
            if rec.rank is None:
                rec.rank = {}
        elif overwrite or rec.rank is None:
            by_size.setdefault(len(rec.responses), []).append(rec)
    for k, group in by_size.items():
        # bound memory: chunks of about 4M matrix cells
        step = max(1, 4_000_000 // (k * k))
        for start in range(0, len(group), step):
            chunk = group[start:start + step]
            heights = _heights(reachability(_adjacency(chunk, k))).tolist()
            for rec, h in zip(chunk, heights):
                seen = mentioned(rec.annotations)
                rec.rank = {rid: r for rid, r in zip(rec.response_ids, h) if rid in seen}
    return conflict_stats(records)


def reproduced(annotations: Iterable[Annotation], rank: dict[str, int]) -> list[bool]:
    """Whether each annotation agrees with ``rank``: strict ``a > b`` needs ``rank[a] < rank[b]``, a tie equal ranks."""
    out = []
    for a, b, p in annotations:
        ra, rb = rank[a], rank[b]
        out.append(ra < rb if p == FIRST else ra > rb if p == SECOND else ra == rb)
    return out


def conflict_stats(records: Iterable[Record]) -> dict[str, int | float]:
    """Conflict ratios of resolved records (spec §2).

    ``conflict_ratio`` = share of annotated prompts with at least one annotation that the
    ranking does not reproduce (the figure of the paper's Table 5); ``pair_conflict_ratio``
    = share of annotations (ties included) not reproduced. Prompts without annotations are
    not in either denominator and are counted in ``unannotated_prompts``; ``unranked_responses``
    counts the responses a ranking leaves out (:func:`unranked_responses`).
    """
    prompts = annotated = conflicted = n_ann = n_bad = ties = unranked = 0
    for rec in records:
        prompts += 1
        unranked += unranked_responses(rec)
        if not rec.annotations:
            continue
        if rec.rank is None:
            raise ValueError(f"record {rec.id} has annotations but no rank: resolve it first")
        ok = reproduced(rec.annotations, rec.rank)
        annotated += 1
        n_ann += len(ok)
        bad = len(ok) - sum(ok)
        n_bad += bad
        conflicted += bad > 0
        ties += sum(p == TIE for _, _, p in rec.annotations)
    return {
        "prompts": prompts,
        "annotations": n_ann,
        "tie_annotations": ties,
        "unannotated_prompts": prompts - annotated,
        "conflicted_prompts": conflicted,
        "conflict_ratio": conflicted / annotated if annotated else 0.0,
        "unreproduced_annotations": n_bad,
        "pair_conflict_ratio": n_bad / n_ann if n_ann else 0.0,
        "unranked_responses": unranked,
    }


def prompt_conflicts(records: Sequence[Record]) -> dict[str, np.ndarray]:
    """Per record, for a bootstrap over prompts: ``annotated`` and ``conflicted`` (0/1), ``annotations``
    and ``unreproduced`` (counts).

    ``conflicted.sum() / annotated.sum()`` is :func:`conflict_stats`' ``conflict_ratio`` and
    ``unreproduced.sum() / annotations.sum()`` its ``pair_conflict_ratio``.
    """
    rows = []
    for rec in records:
        if rec.annotations and rec.rank is None:
            raise ValueError(f"record {rec.id} has annotations but no rank: resolve it first")
        ok = reproduced(rec.annotations, rec.rank) if rec.annotations else []
        bad = len(ok) - sum(ok)
        rows.append((bool(ok), bad > 0, len(ok), bad))
    cols = np.array(rows, dtype=float).reshape(-1, 4)
    return dict(zip(("annotated", "conflicted", "annotations", "unreproduced"), cols.T))


def near_tie_counts(records: Sequence[Record], utility: dict[tuple[str, str], float], threshold: float
                    ) -> dict[str, np.ndarray]:
    """Per record: annotations (``all``) and annotations the ranking does not reproduce (``unreproduced``),
    and of each how many compare a near-tie (``near_all``, ``near_unreproduced``): two responses whose
    hidden ``utility[(prompt id, response id)]`` differ by less than ``threshold``."""
    rows = []
    for rec in records:
        ok = reproduced(rec.annotations, rec.rank) if rec.annotations else []
        near = [abs(utility[(rec.id, a)] - utility[(rec.id, b)]) < threshold for a, b, _ in rec.annotations]
        rows.append((len(ok), sum(near), len(ok) - sum(ok), sum(n and not k for n, k in zip(near, ok))))
    cols = np.array(rows, dtype=float).reshape(-1, 4)
    return dict(zip(("all", "near_all", "unreproduced", "near_unreproduced"), cols.T))


def ordered_pairs(record: Record, *, view: str = "layers") -> list[tuple[str, str]]:
    """The (better, worse) pairs a resolved record asserts.

    ``view="layers"`` (the paper's and spec §3's): every pair with different ranks
    (:func:`cheems_lib.records.strict_pairs`, in response order).
    ``view="implied"`` (stricter): only pairs where the better response reaches the worse
    one in the annotation graph but not back -- i.e. the transitive closure of what the
    annotators said, leaving out pairs that differ only because peeling put them in
    different layers (``a > b`` and an unrelated ``c`` end up ``c`` above ``b``).
    """
    ids = record.response_ids
    if view == "layers":
        if record.rank is None:
            raise ValueError(f"record {record.id} has no rank: resolve it first")
        return strict_pairs(record.rank, ids)
    if view == "implied":
        reach = reachability(_adjacency([record], len(ids)))[0]
        return [(ids[i], ids[j]) for i in range(len(ids)) for j in range(len(ids))
                if reach[i, j] and not reach[j, i]]
    raise ValueError(f"view must be 'layers' or 'implied', got {view!r}")


def literal_agreement(n_graphs: int, *, seed: int = 0, max_responses: int = 8) -> int:
    """On how many of ``n_graphs`` random annotation graphs :func:`resolve_literal` and :func:`resolve`
    give the same ranking (the proof in the chapter says: all).

    Each graph has 2 to ``max_responses`` responses; each pair is annotated with probability 0.6, the
    first preferred with probability 1/2, the second or a tie 1/4 each.
    """
    rng = random.Random(seed)
    agree = 0
    for _ in range(n_graphs):
        k = rng.randint(2, max_responses)
        ids = [f"r{i}" for i in range(k)]
        anns = [(a, b, rng.choice("0112")) for a, b in itertools.combinations(ids, 2) if rng.random() < 0.6]
        agree += resolve_literal(ids, anns) == resolve(ids, anns)
    return agree
