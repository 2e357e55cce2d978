"""Scaling trends (paper §6.4, Figs. 6-7): training-set ladders and model sizes.

Fig. 6 trains reward models on growing subsets of CheemsPreference and plots accuracy
against the number of training pairs; Fig. 7 does the same against model size.
:func:`ladder` gives geometric subset sizes, :func:`nested_subsets` draws them so that
each smaller subset is contained in the larger ones (one seed = one nested chain, records
kept in their original order, so the full set is the unchanged file), :func:`count_pairs`
and :func:`cheems_lib.models.reward_model.count_parameters` give the two x axes. The models are built by
:func:`cheems_lib.analyses.experiments.ladder_family` and :func:`cheems_lib.analyses.experiments.model_sizes`;
their intervals over training seeds come from :mod:`cheems_lib.analyses.claims`.

The chapter's presentation lives here too: :func:`data_sweep` and :func:`size_sweep` turn
evaluated models into per-seed dots and a mean curve with intervals, :func:`plot_sweep` and
:func:`interval_table` show them, and :func:`add_data_claim` and :func:`add_size_claims` test
the paper's two claims on the ledger. :func:`why_skipped`, :func:`subset_labels`, :func:`size_training_set` and
:func:`prose_values` read what the chapter needs of its world.

Sizes too large to train on one device (the paper profile's Qwen2.5 from 7B on an 80 GB GPU) are trained with
``accelerate launch`` and handed in as finished folders (:func:`checkpoints_for`, the chapter's ``checkpoints_file``).
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..baselines import CHANCE, CONTROLS, null_controls
from ..estimates import all_of, INSUFFICIENT, p_value, subset_estimate
from ..input_files import read_json
from ..records import Record, strict_pairs
from ..world_files import missing_sentence
from .claims import Claim
from .leaderboard import CONTROLS_SECTION
from .world_folder import seeds_text, SUBSET_NAMES

__all__ = ["ladder", "nested_subsets", "count_pairs", "sweep_points", "sweep_curve", "data_sweep", "size_sweep",
           "plot_sweep", "CONTROLS_NOTE", "interval_table", "data_summary", "PER_SUBSET_ID", "add_data_claim", "add_size_claims",
           "add_untestable_claims", "why_skipped", "subset_labels", "size_training_set", "prose_values",
           "TRAIN_BYTES_PER_PARAMETER", "name_billions", "device_memory", "checkpoints_for"]


def ladder(total: int, *, points: int = 6, ratio: float = 2.0) -> list[int]:
    """``points`` sizes from ``total`` down by ``ratio`` each, ascending.

    >>> ladder(3200, points=6)
    [100, 200, 400, 800, 1600, 3200]
    """
    if total / ratio ** (points - 1) < 1:
        raise ValueError(f"a ladder of {points} points with ratio {ratio} needs at least "
                         f"{int(np.ceil(ratio ** (points - 1)))} records, got {total} (fix: lower points or ratio)")
    return [int(round(total / ratio**k)) for k in range(points)][::-1]


def nested_subsets(records: Sequence[Record], sizes: Sequence[int], *, seed: int = 0) -> dict[int, list[Record]]:
    """For each size, the first ``size`` records of one seeded permutation, in file order.

    Smaller subsets are contained in larger ones; the size ``len(records)`` is the file itself.
    """
    if max(sizes) > len(records):
        raise ValueError(f"subset size {max(sizes)} exceeds the {len(records)} records available")
    perm = np.random.default_rng(seed).permutation(len(records))
    return {n: [records[i] for i in np.sort(perm[:n])] for n in sizes}


def count_pairs(records: Sequence[Record]) -> int:
    """Ordered training pairs (responses of different rank) in ``records``: Fig. 6's x axis."""
    return sum(len(strict_pairs(rec.rank or {})) for rec in records)


def sweep_points(results: Mapping[str, list[dict]], x: Mapping[str, Sequence[float]],
                 labels: Mapping[str, str]):
    """One row per model, training seed and subset: its accuracy, at ``x[name][i]`` for the i-th seed.

    ``results`` is :func:`cheems_lib.analyses.experiments.evaluate`'s; ``labels`` names the subsets
    (``{"open": "Open Prompt", ...}``).
    """
    import pandas as pd

    return pd.DataFrame([{"model": name, "x": x[name][i], "subset": labels[sub], "accuracy": res.accuracy}
                         for name, per_seed in results.items() for i, by_sub in enumerate(per_seed)
                         for sub, res in by_sub.items()])


