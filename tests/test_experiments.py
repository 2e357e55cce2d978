"""cheems_lib.experiments: the population of every trained model, and evaluating lists of specs."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from cheems_lib import experiments
from cheems_lib.distant_supervision import ABLATION
from cheems_lib.simulation import WorldConfig, build_world
from cheems_lib.zoo import zoo_key


@pytest.fixture(scope="module")
def smoke_world(tmp_path_factory):
    """The smoke world, opened without the world cache."""
    world = build_world(WorldConfig(size="smoke", seed=0))
    return experiments.World(directory=tmp_path_factory.mktemp("world"), files=world.files, length_scale=1 / 3,
                             simulated=True, size="smoke", seed=0)


def _fake_zoo(monkeypatch):
    """No training: the golden-subset model that table4_sets trains scores at random (the union does not
    depend on its quality)."""
    def scores(path, records, **kw):
        rng = np.random.default_rng(len(records))
        return {(r.id, x.id): float(rng.normal()) for r in records for x in r.responses}

    monkeypatch.setattr("cheems_lib.zoo.train_or_load", lambda records, config, **kw: "golden")
    monkeypatch.setattr("cheems_lib.zoo.score_or_load", scores)


def test_population_is_the_union_of_the_builders_each_model_once(smoke_world, monkeypatch):
    """Every training seed of every builder's set is one model; a set equal to another builder's is kept once."""
    _fake_zoo(monkeypatch)
    pop = experiments.population(smoke_world, seeds=(0, 1), epochs=1, gpt_prompts=0, transfer_prompts=0,
                                 ladder_points=3, sizes=("tiny-xs", "tiny"))
    keys = [zoo_key(s.records, s.config) for s in pop]
    assert len(set(keys)) == len(keys)
    assert len({(s.name, s.config.seed) for s in pop}) == len(pop)
    groups = Counter(s.group for s in pop)
    assert groups["data scaling"] == 3 * 2 and groups["model size"] == 2 * 2
    names = {s.name for s in pop}
    assert "Human subset" not in names  # the same data and config as "tiny · human subset"
    assert ABLATION[-1] not in names  # the data ladder's top point at every seed
    assert groups["Table 4"] == (len(ABLATION) - 2) * 2
    # Table 3's multi-response human and machine sets are Table 4's Human and GPT subsets
    t3 = experiments.table3_sets(smoke_world, prompts=0)
    assert groups["Table 3"] == (len(t3) - 2) * 2 and "multi-response, human" not in names
    assert {s.config.seed for s in pop} == {0, 1}


def test_evaluate_lists_specs_of_one_name_by_seed(smoke_world, monkeypatch):
    """evaluate on ladder_family's specs: one result per seed under each name, in seed order."""
    specs = experiments.ladder_family(smoke_world.human, points=2, seeds=(0, 1, 2), epochs=1)
    monkeypatch.setattr(experiments, "train", lambda specs, progress=True: [f"seed{s.config.seed}" for s in specs])
    recs = smoke_world.bench_records

    def fake_scores(path, records, **kw):
        rng = np.random.default_rng(int(path[-1]))  # each seed scores differently
        return {(r.id, x.id): float(rng.normal()) for r in records for x in r.responses}

    monkeypatch.setattr("cheems_lib.zoo.score_or_load", fake_scores)
    out = experiments.evaluate(specs, smoke_world, n_boot=10, seed=0, progress=False)
    assert list(out) == list(dict.fromkeys(s.name for s in specs)) and all(len(v) == 3 for v in out.values())
    accs = [r["open"].accuracy for r in next(iter(out.values()))]
    assert len(set(accs)) == 3 and len(recs) > 0
