"""Synthetic Fig. 5 studies shared by the downstream tests: scores, a world-like namespace, comparators, picks."""
from __future__ import annotations

import numpy as np
import pandas as pd

from cheems_lib.analyses import downstream_controls, downstream_population

from conftest import make_record



def _scores(gpt: bool = True, n_sets: int = 6, seeds: int = 2) -> downstream_population.Scores:
    """Synthetic scores: CheemsBench ranks the models as both tasks do, the other columns are noise."""
    rng = np.random.default_rng(0)
    models = [f"set{s} · seed {k}" for s in range(n_sets) for k in range(seeds)]
    quality = np.arange(len(models), dtype=float)
    cols = ["CheemsBench", "Open Prompt", "Human Instruction"] + (
        ["CheemsBench GPT", "Open Prompt GPT", "Human Instruction GPT"] if gpt else [])
    bench = {f"{c} {m}": quality + rng.normal(0, 0.5, len(models)) for c in cols for m in ("acc", "exact")}
    bench.update({c: rng.normal(size=len(models)) for c in downstream_population.COMPARATORS})
    down = pd.DataFrame({"Human win rate": quality / 20, "MT-bench-like grade": 5 + quality / 5}, index=models)
    return downstream_population.Scores(pd.DataFrame(bench, index=models), down, {m: "g" for m in models},
                                        [m.split(" ")[0] for m in models])


def _world(gpt_files: bool):
    """A world-like namespace: CheemsBench's subsets and, optionally, their GPT-annotated copies."""
    from types import SimpleNamespace

    op, hu = [make_record("o", "ab", rank={"a": 0, "b": 1})], [make_record("h", "abc", rank={"a": 0, "b": 1, "c": 1})]
    files = {"cheems_bench_gpt/open.jsonl": op[:], "cheems_bench_gpt/human.jsonl": hu[:]} if gpt_files else {}
    return SimpleNamespace(bench_records=op + hu, bench={"open": op, "human": hu}, files=files, summary=None,
                           device=None, dtype=None)


def _comparators():
    """Comparator-like namespaces with one pair, one pairwise set and one Best-of-N set."""
    from types import SimpleNamespace

    pair = make_record("rb", "xy", rank={"x": 0, "y": 1})
    bon = make_record("rmb", "uvw", rank={"u": 0, "v": 1, "w": 1})
    pw = make_record("rmb", "uv", rank={"u": 0, "v": 1})
    return (SimpleNamespace(sets={"pairs": [pair]}, records=[pair], panel=["rb judge"]),
            SimpleNamespace(sets={"pairwise": [pw], "bon": [bon]}, records=[bon], panel=["rmb judge"]))


def _picked_scores(n_sets: int = 12, prompts: int = 10, seed: int = 0, records: int = 60) -> downstream_population.Scores:
    """Synthetic scores with picks: model ``i`` picks sample 1 (the better one) on a share ``i / n`` of the
    prompts; CheemsBench's per-prompt correct pairs follow the same quality; comparators are noise."""
    rng = np.random.default_rng(seed)
    models = [f"set{s} · seed 0" for s in range(n_sets)]
    quality = np.linspace(0.1, 0.9, n_sets)
    outcome = np.column_stack([rng.integers(0, 2, prompts), np.ones(prompts)]).astype(float)
    picks = (rng.random((n_sets, prompts)) < quality[:, None]).astype(int)
    total = rng.integers(1, 10, records).astype(float)
    correct = rng.binomial(total.astype(int)[None, :], quality[:, None]).astype(float)
    cats = np.array(["a", "b"] * (records // 2), dtype=object)
    bench = pd.DataFrame({c: rng.normal(size=n_sets) for c in downstream_population.COMPARATORS}, index=models)
    sc = downstream_population.Scores(bench, None, {m: "g" for m in models}, [m.split(" ")[0] for m in models],
                                      {"Human win rate": picks}, {"Human win rate": outcome}, (correct, total, cats),
                           {c: {"prompts": 5, "pairs": 12} for c in downstream_population.COMPARATORS})
    sc.down = sc.task_values(sc.outcomes)
    sc.bench["CheemsBench acc"] = downstream_controls.cheemsbench_at_size(sc, prompts=records, draws=1)[0]
    return sc