def sweep_curve(results: Mapping[str, list[dict]], x: Mapping[str, float], labels: Mapping[str, str]):
    """One row per model and subset (in ``labels`` order): mean accuracy over seeds at ``x[name]``
    and its hierarchical 95% interval (``lo``, ``hi``)."""
    import pandas as pd

    rows = []
    for name, per_seed in results.items():
        for sub, label in labels.items():
            est = subset_estimate(per_seed, "accuracy", [sub])
            lo, hi = est.interval()
            rows.append({"model": name, "x": x[name], "subset": label, "seeds": est.seeds,
                         "accuracy": est.value, "lo": lo, "hi": hi})
    return pd.DataFrame(rows)


def data_sweep(specs: Sequence, results: Mapping[str, list[dict]], labels: Mapping[str, str]):
    """Fig. 6's dots and curve: x is the training pairs of each seed's subset (the curve: their mean
    over seeds), and the curve's ``prompts`` column is the subset's size.

    ``specs`` are :func:`cheems_lib.analyses.experiments.ladder_family`'s, in the order ``results`` lists seeds.
    """
    pairs: dict[str, list[int]] = {}
    for spec in specs:
        pairs.setdefault(spec.name, []).append(count_pairs(spec.records))
    prompts = {spec.name: len(spec.records) for spec in specs}
    mean_pairs = {name: float(np.mean(p)) for name, p in pairs.items()}
    curve = sweep_curve(results, mean_pairs, labels).assign(prompts=lambda d: d["model"].map(prompts))
    return sweep_points(results, pairs, labels), curve


def size_sweep(results: Mapping[str, list[dict]], params: Mapping[str, int], sizes: Mapping[str, str],
               labels: Mapping[str, str]):
    """Fig. 7's dots and curve: x is each model's parameter count; the curve's ``model`` column is
    its size name (``sizes[name]``) and ``parameters`` its count."""
    dots = sweep_points(results, {name: [params[name]] * len(per_seed) for name, per_seed in results.items()},
                        labels)
    curve = sweep_curve(results, params, labels).assign(model=lambda d: d["model"].map(sizes),
                                                        parameters=lambda d: d["x"])
    return dots, curve


