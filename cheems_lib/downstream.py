"""Downstream correlation (paper §6.2, Fig. 5): which benchmark predicts Best-of-N quality?

The paper scores 26 reward models on several benchmarks and on three Best-of-32 tasks,
and correlates the two across models. The models here are the population of
:func:`cheems_lib.experiments.population` (every model the other chapters train, each
training seed a model of its own), and the benchmarks compared with CheemsBench are built
independently in :mod:`cheems_lib.comparators`. This module provides the rest:

- :func:`benchmark_table`: every model's accuracy and exact match on every benchmark;
- :func:`task_average`: a benchmark's :func:`cheems_lib.correlation.correlation` (a paired, clustered
  bootstrap) averaged over the downstream tasks;
- :func:`correlate`: every benchmark column against every task, with intervals and the paired
  difference to a reference benchmark.

The study of the downstream chapter is wired here too:

- :func:`reward_models` names the population's checkpoints; :func:`score` scores them on every
  benchmark (:func:`benchmark_sets`) and Best-of-N task and :func:`tabulate` turns the scores into
  :class:`Scores`;
- :func:`benchmark_annotators` and :func:`judge_sharing` say what the judges share with the annotators;
- :func:`plot_correlations` (Fig. 5) and :func:`plot_scatter` draw the results;
- :func:`add_claims` tests Fig. 5's two claims and :func:`comparisons` gives the same
  comparisons per metric and task.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from .correlation import correlation
from .records import Record

__all__ = ["benchmark_table", "task_average", "correlate", "COMPARATORS", "benchmark_sets",
           "RewardModels", "reward_models", "Scores", "tabulate", "score", "prose_values", "benchmark_annotators",
           "judge_sharing", "plot_correlations", "plot_scatter", "add_claims", "comparisons"]


def benchmark_table(benchmarks: Mapping[str, Sequence[Record]], scores_by_model: Mapping[str, Mapping], *,
                    exact: Sequence[str] | None = None):
    """Models x benchmark metrics: ``<benchmark> acc`` for each, ``<benchmark> exact`` for those in ``exact``."""
    import pandas as pd

    from .metrics import evaluate_subset

    exact = list(benchmarks) if exact is None else list(exact)
    rows = {}
    for model, scores in scores_by_model.items():
        row = {}
        for name, recs in benchmarks.items():
            res = evaluate_subset(recs, scores, n_boot=0)
            row[f"{name} acc"] = res.accuracy
            if name in exact:
                row[f"{name} exact"] = res.exact_match
        rows[model] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def task_average(bench, down, column: str, *, method: str = "spearman", n_boot: int = 1000, seed: int = 0,
                 clusters: Sequence | None = None):
    """The correlation of ``bench[column]`` with each task column of ``down``, averaged over the tasks
    (an :class:`~cheems_lib.claims.Estimate`, paired with any other benchmark's by the same resamples)."""
    from .claims import Estimate

    down = down.loc[bench.index]
    per_task = [correlation(bench[column], down[t], method=method, n_boot=n_boot, seed=seed, clusters=clusters)
                for t in down.columns]
    if not per_task:
        raise ValueError("down has no task columns")
    return Estimate(np.mean([e.point for e in per_task], axis=0), np.mean([e.boot for e in per_task], axis=0),
                    per_task[0].n, per_task[0].unit)


def correlate(bench, down, *, n_boot: int = 1000, seed: int = 0, ci: float = 0.95, reference: str | None = None,
              clusters: Sequence | None = None):
    """Spearman and Pearson correlation of every benchmark column with every task column.

    ``bench`` and ``down`` are DataFrames indexed by model (the same models). Intervals are
    percentile bootstraps over models, or over ``clusters`` of models
    (:func:`cheems_lib.correlation.correlation`);
    replicates where a column is constant are dropped and counted in ``boot_used``. With
    ``reference`` (a column of ``bench``), each row also gets the paired bootstrap difference
    ``r - r(reference)`` and its interval.

    Returns a long DataFrame: benchmark, task, method, r, lo, hi, boot_used
    (and diff, diff_lo, diff_hi).
    """
    import pandas as pd

    down = down.loc[bench.index]
    kw = {"n_boot": n_boot, "seed": seed, "clusters": clusters}
    rows = []
    for task in down.columns:
        for method in ("spearman", "pearson"):
            ref = correlation(bench[reference], down[task], method=method, **kw) if reference else None
            for b in bench.columns:
                est = correlation(bench[b], down[task], method=method, **kw)
                row = {"benchmark": b, "task": task, "method": method, "r": est.value,
                       "boot_used": int(np.isfinite(est.boot).sum())}
                row["lo"], row["hi"] = est.interval(ci=ci)
                if ref is not None:
                    diff = est - ref
                    row["diff"] = diff.value
                    row["diff_lo"], row["diff_hi"] = diff.interval(ci=ci)
                rows.append(row)
    return pd.DataFrame(rows)


COMPARATORS = ["RewardBench-like acc", "RMB-like pairwise acc", "RMB-like BoN acc"]
"""The columns of the benchmarks built independently of CheemsBench (:mod:`cheems_lib.comparators`)."""


def benchmark_sets(world, rewardbench, rmb) -> dict[str, list[Record]]:
    """Every benchmark the chapter scores, by name: ``world``'s CheemsBench and its two subsets, their
    GPT-annotated copies when the world has them, and the two comparators' ranked sets. They all rank
    responses the models score once: CheemsBench's sets share prompts and responses."""
    sets = {"CheemsBench": world.bench_records, "Open Prompt": world.bench["open"],
            "Human Instruction": world.bench["human"]}
    from .world_files import GPT_LAYOUT

    if GPT_LAYOUT["bench_open"] in world.files:
        gpt_open, gpt_human = world.files[GPT_LAYOUT["bench_open"]], world.files[GPT_LAYOUT["bench_human"]]
        sets.update({"CheemsBench GPT": gpt_open + gpt_human, "Open Prompt GPT": gpt_open,
                     "Human Instruction GPT": gpt_human})
    sets.update({"RewardBench-like": rewardbench.sets["pairs"], "RMB-like pairwise": rmb.sets["pairwise"],
                 "RMB-like BoN": rmb.sets["bon"]})
    return sets


@dataclass
class RewardModels:
    """The reward models of the correlation, by name (``<training set> · seed <k>``, or a hub name)."""

    paths: dict[str, Any]
    """Checkpoint folder or hub name of each model."""
    groups: dict[str, str]
    """The family each model comes from (e.g. ``Table 4``; ``external`` for a model passed by name)."""
    training_set: dict[str, str]
    """Each model's training set: its seeds share the data, so the bootstrap resamples sets."""


def reward_models(specs: Sequence, paths: Sequence, *, extra: Sequence[str] = ()) -> RewardModels:
    """Name the trained ``specs`` (:class:`cheems_lib.experiments.ModelSpec`, with their checkpoint ``paths``)
    and add the ``extra`` models (hub names or paths), each a training set and group of its own."""
    names = [f"{s.name} · seed {s.config.seed}" for s in specs]
    models = RewardModels(dict(zip(names, paths)), {n: s.group for n, s in zip(names, specs)},
                          {n: s.name for n, s in zip(names, specs)})
    for name in extra:
        models.paths[name], models.groups[name], models.training_set[name] = name, "external", name
    return models


@dataclass
class Scores:
    """Every model's benchmark metrics and Best-of-N task values (one row per model, same order)."""

    bench: Any
    """Models x benchmark metrics (DataFrame, :func:`benchmark_table` columns)."""
    down: Any
    """Models x downstream tasks (DataFrame, :data:`cheems_lib.best_of_n.TASK_LABELS` columns)."""
    groups: dict[str, str]
    """Each model's family (:attr:`RewardModels.groups`)."""
    clusters: list[str]
    """Each row's training set: the bootstrap's clusters."""

    def table(self):
        """Benchmarks and tasks side by side, each model's group first."""
        import pandas as pd

        both = self.bench.join(self.down)
        both.insert(0, "group", pd.Series(self.groups))
        return both


def tabulate(benchmarks: Mapping[str, Sequence[Record]], bench_scores: Mapping[str, Mapping],
             bon_scores: Mapping[str, Mapping[str, Mapping]], candidates: Mapping, models: RewardModels) -> Scores:
    """:class:`Scores` from each model's scores on the benchmarks' responses (``bench_scores[model]``) and on
    each task's samples (``bon_scores[model][task]``, ``candidates[task]`` the task's
    :class:`~cheems_lib.best_of_n.Candidates`).

    Accuracy for every benchmark, exact match for all but the pairwise ones; RMB's Best-of-N
    accuracy is the share of sets whose chosen response beats every rejected one, the exact match.
    A task's value is :func:`~cheems_lib.best_of_n.evaluate` of the model's Best-of-N picks.
    """
    import pandas as pd

    from .best_of_n import TASK_LABELS, evaluate, select_best

    pairwise = ("RewardBench-like", "RMB-like pairwise")
    bench = benchmark_table(benchmarks, bench_scores, exact=[b for b in benchmarks if b not in pairwise])
    bench = bench.drop(columns="RMB-like BoN acc").rename(columns={"RMB-like BoN exact": "RMB-like BoN acc"})
    down = {name: {TASK_LABELS[t]: evaluate(c, select_best(c.records, bon_scores[name][t]), n_boot=0)["value"]
                   for t, c in candidates.items()} for name in models.paths}
    down = pd.DataFrame.from_dict(down, orient="index").loc[bench.index]
    return Scores(bench, down, dict(models.groups), [models.training_set[m] for m in bench.index])


def score(models: RewardModels, world, rewardbench, rmb, candidates: Mapping) -> Scores:
    """Score every model on ``world``'s benchmarks, the two comparators and each task's samples
    (:func:`cheems_lib.zoo.score_or_load`: cached), then :func:`tabulate`."""
    from .zoo import score_or_load

    kw = {"device": world.device, "dtype": world.dtype}
    bench_scores, bon_scores = {}, {}
    for name, path in models.paths.items():
        bench_scores[name] = {}
        for recs in (world.bench_records, rewardbench.records, rmb.records):  # response ids never collide
            bench_scores[name].update(score_or_load(path, recs, **kw))
        bon_scores[name] = {t: score_or_load(path, c.records, **kw) for t, c in candidates.items()}
    return tabulate(benchmark_sets(world, rewardbench, rmb), bench_scores, bon_scores, candidates, models)


def prose_values(scores: Scores, world, seeds: Sequence[int]) -> dict[str, object]:
    """The population's size and make-up and CheemsBench's responses per model, by the names the
    chapter glues them under."""
    import pandas as pd

    from .experiments import seeds_text

    groups = pd.Series(scores.groups).value_counts()
    return {"n_models": len(scores.bench), "n_sets": len(set(scores.clusters)), "seeds_text": seeds_text(seeds),
            "groups_text": ", ".join(f"{n} from {g}" for g, n in groups.items()),
            "n_bench_responses": sum(len(r.responses) for r in world.bench_records)}


def benchmark_annotators(world, rewardbench, rmb) -> dict[str, list | None]:
    """Each benchmark's annotators: CheemsBench's simulated human and GPT annotators (from the world's
    config; None for real files, whose annotators are unknown) and the comparators' panels."""
    from .annotators import GPTAnnotator, HumanAnnotator

    config = (world.summary or {}).get("config", {})
    return {"CheemsBench (human)": [HumanAnnotator(**config["human"])] if "human" in config else None,
            "CheemsBench GPT": [GPTAnnotator(**config["gpt"])] if "gpt" in config else None,
            "RewardBench-like": rewardbench.panel, "RMB-like": rmb.panel}


def judge_sharing(row: Mapping[str, str]) -> str:
    """The sentence on what the win-rate judges share: ``row`` is their row of
    :func:`cheems_lib.panels.sharing_table`."""
    shared = {b: v for b, v in row.items() if v not in ("none", "real annotators: unknown")}
    if not shared:
        return "The win-rate judges share no parameter value with any benchmark's annotators, only the world."
    return "The win-rate judges share " + "; ".join(f"{v} with {b}" for b, v in shared.items()) + "."


def plot_correlations(corr, order: Sequence[str]):
    """Fig. 5: heatmaps of the Spearman (left) and Pearson (right) correlation of each benchmark metric
    (rows, in ``order``) with each task, annotated with the 95% interval; ``corr`` is :func:`correlate`'s."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    fig, axes = plt.subplots(1, 2, figsize=(11, 0.55 * len(order) + 1.8), sharey=True)
    for ax, method in zip(axes, ["spearman", "pearson"]):
        d = corr[corr["method"] == method]
        grid = d.pivot(index="benchmark", columns="task", values="r").loc[order]
        lab = d.assign(text=[f"{r:.2f}\n[{lo:.2f}, {hi:.2f}]" for r, lo, hi in zip(d["r"], d["lo"], d["hi"])]
                       ).pivot(index="benchmark", columns="task", values="text").loc[order]
        sns.heatmap(grid, annot=lab, fmt="", vmin=-1, vmax=1, cmap="RdBu_r", cbar=ax is axes[-1], ax=ax,
                    annot_kws={"fontsize": 8})
        ax.set(title=f"{method.capitalize()} correlation", xlabel="", ylabel="")
    fig.suptitle("Benchmark scores vs Best-of-N quality across reward models (simulated)", fontsize=10)
    fig.tight_layout()
    return fig


def plot_scatter(table, columns: Sequence[str], task: str):
    """One panel per benchmark column: each model's score against its ``task`` value, coloured and marked
    by group (legend on the first panel); ``table`` is :meth:`Scores.table`."""
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


_STATISTIC = ("Spearman correlation with downstream quality (averaged over the {tasks} tasks) of {a} minus that of {b}, "
              "across {n} reward models; paired bootstrap over training sets, each with its {k} training seeds")
_GPT_QUOTE = '"The benchmarks annotated by GPT demonstrate suboptimal correlation"'
_GPT_CLAIM = "The human-annotated benchmark correlates better with downstream quality than its GPT-annotated copy"


NOT_SIMULATED = ("the downstream tasks, their judges and the comparators here are simulated, so they are "
                 "comparable only with reward models trained and benchmarked on a simulated world")
"""Why Fig. 5 is not computed on real files (the claims' reason)."""


def add_untestable_claims(ledger, reason: str) -> None:
    """Fig. 5's claims when this world cannot run the population (``reason``): all *untestable*."""
    from .claims import Claim

    ledger.add(Claim.untestable("fig5-cheemsbench-best", "§6.2, Fig. 5", "CheemsBench correlates more strongly with "
                                "downstream quality than other benchmarks", reason, link="paper-fig5"))
    ledger.add(Claim.untestable("fig5-human-beats-gpt", "§6.2, Fig. 5", _GPT_CLAIM, reason, link="paper-fig5"))
    ledger.add(Claim.untestable("fig5-cheemsbench-best-every-task", "§6.2, Fig. 5", _EVERY_TASK_CLAIM, reason,
                                link="paper-fig5", paper=_EVERY_TASK_QUOTE))
    ledger.add(_language_claim())


_EVERY_TASK_CLAIM = "CheemsBench correlates more strongly with each downstream task than every other benchmark"
_EVERY_TASK_QUOTE = ('"Our benchmark exhibits significantly stronger correlations with downstream tasks compared to other '
                     'baselines, whether in Chinese or English tasks" (a plot without numbers)')


def _language_claim():
    """§6.2's "whether in Chinese or English tasks": untestable, the simulated world has one language."""
    from .claims import Claim

    return Claim.untestable(
        "fig5-chinese-and-english-tasks", "§6.2, Fig. 5", "CheemsBench's advantage holds on the Chinese (win rate, "
        "MT-bench-zh) and on the English (MT-bench) tasks alike", "the simulated world writes one language: its "
        "MT-bench-like task is not an English task, so the language of a task cannot vary here (each task alone is "
        "fig5-cheemsbench-best-every-task)", link="paper-fig5", paper=_EVERY_TASK_QUOTE)


def _every_task_claim(scores: Scores, *, n_boot: int, seed: int):
    """Per task, CheemsBench's Spearman correlation minus each comparator's (paired over training sets); all of
    them above zero (:func:`cheems_lib.claims.all_of`), the deciding task and comparator named."""
    from .claims import Claim, all_of

    versus = {}
    for task in scores.down.columns:
        def spearman(column, task=task):
            return task_average(scores.bench, scores.down[[task]], column, method="spearman", n_boot=n_boot,
                                seed=seed, clusters=scores.clusters)
        for c in COMPARATORS:
            versus[f"{task} vs {c.removesuffix(' acc')}"] = spearman("CheemsBench acc") - spearman(c)
    verdict, closest, diff = all_of(versus, "greater", seed=seed)
    lo, hi = diff.interval(seed=seed)
    interval = "{estimate:+.2f} [95% interval {lo:+.2f}, {hi:+.2f}]"
    return Claim(
        "fig5-cheemsbench-best-every-task", "§6.2, Fig. 5", _EVERY_TASK_CLAIM, kind="finding", verdict=verdict,
        estimate=diff.value, ci_low=lo, ci_high=hi, n=diff.n, unit=diff.unit, link="paper-fig5", paper=_EVERY_TASK_QUOTE,
        statistic=f"per task ({', '.join(scores.down.columns)}), Spearman correlation of CheemsBench accuracy minus each "
                  f"comparator's, across {len(scores.bench)} reward models; paired bootstrap over training sets; the "
                  "estimate is the comparison that decides the verdict",
        says={"supported": f"On every task alone CheemsBench's accuracy correlates more strongly than every comparator; "
                           f"the closest ({closest}) by {interval}.",
              "contradicted": f"Not on every task: for {closest} the comparator correlates more strongly (CheemsBench "
                              f"minus it: {interval}).",
              "inconclusive": f"Task by task, not every comparison is separated: for {closest}, CheemsBench minus the "
                              f"comparator is {interval}, an interval that includes zero."})


def add_claims(ledger, scores: Scores, *, n_boot: int = 1000, seed: int = 0, seeds: int = 1) -> None:
    """Test Fig. 5's claims on ``scores`` and add them to ``ledger`` (a :class:`cheems_lib.claims.Ledger`).

    Each compares Spearman correlations with downstream quality, averaged over the tasks
    (:func:`task_average`), by a paired bootstrap over training sets: CheemsBench's accuracy
    against every comparator (:func:`cheems_lib.claims.all_of`), and against its GPT-annotated copy
    (untestable without one); then the first comparison task by task (:func:`_every_task_claim`) and
    §6.2's Chinese-and-English reading, untestable on a one-language world. ``seeds`` is the training
    seeds of each set, recorded on each claim.
    """
    def spearman(column):
        return task_average(scores.bench, scores.down, column, method="spearman", n_boot=n_boot, seed=seed,
                            clusters=scores.clusters)

    def statistic(a, b):
        return _STATISTIC.format(tasks=" and ".join(scores.down.columns), a=a, b=b, n=len(scores.bench), k=seeds)

    def add(claim):
        claim.seeds = seeds  # the population's: every training set has them all
        ledger.add(claim)

    add(_best_claim(spearman, statistic, seed))
    add(_gpt_claim(spearman, statistic, "CheemsBench GPT acc" in scores.bench.columns, seed))
    add(_every_task_claim(scores, n_boot=n_boot, seed=seed))
    ledger.add(_language_claim())


def _best_claim(spearman, statistic, seed: int):
    """CheemsBench correlates more strongly than every independently built comparator."""
    from .claims import Claim, all_of, p_value

    versus = {c.removesuffix(" acc"): spearman("CheemsBench acc") - spearman(c) for c in COMPARATORS}
    verdict, closest, diff = all_of(versus, "greater", seed=seed)
    lo, hi = diff.interval(seed=seed)
    others = ", ".join(versus)
    interval = "{estimate:+.2f} [95% interval {lo:+.2f}, {hi:+.2f}]"
    return Claim(
        "fig5-cheemsbench-best", "§6.2, Fig. 5",
        "CheemsBench correlates more strongly with downstream quality than other benchmarks",
        kind="finding", verdict=verdict, estimate=diff.value, ci_low=lo, ci_high=hi, n=diff.n, unit=diff.unit,
        p=p_value(diff, "greater", seed=seed), direction="greater", link="paper-fig5",
        statistic=statistic("CheemsBench accuracy", f"each comparator ({others})")
        + "; the estimate is the comparison that decides the verdict",
        paper='"Our benchmark exhibits significantly stronger correlations with downstream tasks compared to other '
              'baselines" (a plot without numbers)',
        says={"supported": f"CheemsBench's accuracy correlates more strongly with downstream quality than every "
                           f"independently simulated comparator ({others}); the closest, {closest}, by "
                           "{estimate:.2f} [95% interval {lo:.2f}, {hi:.2f}] in Spearman correlation.",
              "contradicted": f"{closest} correlates more strongly with downstream quality than CheemsBench's "
                              f"accuracy: the difference in Spearman correlation (CheemsBench minus it) is {interval}.",
              "inconclusive": f"CheemsBench's accuracy does not correlate more strongly than every comparator by a "
                              f"paired interval: against {closest} the Spearman correlations with downstream quality "
                              f"differ by {interval}, an interval that includes zero, so this run cannot tell which "
                              "correlates more strongly."})


def _gpt_claim(spearman, statistic, has_gpt: bool, seed: int):
    """The human-annotated CheemsBench correlates better than its GPT-annotated copy (if there is one)."""
    from .claims import Claim

    if not has_gpt:
        return Claim("fig5-human-beats-gpt", "§6.2, Fig. 5", _GPT_CLAIM, kind="untestable", verdict="inconclusive",
                     link="paper-fig5", paper=_GPT_QUOTE,
                     reason="the files hold no GPT-annotated copy of CheemsBench (cheems_bench_gpt/)",
                     says={"inconclusive": "The files hold no GPT-annotated copy of CheemsBench, so the human-annotated "
                                           "benchmark cannot be compared with one here."})
    interval = "{estimate:+.2f} [95% interval {lo:+.2f}, {hi:+.2f}]"
    return Claim.test(
        "fig5-human-beats-gpt", spearman("CheemsBench acc") - spearman("CheemsBench GPT acc"), "greater", seed=seed,
        paper_ref="§6.2, Fig. 5", kind="finding", link="paper-fig5", claim=_GPT_CLAIM,
        statistic=statistic("the human-annotated CheemsBench accuracy", "the GPT-annotated copy's")
        + "; the win-rate judges are a panel drawn independently of the benchmark's annotators, the "
          "MT-bench-like judge has the GPT annotator's parameters",
        paper=_GPT_QUOTE,
        says={"supported": "The human-annotated CheemsBench correlates better with downstream quality than its "
                           "GPT-annotated copy: the Spearman correlation is higher by {estimate:.2f} "
                           "[95% interval {lo:.2f}, {hi:.2f}].",
              "contradicted": "The GPT-annotated copy correlates better with downstream quality than the "
                              f"human-annotated CheemsBench: the difference in Spearman correlation is {interval}.",
              "inconclusive": "The Spearman correlations of the human-annotated CheemsBench and of its GPT-annotated "
                              f"copy with downstream quality differ by {interval}: the interval includes zero, so "
                              "this run cannot tell which correlates better."})


def comparisons(scores: Scores, *, n_boot: int = 1000, seed: int = 0):
    """The claims' comparisons for each task alone and every CheemsBench metric (accuracy, exact match;
    whole benchmark and each subset): the paired difference in Spearman correlation with each
    comparator and with the same metric of the GPT-annotated copy, as text with its 95% interval."""
    import pandas as pd

    has_gpt = "CheemsBench GPT acc" in scores.bench.columns
    references = [(c, "") for c in COMPARATORS] + ([("GPT acc", " GPT")] if has_gpt else [])
    rows = []
    for ref_name, suffix in references:
        for metric in ["acc", "exact"]:
            for bench_name in ["CheemsBench", "Open Prompt", "Human Instruction"]:
                col = f"{bench_name} {metric}"
                ref = ref_name if not suffix else f"{bench_name}{suffix} {metric}"
                frame = correlate(scores.bench[[col, ref]], scores.down, n_boot=n_boot, seed=seed, reference=ref,
                                  clusters=scores.clusters)
                for _, r in frame[(frame["method"] == "spearman") & (frame["benchmark"] == col)].iterrows():
                    rows.append({"benchmark": col, "compared with": ref, "task": r["task"],
                                 "difference in Spearman r [95% interval]":
                                     f"{r['diff']:+.2f} [{r['diff_lo']:+.2f}, {r['diff_hi']:+.2f}]"})
    return pd.DataFrame(rows)
