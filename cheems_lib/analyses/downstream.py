"""Downstream correlation (paper §6.2, Fig. 5): which benchmark predicts Best-of-N quality?

The paper scores 26 reward models on several benchmarks and on three Best-of-32 tasks,
and correlates the two across models. The models here are the population of
:func:`cheems_lib.analyses.experiments.population` (every model the other chapters train, each
training seed a model of its own), and the benchmarks compared with CheemsBench are built
independently in :mod:`cheems_lib.world.comparators`. This module provides the rest:

- :func:`benchmark_table`: every model's accuracy and exact match on every benchmark;
- :func:`task_average`: a benchmark's :func:`cheems_lib.correlation.correlation` (a paired, clustered
  bootstrap) averaged over the downstream tasks;
- :func:`correlate`: every benchmark column against every task, with intervals and the paired
  difference to a reference benchmark.

The study of the downstream chapter is wired here too:

- :func:`reward_models` names the population's checkpoints; :func:`score` scores them on every
  benchmark (:func:`benchmark_sets`) and Best-of-N task and :func:`tabulate` turns the scores into
  :class:`Scores`;
- :func:`benchmark_annotators`, :func:`judge_table` and :func:`judge_sharing` say what the judges share with
  the annotators (every downstream judge is drawn on a stream of its own: none shares a parameter value with
  CheemsBench's annotators);
- :meth:`Scores.prompt_boot` resamples the held-out prompts (one matrix of resample counts per task, shared
  by every model), so every interval resamples training sets and prompts together;
- :func:`cheemsbench_at_size` and :func:`equal_size_table` cut CheemsBench to each comparator's number of
  prompts or compared pairs;
- :func:`null_controls` scores the benchmarks and picks the Best-of-N samples by length and at random,
  :func:`chance_row` gives the exact expectation under random scores, and :func:`models_table` shows those rows
  below the reward models, never inside a correlation;
- :func:`plot_correlations` (Fig. 5) and :func:`plot_scatter` draw the results;
- :func:`add_claims` tests Fig. 5's claims, :func:`add_controls` adds their *robustness* rows (equal size,
  length-controlled Best-of-N, the judge-identity case), and :func:`comparisons` gives the same
  comparisons per metric and task;
- :func:`noise_sweeps` and :func:`add_noise_claims` sweep the two main claims over the humans' assumed shared
  noise (*robustness*): CheemsBench's same responses re-annotated at each value (:func:`relabeled`: the models'
  kept scores evaluated on the new labels; nothing is trained or scored again).
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import numpy as np

from ..baselines import CHANCE, chance_metrics, CONTROLS, named_scores, NAMES
from ..correlation import correlation
from ..estimates import all_of, Estimate, p_value
from ..metrics import evaluate_subset, lookup_scores, prompt_outcomes
from ..models.reward_model import is_tiny
from ..models.zoo import score_all
from ..records import Record, strict_pairs
from ..world import best_of_n, comparators
from ..world.annotators import GPTAnnotator, HumanAnnotator
from ..world.best_of_n import length_controlled, prompt_resamples, regrade, select_best, TASK_LABELS
from ..world.panels import shared_parameters, sharing_table
from ..world.simulation import human_labels, WorldConfig
from ..world_files import GPT_LAYOUT, LAYOUT
from . import experiments
from .claims import Claim
from .experiments import seeds_text
from .sensitivity import add_sweep_claim, sweep_figure, Target

__all__ = ["benchmark_table", "task_average", "correlate", "COMPARATORS", "benchmark_sets",
           "RewardModels", "reward_models", "Scores", "tabulate", "score", "prose_values", "benchmark_annotators",
           "judge_sharing", "SHARED_COLUMN", "judge_table", "plot_correlations", "plot_scatter", "add_claims", "comparisons", "EQUAL_SIZE_DRAWS",
           "cheemsbench_at_size", "equal_size_spearman", "equal_size_table", "add_controls", "relabeled",
           "NOISE_TARGETS", "noise_sweeps", "add_noise_claims", "Robustness", "add_robustness", "noise_figure",
           "noise_table", "WIN_RATE_JUDGES", "MT_JUDGE", "Setting", "setting", "population_scores",
           "sharing_sentences", "CONTROLS_GROUP", "null_controls", "chance_row", "models_table"]


def benchmark_table(benchmarks: Mapping[str, Sequence[Record]], scores_by_model: Mapping[str, Mapping], *,
                    exact: Sequence[str] | None = None):
    """Models x benchmark metrics: ``<benchmark> acc`` for each, ``<benchmark> exact`` for those in ``exact``."""
    import pandas as pd

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


def _y_boot(down_boot, task, index):
    """The task's prompt-resampled values (:meth:`Scores.prompt_boot`) in ``index``'s model order, or None."""
    return None if down_boot is None else down_boot[task][list(index)].to_numpy()


def task_average(bench, down, column: str, *, method: str = "spearman", n_boot: int = 1000, seed: int = 0,
                 clusters: Sequence | None = None, down_boot: Mapping | None = None):
    """The correlation of ``bench[column]`` with each task column of ``down``, averaged over the tasks
    (an :class:`~cheems_lib.estimates.Estimate`, paired with any other benchmark's by the same resamples).
    ``down_boot`` (:meth:`Scores.prompt_boot`) resamples the held-out prompts in each replicate too."""
    down = down.loc[bench.index]
    per_task = [correlation(bench[column], down[t], method=method, n_boot=n_boot, seed=seed, clusters=clusters,
                            y_boot=_y_boot(down_boot, t, bench.index))
                for t in down.columns]
    if not per_task:
        raise ValueError("down has no task columns")
    return Estimate(np.mean([e.point for e in per_task], axis=0), np.mean([e.boot for e in per_task], axis=0),
                    per_task[0].n, per_task[0].unit)


def correlate(bench, down, *, n_boot: int = 1000, seed: int = 0, ci: float = 0.95, reference: str | None = None,
              clusters: Sequence | None = None, down_boot: Mapping | None = None):
    """Spearman and Pearson correlation of every benchmark column with every task column.

    ``bench`` and ``down`` are DataFrames indexed by model (the same models). Intervals are
    percentile bootstraps over models, or over ``clusters`` of models
    (:func:`cheems_lib.correlation.correlation`);
    replicates where a column is constant are dropped and counted in ``boot_used``. With
    ``reference`` (a column of ``bench``), each row also gets the paired bootstrap difference
    ``r - r(reference)`` and its interval. ``down_boot`` (:meth:`Scores.prompt_boot`) resamples the
    held-out prompts of each task in every replicate as well.

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


PAIRWISE = ("RewardBench-like", "RMB-like pairwise")
"""The benchmarks of one pair per prompt: accuracy only (their exact match is the same number)."""
COMPARATORS = ["RewardBench-like acc", "RMB-like pairwise acc", "RMB-like BoN acc"]
"""The columns of the benchmarks built independently of CheemsBench (:mod:`cheems_lib.world.comparators`)."""


def benchmark_sets(world, rewardbench, rmb) -> dict[str, list[Record]]:
    """Every benchmark the chapter scores, by name: ``world``'s CheemsBench and its two subsets, their
    GPT-annotated copies when the world has them, and the two comparators' ranked sets. They all rank
    responses the models score once: CheemsBench's sets share prompts and responses."""
    sets = {"CheemsBench": world.bench_records, "Open Prompt": world.bench["open"],
            "Human Instruction": world.bench["human"]}

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
    """Name the trained ``specs`` (:class:`cheems_lib.analyses.experiments.ModelSpec`, with their checkpoint ``paths``)
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
    """Models x downstream tasks (DataFrame, :data:`cheems_lib.world.best_of_n.TASK_LABELS` columns)."""
    groups: dict[str, str]
    """Each model's family (:attr:`RewardModels.groups`)."""
    clusters: list[str]
    """Each row's training set: the bootstrap's clusters."""
    picks: dict[str, np.ndarray] | None = None
    """Per task (column of ``down``): ``(models, prompts)`` index of each model's Best-of-N pick."""
    outcomes: dict[str, np.ndarray] | None = None
    """Per task: the ``(prompts, N)`` outcomes ``down`` is the mean of over each model's picks."""
    pairs: tuple | None = None
    """CheemsBench per prompt: ``(correct (models, prompts), comparisons (prompts,), top-level categories)``."""
    sizes: dict[str, dict[str, int]] | None = None
    """Each comparator (column of :data:`COMPARATORS`): its ``prompts`` and compared ``pairs``."""
    responses: tuple | None = None
    """Each model's scores on CheemsBench's ranked responses, kept so that other labels of the same responses
    can be evaluated without scoring again (:func:`relabeled`): ``(keys, values)``, the ``(prompt id, response
    id)`` keys and a ``(models, keys)`` array in the rows' order."""

    def response_scores(self, model: str) -> dict[tuple[str, str], float]:
        """``model``'s kept scores on CheemsBench's responses (:attr:`responses`), as the metrics take them."""
        keys, values = self.responses
        return dict(zip(keys, values[list(self.bench.index).index(model)].tolist()))

    def table(self):
        """Benchmarks and tasks side by side, each model's group first."""
        import pandas as pd

        both = self.bench.join(self.down)
        both.insert(0, "group", pd.Series(self.groups))
        return both

    def _picked(self, task: str, outcome: np.ndarray) -> np.ndarray:
        """``(models, prompts)``: the outcome of each model's pick on each prompt."""
        p = self.picks[task]
        return outcome[np.arange(p.shape[1])[None, :], p]

    def task_values(self, outcomes: Mapping[str, np.ndarray]):
        """Models x tasks: each model's mean ``outcomes[task]`` over its picks."""
        import pandas as pd

        return pd.DataFrame({t: self._picked(t, o).mean(axis=1) for t, o in outcomes.items()}, index=self.bench.index)

    def variant(self, outcomes: Mapping[str, np.ndarray]) -> "Scores":
        """These scores with some tasks' outcomes replaced (a task judged by another judge, or length-controlled):
        the same picks, so no model is scored again."""
        merged = {**self.outcomes, **outcomes}
        return replace(self, down=self.task_values(merged)[list(self.down.columns)], outcomes=merged)

    def prompt_boot(self, n_boot: int, seed: int = 0) -> dict | None:
        """Per task, an ``(n_boot, models)`` DataFrame (columns: models) of each model's task value on
        resampled held-out prompts (:func:`cheems_lib.world.best_of_n.prompt_resamples`: one resample per
        replicate, shared by all models); None without picks or replicates."""
        import pandas as pd

        if self.picks is None or not n_boot:
            return None
        out = {}
        for t, o in self.outcomes.items():
            v = self._picked(t, o)
            counts = prompt_resamples(v.shape[1], n_boot, seed=seed, stream=t)
            out[t] = pd.DataFrame(counts @ v.T / v.shape[1], columns=self.bench.index)
        return out


def _pair_counts(records: Sequence[Record], bench_scores: Mapping[str, Mapping], models) -> tuple:
    """CheemsBench's correct comparisons per model and prompt, its comparisons and categories (:attr:`Scores.pairs`)."""
    ranks = [r.rank for r in records]
    per_model = [prompt_outcomes(ranks, lookup_scores(records, bench_scores[m])) for m in models]
    total = per_model[0][1] if per_model else np.zeros(len(records), np.int64)
    return (np.array([c for c, _ in per_model], dtype=float).reshape(len(per_model), len(records)),
            total.astype(float), np.array([r.top_category for r in records], dtype=object))


def _size(records: Sequence[Record]) -> dict[str, int]:
    """A benchmark's distinct prompts and compared (strict) pairs."""
    return {"prompts": len({r.id for r in records}), "pairs": sum(len(strict_pairs(r.rank)) for r in records)}


def tabulate(benchmarks: Mapping[str, Sequence[Record]], bench_scores: Mapping[str, Mapping],
             bon_scores: Mapping[str, Mapping[str, Mapping]], candidates: Mapping, models: RewardModels) -> Scores:
    """:class:`Scores` from each model's scores on the benchmarks' responses (``bench_scores[model]``) and on
    each task's samples (``bon_scores[model][task]``, ``candidates[task]`` the task's
    :class:`~cheems_lib.world.best_of_n.Candidates`).

    Accuracy for every benchmark, exact match for all but the pairwise ones; RMB's Best-of-N
    accuracy is the share of sets whose chosen response beats every rejected one, the exact match.
    A task's value is the mean outcome of the model's Best-of-N picks (each response scored once; the
    picks are kept, so a re-judged or length-controlled task needs no new scores).
    """
    bench = benchmark_table(benchmarks, bench_scores, exact=[b for b in benchmarks if b not in PAIRWISE])
    bench = bench.drop(columns="RMB-like BoN acc").rename(columns={"RMB-like BoN exact": "RMB-like BoN acc"})
    names = list(bench.index)
    picks = {TASK_LABELS[t]: np.array([select_best(c.records, bon_scores[m][t]) for m in names]).reshape(len(names), -1)
             for t, c in candidates.items()}
    sizes = {f"{b} acc": _size(benchmarks[b]) for b in ("RewardBench-like", "RMB-like pairwise", "RMB-like BoN")
             if b in benchmarks}
    scores = Scores(bench, None, dict(models.groups), [models.training_set[m] for m in names], picks,
                    {TASK_LABELS[t]: c.outcome for t, c in candidates.items()},
                    _pair_counts(benchmarks["CheemsBench"], bench_scores, names) if "CheemsBench" in benchmarks else None,
                    sizes)
    if "CheemsBench" in benchmarks:  # kept for other labels of the same responses (relabeled)
        keys = [(r.id, rid) for r in benchmarks["CheemsBench"] for rid in (r.rank or {})]
        scores.responses = (keys, np.array([[bench_scores[m][k] for k in keys] for m in names], dtype=float))
    scores.down = scores.task_values(scores.outcomes)
    return scores


def score(models: RewardModels, world, rewardbench, rmb, candidates: Mapping) -> Scores:
    """Score every model on ``world``'s benchmarks, the two comparators and each task's samples
    (:func:`cheems_lib.models.zoo.score_all`: cached, each score once across parallel chapters), then :func:`tabulate`."""
    sets = {"bench": world.bench_records, "rewardbench": rewardbench.records, "rmb": rmb.records,
            **{("task", t): c.records for t, c in candidates.items()}}
    jobs = [(name, key) for name in models.paths for key in sets]
    done = dict(zip(jobs, score_all([(models.paths[n], sets[k]) for n, k in jobs], device=world.device, dtype=world.dtype)))
    bench_scores, bon_scores = {}, {}
    for name in models.paths:  # response ids never collide across the benchmarks
        bench_scores[name] = {k: v for key in ("bench", "rewardbench", "rmb") for k, v in done[name, key].items()}
        bon_scores[name] = {t: done[name, ("task", t)] for t in candidates}
    return tabulate(benchmark_sets(world, rewardbench, rmb), bench_scores, bon_scores, candidates, models)


CONTROLS_GROUP = "null control (not in Fig. 5)"
"""The group of :func:`null_controls`' rows in :func:`models_table`."""


def null_controls(world, setting: "Setting", *, seed: int = 0) -> Scores:
    """The null controls of the per-model table, as :class:`Scores` of their own: pick-longest, pick-shortest and
    random scores (:data:`cheems_lib.baselines.NAMES`, the random one drawn with ``seed``) on the same benchmarks
    and Best-of-N samples as the reward models. Nothing is trained or scored by a model; these rows show what
    length alone earns on each benchmark and task, and no correlation takes them."""
    benchmarks = benchmark_sets(world, setting.rewardbench, setting.rmb)
    records = [*world.bench_records, *setting.rewardbench.records, *setting.rmb.records]
    labels = {word: n for n, word in CONTROLS.items() if n in NAMES}  # pick-longest, pick-shortest, random
    models = RewardModels(labels, dict.fromkeys(labels, CONTROLS_GROUP), {k: k for k in labels})
    bench_scores = {k: named_scores(n, records, seed=seed) for k, n in labels.items()}
    bon_scores = {k: {t: named_scores(n, c.records, seed=seed) for t, c in setting.tasks.items()} for k, n in labels.items()}
    return tabulate(benchmarks, bench_scores, bon_scores, setting.tasks, models)


def chance_row(world, setting: "Setting") -> dict[str, float]:
    """The exact expectation under uniformly random scores, by the columns of :func:`tabulate`: each benchmark's
    accuracy and exact match (:func:`cheems_lib.baselines.chance_metrics`; RMB-like BoN accuracy is its exact
    match, as there) and each task's value (a random pick's expected outcome: the mean over each prompt's samples,
    averaged over prompts)."""
    benchmarks = benchmark_sets(world, setting.rewardbench, setting.rmb)
    row = {}
    for name, records in benchmarks.items():
        chance = chance_metrics(records)
        if name == "RMB-like BoN":
            row[f"{name} acc"] = chance["exact_match"]
            continue
        row[f"{name} acc"] = chance["accuracy"]
        if name not in PAIRWISE:
            row[f"{name} exact"] = chance["exact_match"]
    for t, c in setting.tasks.items():
        row[TASK_LABELS[t]] = float(np.mean(c.outcome.mean(axis=1)))
    return row


def models_table(scores: Scores, world, setting: "Setting", *, seed: int = 0):
    """The chapter's per-model table: the reward models by group and Human win rate (best first), then in their
    own group the null controls on the same benchmarks and samples (:func:`null_controls`, random drawn with
    ``seed``) and the exact chance (:func:`chance_row`). The downstream tasks come right after the group, before
    the benchmarks: the columns every row is read against stay in view on a narrow page."""
    import pandas as pd

    models = scores.table()
    columns = ["group", *scores.down.columns, *scores.bench.columns]
    win = [TASK_LABELS["human_win_rate"]][:TASK_LABELS["human_win_rate"] in models]
    chance = pd.DataFrame([{"group": CONTROLS_GROUP, **chance_row(world, setting)}], index=[CHANCE])
    return pd.concat([models.sort_values(["group", *win], ascending=[True] + [False] * len(win)),
                      null_controls(world, setting, seed=seed).table(), chance])[columns]


def prose_values(scores: Scores, world, seeds: Sequence[int]) -> dict[str, object]:
    """The population's size and make-up and CheemsBench's responses per model, by the names the
    chapter glues them under."""
    import pandas as pd

    groups = pd.Series(scores.groups).value_counts()
    return {"n_models": len(scores.bench), "n_sets": len(set(scores.clusters)), "seeds_text": seeds_text(seeds),
            "groups_text": ", ".join(f"{n} from {g}" for g, n in groups.items()),
            "n_bench_responses": sum(len(r.responses) for r in world.bench_records)}


def benchmark_annotators(world, rewardbench, rmb) -> dict[str, list | None]:
    """Each benchmark's annotators: CheemsBench's simulated human and GPT annotators (from the world's
    config; None for real files, whose annotators are unknown) and the comparators' panels."""
    config = (world.summary or {}).get("config", {})
    return {"CheemsBench (human)": [HumanAnnotator(**config["human"])] if "human" in config else None,
            "CheemsBench GPT": [GPTAnnotator(**config["gpt"])] if "gpt" in config else None,
            "RewardBench-like": rewardbench.panel, "RMB-like": rmb.panel}


def judge_sharing(row: Mapping[str, str], *, who: str = "The win-rate judges") -> str:
    """The sentence on what ``who`` (a group of downstream judges) shares: ``row`` is its row of
    :func:`cheems_lib.world.panels.sharing_table` (or :func:`judge_table`, whose count column is skipped)."""
    shared = {b: v for b, v in row.items() if b != SHARED_COLUMN and v not in ("none", "real annotators: unknown")}
    verb = "shares" if who.startswith("The MT") or not who.endswith("s") else "share"
    if not shared:
        return f"{who} {verb} no parameter value with any benchmark's annotators, only the world."
    return f"{who} {verb} " + "; ".join(f"{v} with {b}" for b, v in shared.items()) + "."


SHARED_COLUMN = "parameters shared with CheemsBench's annotators"
"""The column of :func:`judge_table` that counts what a downstream judge shares with CheemsBench's annotators."""


def judge_table(judges: Mapping[str, Sequence], annotators: Mapping[str, Sequence | None]):
    """:func:`cheems_lib.world.panels.sharing_table` of the downstream ``judges`` against every benchmark's
    ``annotators``, plus :data:`SHARED_COLUMN`: how many parameter values each group of judges shares with
    CheemsBench's human and GPT annotators together (computed, summed over the two; 0 means drawn
    independently of both; ``unknown`` for real annotators)."""
    table = sharing_table(judges, annotators)
    cheems = [a for b, a in annotators.items() if b.startswith("CheemsBench")]
    table[SHARED_COLUMN] = ["unknown" if any(a is None for a in cheems) else
                            sum(len(shared_parameters(members, a)) for a in cheems) for members in judges.values()]
    return table


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
              "across {n} reward models; paired bootstrap over {resampled} (each training set with its {k} training "
              "seeds)")


