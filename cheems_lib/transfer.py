"""Simulated analogues of the open preference datasets of Table 3 (paper §6.1).

The paper trains reward models on open preference datasets and scores them on CheemsBench.
Those datasets differ in several ways at once (:data:`TABLE3_DATASETS`): pairwise or
multi-response, human- or machine-annotated, general or narrow (math, safety), English or
Chinese. The simulated world's preference set can be changed one property at a time:

- :func:`pairwise_only` -- one chosen/rejected pair per prompt instead of a ranking of
  several responses (the format of HH-RLHF, Chatbot Arena, HelpSteer2, Skywork, ...);
- :func:`domain_only` -- a narrow domain (math);
- :func:`noisy_labels` -- labels flipped at random (no Table 3 row is known to differ only so;
  not trained by the chapter, to keep the CPU budget).

:func:`analogues` builds the sets the chapter trains. Each has the properties of
:data:`PROPERTIES` (annotation, format, domain, labels), the property it isolates, and the
Table 3 rows it stands for: those whose annotation, format and domain are all its own (a
test checks them against :data:`TABLE3_DATASETS` and ``data/paper/table3_datasets.csv``).
:func:`nearest` names the rows that differ from an analogue in one property only.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np

from .conflicts import resolve_records
from .records import FIRST, SECOND, Record, strict_pairs

__all__ = ["pairwise_only", "domain_only", "noisy_labels", "analogues", "PROPERTIES", "TABLE3_DATASETS",
           "nearest", "table3_groups", "paper_accuracy"]

PROPERTIES = ("annotation", "format", "domain")
"""The properties an analogue shares with the Table 3 rows it stands for."""

# What each Table 3 dataset is, as its own release describes it. The Cheems paper prints only
# the names and citations (appendix E), so these are ours; "unknown" where the paper cites no
# source we could place or the release does not say. Labels from community votes count as human.
TABLE3_DATASETS: dict[str, dict[str, str]] = {
    "HH-RLHF-cn": {"annotation": "human", "format": "pairwise", "domain": "general",
                   "note": "a Chinese translation of HH-RLHF (no source cited); assumed to keep its human labels"},
    "Huozi": {"annotation": "unknown", "format": "unknown", "domain": "general",
              "note": "Huozi-Team (2024), open-domain chat; how its preferences were labelled is not stated in the paper"},
    "Kyara": {"annotation": "unknown", "format": "unknown", "domain": "unknown",
              "note": "Yang (2024); the paper gives no description"},
    "Zhihu": {"annotation": "human", "format": "pairwise", "domain": "general",
              "note": "Yucheng (2023): Zhihu answer pairs ranked by community votes"},
    "ChatbotArena": {"annotation": "human", "format": "pairwise", "domain": "general",
                     "note": "Zheng et al. (2023): users vote between two chatbots' answers"},
    "HH-RLHF": {"annotation": "human", "format": "pairwise", "domain": "general",
                "note": "Bai et al. (2022), Ganguli et al. (2022): crowdworkers pick the more helpful or harmless reply"},
    "MathPreference": {"annotation": "unknown", "format": "unknown", "domain": "math",
                       "note": "no source cited; math by its name"},
    "Nectar": {"annotation": "machine", "format": "multi-response", "domain": "general",
               "note": "Zhu et al. (2023): GPT-4 ranks 7 responses per prompt"},
    "PKU-SafeRLHF": {"annotation": "human", "format": "pairwise", "domain": "safety",
                     "note": "Ji et al. (2024): human preference pairs on safety-related prompts"},
    "Skywork": {"annotation": "machine", "format": "pairwise", "domain": "general",
                "note": "Liu et al. (2024a): curated pairs, most scored by a reward model or built with GPT-4 "
                        "(its HelpSteer2 part is human)"},
    "MathStackExchange": {"annotation": "human", "format": "multi-response", "domain": "math",
                          "note": "Lambert et al. (2023): several answers per math question, ranked by votes"},
    "UltraFeedback": {"annotation": "machine", "format": "multi-response", "domain": "general",
                      "note": "Cui et al. (2023): GPT-4 rates 4 responses per prompt"},
    "HelpSteer2": {"annotation": "human", "format": "pairwise", "domain": "general",
                   "note": "Wang et al. (2024d): human ratings of 2 responses per prompt"},
}


def nearest(props: dict[str, str]) -> dict[str, str]:
    """``{dataset: property}`` for the Table 3 rows that differ from ``props`` in exactly one known property.

    Table 3's labels count as they were annotated, so an analogue whose ``labels`` were changed
    differs from every row in ``labels`` too.

    >>> sorted(nearest({"annotation": "machine", "format": "multi-response", "domain": "math"}).items())
    [('MathStackExchange', 'annotation'), ('Nectar', 'domain'), ('UltraFeedback', 'domain')]
    """
    out = {}
    for name, row in TABLE3_DATASETS.items():
        if all(row[p] != "unknown" for p in PROPERTIES):
            differ = [p for p in PROPERTIES if row[p] != props[p]]
            differ += ["labels"] if props.get("labels", "as annotated") != "as annotated" else []
            if len(differ) == 1:
                out[name] = differ[0]
    return out


def table3_groups() -> dict[str, tuple[str, ...]]:
    """Table 3's datasets grouped by ``"format, annotation"`` (rows with either unknown left out)."""
    out: dict[str, tuple[str, ...]] = {}
    for name, row in TABLE3_DATASETS.items():
        if "unknown" not in (row["format"], row["annotation"]):
            key = f"{row['format']}, {row['annotation']}-annotated"
            out[key] = out.get(key, ()) + (name,)
    return out


