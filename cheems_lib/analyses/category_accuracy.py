"""Accuracy per category (paper Fig. 4, §6.1): where reward models are strong and where they are weak.

Fig. 4 plots each top-level category's accuracy on the two CheemsBench subsets. :func:`category_figure` draws it
from :func:`category_estimates` (the subset, the deterministic categories, the others, then each category, averaged
over the trained models, paired seed by seed); :func:`category_table` is the same as a table with the null controls
per category (:func:`category_tables`: one per subset); :func:`add_category_claims` tests §6.1's reading of it category by category (:data:`FIG4_CLAIMS`).
:func:`category_accuracy` is per-category accuracy as a long table without intervals, for one's own score files.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..baselines import null_controls
from ..estimates import category_estimate, subset_estimate
from ..metrics import evaluate_subset
from ..publishing.figures import seed_dots
from ..records import Record
from ..categories import CATEGORIES, DETERMINISTIC
from .claims import Claim
from .leaderboard import CONTROLS_SECTION, INTERVAL_SAYS, mean_over_models


__all__ = ["category_figure", "category_table", "category_tables", "add_category_claims", "FIG4_CLAIMS", "category_estimates",
           "category_accuracy", "deterministic_label"]


def category_figure(results: Mapping[str, list[dict]], *, seed: int = 0):
    """Fig. 4: :func:`category_estimates` of the Open Prompt and Human Instruction subsets side by
    side (:func:`cheems_lib.publishing.figures.seed_dots`), one legend on top; returns the Figure."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 5.5), sharex=True)
    for ax, (sub, title) in zip(axes, [("open", "Open Prompt"), ("human", "Human Instruction")]):
        seed_dots(category_estimates(results, sub), ax=ax, seed=seed, xlabel="accuracy, mean over the trained models")
        ax.set_title(title)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=8,
               frameon=False)
    fig.tight_layout()
    return fig


def category_table(results: Mapping[str, list[dict]], subsets: Mapping[str, Sequence[Record]], subset: str, *,
                   seed: int = 0):
    """Fig. 4 as a table for one subset: per top-level category (deterministic ones marked ``*``) and over
    all categories (macro, the paper's, and micro: over every comparison), the accuracy of each model of ``results``
    (mean over its seeds), then, in their own section, the null controls of
    :func:`cheems_lib.baselines.null_controls` on the same records (pick-longest, pick-shortest, random, drawn over
    all of ``subsets`` as in Table 2, and the exact chance); a first row gives each category's prompts and
    comparisons, the counts every average weighs. A category a model has no prompt of shows ``–``."""
    import pandas as pd

    nulls = null_controls(subsets, seed=seed)  # random drawn over all the subsets, as the leaderboard's baseline:random
    nulls = nulls[nulls["subset"] == subset]
    cats = [c for c in nulls["category"].drop_duplicates() if c]
    title = lambda c: f"{CATEGORIES.get(c, c)}{' *' if c in DETERMINISTIC else ''}" if c else "all categories"  # noqa: E731
    micro = "all categories (micro)"
    counts = {c: (v["prompts"], v["comparisons"]) for c, v in next(iter(results.values()))[0][subset].by_category.items()}
    total = tuple(map(sum, zip(*counts.values())))
    rows = [{"section": "counts", "model": "n (prompts / comparisons)", micro: f"{total[0]:,} / {total[1]:,}"}
            | {title(c): f"{n[0]:,} / {n[1]:,}" for c, n in ({"": total} | counts).items()}]
    for name, per_seed in results.items():
        acc = {"": np.mean([r[subset].accuracy for r in per_seed]), "micro": np.mean([r[subset].micro_accuracy
                                                                                     for r in per_seed])}
        acc |= {c: np.mean([r[subset].by_category[c]["accuracy"] for r in per_seed])
                for c in cats if all(c in r[subset].by_category for r in per_seed)}
        rows.append({"section": "reward models", "model": name, micro: f"{acc['micro']:.3f}"}
                    | {title(c): f"{acc[c]:.3f}" if c in acc else "–" for c in ["", *cats]})
    for name, group in nulls.groupby("control", sort=False):
        acc = dict(zip(group["category"], group["accuracy"]))
        pooled = sum(acc[c] * counts[c][1] for c in counts) / total[1]  # a category's accuracy weighs its comparisons
        rows.append({"section": CONTROLS_SECTION, "model": name, micro: f"{pooled:.3f}"}
                    | {title(c): f"{acc[c]:.3f}" for c in ["", *cats]})
    table = pd.DataFrame(rows)
    return table[["section", "model", "all categories", micro, *[title(c) for c in cats]]]