def _resampled(scores: Scores) -> str:
    """What the claims' replicates resample: training sets, and the held-out prompts where the picks are known."""
    return "training sets" + (" and held-out prompts" if scores.picks is not None else "")
_GPT_QUOTE = '"The benchmarks annotated by GPT demonstrate suboptimal correlation"'
_GPT_CLAIM = "The human-annotated benchmark correlates better with downstream quality than its GPT-annotated copy"


NOT_SIMULATED = ("the downstream tasks, their judges and the comparators here are simulated, so they are "
                 "comparable only with reward models trained and benchmarked on a simulated world")
"""Why Fig. 5 is not computed on real files (the claims' reason)."""


FIG5_FILES = tuple(LAYOUT[k] for k in ("pref_human", "pref_gpt", "bench_open", "bench_human"))
"""The world's files that Fig. 5's population and benchmarks need (in the order the page names them)."""


def why_skipped(world) -> str | None:
    """The page's one sentence on why Fig. 5 is not computed on ``world`` (None when it is): its tasks, judges and
    comparators are simulated, so it runs only on a simulated world with every file of :data:`FIG5_FILES`."""
    if not world.simulated:
        return f"*Skipped: Fig. 5 and its population of reward models; {NOT_SIMULATED}.*"
    return world.missing("Fig. 5 and its population of reward models", *FIG5_FILES)


