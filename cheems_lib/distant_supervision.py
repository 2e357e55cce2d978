"""Distant supervision and length debiasing: building CheemsPreference (paper §4.2, Fig. 3).

GPT-4o annotates every pair of a prompt's responses, inconsistently (cycles) and with
biases. A reward model trained on the small human-annotated golden subset then decides
which GPT comparisons to keep:

1. :func:`filter_by_reward` keeps a strict GPT comparison ``w > l`` only when the reward
   model agrees, ``r(w) - r(l) > margin``. Kept comparisons agree with one scoring, so they
   can never form a cycle; Algorithm 1 then gives each prompt a consistent partial order.
2. :func:`length_debias` splits comparisons by whether the chosen response is longer or
   shorter than the rejected one and downsamples the larger group (seeded) until the two
   are equal; equal lengths are kept.
3. :func:`build_preference` joins the human subset and the processed GPT subset.

Every step returns its records and a report in which counts in = kept + dropped.
The official repository ships only the final file; this is the pipeline.

What the preference chapter shows of it lives above, with the analyses: §4.2's no-cycle claim and the
length-balance figure in :mod:`cheems_lib.analyses.construction_ablation`, and whether the GPT annotator
prefers longer answers (Fig. 15c) in :mod:`cheems_lib.analyses.annotation_bias`.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Mapping, Sequence

import numpy as np

from .conflicts import preference_graph, resolve_records
from .records import FIRST, SECOND, Record
from .input_files import DataError, show

__all__ = ["strict_comparisons", "filter_by_reward", "chosen_length_counts", "length_debias", "build_preference",
           "count_cycles", "ABLATION", "ablation"]


def strict_comparisons(record: Record) -> list[tuple[str, str]]:
    """(chosen, rejected) of each strict annotation, in file order."""
    return [(a, b) if p == FIRST else (b, a) for a, b, p in record.annotations if p in (FIRST, SECOND)]


def _with(record: Record, comparisons: list[tuple[str, str]]) -> Record:
    return replace(record, annotations=[(w, l, FIRST) for w, l in comparisons], rank=None)


def count_cycles(record: Record) -> int:
    """Simple directed cycles of a record's annotation graph (small graphs: at most a few responses)."""
    import networkx as nx

    return sum(1 for _ in nx.simple_cycles(preference_graph(record.response_ids, record.annotations)))


def filter_by_reward(records: Sequence[Record], scores: Mapping[tuple[str, str], float], *,
                     margin: float = 0.0) -> tuple[list[Record], dict]:
    """Keep the strict comparisons the reward model agrees with (by more than ``margin``); re-rank.

    Ties in the annotations are dropped (the reward model cannot confirm a tie) and counted.
    A missing score is an error, not a silent drop. A response whose every comparison was dropped
    is left unranked (it trains nothing), not ranked with the best; ``unranked_responses_after``
    counts them.
    """
    out, kept, dropped, ties, cycles_before, cycles_after, conflicted = [], 0, 0, 0, 0, 0, 0
    for rec in records:
        comps = strict_comparisons(rec)
        ties += len(rec.annotations) - len(comps)
        for rid in rec.response_ids:
            if (rec.id, rid) not in scores:
                raise DataError(rec.origin or None, None, f"no reward-model score for prompt {show(rec.id)} response {show(rid)}",
                                "score every response of the GPT subset")
        good = [(w, l) for w, l in comps if scores[(rec.id, w)] - scores[(rec.id, l)] > margin]
        kept += len(good)
        dropped += len(comps) - len(good)
        c = count_cycles(rec)
        cycles_before += c
        conflicted += c > 0
        new = _with(rec, good)
        cycles_after += count_cycles(new)
        out.append(new)
    stats = resolve_records(out)
    report = {"prompts": len(records), "comparisons_in": kept + dropped + ties, "kept": kept,
              "dropped_disagreeing": dropped, "dropped_ties": ties, "prompts_with_cycles_before": conflicted,
              "cycles_before": cycles_before, "cycles_after": cycles_after,
              "prompts_without_comparisons_after": sum(1 for r in out if not r.annotations),
              "unranked_responses_after": stats["unranked_responses"], "conflict_ratio_after": stats["conflict_ratio"]}
    return out, report


