"""The experiments the chapters run: the world, the training sets, the model families.

Every chapter starts with :func:`open_world` (the files, the length scale, the source label
and the device) and builds its training sets with the named builders here, so a model that
two chapters need is built from the same records with the same config and the zoo
(:mod:`cheems_lib.models.zoo`) trains it once:

- :func:`table4_sets`: the CheemsPreference ablation (Table 4); its last set is CheemsPreference;
- :func:`table3_sets`: the analogues of Table 3's open datasets (:mod:`cheems_lib.analyses.transfer`);
- :func:`data_ladder`: nested subsets of CheemsPreference (Fig. 6), one chain per training seed;
- :func:`model_sizes`: one training set, several model sizes (Fig. 7);
- :func:`leaderboard_family`: the tiny reward models of the Table 2 leaderboard (the same
  records and configs as Table 4's human and GPT rows and Fig. 7's ``tiny-xs``);
- :func:`population`: the union of all of them (Fig. 5).

A :class:`Family` is a set of named training sets, each trained with every training seed
(``train_seeds``), on a fixed world: the world's ``seed`` never changes with training.
:func:`evaluate` scores a family on the benchmark and returns, per model, one
:class:`cheems_lib.metrics.SubsetResult` per subset and seed, all bootstrapped with the world
seed, so every comparison between models is paired (see :mod:`cheems_lib.analyses.claims`).
The leaderboard of such results (:func:`cheems_lib.analyses.leaderboard.evaluate_scores`,
:func:`cheems_lib.analyses.leaderboard.leaderboard_frame`) is :mod:`cheems_lib.analyses.leaderboard`'s.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping, Sequence

from .. import distant_supervision as ds, world_files
from ..distant_supervision import ABLATION
from ..estimates import subset_estimate
from ..models import zoo
from ..models.reward_model import count_parameters, is_tiny
from ..models.training_config import default_device, TrainConfig
from ..publishing.publish import md_code, md_text, world_source
from ..records import json_lines, read_json, ReadReport, Record
from ..world import simulation
from ..world_files import (GPT_LAYOUT, LAYOUT, missing_sentence, model_labels, RELEASE_FILES, SIMULATED_FILES,
                           UNKNOWN_LABELS)
from . import scaling
from .leaderboard import evaluate_scores, score_models
from .transfer import analogues, TABLE3_PROMPTS

__all__ = ["World", "open_world", "ModelSpec", "Family", "table4_sets", "table3_sets", "data_ladder",
           "ladder_family", "model_sizes", "leaderboard_family", "population", "train", "score_family",
           "evaluate", "estimate", "seeds_text", "SUBSET_NAMES", "GPT_PROMPTS", "LeaderboardModels",
           "leaderboard_models", "leaderboard_judges", "ladder_records", "parameter_counts"]

SUBSET_NAMES = {"open": "Open Prompt", "human": "Human Instruction"}
GPT_PROMPTS = 800
"""The GPT-annotated prompts (the subset's first) that Table 4's sets, the leaderboard's GPT-subset model and
the population train on: a share of the subset, to keep the CPU budget. Every chapter's ``gpt_prompts``
defaults to it (tests/test_chapters.py checks the parameters cells), so the zoo trains their shared models once."""


@dataclass
class World:
    """A world folder, opened: its files (any layout of spec §6/§6b, see
    :func:`cheems_lib.world_files.detect_layout`) and how to describe and run on them.

    A file the folder does not hold is absent: :attr:`human`, :meth:`gpt` and :attr:`preference`
    are None, :attr:`bench` lacks the subset; :meth:`has` and :meth:`missing` let a chapter skip a
    section and say which file it needs, never a KeyError.
    """

    directory: Path
    files: dict[str, list[Record]]
    length_scale: float
    """Simulated lengths are this fraction of real length (1.0 for real files)."""
    simulated: bool
    """True for the output of ``cheems simulate`` (its truth.jsonl / summary.json), false for real files."""
    size: str
    seed: int
    summary: dict | None = None
    device: str | None = None
    """``cuda`` when a GPU is available, else None (the CPU)."""
    dtype: Any = None
    """bfloat16 on a GPU, else None (float32)."""
    layout: Any = None
    """The :class:`cheems_lib.world_files.Layout` detected (None only for a World built by hand)."""
    reading: dict = field(default_factory=dict)
    """What reading the files did besides parsing them, per file (its path in the folder): the records that came
    without ``rank`` and were ranked on read with Algorithm 1 and their conflicts, the flat pairs skipped for their
    label (:class:`cheems_lib.records.ReadReport`; :func:`cheems_lib.world_files.load_world`). :attr:`about` says it."""

    @property
    def label(self) -> str:
        """How prose names the data: "the simulated world (size default, seed 0)" or "the files in DIR"."""
        return f"the simulated world (size {self.size}, seed {self.seed})" if self.simulated else f"the files in {self.directory}"

    @property
    def labels(self) -> str:
        """Who labelled the data: the manifest's ``labels``, "the simulator's annotators", or "unknown labels"."""
        if self.simulated:
            return "the simulator's annotators"
        return self.layout.labels if self.layout is not None else "unknown labels"

    @property
    def source(self) -> str:
        """Provenance of every number computed from this world (see :func:`cheems_lib.publishing.publish.world_source`)."""
        return world_source(self.directory)

    def trained_source(self, seeds: Sequence[int]) -> str:
        """:attr:`source` plus the training seeds of the models whose numbers it labels."""
        return world_source(self.directory, note=f"training seeds {seeds_text(seeds)}")

    def has(self, *keys: str) -> bool:
        """Whether every file in ``keys`` (§6 paths, e.g. ``cheems_bench_gpt/open.jsonl``) was loaded."""
        return all(k in self.files for k in keys)

    def missing(self, what: str, *keys: str) -> str | None:
        """None when the files in ``keys`` are present, else the one sentence saying that ``what`` was
        skipped and which of them it needs (:func:`cheems_lib.world_files.missing_sentence`); for the
        human/GPT preference subsets of an unsplit ``cheems_preference.jsonl``, how to split it."""
        absent = [k for k in keys if k not in self.files]
        if not absent:
            return None
        split = {LAYOUT["pref_human"], LAYOUT["pref_gpt"]}
        if RELEASE_FILES["preference"] not in self.files or not split & {*absent}:
            return missing_sentence(what, *absent)
        needs = [f"`{k}`" for k in absent if k not in split]
        needs.append('the human and GPT subsets of `cheems_preference.jsonl` (give its records a `"subset"` field, '
                     '`"human"` or `"gpt"`, or pass `-p human_ids FILE`, one prompt id per line)')
        return missing_sentence(what, *needs, quoted=False)

    def missing_subset(self, what: str) -> str | None:
        """With exactly one CheemsBench subset, the one sentence saying that ``what`` runs on it alone and
        which file the other needs; None with both (or with neither: :meth:`missing` says that)."""
        if len(self.bench) != 1:
            return None
        absent = next(k for k in SUBSET_NAMES if k not in self.bench)
        return missing_sentence(f"{what} on the {SUBSET_NAMES[absent]} subset (only the "
                                f"{SUBSET_NAMES[next(iter(self.bench))]} subset is used)", SIMULATED_FILES[absent])

    def comparable(self, key: str) -> bool:
        """Whether the paper's numbers may be compared with the records under ``key`` (a §6 path): always for a
        simulated world, else unless its manifest says ``"comparable": false``
        (:meth:`cheems_lib.world_files.Layout.comparable`, the one rule)."""
        return self.simulated or self.layout is None or self.layout.comparable(key)

    def other_data(self, key: str) -> str | None:
        """None when :meth:`comparable`, else what the file under ``key`` holds: the manifest's ``content``
        (else its ``name``), or "other data"."""
        if self.comparable(key):
            return None
        return self.layout.content(key) or "other data"

    def not_comparable(self, what: str, key: str, shown_as: str = "") -> str | None:
        """None when :meth:`comparable`, else one Markdown sentence: the file (``shown_as``: its name in a
        table), what it holds (:meth:`other_data`) and that the paper's ``what`` are not comparable with it."""
        holds = self.other_data(key)
        if holds is None:
            return None
        shown = f" (shown as {md_code(shown_as)})" if shown_as else ""
        return (f"*{md_code(key)}{shown} holds {md_text(holds)}: the paper's {what} are not comparable with it, "
                f"as its `manifest.json` says (`\"comparable\": false`).*")

    def file_labels(self, key: str) -> str:
        """Who labelled the file under ``key``: "the simulator's annotators" or the manifest's
        (:meth:`cheems_lib.world_files.Layout.file_labels`)."""
        if self.simulated or self.layout is None:
            return self.labels
        return self.layout.file_labels(key)

    @property
    def bench_labels(self) -> tuple[str, bool]:
        """Who labelled the CheemsBench files present, and whether those are model labels
        (:func:`cheems_lib.world_files.model_labels`); ``("human annotators", False)`` on a simulated world,
        whose benchmark files hold its simulated human annotators' labels."""
        if self.simulated:
            return "human annotators", False
        keys = [SIMULATED_FILES[k] for k in self.bench] or [LAYOUT["bench_open"]]
        names = list(dict.fromkeys(self.file_labels(k) for k in keys))
        names = [n for n in names if n != UNKNOWN_LABELS] or [UNKNOWN_LABELS]
        return " and ".join(names), any(model_labels(n) for n in names)

    @property
    def conditions(self) -> dict[str, bool]:
        """What this world's files allow, for :func:`cheems_lib.publishing.publish.show_conditions` (cells tagged
        ``if-<name>`` / ``unless-<name>``): ``simulated``, ``truth``, ``open``, ``human`` (benchmark
        subsets), ``bench`` (either), ``bench-both``, ``gpt-bench`` (both GPT-annotated copies),
        ``pref-human``, ``pref-gpt``, ``pref-split`` (both), ``preference`` (any preference file)."""
        has = self.has
        pref_h, pref_g = has(LAYOUT["pref_human"]), has(LAYOUT["pref_gpt"])
        return {"simulated": self.simulated, "truth": self.truth is not None,
                "open": has(LAYOUT["bench_open"]), "human": has(LAYOUT["bench_human"]),
                "bench": bool(self.bench), "bench-both": len(self.bench) == 2,
                "gpt-bench": has(*GPT_LAYOUT.values()),
                "pref-human": pref_h, "pref-gpt": pref_g, "pref-split": pref_h and pref_g,
                "preference": self.preference is not None}

    @property
    def about(self) -> str:
        """Markdown for the top of a page: where the data came from and who labelled it, then (when reading
        did anything besides parsing) how many records were ranked on read with Algorithm 1 and their conflicts,
        and how many flat pairs were skipped for their label (:attr:`reading`). Every chapter shows it."""
        if self.simulated:
            text = f"Data: {md_text(self.source)}, annotated by the simulator's annotators (no real labels)."
        else:
            name = (self.layout.manifest or {}).get("name") if self.layout is not None else None
            named = f"{md_text(name)}: " if name else ""
            text = (f"Data: {named}{md_code(self.source)}. Labels: {md_text(self.labels)}"
                    f"{'' if self.labels.endswith('.') else '.'}")
        read = self.read_report
        return " ".join([text, *read.sentences(name=md_code, code=md_code)]) if read else text

    @property
    def read_report(self) -> ReadReport:
        """:attr:`reading` added up over the files, with each file named by its path in the folder."""
        total = ReadReport()
        for rel, report in self.reading.items():
            total.add(ReadReport(resolved=report.resolved, conflicted=report.conflicted,
                                 annotations=report.annotations, unreproduced=report.unreproduced,
                                 other_labels=dict(report.other_labels), notes=list(report.notes),
                                 unranked_by_file={rel: report.unranked} if report.unranked else {},
                                 resolved_files=[rel] if report.resolved else [],
                                 label_files=[rel] if report.other_labels else []))
        return total

    @property
    def bench(self) -> dict[str, list[Record]]:
        """The human-annotated CheemsBench subsets present (``open``, ``human``, or fewer)."""
        return {name: self.files[SIMULATED_FILES[name]] for name in SUBSET_NAMES if SIMULATED_FILES[name] in self.files}

    @property
    def bench_records(self) -> list[Record]:
        return [r for s in self.bench.values() for r in s]

    @property
    def human(self) -> list[Record] | None:
        """The golden human-annotated preference subset; None when absent (or not split from the one file)."""
        return self.files.get(LAYOUT["pref_human"])

    @property
    def preference(self) -> list[Record] | None:
        """Every preference record the folder holds (human then GPT subset, or the one unsplit file); None if none."""
        if RELEASE_FILES["preference"] in self.files:
            return self.files[RELEASE_FILES["preference"]]
        parts = [self.files[k] for k in (LAYOUT["pref_human"], LAYOUT["pref_gpt"]) if k in self.files]
        return [r for p in parts for r in p] if parts else None

    @cached_property
    def truth(self) -> dict[tuple[str, str], float] | None:
        """The simulator's hidden utility ``{(prompt id, response id): utility}`` from ``truth.jsonl``;
        None for real files (they have no hidden truth)."""
        path = self.layout.paths.get("truth") if self.layout is not None else self.directory / "truth.jsonl"
        if path is None or not path.exists():
            return None
        return {(t["prompt_id"], t["response_id"]): t["utility"] for _, t in json_lines(path)}

    def gpt(self, prompts: int = 0) -> list[Record] | None:
        """The first ``prompts`` of the GPT-annotated preference subset (0: all); None when absent."""
        gpt = self.files.get(LAYOUT["pref_gpt"])
        if gpt is None:
            return None
        return gpt[:prompts] if prompts else list(gpt)


def open_world(world_dir: str = "", size: str = "default", seed: int = 0, human_ids: str = "") -> World:
    """The files in ``world_dir`` (any layout :func:`cheems_lib.world_files.detect_layout` knows; a
    one-file preference set split by its ``subset`` field or the ``human_ids`` file), or the
    simulated world (size, seed), simulated on first use. Every file may be in any form the release
    ships it in; records without ``rank`` are ranked on read with Algorithm 1, and the World's
    :attr:`World.reading` and :attr:`World.about` say how many and with how many conflicts."""
    directory = Path(world_dir) if world_dir else simulation.ensure_world(size, seed)
    layout = world_files.detect_layout(directory, human_ids or None)
    summary = read_json(layout.paths["summary"]) if "summary" in layout.paths else None
    summary = summary if layout.simulated and isinstance(summary, dict) else None
    device, dtype = _device()
    reading: dict[str, ReadReport] = {}  # filled by load_layout: what reading resolved or skipped, per file
    return World(directory=directory, files=world_files.load_layout(layout, reading),
                 length_scale=summary.get("length_scale", 1.0) if summary else 1.0, simulated=layout.simulated,
                 # a simulated folder passed as world_dir is described (and re-simulated) by its own summary
                 size=(summary or {}).get("size", size), seed=(summary or {}).get("seed", seed), summary=summary,
                 device=device, dtype=dtype, layout=layout, reading=reading)


def _device():
    """(device, dtype) of the chapters' models: ``cuda`` and bfloat16 on a GPU
    (:func:`cheems_lib.models.training_config.default_device`), else (None, None), the CPU in float32."""
    if default_device() == "cpu":
        return None, None
    import torch

    return "cuda", torch.bfloat16


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


def seeds_text(seeds: Sequence[int]) -> str:
    """``0-2`` for a run of seeds, else ``0, 3, 5``."""
    seeds = list(seeds)
    if len(seeds) > 1 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(map(str, seeds))


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
    sets, models = {}, {}
    if world.human is not None:
        sets |= {"tiny · human subset": world.human, "tiny-xs · human subset": world.human}
        models["tiny-xs · human subset"] = "tiny-xs"
    if world.gpt() is not None:
        sets["tiny · GPT subset"] = world.gpt(gpt_prompts)
    if not sets and world.preference is not None:
        sets = {"tiny · preference set": world.preference, "tiny-xs · preference set": world.preference}
        models["tiny-xs · preference set"] = "tiny-xs"
    order = ["tiny · human subset", "tiny · GPT subset", "tiny-xs · human subset"]  # the order before §6b
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
    t3 = {n: d["records"] for n, d in table3_sets(world, prompts=transfer_prompts, seed=seed).items()}
    specs += Family(t3, seeds=tuple(seeds), epochs=epochs, group="Table 3").specs()
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


def leaderboard_models(world: World, rewardbench, *, models: Mapping[str, str] | Sequence[str] = (),
                       zoo: Sequence[str] | None = None, seeds: Sequence[int], epochs: int,
                       gpt_prompts: int = GPT_PROMPTS, batch_size: int = 16) -> LeaderboardModels:
    """The evaluation chapter's reward models scored on the benchmark and on ``rewardbench``: ``models`` (row name
    -> hub name or path, or a list of them), loaded with ``from_pretrained``, and the embedded zoo's
    :func:`leaderboard_family` trained here: the zoo models named in ``zoo``, or (``zoo=None``) all of them when
    ``models`` is empty (:func:`cheems_lib.analyses.model_list.choose`); none without the benchmark files."""
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
