"""Simulated analogues of the open preference datasets of Table 3 (paper §6.1).

The paper trains reward models on open preference datasets and scores them on CheemsBench.
Those datasets differ in ways that can be recreated from the simulated world's preference
set, one difference at a time:

- :func:`pairwise_only` -- one chosen/rejected pair per prompt (the format of Skywork,
  HH-RLHF, Chatbot Arena, PKU-SafeRLHF, HelpSteer2) instead of a ranking of several responses;
- :func:`domain_only` -- a narrow domain (math, as in MathPreference and MathStackExchange);
- :func:`noisy_labels` -- labels flipped at random, standing in for translated or weakly
  annotated data (HH-RLHF-cn, Zhihu style).

:func:`analogues` builds the set used by the chapter, each with the one property it isolates
and the paper datasets that share that property (they differ from it in others: HH-RLHF,
Chatbot Arena, PKU-SafeRLHF and HelpSteer2 are human-annotated, while our pairwise analogue
keeps the machine labels; MathPreference and MathStackExchange are both math, yet far apart
in Table 3, so a narrow domain alone does not explain a low score).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np

from .conflicts import resolve_records
from .records import FIRST, SECOND, Record

__all__ = ["pairwise_only", "domain_only", "noisy_labels", "analogues", "TABLE3_GROUPS", "paper_accuracy"]

# Table 3's datasets grouped by format and annotation, as their own papers describe them (only
# those the grouping is clear for): UltraFeedback and Nectar rank several responses per prompt
# with GPT-4; HH-RLHF, Chatbot Arena, PKU-SafeRLHF and HelpSteer2 are human-annotated pairs.
TABLE3_GROUPS: dict[str, tuple[str, ...]] = {
    "multi-response, machine-annotated": ("UltraFeedback", "Nectar"),
    "pairwise, human-annotated": ("HH-RLHF", "ChatbotArena", "PKU-SafeRLHF", "HelpSteer2"),
}


def pairwise_only(records: Sequence[Record], *, seed: int | np.random.Generator = 0) -> list[Record]:
    """Keep one random strictly ordered pair per prompt (two responses, ranks 0 and 1)."""
    rng = np.random.default_rng(seed)
    out = []
    for rec in records:
        pairs = [(a, b) for a in rec.rank for b in rec.rank if rec.rank[a] < rec.rank[b]] if rec.rank else []
        if not pairs:
            continue
        w, l = pairs[int(rng.integers(len(pairs)))]
        keep = [x for x in rec.responses if x.id in (w, l)]
        out.append(replace(rec, responses=keep, annotations=[(w, l, FIRST)], rank={w: 0, l: 1}))
    return out


def domain_only(records: Sequence[Record], category: str) -> list[Record]:
    """Only the prompts whose top-level category is ``category``."""
    return [r for r in records if r.top_category == category]


def noisy_labels(records: Sequence[Record], *, flip: float, seed: int | np.random.Generator = 0) -> list[Record]:
    """Flip each strict annotation with probability ``flip``, then re-rank with Algorithm 1."""
    rng = np.random.default_rng(seed)
    swap = {FIRST: SECOND, SECOND: FIRST}
    out = []
    for rec in records:
        anns = [(a, b, swap[p] if p in swap and rng.random() < flip else p) for a, b, p in rec.annotations]
        out.append(replace(rec, annotations=anns, rank=None))
    resolve_records(out)
    return out


def analogues(files: dict, *, prompts: int = 800, seed: int = 0) -> dict[str, dict]:
    """``{name: {"records", "annotation", "isolates", "mimics"}}`` built from the world's preference set."""
    human, gpt = files["cheems_preference/human.jsonl"], files["cheems_preference/gpt.jsonl"]
    gpt = gpt[:prompts] if prompts else gpt
    math = domain_only(files["cheems_preference/gpt.jsonl"], "数学")[: prompts or None]
    return {
        "multi-response, human": {
            "records": list(human), "annotation": "human",
            "isolates": "human instead of machine annotation (fewer prompts: the golden subset is smaller)",
            "mimics": "CheemsPreference human subset (Table 4's Human subset row)"},
        "multi-response, machine": {
            "records": list(gpt), "annotation": "machine (GPT-like)", "isolates": "the reference for the other rows",
            "mimics": "UltraFeedback, Nectar (several responses per prompt, GPT-annotated)"},
        "pairwise only, machine": {
            "records": pairwise_only(gpt, seed=seed), "annotation": "machine (GPT-like)",
            "isolates": "one pair per prompt instead of every comparison, same prompts and labels",
            "mimics": "the pairwise format of Skywork, HH-RLHF, Chatbot Arena, PKU-SafeRLHF, HelpSteer2 "
                      "(the last four are human-annotated; this analogue keeps machine labels)"},
        "math only, machine": {
            "records": math, "annotation": "machine (GPT-like)",
            "isolates": "one domain instead of all categories (and fewer prompts)",
            "mimics": "MathPreference, MathStackExchange (both math; compare their rows in Table 3)"},
        "noisy labels (30% flipped), machine": {
            "records": noisy_labels(gpt, flip=0.3, seed=seed), "annotation": "machine, then 30% of labels flipped",
            "isolates": "label noise, same prompts and responses",
            "mimics": "HH-RLHF-cn, Zhihu (translated or weakly labelled)"},
    }


def paper_accuracy():
    """Table 3 (``data/paper/table3_datasets.csv``) with ``mean_acc``, the mean of its two accuracies,
    indexed by dataset."""
    from .paper import table

    t3 = table("table3_datasets").set_index("dataset")
    t3["mean_acc"] = t3[["open_acc", "human_acc"]].mean(axis=1)
    return t3
