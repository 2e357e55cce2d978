"""Leaderboards: many scorers on the benchmark subsets, with intervals, sorted like Table 2.

``leaderboard(subsets, scores_by_model)`` evaluates each model's scores on every subset
with :func:`cheems_lib.metrics.evaluate_subset` (bootstrap over prompts) and returns one
row per model: accuracy and exact match per subset, Overall, and 95% intervals.
:func:`category_accuracy` gives the per-category accuracies of Fig. 4.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from .metrics import evaluate_subset, overall, overall_ci
from .records import Record

__all__ = ["leaderboard", "category_accuracy", "baseline_scores"]


def baseline_scores(records: Sequence[Record], *, seed: int = 0) -> dict[str, dict]:
    """The three baselines every table shows: random, longest and shortest response."""
    from .baselines import length_scores, random_scores

    return {"baseline: random": random_scores(records, seed=seed),
            "baseline: longest": length_scores(records, prefer="longer"),
            "baseline: shortest": length_scores(records, prefer="shorter")}


def leaderboard(subsets: Mapping[str, Sequence[Record]], scores_by_model: Mapping[str, Mapping], *,
                n_boot: int = 1000, seed: int = 0, ci: float = 0.95):
    """One row per model: ``<subset>_acc``, ``<subset>_exact`` (with ``_lo``/``_hi``), ``overall``."""
    import pandas as pd

    rows = []
    for name, scores in scores_by_model.items():
        row, results = {"model": name}, []
        for sub, recs in subsets.items():
            res = evaluate_subset(recs, scores, n_boot=n_boot, seed=seed)
            results.append(res)
            js = res.to_json(ci)
            row[f"{sub}_acc"], row[f"{sub}_exact"] = res.accuracy, res.exact_match
            if n_boot:
                row[f"{sub}_acc_lo"], row[f"{sub}_acc_hi"] = js["accuracy_ci"]
                row[f"{sub}_exact_lo"], row[f"{sub}_exact_hi"] = js["exact_match_ci"]
        row["overall"] = overall(results)
        if n_boot:
            row["overall_lo"], row["overall_hi"] = overall_ci(results, ci)
        rows.append(row)
    return pd.DataFrame(rows).sort_values("overall", ascending=False, ignore_index=True)


def category_accuracy(subsets: Mapping[str, Sequence[Record]], scores_by_model: Mapping[str, Mapping]):
    """Long table (model, subset, category, accuracy, prompts): the data of Fig. 4."""
    import pandas as pd

    rows = []
    for name, scores in scores_by_model.items():
        for sub, recs in subsets.items():
            res = evaluate_subset(recs, scores, n_boot=0)
            for cat, v in res.by_category.items():
                rows.append({"model": name, "subset": sub, "category": cat, "accuracy": v["accuracy"],
                             "prompts": v["prompts"]})
    return pd.DataFrame(rows)