def chosen_length_counts(records: Sequence[Record]) -> tuple[np.ndarray, np.ndarray]:
    """Per prompt, its strict comparisons whose chosen response is longer, and shorter, than the
    rejected one (equal lengths count in neither): the two groups :func:`length_debias` balances.

    >>> from cheems_lib.records import Response
    >>> rec = Record(prompt="p", responses=[Response("a", "xx"), Response("b", "x")], annotations=[("a", "b", "1")])
    >>> chosen_length_counts([rec])
    (array([1]), array([0]))
    """
    longer, shorter = np.zeros(len(records), int), np.zeros(len(records), int)
    for p, rec in enumerate(records):
        size = {x.id: len(x.content) for x in rec.responses}
        for w, l in strict_comparisons(rec):
            longer[p] += size[w] > size[l]
            shorter[p] += size[w] < size[l]
    return longer, shorter


def length_debias(records: Sequence[Record], *, seed: int | np.random.Generator = 0) -> tuple[list[Record], dict]:
    """Balance comparisons whose chosen response is longer vs shorter; re-rank.

    The larger group is downsampled uniformly at random to the size of the smaller one. A response whose
    every comparison was dropped is left unranked (``unranked_responses_after``).
    """
    rng = np.random.default_rng(seed)
    longer, shorter, equal = [], [], 0
    for p, rec in enumerate(records):
        size = {x.id: len(x.content) for x in rec.responses}
        for k, (w, l) in enumerate(strict_comparisons(rec)):
            if size[w] > size[l]:
                longer.append((p, k))
            elif size[w] < size[l]:
                shorter.append((p, k))
            else:
                equal += 1
    big, small = (longer, shorter) if len(longer) >= len(shorter) else (shorter, longer)
    keep_big = {big[i] for i in rng.choice(len(big), size=len(small), replace=False)} if big else set()
    drop = set(big) - keep_big
    out = []
    for p, rec in enumerate(records):
        out.append(_with(rec, [c for k, c in enumerate(strict_comparisons(rec)) if (p, k) not in drop]))
    stats = resolve_records(out)
    n_long_after = len(longer) - (len(drop) if big is longer else 0)
    n_short_after = len(shorter) - (len(drop) if big is shorter else 0)
    report = {"comparisons_in": len(longer) + len(shorter) + equal, "chosen_longer_before": len(longer),
              "chosen_shorter_before": len(shorter), "equal_length": equal, "dropped": len(drop),
              "chosen_longer_after": n_long_after, "chosen_shorter_after": n_short_after,
              "kept": n_long_after + n_short_after + equal, "unranked_responses_after": stats["unranked_responses"]}
    return out, report


def build_preference(human: Sequence[Record], gpt: Sequence[Record], scores: Mapping[tuple[str, str], float], *,
                     margin: float = 0.0, debias: bool = True, seed: int = 0) -> tuple[list[Record], dict]:
    """CheemsPreference: the human subset plus the GPT subset after distant supervision (and debiasing)."""
    processed, ds = filter_by_reward(gpt, scores, margin=margin)
    report = {"distant_supervision": ds}
    if debias:
        processed, report["length_debias"] = length_debias(processed, seed=seed)
    human = list(human)
    if any(r.rank is None for r in human):
        resolve_records(human)
    report["human_prompts"], report["gpt_prompts"] = len(human), len(processed)
    return human + processed, report


# Table 4's rows, in the paper's order and spelling (data/paper/table4_ablation.csv).
ABLATION = ("Human subset", "GPT subset", "GPT subset w/ length debiasing", "GPT subset w/ distant supervision",
            "GPT subset w/ all strategies", "CheemsPreference (human + processed GPT)")


def ablation(human: Sequence[Record], gpt: Sequence[Record], scores: Mapping[tuple[str, str], float], *,
             margin: float = 0.0, seed: int = 0) -> tuple[dict[str, list[Record]], dict]:
    """The six training sets of Table 4 (keys :data:`ABLATION`) and the reports of each step.

    The last set equals :func:`build_preference` with the same arguments.
    """
    gpt_ds, ds_report = filter_by_reward(gpt, scores, margin=margin)
    gpt_ld, ld_only = length_debias(gpt, seed=seed)
    gpt_all, ld_report = length_debias(gpt_ds, seed=seed)
    sets = dict(zip(ABLATION, (list(human), list(gpt), gpt_ld, gpt_ds, gpt_all, list(human) + gpt_all)))
    return sets, {"distant_supervision": ds_report, "length_debias_only": ld_only, "length_debias": ld_report}
