"""Leaderboards: many scorers on the benchmark subsets, with intervals, sorted like Table 2.

The one implementation: :func:`evaluate_scores` evaluates each model's scores (one mapping,
or one per training seed) on every subset with :func:`cheems_lib.metrics.evaluate_subset`
(bootstrap over prompts); :func:`board` turns such results into one row per model:
accuracy and exact match per subset and Overall, means over seeds with 95% intervals.
:func:`leaderboard` does both; :func:`text_board` is the plain-text table of
``cheems evaluate`` with several score files. :func:`category_accuracy` gives Fig. 4's data.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from .metrics import evaluate_subset
from .records import Record

__all__ = ["leaderboard", "evaluate_scores", "board", "text_board", "category_accuracy", "baseline_scores"]


def baseline_scores(records: Sequence[Record], *, seed: int = 0) -> dict[str, dict]:
    """The three baselines every table shows (random, longest and shortest response), by their CLI names."""
    from .baselines import NAMES, named_scores

    return {name: named_scores(name, records, seed=seed) for name in NAMES}


def evaluate_scores(scores_by_model: Mapping[str, Mapping | Sequence[Mapping]], subsets: Mapping[str, Sequence[Record]], *,
                    n_boot: int = 1000, seed: int = 0) -> dict[str, list[dict]]:
    """``{name: [{subset: SubsetResult} per seed]}`` from scores: per model one scores mapping (a
    baseline, a judge, a real model: one seed) or a list of them (one per training seed, as
    :func:`cheems_lib.experiments.score_family` gives). Bootstrapped with ``seed``, so every
    model's results are paired."""
    out = {}
    for name, scores in scores_by_model.items():
        per_seed = [scores] if isinstance(scores, Mapping) else list(scores)
        out[name] = [{sub: evaluate_subset(recs, sc, n_boot=n_boot, seed=seed) for sub, recs in subsets.items()}
                     for sc in per_seed]
    return out


def board(results: Mapping[str, list[dict]], *, seed: int = 0):
    """One row per model of :func:`evaluate_scores` results: mean over seeds of each subset's
    accuracy and exact match and of Overall, with hierarchical 95% intervals (``_lo``/``_hi``)
    and the number of seeds; sorted by Overall."""
    import pandas as pd

    from .claims import subset_estimate

    rows = []
    for name, per_seed in results.items():
        row: dict[str, Any] = {"model": name, "seeds": len(per_seed)}
        subsets = list(per_seed[0])
        columns = [(f"{s}_acc", "accuracy", [s]) for s in subsets] + [(f"{s}_exact", "exact_match", [s]) for s in subsets]
        for col, metric, subs in columns + [("overall", "overall", subsets)]:
            est = subset_estimate(per_seed, metric, subs)
            row[col] = est.value
            row[f"{col}_lo"], row[f"{col}_hi"] = est.interval(seed=seed)
        rows.append(row)
    return pd.DataFrame(rows).sort_values("overall", ascending=False, ignore_index=True)


def leaderboard(subsets: Mapping[str, Sequence[Record]], scores_by_model: Mapping[str, Mapping | Sequence[Mapping]], *,
                n_boot: int = 1000, seed: int = 0):
    """:func:`board` of :func:`evaluate_scores`: one row per model, sorted by Overall."""
    return board(evaluate_scores(scores_by_model, subsets, n_boot=n_boot, seed=seed), seed=seed)


def text_board(per_model: Mapping[str, Mapping], subsets: Sequence[str]) -> str:
    """Plain-text leaderboard of ``cheems evaluate`` JSON (``{model: {subset: {...}, "overall": x}}``):
    accuracy and exact match per subset (and Overall with two or more subsets), sorted by
    Overall (or, with one subset, its accuracy), ties in the given order."""
    several = len(subsets) >= 2
    key = (lambda kv: kv[1].get("overall", 0)) if several else (lambda kv: kv[1][subsets[0]]["accuracy"])
    head = ["model"] + [f"{s} {m}" for s in subsets for m in ("acc", "exact")] + (["overall"] if several else [])
    rows = [[name] + [f"{res[s][m]:.3f}" for s in subsets for m in ("accuracy", "exact_match")]
            + ([f"{res['overall']:.3f}"] if several else [])
            for name, res in sorted(per_model.items(), key=key, reverse=True)]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    fmt = lambda row: "  ".join(str(x).ljust(w) for x, w in zip(row, widths))
    return "\n".join([fmt(head), fmt(["-" * w for w in widths]), *map(fmt, rows)])


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