CLAIMS_CAPTION = ("The paper's Fig. 5 claims (ours): difference in Spearman correlation, paired 95% interval over "
                  "training sets and held-out prompts; robustness rows are controls of a claim, not findings")
"""Caption of the chapter's claims table."""


def add_untestable_claims(ledger, reason: str) -> None:
    """Fig. 5's claims when this world cannot run the population (``reason``): all *untestable*, their controls and
    shared-noise sweeps too."""
    ledger.add(Claim.untestable("fig5-cheemsbench-best", "§6.2, Fig. 5", "CheemsBench correlates more strongly with "
                                "downstream quality than other benchmarks", reason, link="paper-fig5"))
    ledger.add(Claim.untestable("fig5-human-beats-gpt", "§6.2, Fig. 5", _GPT_CLAIM, reason, link="paper-fig5"))
    ledger.add(Claim.untestable("fig5-cheemsbench-best-every-task", "§6.2, Fig. 5", _EVERY_TASK_CLAIM, reason,
                                link="paper-fig5", paper=_EVERY_TASK_QUOTE))
    ledger.add(_language_claim())
    for id, claim in _CONTROL_CLAIMS.items():
        ledger.add(Claim.untestable(id, "§6.2, Fig. 5", claim, reason, link="paper-fig5"))
    add_noise_claims(ledger, None, own=math.nan, reason=reason)


