"""Fig. 5's scored population (paper §6.2): the reward models, the simulated setting, and their scores.

The paper correlates 26 reward models' benchmark scores with their Best-of-N quality. Here the population is
every model the other chapters train (:func:`cheems_lib.analyses.experiments.population`, each training seed a
model of its own), scored once on every benchmark and every Best-of-N task:

- :func:`setting` simulates the comparators and the Best-of-N tasks (:class:`Setting`, with every benchmark's
  annotators), every downstream judge drawn on a stream of its own, never one of the benchmark's annotators;
- :func:`population_scores` trains (or reads from the zoo) the population and scores it (:func:`score`);
  :func:`prose_values` gives the chapter's counts;
- :func:`reward_models` names the population's checkpoints; :func:`score` scores them on every benchmark
  (:func:`benchmark_sets`) and Best-of-N task and :func:`tabulate` turns the scores into :class:`Scores`, whose
  benchmark columns are :func:`benchmark_table`'s (every model's accuracy and exact match on every benchmark;
  :data:`COMPARATORS`, the benchmarks built independently of CheemsBench) and :func:`pair_counts`, CheemsBench's
  comparisons per model and prompt;
- :meth:`Scores.prompt_boot` resamples the held-out prompts (one matrix of resample counts per task, shared by
  every model), so every interval of Fig. 5 resamples training sets and prompts together.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import numpy as np

from ..metrics import evaluate_subset, lookup_scores, prompt_outcomes
from ..models.reward_model import is_tiny
from ..models.zoo import score_all
from ..records import Record, strict_pairs
from ..world import best_of_n, comparators
from ..world.best_of_n import prompt_resamples, select_best, TASK_LABELS
from ..world.panels import benchmark_annotators, MT_JUDGE, WIN_RATE_JUDGES
from ..world_files import GPT_LAYOUT
from . import experiments
from .world_folder import seeds_text

__all__ = ["Setting", "setting", "population_scores", "prose_values", "RewardModels", "reward_models", "score",
           "tabulate", "Scores", "benchmark_sets", "benchmark_table", "pair_counts", "ANNOTATED_RB", "PAIRWISE", "COMPARATORS",
           "ANNOTATED_COMPARATORS"]


@dataclass
class Setting:
    """The downstream study's simulated setting (:func:`setting`)."""

    rewardbench: Any  # the RewardBench-like comparator (world.comparators.Comparator)
    rmb: Any  # the RMB-like comparator
    win_rate_judges: list  # the win-rate task's judge panel
    mt_judge: Any  # the MT-bench-like task's GPT-like judge
    tasks: dict  # task -> its Best-of-N candidates (world.best_of_n.Candidates)
    annotators: dict  # benchmark -> its annotators (world.panels.benchmark_annotators; None: unknown)

    @property
    def judges(self) -> dict[str, list]:
        """Each kind of downstream judge, by its row of :func:`cheems_lib.world.panels.judge_table`."""
        return {WIN_RATE_JUDGES: self.win_rate_judges, MT_JUDGE: [self.mt_judge]}


def setting(world, *, seed: int = 0, rewardbench_pairs: int = 200, rmb_prompts: int = 60, bon_prompts: int = 500,
            mt_prompts: int = 80, bon_n: int = 32) -> Setting:
    """The comparators, simulated independently of CheemsBench (own prompts, policies and annotators), and the
    Best-of-N tasks, every downstream judge drawn on a stream of its own, never one of the benchmark's annotators;
    the setting also holds those annotators (:func:`cheems_lib.world.panels.benchmark_annotators`)."""
    rewardbench, rmb = comparators.for_world(world, seed=seed, rewardbench_pairs=rewardbench_pairs,
                                             rmb_prompts=rmb_prompts)
    panel, gpt = best_of_n.judge_panel(seed), best_of_n.mt_judge(seed)
    tasks = best_of_n.sample_tasks(prompts=bon_prompts, mt_prompts=mt_prompts, n=bon_n, seed=seed,
                                   length_scale=world.length_scale, panel=panel, gpt=gpt)
    return Setting(rewardbench, rmb, panel, gpt, tasks, benchmark_annotators(world, rewardbench, rmb))


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


