"""Downstream correlation (paper §6.2, Fig. 5): which benchmark predicts Best-of-N quality?

The paper scores 26 reward models on several benchmarks and on three Best-of-32 tasks,
and correlates the two across models. This module provides the pieces:

- :func:`population`: the reward models of the embedded zoo that differ in training data,
  size and annotation source (the same training sets and configs the other chapters train,
  so the zoo reuses their checkpoints);
- :func:`pairwise_benchmark`: a RewardBench-style benchmark from the same world, one
  chosen/rejected pair per prompt;
- :func:`benchmark_table`: every model's accuracy and exact match on every benchmark;
- :func:`correlate`: Spearman and Pearson correlation of each benchmark with each task,
  with a bootstrap over models, and the paired difference to a reference benchmark.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from .records import Record

__all__ = ["pairwise_benchmark", "benchmark_table", "correlate", "population"]


def pairwise_benchmark(records: Sequence[Record], *, seed: int = 0) -> list[Record]:
    """One chosen/rejected pair per prompt, drawn uniformly from the pairs of different rank.

    Prompts without such a pair are left out (their number is ``len(records) - len(result)``).
    The pair keeps the response ids, so scores computed for the full benchmark apply.
    """
    rng = np.random.default_rng(seed)
    out = []
    for rec in records:
        rank = rec.rank or {}
        pairs = [(a, b) for a in rank for b in rank if rank[a] < rank[b]]
        if not pairs:
            continue
        a, b = pairs[int(rng.integers(len(pairs)))]
        keep = {a, b}
        out.append(Record(prompt=rec.prompt, responses=[r for r in rec.responses if r.id in keep], id=rec.id,
                          category=rec.category, sys_prompt=rec.sys_prompt, rank={a: 0, b: 1}))
    return out


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


def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r of each row pair of two (replicates, n) arrays."""
    x = x - x.mean(axis=1, keepdims=True)
    y = y - y.mean(axis=1, keepdims=True)
    den = np.sqrt((x * x).sum(axis=1) * (y * y).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (x * y).sum(axis=1) / den


def _ranks_rows(a: np.ndarray) -> np.ndarray:
    import pandas as pd

    return pd.DataFrame(a).rank(axis=1, method="average").to_numpy()


def correlate(bench, down, *, n_boot: int = 1000, seed: int = 0, ci: float = 0.95, reference: str | None = None):
    """Spearman and Pearson correlation of every benchmark column with every task column.

    ``bench`` and ``down`` are DataFrames indexed by model (the same models). Intervals are
    percentile bootstraps over models (replicates where a column is constant are dropped
    and counted in ``boot_used``). With ``reference`` (a column of ``bench``), each row also
    gets the paired bootstrap difference ``r - r(reference)`` and its interval.

    Returns a long DataFrame: benchmark, task, method, r, lo, hi, boot_used
    (and diff, diff_lo, diff_hi).
    """
    import pandas as pd

    if not bench.index.equals(down.index):
        down = down.loc[bench.index]
    n = len(bench)
    if n < 3:
        raise ValueError(f"need at least 3 models to correlate, got {n}")
    idx = np.random.default_rng(seed).integers(n, size=(n_boot, n))
    q = [(1 - ci) / 2, (1 + ci) / 2]

    def stats(col_x: np.ndarray, col_y: np.ndarray, method: str):
        if method == "spearman":
            point = _pearson_rows(_ranks_rows(col_x[None]), _ranks_rows(col_y[None]))[0]
            boot = _pearson_rows(_ranks_rows(col_x[idx]), _ranks_rows(col_y[idx]))
        else:
            point = _pearson_rows(col_x[None], col_y[None])[0]
            boot = _pearson_rows(col_x[idx], col_y[idx])
        return float(point), boot

    rows = []
    for task in down.columns:
        y = down[task].to_numpy(dtype=float)
        for method in ("spearman", "pearson"):
            ref = stats(bench[reference].to_numpy(dtype=float), y, method) if reference else None
            for b in bench.columns:
                r, boot = stats(bench[b].to_numpy(dtype=float), y, method)
                ok = np.isfinite(boot)
                row = {"benchmark": b, "task": task, "method": method, "r": r, "boot_used": int(ok.sum())}
                row["lo"], row["hi"] = (float(v) for v in np.quantile(boot[ok], q)) if ok.any() else (np.nan, np.nan)
                if ref is not None:
                    d = boot - ref[1]
                    okd = np.isfinite(d)
                    row["diff"] = r - ref[0]
                    row["diff_lo"], row["diff_hi"] = (float(v) for v in np.quantile(d[okd], q)) if okd.any() else (np.nan, np.nan)
                rows.append(row)
    return pd.DataFrame(rows)


def population(files: Mapping[str, Sequence[Record]], *, seed: int = 0, epochs: int = 2, gpt_prompts: int = 2000,
               transfer_prompts: int = 2000, ladder_points: int = 6, ladder_seeds: int = 2,
               sizes: Sequence[str] = ("tiny-xs", "tiny-s", "tiny", "tiny-l", "tiny-xl"), cache_dir: str = "build/zoo",
               progress: bool = False) -> dict[str, dict]:
    """The zoo's reward models for the correlation study: name -> {records, config, group}.

    Groups (each is a chapter's set, built by the same library calls with the same
    arguments, so the checkpoints are shared):

    - ``data scaling``: nested subsets of CheemsPreference, ``ladder_points`` sizes x
      ``ladder_seeds`` seeds (chapter *Scaling trends*);
    - ``model size``: the tiny family trained on the golden human subset (*Scaling trends*);
    - ``Table 4``: the CheemsPreference ablation's training sets (*Building CheemsPreference*);
    - ``Table 3``: the transfer analogues (*Which preference data transfers?*).

    Annotation source varies within the groups (golden human subset, GPT-annotated subset,
    processed GPT annotations, flipped labels).

    Entries with the same training data and config are kept once (the first name wins).
    Building the ``Table 4`` and ``data scaling`` sets needs the golden-subset reward model's
    scores on the GPT subset, so this trains (or loads) that model.
    """
    from . import distant_supervision as ds
    from . import scaling, transfer, zoo
    from .reward_model import is_tiny
    from .training import TrainConfig

    human = files["cheems_preference/human.jsonl"]
    gpt_all = files["cheems_preference/gpt.jsonl"]
    gpt = gpt_all[:gpt_prompts] if gpt_prompts else gpt_all
    cfg = TrainConfig(epochs=epochs, seed=seed)
    rm_human = zoo.train_or_load(human, cfg, cache_dir=cache_dir, progress=progress)
    table4, _ = ds.ablation(human, gpt, zoo.score_or_load(rm_human, gpt), seed=seed)
    cheems_pref = table4[ds.ABLATION[-1]]

    out: dict[str, dict] = {}
    seen: set[str] = set()

    def add(name, records, config, group):
        key = zoo.zoo_key(records, config)
        if key not in seen:
            seen.add(key)
            out[name] = {"records": records, "config": config, "group": group}

    for s in range(ladder_seeds):
        sizes_n = scaling.ladder(len(cheems_pref), points=ladder_points)
        for n, recs in scaling.nested_subsets(cheems_pref, sizes_n, seed=seed + s).items():
            add(f"CheemsPreference {n} prompts · seed {seed + s}", recs, TrainConfig(epochs=epochs, seed=seed + s),
                "data scaling")
    for size in sizes:
        # as in the scaling chapter: a real model gets Table 9, not the tiny preset's learning rate
        size_cfg = TrainConfig.for_model(size, seed=seed, **({"epochs": epochs} if is_tiny(size) else {}))
        add(f"{size} · human subset", human, size_cfg, "model size")
    for name, recs in table4.items():
        add(name, recs, cfg, "Table 4")
    for name, d in transfer.analogues(files, prompts=transfer_prompts, seed=seed).items():
        add(name, d["records"], cfg, "Table 3")
    return out