_CONTROL_CLAIMS = {
    "fig5-cheemsbench-best-equal-pairs": "CheemsBench correlates more strongly with downstream quality than other "
                                         "benchmarks, with CheemsBench cut to each one's number of pairs",
    "fig5-cheemsbench-best-equal-prompts": "CheemsBench correlates more strongly with downstream quality than other "
                                           "benchmarks, with CheemsBench cut to each one's number of prompts",
    "fig5-cheemsbench-best-length-controlled": "CheemsBench correlates more strongly with length-controlled downstream "
                                               "quality than other benchmarks",
    "fig5-human-beats-gpt-length-controlled": "The human-annotated benchmark correlates better with length-controlled "
                                              "downstream quality than its GPT-annotated copy",
    "fig5-human-beats-gpt-judge-identity": "The human-annotated benchmark correlates better with downstream quality than "
                                           "its GPT-annotated copy when the MT-bench-like judge is the copy's annotator",
}
"""The robustness rows of :func:`add_controls`, by id (listed as untestable where Fig. 5 cannot run)."""


_EVERY_TASK_CLAIM = "CheemsBench correlates more strongly with each downstream task than every other benchmark"
_EVERY_TASK_QUOTE = ('"Our benchmark exhibits significantly stronger correlations with downstream tasks compared to other '
                     'baselines, whether in Chinese or English tasks" (a plot without numbers)')


def _language_claim():
    """§6.2's "whether in Chinese or English tasks": untestable, the simulated world has one language."""
    return Claim.untestable(
        "fig5-chinese-and-english-tasks", "§6.2, Fig. 5", "CheemsBench's advantage holds on the Chinese (win rate, "
        "MT-bench-zh) and on the English (MT-bench) tasks alike", "the simulated world writes one language: its "
        "MT-bench-like task is not an English task, so the language of a task cannot vary here (each task alone is "
        "fig5-cheemsbench-best-every-task)", link="paper-fig5", paper=_EVERY_TASK_QUOTE)


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
        "fig5-cheemsbench-best-every-task", "§6.2, Fig. 5", _EVERY_TASK_CLAIM, kind="finding", verdict=verdict,
        estimate=diff.value, ci_low=lo, ci_high=hi, n=diff.n, unit=diff.unit, link="paper-fig5", paper=_EVERY_TASK_QUOTE,
        statistic=f"per task ({', '.join(scores.down.columns)}), Spearman correlation of CheemsBench accuracy minus each "
                  f"comparator's, across {len(scores.bench)} reward models; paired bootstrap over {_resampled(scores)}; "
                  "the estimate is the comparison that decides the verdict",
        says={"supported": f"On every task alone CheemsBench's accuracy correlates more strongly than every comparator; "
                           f"the closest ({closest}) by {interval}.",
              "contradicted": f"Not on every task: for {closest} the comparator correlates more strongly (CheemsBench "
                              f"minus it: {interval}).",
              "inconclusive": f"Task by task, not every comparison is separated: for {closest}, CheemsBench minus the "
                              f"comparator is {interval}, an interval that includes zero."})


