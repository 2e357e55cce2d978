"""Downstream correlation (paper §6.2, Fig. 5): which benchmark predicts Best-of-N quality?

The paper scores 26 reward models on several benchmarks and on three Best-of-32 tasks, and correlates the two
across models. The models here are :mod:`cheems_lib.analyses.downstream_population`'s (every model the other
chapters train, each training seed a model of its own), and the benchmarks compared with CheemsBench are built
independently in :mod:`cheems_lib.world.comparators`. This module is Fig. 5 itself and its claims (their texts
and the two main ones, shared with the controls, are :mod:`cheems_lib.analyses.downstream_claims`'):

- :func:`why_skipped`: the page's sentence when Fig. 5 cannot run on a world (its tasks are simulated);
- :func:`correlate`: every benchmark column against every task, with intervals and the paired difference to a
  reference benchmark (:func:`fig5`: Fig. 5's, of the population's scores); :func:`plot_correlations`
  (Fig. 5) and :func:`plot_scatter` draw it;
- :func:`add_claims` tests Fig. 5's claims, and :func:`comparisons` gives the same comparisons per metric and
  task;
- :func:`task_average`: a benchmark's :func:`cheems_lib.correlation.correlation` (a paired, clustered bootstrap)
  averaged over the downstream tasks, the statistic of every claim.

The table of every model's scores it reads is :mod:`cheems_lib.analyses.downstream_population`'s. The claims'
controls (equal size, length-controlled Best-of-N, the judge-identity case, the null controls) are
:mod:`cheems_lib.analyses.downstream_controls`'; the robustness section, with the claims' sweep over the humans'
shared noise, is :mod:`cheems_lib.analyses.downstream_robustness`'.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ..correlation import correlation
from ..estimates import all_of, Estimate, p_value
from ..world_files import LAYOUT
from .claims import Claim
from .downstream_claims import (chinese_and_english_claim, claim_statistic, cheemsbench_best_claim, EVERY_TASK_CLAIM,
                                EVERY_TASK_QUOTE, human_beats_gpt_claim, resampled_units)
from .downstream_population import COMPARATORS, Scores

__all__ = ["why_skipped", "NOT_SIMULATED", "FIG5_FILES", "correlate", "fig5", "plot_correlations",
           "plot_scatter", "add_claims", "CLAIMS_CAPTION", "comparisons", "task_average"]


def why_skipped(world) -> str | None:
    """The page's one sentence on why Fig. 5 is not computed on ``world`` (None when it is): its tasks, judges and
    comparators are simulated, so it runs only on a simulated world with every file of :data:`FIG5_FILES`."""
    if not world.simulated:
        return f"*Skipped: Fig. 5 and its population of reward models; {NOT_SIMULATED}.*"
    return world.missing("Fig. 5 and its population of reward models", *FIG5_FILES)


NOT_SIMULATED = ("the downstream tasks, their judges and the comparators here are simulated, so they are "
                 "comparable only with reward models trained and benchmarked on a simulated world")
"""Why Fig. 5 is not computed on real files (the claims' reason)."""


FIG5_FILES = tuple(LAYOUT[k] for k in ("pref_human", "pref_gpt", "bench_open", "bench_human"))
"""The world's files that Fig. 5's population and benchmarks need (in the order the page names them)."""


def correlate(bench, down, *, n_boot: int = 1000, seed: int = 0, ci: float = 0.95, reference: str | None = None,
              clusters: Sequence | None = None, down_boot: Mapping | None = None):
    """Spearman and Pearson correlation of every benchmark column with every task column.

    ``bench`` and ``down`` are DataFrames indexed by model (the same models). Intervals are
    percentile bootstraps over models, or over ``clusters`` of models
    (:func:`cheems_lib.correlation.correlation`);
    replicates where a column is constant are dropped and counted in ``boot_used``. With
    ``reference`` (a column of ``bench``), each row also gets the paired bootstrap difference
    ``r - r(reference)`` and its interval. ``down_boot``
    (:meth:`cheems_lib.analyses.downstream_population.Scores.prompt_boot`) resamples the held-out prompts of each task
    in every replicate as well.

    Returns a long DataFrame: benchmark, task, method, r, lo, hi, boot_used
    (and diff, diff_lo, diff_hi).
    """
    import pandas as pd

    down = down.loc[bench.index]
    kw = {"n_boot": n_boot, "seed": seed, "clusters": clusters}
    rows = []
    for task in down.columns:
        for method in ("spearman", "pearson"):
            task_kw = {**kw, "y_boot": _y_boot(down_boot, task, bench.index)}
            ref = correlation(bench[reference], down[task], method=method, **task_kw) if reference else None
            for b in bench.columns:
                est = correlation(bench[b], down[task], method=method, **task_kw)
                row = {"benchmark": b, "task": task, "method": method, "r": est.value,
                       "boot_used": int(np.isfinite(est.boot).sum())}
                row["lo"], row["hi"] = est.interval(ci=ci)
                if ref is not None:
                    diff = est - ref
                    row["diff"] = diff.value
                    row["diff_lo"], row["diff_hi"] = diff.interval(ci=ci)
                rows.append(row)
    return pd.DataFrame(rows)


def fig5(scores: Scores, *, n_boot: int = 1000, seed: int = 0):
    """Fig. 5: :func:`correlate` of every benchmark column of the population's ``scores`` with every task, each
    compared with the RewardBench-like accuracy (the first of
    :data:`~cheems_lib.analyses.downstream_population.COMPARATORS`); the intervals resample training sets (each with
    all its seeds) and the held-out prompts together."""
    return correlate(scores.bench, scores.down, n_boot=n_boot, seed=seed, reference=COMPARATORS[0],
                     clusters=scores.clusters, down_boot=scores.prompt_boot(n_boot, seed))


def plot_correlations(corr, order: Sequence[str]):
    """Fig. 5: heatmaps of the Spearman (left) and Pearson (right) correlation of each benchmark metric
    (rows, in ``order``) with each task; each cell shows r and its 95% interval where that text is readable on the
    page (:func:`cheems_lib.publishing.figures.cell_font_size`), r alone where only that is, else nothing (the
    chapter's table has every interval); ``corr`` is :func:`correlate`'s."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ..publishing.figures import cell_font_size

    fig, axes = plt.subplots(1, 2, figsize=(9, 0.7 * len(order) + 1.8), sharey=True)
    grids = {}
    for ax, method in zip(axes, ["spearman", "pearson"]):
        d = corr[corr["method"] == method]
        grids[ax] = (d.pivot(index="benchmark", columns="task", values="r").loc[order],
                     d.assign(text=[f"{r:.2f}\n[{lo:.2f}, {hi:.2f}]" for r, lo, hi in zip(d["r"], d["lo"], d["hi"])]
                              ).pivot(index="benchmark", columns="task", values="text").loc[order])
        sns.heatmap(grids[ax][0], vmin=-1, vmax=1, cmap="RdBu_r", cbar=ax is axes[-1], ax=ax)
        ax.set(title=f"{method.capitalize()} correlation", xlabel="", ylabel="")
    fig.suptitle("Benchmark scores vs Best-of-N quality across reward models (simulated)", fontsize=10)
    fig.tight_layout()
    # sized once the layout has fixed each cell, the same in both panels (the smaller fit)
    fits = [cell_font_size(ax, grid.shape, chars=12, lines=2) for ax, (grid, _) in grids.items()]
    full = None if None in fits else min(fits)
    short = [cell_font_size(ax, grid.shape, chars=5) for ax, (grid, _) in grids.items()]
    size = full or (None if None in short else min(short))
    for ax, (grid, text) in grids.items():
        if size is None:
            break
        for i, row in enumerate(grid.index):
            for j, col in enumerate(grid.columns):
                r = grid.loc[row, col]
                ax.text(j + 0.5, i + 0.5, text.loc[row, col] if full else f"{r:.2f}", ha="center", va="center",
                        fontsize=size, color="white" if abs(r) > 0.6 else "black")
    return fig


def plot_scatter(table, columns: Sequence[str], task: str):
    """One panel per benchmark column: each model's score against its ``task`` value, coloured and marked
    by group (legend on the first panel); ``table`` is :meth:`cheems_lib.analyses.downstream_population.Scores.table`."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    fig, axes = plt.subplots(1, len(columns), figsize=(11, 4), squeeze=False)
    axes = axes[0]
    for ax, bench_col in zip(axes, columns):
        d = table.reset_index(names="model")
        sns.scatterplot(d, x=bench_col, y=task, hue="group", style="group", ax=ax, s=45)
        ax.set(title=f"{bench_col} vs {task}")
        if ax is axes[0]:
            ax.legend(fontsize=7, loc="lower right")
        else:
            ax.get_legend().remove()
    fig.tight_layout()
    return fig


CLAIMS_CAPTION = ("The paper's Fig. 5 claims (ours): difference in Spearman correlation, paired 95% interval over "
                  "training sets and held-out prompts; robustness rows are controls of a claim, not findings")
"""Caption of the chapter's claims table."""


def add_claims(ledger, scores: Scores, *, n_boot: int = 1000, seed: int = 0, seeds: int = 1) -> None:
    """Test Fig. 5's claims on ``scores`` and add them to ``ledger`` (a :class:`cheems_lib.analyses.claims.Ledger`).

    Each compares Spearman correlations with downstream quality, averaged over the tasks
    (:func:`task_average`), by a paired bootstrap over training sets: CheemsBench's accuracy
    against every comparator (:func:`cheems_lib.estimates.all_of`), and against its GPT-annotated copy
    (untestable without one), both :mod:`cheems_lib.analyses.downstream_claims`'; then the first comparison task by
    task (:func:`_every_task_claim`) and §6.2's Chinese-and-English reading, untestable on a one-language world.
    ``seeds`` is the training seeds of each set, recorded on each claim. The replicates resample the held-out
    prompts too where ``scores`` has its picks (:meth:`cheems_lib.analyses.downstream_population.Scores.prompt_boot`).
    """
    down_boot = scores.prompt_boot(n_boot, seed)

    def spearman(column):
        return task_average(scores.bench, scores.down, column, method="spearman", n_boot=n_boot, seed=seed,
                            clusters=scores.clusters, down_boot=down_boot)

    def statistic(a, b):
        return claim_statistic(scores, a, b, seeds)

    def add(claim):
        claim.seeds = seeds  # the population's: every training set has them all
        ledger.add(claim)

    add(cheemsbench_best_claim(spearman, statistic, seed))
    add(human_beats_gpt_claim(spearman, statistic, "CheemsBench GPT acc" in scores.bench.columns, seed))
    add(_every_task_claim(scores, n_boot=n_boot, seed=seed))
    ledger.add(chinese_and_english_claim())


def comparisons(scores: Scores, *, n_boot: int = 1000, seed: int = 0):
    """The claims' comparisons for each task alone and every CheemsBench metric (accuracy, exact match;
    whole benchmark and each subset): the paired difference in Spearman correlation with each
    comparator and with the same metric of the GPT-annotated copy, as text with its 95% interval."""
    import pandas as pd

    has_gpt = "CheemsBench GPT acc" in scores.bench.columns
    down_boot = scores.prompt_boot(n_boot, seed)
    references = [(c, "") for c in COMPARATORS] + ([("GPT acc", " GPT")] if has_gpt else [])
    rows = []
    for ref_name, suffix in references:
        for metric in ["acc", "exact"]:
            for bench_name in ["CheemsBench", "Open Prompt", "Human Instruction"]:
                col = f"{bench_name} {metric}"
                ref = ref_name if not suffix else f"{bench_name}{suffix} {metric}"
                frame = correlate(scores.bench[[col, ref]], scores.down, n_boot=n_boot, seed=seed, reference=ref,
                                  clusters=scores.clusters, down_boot=down_boot)
                for _, r in frame[(frame["method"] == "spearman") & (frame["benchmark"] == col)].iterrows():
                    rows.append({"benchmark": col, "compared with": ref, "task": r["task"],
                                 "difference in Spearman r [95% interval]":
                                     f"{r['diff']:+.2f} [{r['diff_lo']:+.2f}, {r['diff_hi']:+.2f}]"})
    return pd.DataFrame(rows)


def task_average(bench, down, column: str, *, method: str = "spearman", n_boot: int = 1000, seed: int = 0,
                 clusters: Sequence | None = None, down_boot: Mapping | None = None):
    """The correlation of ``bench[column]`` with each task column of ``down``, averaged over the tasks
    (an :class:`~cheems_lib.estimates.Estimate`, paired with any other benchmark's by the same resamples).
    ``down_boot`` (:meth:`cheems_lib.analyses.downstream_population.Scores.prompt_boot`) resamples the held-out prompts
    in each replicate too."""
    down = down.loc[bench.index]
    per_task = [correlation(bench[column], down[t], method=method, n_boot=n_boot, seed=seed, clusters=clusters,
                            y_boot=_y_boot(down_boot, t, bench.index))
                for t in down.columns]
    if not per_task:
        raise ValueError("down has no task columns")
    return Estimate(np.mean([e.point for e in per_task], axis=0), np.mean([e.boot for e in per_task], axis=0),
                    per_task[0].n, per_task[0].unit)


def _y_boot(down_boot, task, index):
    """The task's prompt-resampled values (:meth:`cheems_lib.analyses.downstream_population.Scores.prompt_boot`) in
    ``index``'s model order, or None."""
    return None if down_boot is None else down_boot[task][list(index)].to_numpy()


def _every_task_claim(scores: Scores, *, n_boot: int, seed: int):
    """Per task, CheemsBench's Spearman correlation minus each comparator's (paired over training sets); all of
    them above zero (:func:`cheems_lib.estimates.all_of`), the deciding task and comparator named."""
    versus, down_boot = {}, scores.prompt_boot(n_boot, seed)
    for task in scores.down.columns:
        def spearman(column, task=task):
            return task_average(scores.bench, scores.down[[task]], column, method="spearman", n_boot=n_boot,
                                seed=seed, clusters=scores.clusters, down_boot=down_boot)
        for c in COMPARATORS:
            versus[f"{task} vs {c.removesuffix(' acc')}"] = spearman("CheemsBench acc") - spearman(c)
    verdict, closest, diff = all_of(versus, "greater", seed=seed)
    lo, hi = diff.interval(seed=seed)
    interval = "{estimate:+.2f} [95% interval {lo:+.2f}, {hi:+.2f}]"
    return Claim(
        "fig5-cheemsbench-best-every-task", "", EVERY_TASK_CLAIM, kind="finding", verdict=verdict,
        estimate=diff.value, ci_low=lo, ci_high=hi, n=diff.n, unit=diff.unit, link="paper-fig5", paper=EVERY_TASK_QUOTE,
        # "every task" holds at a level when each comparison does (an intersection-union test): the largest p
        p=float(np.max([p_value(d, "greater", seed=seed) for d in versus.values()])), direction="greater",
        statistic=f"per task ({', '.join(scores.down.columns)}), Spearman correlation of CheemsBench accuracy minus each "
                  f"comparator's, across {len(scores.bench)} reward models; paired bootstrap over "
                  f"{resampled_units(scores)}; the estimate is the comparison that decides the verdict",
        says={"supported": f"On every task alone CheemsBench's accuracy correlates more strongly than every comparator; "
                           f"the closest ({closest}) by {interval}.",
              "contradicted": f"Not on every task: for {closest} the comparator correlates more strongly (CheemsBench "
                              f"minus it: {interval}).",
              "inconclusive": f"Task by task, not every comparison is separated: for {closest}, CheemsBench minus the "
                              f"comparator is {interval}, an interval that includes zero."})
