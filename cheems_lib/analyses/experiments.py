"""The experiments the chapters run: the training sets and the model families of Tables 2-4 and Figs. 5-7.

Every chapter opens its world with :func:`cheems_lib.analyses.world_folder.open_world` and builds its training sets
with the named builders here, so a model that two chapters need is built from the same records with the same config
and the zoo (:mod:`cheems_lib.models.zoo`) trains it once:

- :func:`table4_sets`: the CheemsPreference ablation (Table 4); its last set is CheemsPreference;
- :func:`table3_sets`: the analogues of Table 3's open datasets (:mod:`cheems_lib.analyses.transfer`), and
  :func:`table3_family`, a model per analogue;
- :func:`data_ladder`: nested subsets of CheemsPreference (Fig. 6), one chain per training seed;
- :func:`model_sizes`: one training set, several model sizes (Fig. 7);
- :func:`leaderboard_family`: the tiny reward models of the Table 2 leaderboard (the same
  records and configs as Table 4's human and GPT rows and Fig. 7's ``tiny-xs``), and :func:`leaderboard_models`,
  the evaluation chapter's reward models and judges scored;
- :func:`population`: the union of all of them (Fig. 5);
- :func:`preference_file_results`: a tiny reward model trained on a real folder's preference file (the real-data
  chapter).

A :class:`Family` is a set of named training sets, each trained with every training seed
(``train_seeds``), on a fixed world: the world's ``seed`` never changes with training.
:func:`evaluate` scores a family on the benchmark and returns, per model, one
:class:`cheems_lib.metrics.SubsetResult` per subset and seed, all bootstrapped with the world
seed, so every comparison between models is paired (see :mod:`cheems_lib.analyses.claims`);
:func:`evaluate_with_controls` adds the null controls, bootstrapped with the same seed.
The leaderboard of such results (:func:`cheems_lib.analyses.leaderboard.evaluate_scores`,
:func:`cheems_lib.analyses.leaderboard.leaderboard_frame`) is :mod:`cheems_lib.analyses.leaderboard`'s.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from .. import distant_supervision as ds
from ..distant_supervision import ABLATION
from ..estimates import subset_estimate
from ..models import zoo
from ..models.reward_model import count_parameters, is_tiny
from ..models.training_config import TrainConfig
from ..publishing.model_list import ZOO_NAMES
from ..records import Record
from . import scaling
from .leaderboard import baseline_scores, evaluate_scores, score_models
from .transfer import analogues, TABLE3_PROMPTS
from .world_folder import seeds_text, World


__all__ = ["ModelSpec", "Family", "table4_sets", "table3_sets", "table3_family", "data_ladder", "ladder_family",
           "model_sizes", "leaderboard_family", "population", "train", "score_family", "evaluate",
           "evaluate_with_controls", "estimate", "GPT_PROMPTS", "PREFERENCE_FILE_MODEL", "preference_file_results",
           "preference_file_scores", "LeaderboardModels", "leaderboard_models", "leaderboard_judges", "ladder_records", "parameter_counts"]


GPT_PROMPTS = 800
"""The GPT-annotated prompts (the subset's first) that Table 4's sets, the leaderboard's GPT-subset model and
the population train on: a share of the subset, to keep the CPU budget. Every chapter's ``gpt_prompts``
defaults to it (tests/test_chapters.py checks the parameters cells), so the zoo trains their shared models once."""


@dataclass(frozen=True)
class ModelSpec:
    """One model to train: its training records and config (the config's seed is the training seed)."""

    name: str
    records: list[Record] = field(repr=False)
    config: Any
    group: str = ""
    path: str | None = None
    """A finished ``cheems train`` folder scored as it is instead of training here (a size too large for one device,
    trained with ``accelerate launch``); None: the zoo trains it."""


@dataclass
class Family:
    """Named training sets, each trained with every seed in ``seeds`` (models differ only in what
    the name says). ``models`` maps a model size or hub name per set (default: ``tiny``)."""

    sets: dict[str, list[Record]]
    seeds: tuple[int, ...] = (0, 1, 2)
    epochs: int = 2
    models: dict[str, str] = field(default_factory=dict)
    group: str = ""
    trained: dict[str, dict[int, str]] = field(default_factory=dict)
    """Set name -> {training seed: finished checkpoint folder} used instead of training (:attr:`ModelSpec.path`)."""

    def config(self, name: str, seed: int):
        """Tiny models: the tiny preset with ``epochs``; real models: Table 9 (``TrainConfig.for_model``)."""
        model = self.models.get(name, "tiny")
        return TrainConfig.for_model(model, seed=seed, **({"epochs": self.epochs} if is_tiny(model) else {}))

    def specs(self) -> list[ModelSpec]:
        return [ModelSpec(name, recs, self.config(name, s), self.group, self.trained.get(name, {}).get(s))
                for name, recs in self.sets.items() for s in self.seeds]


def table4_sets(world: World, *, gpt_prompts: int = GPT_PROMPTS, margin: float = 0.0, seed: int = 0,
                epochs: int = 2) -> tuple[dict[str, list[Record]], dict, dict]:
    """Table 4's training sets (keys ``distant_supervision.ABLATION``), the step reports and the
    golden-subset model's scores on the GPT subset.

    The data is built once per world: the golden-subset reward model that filters GPT's
    comparisons is trained with seed ``seed`` (the construction seed), whatever the training
    seeds of the models compared afterwards.
    """
    gpt = world.gpt(gpt_prompts)
    rm_human = zoo.train_or_load(world.human, TrainConfig(epochs=epochs, seed=seed))
    scores = zoo.score_or_load(rm_human, gpt, device=world.device, dtype=world.dtype)
    sets, reports = ds.ablation(world.human, gpt, scores, margin=margin, seed=seed)
    return sets, reports, scores


def table3_sets(world: World, *, prompts: int = TABLE3_PROMPTS, seed: int = 0) -> dict[str, dict]:
    """The analogues of Table 3's open datasets (:func:`cheems_lib.analyses.transfer.analogues`): ``{name: {"records",
    "annotation", "format", "domain", "labels", "isolates", "stands_for"}}``."""
    return analogues(world.files, prompts=prompts, seed=seed)


def table3_family(sets: Mapping[str, Mapping], *, seeds: Sequence[int], epochs: int) -> Family:
    """Table 3's models: one per analogue of ``sets`` (:func:`table3_sets`), on its records, each trained with every
    seed of ``seeds``."""
    return Family({name: d["records"] for name, d in sets.items()}, seeds=tuple(seeds), epochs=epochs, group="Table 3")


def data_ladder(records: Sequence[Record], *, points: int = 6, chain_seed: int = 0) -> dict[int, list[Record]]:
    """Fig. 6's nested subsets of ``records`` (sizes halving from the full set), one seeded chain."""
    return scaling.nested_subsets(list(records), scaling.ladder(len(records), points=points), seed=chain_seed)


def ladder_family(records: Sequence[Record], *, points: int, seeds: Sequence[int], epochs: int) -> list[ModelSpec]:
    """The data-scaling models: for each training seed its own chain of subsets, trained with that seed."""
    out = []
    for s in seeds:
        fam = Family({f"CheemsPreference {n} prompts": recs for n, recs in
                      data_ladder(records, points=points, chain_seed=s).items()},
                     seeds=(s,), epochs=epochs, group="data scaling")
        out += fam.specs()
    return out


def model_sizes(records: Sequence[Record], sizes: Sequence[str], *, seeds: Sequence[int], epochs: int,
                trained: Mapping[str, Mapping[int, str]] | None = None) -> Family:
    """Fig. 7's family: the same records, one model per size (tiny names or hub names). ``trained``: size ->
    {training seed: folder} of the sizes trained elsewhere (:func:`cheems_lib.analyses.scaling.checkpoints_for`)."""
    return Family({f"{s} · human subset": list(records) for s in sizes}, seeds=tuple(seeds), epochs=epochs,
                  models={f"{s} · human subset": s for s in sizes}, group="model size",
                  trained={f"{s} · human subset": dict(t) for s, t in (trained or {}).items()})


def leaderboard_family(world: World, *, seeds: Sequence[int], epochs: int, gpt_prompts: int = GPT_PROMPTS) -> Family:
    """The evaluation chapter's zoo, from the preference files the world holds: tiny and tiny-xs on the
    human subset, tiny on the first ``gpt_prompts`` GPT prompts (each equals a model of Table 4 or
    Fig. 7, so the zoo trains it once); with neither subset but one unsplit preference file, tiny and
    tiny-xs on that file; with no preference file, no model (``sets`` empty)."""
    human, human_xs, gpt, preference, preference_xs = ZOO_NAMES  # the row names a models file's zoo: entries use
    sets, models = {}, {}
    if world.human is not None:
        sets |= {human: world.human, human_xs: world.human}
        models[human_xs] = "tiny-xs"
    if world.gpt() is not None:
        sets[gpt] = world.gpt(gpt_prompts)
    if not sets and world.preference is not None:
        sets = {preference: world.preference, preference_xs: world.preference}
        models[preference_xs] = "tiny-xs"
    order = [human, gpt, human_xs]  # the order before §6b
    sets = dict(sorted(sets.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))
    return Family(sets, seeds=tuple(seeds), epochs=epochs, models=models, group="leaderboard")


def population(world: World, *, seeds: Sequence[int], epochs: int = 2, gpt_prompts: int = GPT_PROMPTS,
               transfer_prompts: int = TABLE3_PROMPTS, ladder_points: int = 5, sizes: Sequence[str] = (),
               margin: float = 0.0, seed: int = 0) -> list[ModelSpec]:
    """Every model the other chapters train (Table 4, Table 3, data ladder, model sizes), each once.

    ``seeds`` are the training seeds (each seed of a set is a model of its own); ``seed`` is the
    construction seed of the Table 4 and Table 3 sets (the chapters pass the world seed).
    A spec whose records and config equal an earlier one's is dropped (the first name wins),
    so the zoo's checkpoints are shared with the chapters that train them.
    """
    t4, _, _ = table4_sets(world, gpt_prompts=gpt_prompts, margin=margin, seed=seed, epochs=epochs)
    specs = ladder_family(t4[ABLATION[-1]], points=ladder_points, seeds=seeds, epochs=epochs)
    specs += model_sizes(world.human, sizes, seeds=seeds, epochs=epochs).specs()
    specs += Family(t4, seeds=tuple(seeds), epochs=epochs, group="Table 4").specs()
    t3 = table3_sets(world, prompts=transfer_prompts, seed=seed)
    specs += table3_family(t3, seeds=seeds, epochs=epochs).specs()
    out, seen = [], set()
    for spec in specs:
        key = zoo.zoo_key(spec.records, spec.config)
        if key not in seen:
            seen.add(key)
            out.append(spec)
    return out


def train(specs: Sequence[ModelSpec], *, progress: bool = True) -> list[Path]:
    """The zoo folder of every spec, training the ones not trained yet (with a progress bar).

    Chapters run in parallel processes and share models: a model another process is training
    is skipped at first and waited for only after everything else is done, so no core idles
    on a lock while there is other work.
    """
    from tqdm.auto import tqdm

    with tqdm(total=len(specs), desc="models", disable=not progress) as bar:
        return zoo.busy_last(specs, lambda s, wait: Path(s.path) if s.path else
                             zoo.train_or_load(s.records, s.config, wait=wait), done=lambda _: bar.update())


def score_family(family: Family | Sequence[ModelSpec], world: World, *, records: Mapping | None = None,
                 progress: bool = True) -> dict[str, list[dict]]:
    """Train (or load) every model of ``family`` (a :class:`Family` or a list of specs) and score
    ``records`` (default: the world's two CheemsBench subsets, a mapping of subset names to
    records); ``{name: [scores per seed]}``, specs of one name in spec order (by training seed)."""
    all_records = [r for recs in dict(records or world.bench).values() for r in recs]
    specs = family.specs() if isinstance(family, Family) else list(family)
    out: dict[str, list[dict]] = {spec.name: [] for spec in specs}
    paths = train(specs, progress=progress)
    for spec, scores in zip(specs, zoo.score_all([(p, all_records) for p in paths], device=world.device, dtype=world.dtype)):
        out[spec.name].append(scores)
    return out


def evaluate(family: Family | Sequence[ModelSpec], world: World, *, n_boot: int = 1000, seed: int = 0,
             records: Mapping | None = None, progress: bool = True) -> dict[str, list[dict]]:
    """Train (or load) and score every model of ``family``; ``{name: [{subset: SubsetResult} per seed]}``.

    ``family`` is a :class:`Family` or a list of specs such as :func:`ladder_family`'s (the
    results of specs with the same name are listed in spec order, i.e. by training seed).
    ``records`` (default: the world's two CheemsBench subsets) maps subset names to records.
    Every result is bootstrapped with ``seed``, so results are paired across models and seeds.
    """
    subsets = dict(records or world.bench)
    return evaluate_scores(score_family(family, world, records=subsets, progress=progress), subsets,
                           n_boot=n_boot, seed=seed)


def evaluate_with_controls(family: Family | Sequence[ModelSpec], world: World, *, records: Mapping | None = None,
                           n_boot: int = 1000, seed: int = 0) -> dict[str, list[dict]]:
    """:func:`evaluate` of ``family`` on ``records`` (default: the world's two CheemsBench subsets), then the null
    controls (:func:`cheems_lib.analyses.leaderboard.baseline_scores`, drawn with ``seed``) on the same records,
    bootstrapped with the same ``seed``, so that every comparison with them is paired."""
    subsets = dict(records or world.bench)
    results = evaluate(family, world, records=subsets, n_boot=n_boot, seed=seed)
    controls = baseline_scores([r for recs in subsets.values() for r in recs], seed=seed)
    results.update(evaluate_scores(controls, subsets, n_boot=n_boot, seed=seed))
    return results


PREFERENCE_FILE_MODEL = "tiny · preference file"
"""The row name of the reward model trained on a real folder's preference file (:func:`preference_file_results`)."""


def preference_file_results(world: World, subsets: Mapping[str, Sequence[Record]], *, seeds: Sequence[int],
                            epochs: int, n_boot: int = 1000, seed: int = 0) -> tuple[str | None, dict[str, list[dict]]]:
    """``(name, results)``: a tiny reward model trained on ``world``'s preference file with every seed of ``seeds``
    (named :data:`PREFERENCE_FILE_MODEL`) and the null controls, evaluated on ``subsets`` (name -> records) by
    :func:`evaluate_with_controls`; ``(None, {})`` without a preference file or subsets."""
    if world.preference is None or not subsets:
        return None, {}
    family = _preference_file_family(world, seeds, epochs)
    return PREFERENCE_FILE_MODEL, evaluate_with_controls(family, world, records=subsets, n_boot=n_boot, seed=seed)


def preference_file_scores(world: World, subsets: Mapping[str, Sequence[Record]], *, seeds: Sequence[int],
                           epochs: int) -> dict[str, list[dict]]:
    """The scores behind :func:`preference_file_results` (``{PREFERENCE_FILE_MODEL: [scores per seed]}``, loaded from
    the zoo's cache once trained and scored), for analyses that need scores rather than metrics; ``{}`` without a
    preference file or subsets."""
    if world.preference is None or not subsets:
        return {}
    return score_family(_preference_file_family(world, seeds, epochs), world, records=subsets, progress=False)


def _preference_file_family(world: World, seeds: Sequence[int], epochs: int) -> Family:
    return Family({PREFERENCE_FILE_MODEL: world.preference}, seeds=tuple(seeds), epochs=epochs, group="real data")


def estimate(results: Mapping[str, list[dict]], name: str, metric: str = "overall", subsets: Sequence[str] | None = None):
    """:func:`cheems_lib.estimates.subset_estimate` of one model of an :func:`evaluate` result."""
    return subset_estimate(results[name], metric, subsets)


@dataclass
class LeaderboardModels:
    """The leaderboard's reward models and their scores (:func:`leaderboard_models`)."""

    scores: dict  # model -> its scores on the benchmark's records
    rewardbench: dict  # model -> its scores on the RewardBench-like comparator's records
    kinds: dict  # model -> its kind in Table 2 ("discriminative", "discriminative (ours)")
    family: Family | None  # the embedded zoo's family, when it was trained here
    skipped: str | None = None  # the zoo models asked for that this world's files cannot train, and why

    def prose_values(self, world: World, *, gpt_prompts: int, seeds: Sequence[int]) -> dict[str, object]:
        """What the chapter's prose says of the embedded zoo, by glue name: the training sets (``zoo_sets``), the
        GPT-annotated prompts its GPT-subset model trains on (``n_gpt_train``) and its seeds (``train_seeds_text``);
        ``none`` and 0 when no zoo was trained here."""
        trained = self.family is not None
        return {"zoo_sets": ", ".join(self.family.sets) if trained and self.family.sets else "none",
                "n_gpt_train": len(world.gpt(gpt_prompts)) if trained and world.gpt() is not None else 0,
                "train_seeds_text": seeds_text(seeds) if trained else "none"}


def leaderboard_models(world: World, rewardbench, *, models: Mapping[str, str] | Sequence[str] = (),
                       zoo: Sequence[str] | None = None, seeds: Sequence[int], epochs: int,
                       gpt_prompts: int = GPT_PROMPTS, batch_size: int = 16) -> LeaderboardModels:
    """The evaluation chapter's reward models scored on the benchmark and on ``rewardbench``: ``models`` (row name
    -> hub name or path, or a list of them), loaded with ``from_pretrained``, and the embedded zoo's
    :func:`leaderboard_family` trained here: the zoo models named in ``zoo``, or (``zoo=None``) all of them when
    ``models`` is empty (:func:`cheems_lib.publishing.model_list.choose`); none without the benchmark files."""
    if not world.bench:
        return LeaderboardModels({}, {}, {}, None)
    models = dict(models) if isinstance(models, Mapping) else {m: m for m in models}
    out = LeaderboardModels({}, {}, {}, None)
    if models:
        paths = list(dict.fromkeys(models.values()))
        scores, on_rewardbench = score_models(paths, [world.bench_records, rewardbench.records], device=world.device,
                                              dtype=world.dtype, batch_size=batch_size)
        out.scores |= {name: scores[path] for name, path in models.items()}
        out.rewardbench |= {name: on_rewardbench[path] for name, path in models.items()}
        out.kinds |= dict.fromkeys(models, "discriminative")
    if zoo is None and models:
        return out
    family = leaderboard_family(world, seeds=seeds, epochs=epochs, gpt_prompts=gpt_prompts)
    if zoo is not None:
        available, missing = list(family.sets), [n for n in zoo if n not in family.sets]
        family = Family({n: r for n, r in family.sets.items() if n in zoo}, seeds=family.seeds, epochs=epochs,
                        models={n: m for n, m in family.models.items() if n in zoo}, group=family.group)
        if missing:
            out.skipped = (f"*Skipped: the zoo model{'s' if len(missing) > 1 else ''} {', '.join(missing)} of the "
                           f"models file; this folder's preference files train only "
                           f"{', '.join(available) or 'none'}.*")
    out.family = family
    if family.sets:
        out.scores |= score_family(family, world)
        out.rewardbench |= score_family(family, world, records={"RewardBench-like": rewardbench.records},
                                        progress=False)
        out.kinds |= dict.fromkeys(family.sets, "discriminative (ours)")
    return out


def leaderboard_judges(judges: Mapping[str, str], world: World, *, pairs: int, seed: int) -> dict[str, str]:
    """The evaluation chapter's judges, row name -> hub name or path: ``judges`` when given, else a tiny judge
    trained here (:func:`cheems_lib.models.zoo.judge_or_load`, ``pairs`` training pairs) on the golden human subset,
    else on the preference set, else none."""
    if judges:
        return dict(judges)
    train = world.human if world.human is not None else world.preference
    if train is None:
        return {}
    return {"tiny judge (trained here)": zoo.judge_or_load(train, size="tiny-s", max_pairs=pairs, epochs=2, seed=seed)}


def ladder_records(world: World, *, gpt_prompts: int = GPT_PROMPTS, seed: int = 0, epochs: int = 2) -> list[Record]:
    """The data ladder's training set (Fig. 6): CheemsPreference exactly as Table 4 builds it, so the ladder's top
    point is Table 4's last model, when the files split human and GPT prompts; else the preference set as it is."""
    if world.human is not None and world.gpt() is not None:
        table4, _, _ = table4_sets(world, gpt_prompts=gpt_prompts, seed=seed, epochs=epochs)
        return table4[ABLATION[-1]]
    return world.preference


def parameter_counts(family: Family) -> dict[str, int]:
    """Each model's parameter count by its training set's name (Fig. 7's x axis), from the trained checkpoints."""
    paths = dict(zip([s.name for s in family.specs()], train(family.specs(), progress=False)))
    return {name: count_parameters(path) for name, path in paths.items()}