def add_claims(ledger, scores: Scores, *, n_boot: int = 1000, seed: int = 0, seeds: int = 1) -> None:
    """Test Fig. 5's claims on ``scores`` and add them to ``ledger`` (a :class:`cheems_lib.analyses.claims.Ledger`).

    Each compares Spearman correlations with downstream quality, averaged over the tasks
    (:func:`task_average`), by a paired bootstrap over training sets: CheemsBench's accuracy
    against every comparator (:func:`cheems_lib.estimates.all_of`), and against its GPT-annotated copy
    (untestable without one); then the first comparison task by task (:func:`_every_task_claim`) and
    §6.2's Chinese-and-English reading, untestable on a one-language world. ``seeds`` is the training
    seeds of each set, recorded on each claim. The replicates resample the held-out prompts too where
    ``scores`` has its picks (:meth:`Scores.prompt_boot`).
    """
    down_boot = scores.prompt_boot(n_boot, seed)

    def spearman(column):
        return task_average(scores.bench, scores.down, column, method="spearman", n_boot=n_boot, seed=seed,
                            clusters=scores.clusters, down_boot=down_boot)

    def statistic(a, b):
        return _STATISTIC.format(tasks=" and ".join(scores.down.columns), a=a, b=b, n=len(scores.bench), k=seeds,
                                 resampled=_resampled(scores))

    def add(claim):
        claim.seeds = seeds  # the population's: every training set has them all
        ledger.add(claim)

    add(_best_claim(spearman, statistic, seed))
    add(_gpt_claim(spearman, statistic, "CheemsBench GPT acc" in scores.bench.columns, seed))
    add(_every_task_claim(scores, n_boot=n_boot, seed=seed))
    ledger.add(_language_claim())


def _best_claim(spearman, statistic, seed: int):
    """CheemsBench correlates more strongly than every independently built comparator."""
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
        + "; every downstream judge is drawn independently of the benchmark's annotators (the MT-bench-like judge "
          "from the GPT-like ranges, on a stream of its own)",
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


EQUAL_SIZE_DRAWS = 20
"""Random subsamples of CheemsBench averaged at each comparator's size (one subsample is noisy)."""
_SIZE_STREAM = zlib.crc32(b"equal size")


def cheemsbench_at_size(scores: Scores, *, prompts: int | None = None, pairs: int | None = None,
                        draws: int = EQUAL_SIZE_DRAWS, seed: int = 0) -> np.ndarray:
    """``(draws, models)``: CheemsBench accuracy (macro over categories, as its full-size column) on
    ``draws`` random subsamples of its prompts: ``prompts`` of them, or the fewest whose compared pairs
    reach ``pairs``. All draws come from one matrix of random orders (seeded), the same for every model.
    """
    correct, total, cats = scores.pairs
    if (prompts is None) == (pairs is None):
        raise ValueError("give prompts or pairs, not both")
    order = np.argsort(np.random.default_rng([seed, _SIZE_STREAM]).random((draws, total.size)), axis=1)
    if prompts is not None:
        take = np.arange(total.size)[None, :] < prompts
    else:
        before = np.cumsum(total[order], axis=1) - total[order]  # pairs taken before each prompt
        take = before < pairs
    chosen = np.zeros((draws, total.size))
    np.put_along_axis(chosen, order, take.astype(float), axis=1)
    per_cat = []
    for cat in sorted(set(cats.tolist())):
        m = cats == cat
        t = chosen[:, m] @ total[m]
        with np.errstate(invalid="ignore", divide="ignore"):
            per_cat.append(np.where(t[:, None] > 0, (chosen[:, m] @ correct[:, m].T) / t[:, None], np.nan))
    return np.nanmean(np.stack(per_cat), axis=0)


def equal_size_spearman(scores: Scores, comparator: str, match: str, *, n_boot: int = 1000, seed: int = 0,
                        down_boot: Mapping | None = None):
    """CheemsBench's Spearman correlation with downstream quality (task average) when cut to ``comparator``'s
    size (``match``: ``prompts`` or ``pairs``), averaged over :data:`EQUAL_SIZE_DRAWS` subsamples; the
    replicates are paired with every other :func:`task_average` of the same seed."""
    import pandas as pd

    at = cheemsbench_at_size(scores, **{match: scores.sizes[comparator][match]}, seed=seed)
    bench = pd.DataFrame(at.T, index=scores.bench.index, columns=[f"draw {d}" for d in range(len(at))])
    per_draw = [task_average(bench, scores.down, c, n_boot=n_boot, seed=seed, clusters=scores.clusters,
                             down_boot=down_boot) for c in bench.columns]
    return Estimate(np.mean([e.point for e in per_draw], axis=0), np.nanmean([e.boot for e in per_draw], axis=0),
                    per_draw[0].n, per_draw[0].unit)


def equal_size_table(scores: Scores, *, n_boot: int = 1000, seed: int = 0):
    """Per comparator: its size, and the Spearman correlation with downstream quality (task average, 95%
    interval) of CheemsBench at full size, cut to the comparator's prompts, cut to its compared pairs, and
    of the comparator itself."""
    import pandas as pd

    down_boot = scores.prompt_boot(n_boot, seed)

    def text(e):
        lo, hi = e.interval(seed=seed)
        return f"{e.value:.2f} [{lo:.2f}, {hi:.2f}]"

    def spearman(column):
        return task_average(scores.bench, scores.down, column, n_boot=n_boot, seed=seed, clusters=scores.clusters,
                            down_boot=down_boot)

    full = text(spearman("CheemsBench acc"))
    rows = [{"comparator": c.removesuffix(" acc"), "its prompts": scores.sizes[c]["prompts"],
             "its pairs": scores.sizes[c]["pairs"], "CheemsBench, full size": full,
             **{f"CheemsBench at its {m}": text(equal_size_spearman(scores, c, m, n_boot=n_boot, seed=seed,
                                                                    down_boot=down_boot)) for m in ("prompts", "pairs")},
             "the comparator": text(spearman(c))} for c in COMPARATORS]
    return pd.DataFrame(rows)


