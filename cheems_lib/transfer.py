"""Simulated analogues of the open preference datasets of Table 3 (paper §6.1).

The paper trains reward models on open preference datasets and scores them on CheemsBench.
Those datasets differ in ways that can be recreated from the simulated world's preference
set, one difference at a time:

- :func:`pairwise_only` -- one chosen/rejected pair per prompt (HH-RLHF, Chatbot Arena,
  PKU-SafeRLHF style) instead of a ranking of several responses;
- :func:`domain_only` -- a narrow domain (MathPreference, MathStackExchange style);
- :func:`noisy_labels` -- labels flipped at random, standing in for translated or weakly
  annotated data (HH-RLHF-cn, Zhihu style).

:func:`analogues` builds the set used by the chapter, each with the paper datasets it mimics.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np

from .conflicts import resolve_records
from .records import FIRST, SECOND, Record

__all__ = ["pairwise_only", "domain_only", "noisy_labels", "analogues"]


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


def analogues(files: dict, *, prompts: int = 2000, seed: int = 0) -> dict[str, dict]:
    """``{name: {"records", "mimics", "annotation"}}`` built from the world's preference set."""
    human, gpt = files["cheems_preference/human.jsonl"], files["cheems_preference/gpt.jsonl"]
    gpt = gpt[:prompts] if prompts else gpt
    return {
        "multi-response, human": {"records": list(human), "annotation": "human", "mimics": "CheemsPreference human subset"},
        "multi-response, machine": {"records": list(gpt), "annotation": "machine (GPT-like)",
                                    "mimics": "UltraFeedback, Nectar, Skywork"},
        "pairwise only, machine": {"records": pairwise_only(gpt, seed=seed), "annotation": "machine (GPT-like)",
                                   "mimics": "HH-RLHF, Chatbot Arena, PKU-SafeRLHF, HelpSteer2"},
        "math only, machine": {"records": domain_only(files["cheems_preference/gpt.jsonl"], "数学")[: prompts or None],
                               "annotation": "machine (GPT-like)", "mimics": "MathPreference, MathStackExchange"},
        "noisy labels (30% flipped), machine": {"records": noisy_labels(gpt, flip=0.3, seed=seed),
                                                "annotation": "machine, then 30% of labels flipped",
                                                "mimics": "HH-RLHF-cn, Zhihu (translated or weakly labelled)"},
    }