def category_tables(results: Mapping[str, list[dict]], subsets: Mapping[str, Sequence[Record]], *,
                    seed: int = 0) -> dict[str, Any]:
    """Fig. 4 as tables: :func:`category_table` of the Open Prompt and the Human Instruction subset, by subset
    (``open``, ``human``); empty without ``results`` or without both subsets, as Fig. 4 is then not drawn."""
    if not results or len(subsets) != 2:
        return {}
    return {sub: category_table(results, subsets, sub, seed=seed) for sub in ("open", "human")}


def add_category_claims(ledger, results: Mapping[str, list[dict]], *, seed: int = 0) -> None:
    """Add :data:`FIG4_CLAIMS` to ``ledger``: per claim, the category's accuracy minus the mean accuracy of
    the subset's other categories (macro, mean over the trained models of ``results``, paired); untestable
    when the models, the subset or the category are missing."""
    first = next(iter(results.values()), [{}])[0] if results else {}
    for cid, (subset, cat, direction) in FIG4_CLAIMS.items():
        name, where = CATEGORIES[cat], {"open": "Open Prompt", "human": "Human Instruction"}[subset]
        present = [c for c in CATEGORIES if subset in first and c in first[subset].by_category]
        others = [c for c in present if c != cat]
        word = "more" if direction == "greater" else "less"
        fields = dict(paper_ref="", link="paper-fig4", paper=_FIG4_WORDS,
                      claim=f"reward models are {word} accurate on {name} than on the other categories of {where}")
        if cat not in present or not others:
            why = "needs trained models and cheems_bench/" if not results else (
                f"needs cheems_bench/{subset}.jsonl with the category {cat} ({name}) and at least one other")
            ledger.add(Claim.untestable(cid, reason=why, **fields))
            continue
        diff = mean_over_models(results, lambda n: category_estimate(results[n], [cat], [subset])
                                - category_estimate(results[n], others, [subset]))
        ledger.add(Claim.test(
            cid, diff, direction, seed=seed, kind="finding", **fields,
            statistic=f"{where} accuracy on {name} minus the mean accuracy of its other {len(others)} categories "
                      f"(macro), mean over {', '.join(results)}; paired",
            says={"supported": f"On {where} the trained models are {word} accurate on {name} than on the other "
                               f"categories, as in the paper: {INTERVAL_SAYS}.",
                  "contradicted": f"On {where} the trained models are {'less' if word == 'more' else 'more'} accurate "
                                  f"on {name} than on the other categories, unlike the paper: {INTERVAL_SAYS}.",
                  "inconclusive": f"On {where} the trained models' accuracy on {name} and on the other categories is "
                                  f"not separated: {INTERVAL_SAYS}."}))


_FIG4_WORDS = ('"On the open-source prompt subset, RMs show competence in "Reasoning" but struggle in other '
               'categories. On the human instruction subset, models excel in "Reasoning" and "Complex Instructions" '
               'but perform poorly in tasks involving "Understanding"" (§6.1; Fig. 4 gives only a plot)')


FIG4_CLAIMS = {
    "fig4-open-reasoning-strong": ("open", "推理", "greater"),
    "fig4-human-reasoning-strong": ("human", "推理", "greater"),
    "fig4-human-complex-strong": ("human", "复杂指令", "greater"),
    "fig4-human-understanding-weak": ("human", "理解", "less"),
}
"""§6.1's reading of Fig. 4, one claim per category named: ``{id: (subset, category, direction)}``; each
compares the category's accuracy with the macro mean of the subset's other categories."""


def category_estimates(results: Mapping[str, list[dict]], subset: str) -> dict[str, Any]:
    """Fig. 4's rows for one subset, each averaged over the models of ``results`` (paired seed by seed):
    the subset's accuracy, the deterministic categories and the others, then each category
    (deterministic ones marked ``*``)."""
    present = [c for c in CATEGORIES if c in next(iter(results.values()))[0][subset].by_category]
    rows = {"all categories (subset accuracy)": mean_over_models(
        results, lambda n: subset_estimate(results[n], "accuracy", [subset]))}
    for label, group in [(f"deterministic: {deterministic_label()}", [c for c in present if c in DETERMINISTIC]),
                         ("other categories", [c for c in present if c not in DETERMINISTIC])]:
        if group:
            rows[label] = mean_over_models(results, lambda n: category_estimate(results[n], group, [subset]))
    for c in present:
        rows[f"{CATEGORIES[c]}{' *' if c in DETERMINISTIC else ''}"] = mean_over_models(
            results, lambda n: category_estimate(results[n], [c], [subset]))
    return rows


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


def deterministic_label() -> str:
    """The English names of the categories with relatively deterministic answers (§6.1 (3)), joined."""
    return ", ".join(CATEGORIES[c] for c in DETERMINISTIC)
