"""Downstream correlation: the RewardBench-style benchmark, the tables, correlations, the population."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cheems_lib import downstream, metrics
from cheems_lib.simulation import WorldConfig, build_world
from cheems_lib.training import TrainConfig

from conftest import make_record


def test_pairwise_benchmark_one_pair_per_prompt():
    recs = [make_record("p", "abc", rank={"a": 0, "b": 1, "c": 2}), make_record("q", "ab", rank={"a": 0, "b": 0}),
            make_record("r", "ab", rank={"b": 0, "a": 1})]
    out = downstream.pairwise_benchmark(recs, seed=0)
    assert [r.id for r in out] == ["p", "r"]  # q has only a tie
    assert all(len(r.responses) == 2 and sorted(r.rank.values()) == [0, 1] for r in out)
    better = [k for k, v in out[0].rank.items() if v == 0][0]
    worse = [k for k, v in out[0].rank.items() if v == 1][0]
    assert recs[0].rank[better] < recs[0].rank[worse]
    assert out[1].rank == {"b": 0, "a": 1}
    assert [r.rank for r in downstream.pairwise_benchmark(recs, seed=0)] == [r.rank for r in out]


def test_benchmark_table_matches_metrics():
    recs = [make_record("p", "abc", rank={"a": 0, "b": 1, "c": 2})]
    scores = {"m": {("p", "a"): 3.0, ("p", "b"): 1.0, ("p", "c"): 2.0}}
    t = downstream.benchmark_table({"B": recs}, scores)
    assert t.loc["m", "B acc"] == pytest.approx(metrics.accuracy([recs[0].rank], [{"a": 3, "b": 1, "c": 2}]))
    assert t.loc["m", "B exact"] == 0.0


def test_correlate_known_relations():
    models = [f"m{i}" for i in range(12)]
    x = np.arange(12.0)
    bench = pd.DataFrame({"up": x, "down": -x ** 3, "noise": np.random.default_rng(0).normal(size=12)}, index=models)
    down = pd.DataFrame({"task": np.exp(x / 4)}, index=models)
    c = downstream.correlate(bench, down, n_boot=300, seed=0, reference="up").set_index(["benchmark", "method"])
    assert c.loc[("up", "spearman"), "r"] == pytest.approx(1.0)
    assert c.loc[("down", "spearman"), "r"] == pytest.approx(-1.0)
    assert c.loc[("up", "pearson"), "r"] < 1.0  # exp is monotone, not linear
    assert c.loc[("up", "spearman"), "diff"] == 0 and c.loc[("noise", "spearman"), "diff_hi"] < 0
    r = c.loc[("noise", "pearson")]
    assert r["lo"] <= r["r"] <= r["hi"]
    with pytest.raises(ValueError, match="at least 3 models"):
        downstream.correlate(bench.iloc[:2], down.iloc[:2])


def test_population_is_distinct_and_grouped(tmp_path):
    files = build_world(WorldConfig(size="smoke", seed=0)).files
    pop = downstream.population(files, epochs=1, gpt_prompts=0, transfer_prompts=0, ladder_points=3, ladder_seeds=2,
                                sizes=("tiny-xs", "tiny"), cache_dir=str(tmp_path))
    from cheems_lib.zoo import zoo_key
    keys = [zoo_key(p["records"], p["config"]) for p in pop.values()]
    assert len(set(keys)) == len(keys)
    groups = pd.Series({k: p["group"] for k, p in pop.items()}).value_counts()
    assert groups["data scaling"] == 6 and groups["model size"] == 2
    assert "Human subset" not in pop  # same data and config as "tiny · human subset": kept once
    assert "CheemsPreference (human + processed GPT)" not in pop  # the ladder's top at the first seed
    assert all(isinstance(p["config"], TrainConfig) for p in pop.values())
    assert len(pop) >= 15