def _control(claim, id: str, prefix: str, reason: str, **changes):
    """``claim`` as a *robustness* row: its id, a sentence prefix naming the variant, and why it is run."""
    return replace(claim, id=id, kind="robustness", reason=reason,
                   says={k: prefix + v for k, v in claim.says.items()}, **changes)


def add_controls(ledger, scores: Scores, *, length_controlled: Mapping[str, np.ndarray] | None = None,
                 identity: Mapping[str, np.ndarray] | None = None, n_boot: int = 1000, seed: int = 0,
                 seeds: int = 1) -> None:
    """Fig. 5's claims under controls, each a *robustness* claim (never a finding): CheemsBench cut to each
    comparator's size (prompts, compared pairs); both claims with ``length_controlled`` task outcomes
    (:func:`cheems_lib.world.best_of_n.length_controlled`, by task column); the human-versus-GPT claim with the
    MT-bench-like task graded by CheemsBench's own GPT annotator (``identity``: the old construction, which
    decides that claim by identity). The same picks throughout: nothing is scored again."""
    down_boot = scores.prompt_boot(n_boot, seed)
    has_gpt = "CheemsBench GPT acc" in scores.bench.columns

    def spearman_of(sc, boot):
        return lambda column: task_average(sc.bench, sc.down, column, n_boot=n_boot, seed=seed, clusters=sc.clusters,
                                           down_boot=boot)

    def statistic(a, b):
        return _STATISTIC.format(tasks=" and ".join(scores.down.columns), a=a, b=b, n=len(scores.bench), k=seeds,
                                 resampled=_resampled(scores))

    spearman = spearman_of(scores, down_boot)
    interval = "{estimate:+.2f} [95% interval {lo:+.2f}, {hi:+.2f}]"
    for match in ("pairs", "prompts"):
        versus = {c.removesuffix(" acc"): equal_size_spearman(scores, c, match, n_boot=n_boot, seed=seed,
                                                              down_boot=down_boot) - spearman(c) for c in COMPARATORS}
        verdict, closest, diff = all_of(versus, "greater", seed=seed)
        lo, hi = diff.interval(seed=seed)
        ledger.add(Claim(
            f"fig5-cheemsbench-best-equal-{match}", "§6.2, Fig. 5", f"CheemsBench correlates more strongly with "
            f"downstream quality than other benchmarks, with CheemsBench cut to each one's number of {match}",
            kind="robustness", verdict=verdict, estimate=diff.value, ci_low=lo, ci_high=hi, n=diff.n, unit=diff.unit,
            seeds=seeds, direction="greater", link="paper-fig5",
            reason=f"fig5-cheemsbench-best at equal size: CheemsBench has far more prompts and compared pairs than "
                   f"the comparators, and a larger benchmark correlates better by its size alone; here it is cut to "
                   f"each comparator's {match} ({EQUAL_SIZE_DRAWS} random cuts averaged)",
            statistic=statistic(f"CheemsBench accuracy cut to the comparator's {match}", "each comparator"),
            says={"supported": f"Cut to each comparator's number of {match}, CheemsBench still correlates more "
                               f"strongly than every comparator; the closest, {closest}, by {interval}.",
                  "contradicted": f"Cut to {closest}'s number of {match}, CheemsBench correlates less strongly than "
                                  f"it: {interval}.",
                  "inconclusive": f"Cut to each comparator's number of {match}, CheemsBench minus {closest} is "
                                  f"{interval}, an interval that includes zero."}))
    for id in [] if has_gpt else ["fig5-human-beats-gpt-length-controlled", "fig5-human-beats-gpt-judge-identity"]:
        ledger.add(Claim.untestable(id, "§6.2, Fig. 5", _CONTROL_CLAIMS[id], "the files hold no GPT-annotated copy of "
                                    "CheemsBench (cheems_bench_gpt/)", link="paper-fig5"))
    if has_gpt and not identity:
        ledger.add(Claim.untestable("fig5-human-beats-gpt-judge-identity", "§6.2, Fig. 5",
                                    _CONTROL_CLAIMS["fig5-human-beats-gpt-judge-identity"],
                                    "the GPT copy's annotator is not a simulated one here", link="paper-fig5"))
    if length_controlled:
        lc = scores.variant(length_controlled)
        lc_spearman, reason = spearman_of(lc, lc.prompt_boot(n_boot, seed)), (
            "the same claim with the task values length-controlled (best_of_n.length_controlled: the outcome's "
            "within-prompt linear dependence on log length removed), so a judge's length preference cannot carry it")
        ledger.add(_control(_best_claim(lc_spearman, statistic, seed), "fig5-cheemsbench-best-length-controlled",
                            "Length-controlled Best-of-N: ", reason))
        if has_gpt:
            ledger.add(_control(_gpt_claim(lc_spearman, statistic, True, seed), "fig5-human-beats-gpt-length-controlled",
                                "Length-controlled Best-of-N: ", reason))
    if identity and has_gpt:  # the judge-identity row
        same = scores.variant(identity)
        ledger.add(_control(
            _gpt_claim(spearman_of(same, same.prompt_boot(n_boot, seed)), statistic, True, seed),
            "fig5-human-beats-gpt-judge-identity", "With the MT-bench-like task graded by CheemsBench's own GPT "
            "annotator: ", "the old construction, kept as a sensitivity row: the MT-bench-like judge is CheemsBench's "
            "GPT annotator itself, so on that task the GPT copy is scored by its own annotator and the claim is "
            "decided by that identity as much as by the annotations",
            statistic=statistic("the human-annotated CheemsBench accuracy", "the GPT-annotated copy's")
            + "; the MT-bench-like task graded by CheemsBench's GPT annotator itself (same samples and picks)"))


# ---- sensitivity of Fig. 5's claims to the humans' shared noise (issue 26) ------------------------------------------

_HUMAN_SETS = {"open": "Open Prompt", "human": "Human Instruction"}
"""CheemsBench's human-annotated subsets and the benchmark names they are scored under (:func:`benchmark_sets`)."""