def prose_values(scores: Scores, world, seeds: Sequence[int]) -> dict[str, object]:
    """The population's size and make-up and CheemsBench's responses per model, by the names the
    chapter glues them under."""
    import pandas as pd

    groups = pd.Series(scores.groups).value_counts()
    return {"n_models": len(scores.bench), "n_sets": len(set(scores.clusters)), "seeds_text": seeds_text(seeds),
            "groups_text": ", ".join(f"{n} from {g}" for g, n in groups.items()),
            "n_bench_responses": sum(len(r.responses) for r in world.bench_records)}


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
    sizes = {f"{b} acc": _size(benchmarks[b]) for b in ("RewardBench-like", ANNOTATED_RB, "RMB-like pairwise", "RMB-like BoN")
             if b in benchmarks}
    scores = Scores(bench, None, dict(models.groups), [models.training_set[m] for m in names], picks,
                    {TASK_LABELS[t]: c.outcome for t, c in candidates.items()},
                    pair_counts(benchmarks["CheemsBench"], bench_scores, names) if "CheemsBench" in benchmarks else None,
                    sizes)
    if "CheemsBench" in benchmarks:  # kept for other labels of the same responses (relabeled)
        keys = [(r.id, rid) for r in benchmarks["CheemsBench"] for rid in (r.rank or {})]
        scores.responses = (keys, np.array([[bench_scores[m][k] for k in keys] for m in names], dtype=float))
    scores.down = scores.task_values(scores.outcomes)
    return scores


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
    """Each comparator (column of :data:`COMPARATORS`): its ``prompts`` and
    compared ``pairs``."""
    responses: tuple | None = None
    """Each model's scores on CheemsBench's ranked responses, kept so that other labels of the same responses
    can be evaluated without scoring again (:func:`cheems_lib.analyses.downstream_robustness.relabeled`): ``(keys,
    values)``, the ``(prompt id, response id)`` keys and a ``(models, keys)`` array in the rows' order."""

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
    if rewardbench.sets.get("annotated"):  # none at the smallest sizes
        sets[ANNOTATED_RB] = rewardbench.sets["annotated"]
    return sets


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


ANNOTATED_RB = "RewardBench-like annotated"
"""The RewardBench-like pairs whose label an annotator decides (its ``annotated`` set: no label built in by how the
pair was made, :data:`cheems_lib.world.comparators.BUILT_IN_BUILDS`)."""
PAIRWISE = ("RewardBench-like", ANNOTATED_RB, "RMB-like pairwise")
"""The benchmarks of one pair per prompt: accuracy only (their exact match is the same number)."""


COMPARATORS = ["RewardBench-like acc", "RMB-like pairwise acc", "RMB-like BoN acc"]
"""The columns of the benchmarks built independently of CheemsBench (:mod:`cheems_lib.world.comparators`)."""
ANNOTATED_COMPARATORS = [f"{ANNOTATED_RB} acc", "RMB-like pairwise acc", "RMB-like BoN acc"]
""":data:`COMPARATORS` without labels built in by how a pair was made: the RewardBench-like pairs an annotator labelled,
and RMB's pairs and Best-of-N sets, which its grader labels."""


def pair_counts(records: Sequence[Record], bench_scores: Mapping[str, Mapping], models) -> tuple:
    """CheemsBench's correct comparisons per model and prompt, its comparisons and categories (:attr:`Scores.pairs`)."""
    ranks = [r.rank for r in records]
    per_model = [prompt_outcomes(ranks, lookup_scores(records, bench_scores[m])) for m in models]
    total = per_model[0][1] if per_model else np.zeros(len(records), np.int64)
    return (np.array([c for c, _ in per_model], dtype=float).reshape(len(per_model), len(records)),
            total.astype(float), np.array([r.top_category for r in records], dtype=object))


def _size(records: Sequence[Record]) -> dict[str, int]:
    """A benchmark's distinct prompts and compared (strict) pairs."""
    return {"prompts": len({r.id for r in records}), "pairs": sum(len(strict_pairs(r.rank)) for r in records)}