def plot_sweep(dots, curve, *, xlabel: str, color: str, title: str, annotate: str | None = None):
    """One panel per subset (the curve's order), log x: a black dot per seed, the mean over seeds
    and its 95% band; ``annotate`` names a curve column written beside each mean."""
    import matplotlib.pyplot as plt

    subsets = list(dict.fromkeys(curve["subset"]))
    fig, grid = plt.subplots(1, len(subsets), figsize=(10, 3.8), sharey=True, squeeze=False)
    axes = grid[0]
    for ax, sub in zip(axes, subsets):
        d = curve[curve["subset"] == sub].sort_values("x")
        ax.fill_between(d["x"], d["lo"], d["hi"], alpha=0.25, color=color, label="95% interval (over seeds and prompts)")
        ax.plot(d["x"], d["accuracy"], "o-", color=color, label="mean over seeds")
        r = dots[dots["subset"] == sub]
        ax.scatter(r["x"], r["accuracy"], s=12, color="black", alpha=0.6, label="one training seed", zorder=3)
        ax.set(xscale="log", title=sub, xlabel=xlabel)
    axes[0].set_ylabel("accuracy")
    axes[0].legend(loc="best", fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    for ax, sub in zip(axes, subsets if annotate else []):  # after the layout, which the labels must not move
        for _, r in curve[curve["subset"] == sub].iterrows():
            ax.annotate(r[annotate], (r["x"], r["accuracy"]), textcoords="offset points", xytext=(4, -12), fontsize=7)
    return fig


CONTROLS_NOTE = ("null controls in their own section, not ranked (–: a control has no training data and no model; "
                 "chance is exact)")
"""What a caption of :func:`interval_table` with the null controls says of them."""


def interval_table(curve, index: Sequence[str], bench: Mapping[str, Sequence[Record]] | None = None,
                   labels: Mapping[str, str] | None = None, *, sort: str | None = None, seed: int = 0):
    """The curve as "mean [low, high]" cells, one column per subset, rows by ``index`` (sorted by the level
    ``sort`` when given). With the benchmark's subsets ``bench`` (and their column ``labels``), the null controls
    follow in their own section (:func:`cheems_lib.baselines.null_controls` on the same records: each
    subset's accuracy), their row named in the index's first level and ``–`` in the others (no training data)."""
    import pandas as pd

    cells = curve.assign(**{"accuracy [95% interval]": [f"{a:.3f} [{lo:.3f}, {hi:.3f}]" for a, lo, hi in
                                                         zip(curve["accuracy"], curve["lo"], curve["hi"])]})
    table = cells.pivot(index=index, columns="subset", values="accuracy [95% interval]")
    table = table.sort_index(level=sort) if sort else table
    if bench is None:
        return table
    labels = labels or {k: k for k in bench}
    nulls = null_controls({k: bench[k] for k in labels}, seed=seed)
    nulls = nulls[nulls["category"] == ""].assign(subset=lambda d: d["subset"].map(labels))
    rows = {}
    for name, group in nulls.groupby("control", sort=False):
        key = (f"null control: {CONTROLS[name]}", *["–"] * (len(index) - 1))
        rows[key if len(index) > 1 else key[0]] = {sub: f"{acc:.3f}" + (" (exact)" if name == CHANCE else "")
                                                  for sub, acc in zip(group["subset"], group["accuracy"])}
    controls = pd.DataFrame.from_dict(rows, orient="index")[list(table.columns)]
    controls.index = pd.MultiIndex.from_tuples(controls.index, names=index) if len(index) > 1 else controls.index.rename(index[0])
    return pd.concat({"reward models": table, CONTROLS_SECTION: controls}, names=["section"])


def _prompts(curve) -> dict[str, int]:
    return {name: int(n) for name, n in zip(curve["model"], curve["prompts"])}


def data_summary(results: Mapping[str, list[dict]], curve) -> dict[str, object]:
    """What the prose says of the data ladder: its prompt and pair ranges, the fold range, and the
    rank correlation of size and accuracy (mean over seeds and subsets)."""
    import pandas as pd

    prompts, names = _prompts(curve), list(results)
    small, large = names[0], names[-1]
    both = curve.groupby("prompts")["accuracy"].mean()
    return {"data_range": f"{prompts[small]:,} to {prompts[large]:,}",
            "data_pairs_range": f"{int(curve['x'].min()):,} to {int(curve['x'].max()):,}",
            "data_span": float(prompts[large] / prompts[small]),
            "data_rho": float(pd.Series(both.index).rank().corr(pd.Series(both.to_numpy()).rank()))}


PER_SUBSET_ID = "fig6-data-scaling-per-subset"
"""Fig. 6's claim on each CheemsBench subset alone (:func:`add_data_claim`)."""


def add_data_claim(ledger, results: Mapping[str, list[dict]], curve):
    """Test Fig. 6's claim on ``ledger``: the largest training set (the last of ``results``) beats
    the smallest (the first) in accuracy, paired over prompts and hierarchical over seeds; then the same on each
    subset alone (:data:`PER_SUBSET_ID`: every subset must hold, :func:`cheems_lib.estimates.all_of`)."""
    prompts, names = _prompts(curve), list(results)
    small, large = names[0], names[-1]
    diff = subset_estimate(results[large], "accuracy") - subset_estimate(results[small], "accuracy")
    _add_per_subset(ledger, results, small, large, prompts)
    # the claim's words, direction and sentences: the registry's (claim_registry, claims.claim_sentences)
    return ledger.add(Claim.test(
        "fig6-data-scaling", diff, link="paper-fig6",
        statistic=f"accuracy (mean of Open Prompt and Human Instruction) of the largest minus the smallest training set "
                  f"({prompts[large]} vs {prompts[small]} prompts), paired over prompts, hierarchical over training seeds",
        paper='"RM performance improves with increased data volume on Open Prompt and Human Instruction subsets" '
              "(a plot without numbers)"))


def _add_per_subset(ledger, results, small: str, large: str, prompts) -> None:
    """Fig. 6 per subset: the largest minus the smallest training set's accuracy on each subset, all above zero."""
    subsets = [s for s in SUBSET_NAMES if s in results[large][0]]
    versus = {SUBSET_NAMES[s]: subset_estimate(results[large], "accuracy", [s])
              - subset_estimate(results[small], "accuracy", [s]) for s in subsets}
    verdict, closest, diff = all_of(versus, "greater")
    lo, hi = diff.interval()
    interval = "{estimate:+.3f} [95% interval {lo:+.3f}, {hi:+.3f}]"
    lead = f"On each subset alone, training on {prompts[large]:,} rather than {prompts[small]:,} prompts"
    ledger.add(Claim(
        PER_SUBSET_ID, "", "A reward model trained on more data is more accurate on each CheemsBench subset",
        "", verdict, estimate=diff.value, ci_low=lo, ci_high=hi, seeds=diff.seeds, n=diff.n, unit=diff.unit,
        p=float(np.max([p_value(d, "greater") for d in versus.values()])), direction="greater",
        replicates=int(diff.boot.shape[1]), link="paper-fig6",
        statistic=f"accuracy of the largest minus the smallest training set on each of {', '.join(versus)}, paired "
                  "over prompts, hierarchical over training seeds; the estimate is the subset that decides the verdict",
        says={"supported": f"{lead} raises accuracy; the smaller gain, on {closest}, is {interval}.",
              "contradicted": f"{lead} lowers accuracy on {closest}: {interval}.",
              "inconclusive": f"{lead} does not separate the two on {closest}: {interval}.",
              INSUFFICIENT: f"On {closest} alone the comparison rests on too few prompts ({diff.n})."}))


def add_size_claims(ledger, results: Mapping[str, list[dict]], params: Mapping[str, int], sizes: Mapping[str, str]):
    """Test Fig. 7's claims on ``ledger``: the model with most parameters beats the one with fewest
    (same data), and record the pretrained-versus-instruct claim as untestable on tiny models."""
    smallest, largest = min(params, key=params.get), max(params, key=params.get)
    diff = subset_estimate(results[largest], "accuracy") - subset_estimate(results[smallest], "accuracy")
    ledger.add(Claim.test(
        "fig7-model-scaling", diff, link="paper-fig7",
        statistic=f"accuracy (mean of Open Prompt and Human Instruction) of the largest minus the smallest model "
                  f"({sizes[largest]}, {params[largest]:,} parameters, vs {sizes[smallest]}, {params[smallest]:,}), "
                  "same training data, paired over prompts, "
                  "hierarchical over training seeds",
        paper='"increasing the model size from 0.5B to 72B significantly enhances performance" (a plot without numbers)'))
    ledger.add(Claim.untestable(
        "fig7-pretrained-vs-instruct", "", "", link="paper-fig7",
        paper='"there is no significant difference when starting training from pretrained or instruct models"',
        reason="the tiny reward models start from random weights, so there is neither a pretrained nor an "
               "instruction-tuned starting point to compare"))


def add_untestable_claims(ledger, reason: str) -> None:
    """Figs. 6 and 7's claims when the files cannot run the sweeps (``reason``, e.g. ``"needs
    cheems_bench/human.jsonl"``): all *untestable*."""
    ledger.add(Claim.untestable("fig6-data-scaling", "", "", reason, link="paper-fig6"))
    ledger.add(Claim.untestable(PER_SUBSET_ID, "", "", reason, link="paper-fig6"))
    ledger.add(Claim.untestable("fig7-model-scaling", "", "", reason, link="paper-fig7"))
    ledger.add(Claim.untestable("fig7-pretrained-vs-instruct", "", "", reason, link="paper-fig7"))


# ---- what the chapter's setup and prose say of the world ------------------------------------------------------

def why_skipped(world) -> str | None:
    """The page's one sentence on why neither sweep runs on ``world`` (None when they do): both score on the
    CheemsBench subsets present (either suffices) and train on the preference files present."""
    needs = ([] if world.bench else ["`cheems_bench/open.jsonl` or `cheems_bench/human.jsonl`"]) + (
        [] if world.preference is not None else ["`cheems_preference.jsonl`"])
    return missing_sentence("Figs. 6 and 7", *needs, quoted=False) if needs else None


def subset_labels(world) -> dict[str, str]:
    """The CheemsBench subsets ``world`` holds, by their display names (``{"open": "Open Prompt", ...}``)."""
    return {k: v for k, v in SUBSET_NAMES.items() if k in world.bench}


def size_training_set(world) -> tuple[list[Record] | None, str]:
    """Fig. 7's training records and what the prose calls them: the golden human subset where the world has one,
    else the whole preference set."""
    if world.human is not None:
        return world.human, "golden human"
    return world.preference, "preference-set"


def prose_values(world, seeds: Sequence[int]) -> dict[str, object]:
    """What the chapter's prose says of its setting: the training seeds, what the curves are scored on
    (``bench_what``, ``rho_subsets``) and trained on (``size_what``, ``pref_what``). Other data than CheemsBench
    (its manifest says so) is named by its file, not as a CheemsBench subset."""
    labels = subset_labels(world)
    only = next(iter(labels)) if len(labels) == 1 else None
    split = world.human is not None and world.gpt() is not None
    return {"seeds_text": seeds_text(seeds), "n_seeds": len(seeds),
            "bench_what": "the two CheemsBench subsets" if only is None else
            f"the CheemsBench {labels[only]} subset" if world.comparable(f"cheems_bench/{only}.jsonl") else
            f"the benchmark file cheems_bench/{only}.jsonl",
            "rho_subsets": "both subsets" if only is None else f"the {labels[only]} subset",
            "size_what": size_training_set(world)[1],
            "pref_what": "CheemsPreference (the golden human subset plus the processed GPT subset, the same set that "
                         "trains Table 4's last model)" if split else "the preference set as it is (without a "
                         "human/GPT split, CheemsPreference cannot be built)"}


# ---- Fig. 7's sizes trained elsewhere -------------------------------------------------------------------------

TRAIN_BYTES_PER_PARAMETER = 16
"""What training holds per parameter on its device: float32 weights, gradients and AdamW's two moments (activations
aside). A size whose total exceeds one device's memory cannot be trained in a chapter's kernel; it is trained with
``accelerate launch`` (FSDP2 shards it across devices: configs/fsdp_72b.yaml) and passed in as a folder."""


def name_billions(name: str) -> float | None:
    """The parameter count, in billions, that a model's name states; None when it states none.

    >>> name_billions("Qwen/Qwen2.5-0.5B-Instruct"), name_billions("Qwen/Qwen2.5-72B-Instruct"), name_billions("tiny")
    (0.5, 72.0, None)
    """
    m = re.search(r"(?<![\w.])(\d+(?:\.\d+)?)[Bb](?![A-Za-z0-9])", name.rstrip("/").rsplit("/", 1)[-1])
    return float(m[1]) if m else None


def device_memory(device: str | None) -> int:
    """Bytes of memory where a chapter trains: the GPU's (``device == "cuda"``), else the machine's."""
    if device == "cuda":
        import torch

        return torch.cuda.get_device_properties(0).total_memory
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def checkpoints_for(sizes: Sequence[str], seeds: Sequence[int], records: Sequence[Record], *, checkpoints_file: str = "",
                    device: str | None = None, memory: int | None = None) -> dict[str, dict[int, str]]:
    """Fig. 7's sizes trained elsewhere, size -> {training seed: folder}, from the checkpoints file
    (:func:`cheems_lib.publishing.model_list.read_checkpoints_file`; empty: none).

    Each folder must hold a run on ``records``, Fig. 7's training set (by its data fingerprint), with its training
    seed, so that the sizes still differ only in the model. A size that is not in the file and does not fit one
    device for training (:data:`TRAIN_BYTES_PER_PARAMETER` times the count its name states, against ``memory``,
    default :func:`device_memory` of ``device``) is refused before anything trains. Problems raise one line with
    the fix (:class:`cheems_lib.input_files.DataError` for the file, ValueError for a size too large)."""
    from ..input_files import DataError, show
    from ..records import data_fingerprint
    from ..publishing.model_list import read_checkpoints_file

    out: dict[str, dict[int, str]] = {}
    fingerprint = None
    for size, folders in (read_checkpoints_file(checkpoints_file) if checkpoints_file else {}).items():
        if size not in sizes:
            raise DataError(checkpoints_file, None, f"{show(size)} is not one of the sizes {show(list(sizes))}",
                            "name each folder by its entry of -p sizes")
        if len(folders) != len(seeds):
            raise DataError(checkpoints_file, None, f"{size}: {len(folders)} folder(s) for the training seeds "
                            f"{show(list(seeds))}", "list one folder per training seed, in seed order")
        fingerprint = fingerprint or data_fingerprint(records)
        for seed, folder in zip(seeds, folders):
            run = read_json(Path(folder).expanduser() / "cheems_train.json", "train the folder again with cheems train")
            if run.get("data_fingerprint") != fingerprint:
                raise DataError(folder, None, f"{size} was trained on other records than Fig. 7's training set "
                                f"({len(records)} prompts)", "train it on that set as the chapter Reproduce with real "
                                "models writes it")
            if (run.get("config") or {}).get("seed") != seed:
                raise DataError(folder, None, f"{size} was trained with seed {show((run.get('config') or {}).get('seed'))}"
                                f", not training seed {seed}", f"train it with --seed {seed}")
        out[size] = dict(zip(seeds, folders))
    stated = {s: b for s in sizes if s not in out and (b := name_billions(s)) is not None}
    memory = memory if memory is not None or not stated else device_memory(device)
    too_big = [s for s, b in stated.items() if b * 1e9 * TRAIN_BYTES_PER_PARAMETER > memory]
    if too_big:
        raise ValueError(f"{', '.join(too_big)}: too large to train here ({TRAIN_BYTES_PER_PARAMETER} bytes per "
                         f"parameter, {memory / 2**30:.0f} GiB on this {device or 'machine'}) (fix: train "
                         f"{'them' if len(too_big) > 1 else 'it'} with `accelerate launch --config_file "
                         "configs/fsdp_72b.yaml -m cheems_lib.cli train ...` and pass -p checkpoints_file FILE mapping each "
                         "size to its folder; see the chapter Reproduce with real models)")
    return out