def relabeled(scores: Scores, bench: Mapping[str, Sequence[Record]]) -> Scores:
    """``scores`` with CheemsBench's human-annotated columns (whole benchmark and each subset, accuracy and exact
    match) evaluated on other labels of the same responses: ``bench`` is ``{"open": records, "human": records}``,
    and every model's kept scores (:attr:`Scores.responses`) are evaluated on it, so nothing is scored again. The
    GPT copy, the comparators and the downstream tasks are unchanged."""
    if scores.responses is None:
        raise ValueError("these scores keep no scores on CheemsBench's responses (fix: build them with tabulate)")
    sets = {"CheemsBench": [r for k in _HUMAN_SETS if k in bench for r in bench[k]],
            **{_HUMAN_SETS[k]: list(v) for k, v in bench.items()}}
    models = list(scores.bench.index)
    per_model = {m: scores.response_scores(m) for m in models}
    table = benchmark_table(sets, per_model)
    new = scores.bench.copy()
    for column in table.columns:
        new[column] = table[column]
    return replace(scores, bench=new, pairs=_pair_counts(sets["CheemsBench"], per_model, models))


def _same_responses(old: Mapping[str, Sequence[Record]], new: Mapping[str, Sequence[Record]], value: float) -> None:
    """Refuse a re-annotation whose prompts or responses differ from the world's (the sweep re-labels, never
    re-draws, the benchmark): a world the simulator does not reproduce cannot be swept this way."""
    def content(sets):
        return {k: [(r.id, r.prompt, [(x.id, x.content) for x in r.responses]) for r in v] for k, v in sets.items()}

    if content(old) != content(new):
        raise ValueError(f"re-annotating CheemsBench at shared_noise {value:g} changed its prompts or responses: this "
                         "world is not the one the simulator makes from its summary (fix: re-simulate it with "
                         "`cheems simulate`)")


def _noise_target(claim_id: str, claim: str, short: str, title: str):
    """The :class:`cheems_lib.analyses.sensitivity.Target` of one Fig. 5 claim swept over the humans' shared noise."""
    return Target(claim_id, claim, f"{short}, with CheemsBench's human labels re-drawn at each value",
                  ("human-annotated CheemsBench", "reference"), f"{short}\n(difference in Spearman r)",
                  f"Fig. 5, {title}", "", ref="§6.2, Fig. 5 (sensitivity)", link="downstream-shared-noise",
                  note="; the reward models, their scores and the downstream tasks are held fixed (trained and judged "
                       "on the world's own data): only CheemsBench's human labels of the same prompts and responses "
                       "are re-drawn, so the sweep asks whether the benchmark's labels decide the claim")


NOISE_TARGETS = {
    "fig5-human-beats-gpt": _noise_target("fig5-human-beats-gpt", _GPT_CLAIM, "human-annotated minus GPT copy",
                                          "human minus GPT"),
    "fig5-cheemsbench-best": _noise_target("fig5-cheemsbench-best", "CheemsBench correlates more strongly with "
                                           "downstream quality than other benchmarks",
                                           "CheemsBench minus the closest comparator", "CheemsBench minus closest"),
}
"""Fig. 5's claims swept over the humans' shared noise (:func:`noise_sweeps`), by id."""


def noise_sweeps(scores: Scores, world, values: Sequence[float], human, *, n_boot: int = 1000, seed: int = 0,
                 seeds: int = 1) -> dict:
    """``{claim id: sweep}`` for each claim of :data:`NOISE_TARGETS` (the GPT one only where the world has the GPT
    copy): per value of the humans' shared noise, the claim's estimate, interval and verdict (as
    :func:`add_claims` decides it), in the rows :func:`cheems_lib.analyses.sensitivity.summarize` reads.

    At each value, ``world``'s CheemsBench is re-annotated by ``human`` (the world's human annotator) with that
    shared noise (:func:`cheems_lib.world.simulation.human_labels`: the same prompts and responses, checked) and the
    models' kept scores are evaluated on the new labels (:func:`relabeled`). Nothing is trained or scored again;
    the comparators' and the GPT copy's correlations do not depend on the value and are computed once.
    """
    import pandas as pd

    down_boot, fixed = scores.prompt_boot(n_boot, seed), {}
    counts = {f"bench_{k}": len(v) for k, v in world.bench.items()}

    def statistic(a, b):
        return _STATISTIC.format(tasks=" and ".join(scores.down.columns), a=a, b=b, n=len(scores.bench), k=seeds,
                                 resampled=_resampled(scores))

    relabeled_columns = {f"{b} {m}" for b in ("CheemsBench", *_HUMAN_SETS.values()) for m in ("acc", "exact")}
    targets = [t for t in NOISE_TARGETS if t != "fig5-human-beats-gpt" or "CheemsBench GPT acc" in scores.bench.columns]
    rows: dict[str, list[dict]] = {t: [] for t in targets}
    for v in values:
        config = WorldConfig(size=world.size, seed=world.seed, counts=counts, human=replace(human, shared_noise=float(v)))
        files = human_labels(config, tuple(counts))
        bench = {k: files[LAYOUT[f"bench_{k}"]] for k in world.bench}
        _same_responses(world.bench, bench, v)
        at, memo = relabeled(scores, bench), {}

        def spearman(column, at=at, memo=memo):
            cache = memo if column in relabeled_columns else fixed  # the others do not depend on the value
            if column not in cache:
                cache[column] = task_average(at.bench, at.down, column, n_boot=n_boot, seed=seed, clusters=at.clusters,
                                             down_boot=down_boot)
            return cache[column]

        for t in targets:
            c = (_best_claim(spearman, statistic, seed) if t == "fig5-cheemsbench-best"
                 else _gpt_claim(spearman, statistic, True, seed))
            rows[t].append({"value": float(v), "estimate": c.estimate, "ci_low": c.ci_low, "ci_high": c.ci_high,
                            "seeds": seeds, "n": c.n, "unit": c.unit, "verdict": c.verdict})
    return {t: pd.DataFrame(rows[t]) for t in targets}


def add_noise_claims(ledger, sweeps: Mapping | None, *, own: float, reason: str | None = None) -> None:
    """One *robustness* claim per claim of :data:`NOISE_TARGETS` (:func:`cheems_lib.analyses.sensitivity.add_sweep_claim`,
    id ``<claim>-vs-shared-noise``): does its verdict at the world's own shared noise ``own`` hold across its sweep
    (:func:`noise_sweeps`)? A claim without a sweep (``sweeps`` None, or a claim missing from it) is *untestable*
    with ``reason`` (or, for the GPT claim, the missing GPT copy)."""
    for t, target in NOISE_TARGETS.items():
        sweep = (sweeps or {}).get(t)
        why = reason if sweeps is None else "the files hold no GPT-annotated copy of CheemsBench (cheems_bench_gpt/)"
        add_sweep_claim(ledger, sweep, "shared_noise", own=own, target=target, reason=None if sweep is not None else why)