def pairwise_only(records: Sequence[Record], *, seed: int | np.random.Generator = 0) -> list[Record]:
    """Keep one random strictly ordered pair per prompt (two responses, ranks 0 and 1)."""
    rng = np.random.default_rng(seed)
    out = []
    for rec in records:
        pairs = strict_pairs(rec.rank or {})
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


def _analogue(records, annotation, format, domain, isolates, stands_for=(), labels="as annotated"):
    return {"records": records, "annotation": annotation, "format": format, "domain": domain, "labels": labels,
            "isolates": isolates, "stands_for": tuple(stands_for)}


def analogues(files: dict, *, prompts: int = 800, seed: int = 0) -> dict[str, dict]:
    """The chapter's training sets, ``{name: {"records", "annotation", "format", "domain", "labels",
    "isolates", "stands_for"}}``, built from the world's preference set.

    The multi-response machine-annotated sets take the first ``prompts`` GPT-annotated prompts
    (0: all). The two pairwise sets are the comparison of annotation source: one pair per prompt
    of the human subset, and as many pairs (one per prompt) from the GPT-annotated subset.
    """
    human, gpt_all = files["cheems_preference/human.jsonl"], files["cheems_preference/gpt.jsonl"]
    gpt = gpt_all[:prompts] if prompts else list(gpt_all)
    pair_human = pairwise_only(human, seed=seed)
    pair_machine = pairwise_only(gpt_all, seed=seed)[:len(pair_human)]
    return {
        "multi-response, human": _analogue(
            list(human), "human", "multi-response", "general",
            "the reference of the format comparison (Table 4's Human subset row)"),
        "multi-response, machine": _analogue(
            list(gpt), "machine", "multi-response", "general",
            "the reference of the domain and label-noise comparisons (Table 4's GPT subset row)",
            stands_for=("UltraFeedback", "Nectar")),
        "pairwise, human": _analogue(
            pair_human, "human", "pairwise", "general",
            "format: one pair per prompt of the multi-response human set (same prompts and labels)",
            stands_for=("HH-RLHF", "ChatbotArena", "HelpSteer2", "HH-RLHF-cn", "Zhihu")),
        "pairwise, machine": _analogue(
            pair_machine, "machine", "pairwise", "general",
            "annotation source: machine instead of human labels, as many pairs as the pairwise human set",
            stands_for=("Skywork",)),
        "math only, machine": _analogue(
            domain_only(gpt_all, "数学")[: prompts or None], "machine", "multi-response", "math",
            "domain: math prompts only instead of all categories (and fewer prompts)"),
    }


def paper_accuracy():
    """Table 3 (``data/paper/table3_datasets.csv``) with ``mean_acc``, the mean of its two accuracies,
    indexed by dataset."""
    from .paper import table

    t3 = table("table3_datasets").set_index("dataset")
    t3["mean_acc"] = t3[["open_acc", "human_acc"]].mean(axis=1)
    return t3