@dataclass
class Robustness:
    """What the chapter's robustness section shows (:func:`add_robustness`)."""

    size_table: Any  # CheemsBench at full size and cut to each comparator's size (equal_size_table)
    detail: Any  # the comparisons for every CheemsBench metric and each task alone (comparisons)
    sweeps: dict | None  # the main claims at each value of the humans' shared noise (noise_sweeps); None: no humans
    own_noise: float  # the world's own shared noise (NaN without a human annotator)
    noise_values: list[float]  # the swept values, the world's own included

    def prose_values(self) -> dict[str, str | int]:
        """The chapter's glued values on the robustness section: random cuts per size, the world's own shared
        noise and the swept values."""
        return {"n_size_draws": EQUAL_SIZE_DRAWS, "own_noise": f"{self.own_noise:g}",
                "noise_values": ", ".join(f"{v:g}" for v in self.noise_values)}


def add_robustness(ledger, scores: Scores, world, tasks: Mapping, annotators: Mapping[str, Sequence | None], *,
                   shared_noise: Sequence[float], n_boot: int = 1000, seed: int = 0, seeds: int = 1) -> Robustness:
    """The controls of Fig. 5's claims, after :func:`add_claims`: on the same picks, nothing scored again, the
    length-controlled outcomes and the old judge identity (the MT-bench-like task re-graded by CheemsBench's GPT
    annotator, :func:`add_controls`); CheemsBench at each comparator's size; each metric and task alone; and the
    humans' assumed shared noise (CheemsBench's same responses re-annotated at each of ``shared_noise`` and the
    world's own value, the models' scores re-evaluated, :func:`add_noise_claims`)."""
    cheems_gpt = annotators["CheemsBench GPT"]
    identity = ({TASK_LABELS["mt_bench_sim"]: regrade(tasks["mt_bench_sim"], gpt=cheems_gpt[0]).outcome}
                if cheems_gpt else None)
    controlled = {TASK_LABELS[t]: length_controlled(c) for t, c in tasks.items()}
    add_controls(ledger, scores, length_controlled=controlled, identity=identity, n_boot=n_boot, seed=seed, seeds=seeds)
    size_table = equal_size_table(scores, n_boot=n_boot, seed=seed)
    detail = comparisons(scores, n_boot=n_boot, seed=seed)
    human = annotators["CheemsBench (human)"]
    own = human[0].shared_noise if human else float("nan")
    values = sorted(set(map(float, shared_noise)) | {own}) if human else []
    sweeps = noise_sweeps(scores, world, values, human[0], n_boot=n_boot, seed=seed, seeds=seeds) if human else None
    add_noise_claims(ledger, sweeps, own=own, reason="the world's summary names no human annotator to re-annotate with")
    return Robustness(size_table, detail, sweeps, own, values)


def noise_figure(robust: Robustness, models: int):
    """The shared-noise sweep of the first claim of :data:`NOISE_TARGETS` that was swept (the GPT claim where it
    is), ``models`` reward models with fixed scores."""
    target = next(t for t in NOISE_TARGETS if t in robust.sweeps)
    return sweep_figure(robust.sweeps[target], "shared_noise", marked=robust.own_noise, model=f"{models} models, fixed",
                        target=NOISE_TARGETS[target])


def noise_table(robust: Robustness):
    """Every swept claim's estimate, interval and verdict at each value of the humans' shared noise."""
    import pandas as pd

    table = pd.concat([s.assign(claim=t)[["claim", "value", "estimate", "ci_low", "ci_high", "verdict"]]
                       for t, s in robust.sweeps.items()])
    return table.rename(columns={"value": "shared noise"})


WIN_RATE_JUDGES = "Human win rate (judge panel)"
MT_JUDGE = "MT-bench-like grade (GPT-like judge)"
"""The rows of :func:`judge_table` for the two kinds of downstream judge (:attr:`Setting.judges`)."""


@dataclass
class Setting:
    """The downstream study's simulated setting (:func:`setting`)."""

    rewardbench: Any  # the RewardBench-like comparator (world.comparators.Comparator)
    rmb: Any  # the RMB-like comparator
    win_rate_judges: list  # the win-rate task's judge panel
    mt_judge: Any  # the MT-bench-like task's GPT-like judge
    tasks: dict  # task -> its Best-of-N candidates (world.best_of_n.Candidates)

    @property
    def judges(self) -> dict[str, list]:
        """Each kind of downstream judge, by its row of :func:`judge_table`."""
        return {WIN_RATE_JUDGES: self.win_rate_judges, MT_JUDGE: [self.mt_judge]}


def setting(world, *, seed: int = 0, rewardbench_pairs: int = 200, rmb_prompts: int = 60, bon_prompts: int = 500,
            mt_prompts: int = 80, bon_n: int = 32) -> Setting:
    """The comparators, simulated independently of CheemsBench (own prompts, policies and annotators), and the
    Best-of-N tasks, every downstream judge drawn on a stream of its own, never one of the benchmark's annotators."""
    rewardbench, rmb = comparators.for_world(world, seed=seed, rewardbench_pairs=rewardbench_pairs,
                                             rmb_prompts=rmb_prompts)
    panel, gpt = best_of_n.judge_panel(seed), best_of_n.mt_judge(seed)
    tasks = best_of_n.sample_tasks(prompts=bon_prompts, mt_prompts=mt_prompts, n=bon_n, seed=seed,
                                   length_scale=world.length_scale, panel=panel, gpt=gpt)
    return Setting(rewardbench, rmb, panel, gpt, tasks)


def population_scores(world, setting: Setting, *, seeds: Sequence[int], epochs: int, gpt_prompts: int,
                      transfer_prompts: int, points: int, sizes: Sequence[str], seed: int = 0,
                      extra: Sequence[str] = ()) -> Scores:
    """Fig. 5's population (:func:`cheems_lib.analyses.experiments.population`, the tiny ``sizes`` only) and the
    ``extra`` models, trained (or read from the zoo) and scored on every benchmark and task (:func:`score`)."""
    population = experiments.population(world, seeds=seeds, epochs=epochs, gpt_prompts=gpt_prompts,
                                        transfer_prompts=transfer_prompts, ladder_points=points, seed=seed,
                                        sizes=[s for s in sizes if is_tiny(s)])
    pool = reward_models(population, experiments.train(population, progress=False), extra=extra)
    return score(pool, world, setting.rewardbench, setting.rmb, setting.tasks)


def sharing_sentences(sharing) -> dict[str, str]:
    """The chapter's sentences on what each kind of downstream judge shares (``sharing``: :func:`judge_table`)."""
    return {"judge_sharing": judge_sharing(sharing.loc[WIN_RATE_JUDGES]),
            "mt_judge_sharing": judge_sharing(sharing.loc[MT_JUDGE], who="The MT-bench-like judge")}
