"""cheems_lib.experiments: builders that share models across chapters, and results shaped for claims."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cheems_lib import experiments, zoo
from cheems_lib.distant_supervision import ABLATION
from cheems_lib.simulation import WorldConfig, build_world


@pytest.fixture(scope="module")
def world():
    w = build_world(WorldConfig(size="smoke", seed=3))
    return experiments.World(directory=Path("unused"), files=w.files, length_scale=1.0, simulated=True,
                             size="smoke", seed=3)


def _keys(specs):
    return {s.name: {(zoo.zoo_key(x.records, x.config)) for x in specs if x.name == s.name} for s in specs}


def test_leaderboard_models_are_the_table4_and_model_size_models(world):
    """The evaluation zoo's checkpoints are the same records and configs as Table 4's and Fig. 7's: trained once."""
    seeds, epochs = (0, 1), 1
    board = _keys(experiments.leaderboard_family(world, seeds=seeds, epochs=epochs, gpt_prompts=0).specs())
    t4 = {"Human subset": world.human, "GPT subset": world.gpt(0)}
    table4 = _keys(experiments.Family(t4, seeds=seeds, epochs=epochs).specs())
    sizes = _keys(experiments.model_sizes(world.human, ["tiny-xs", "tiny"], seeds=seeds, epochs=epochs).specs())
    assert board["tiny · human subset"] == table4["Human subset"] == sizes["tiny · human subset"]
    assert board["tiny · GPT subset"] == table4["GPT subset"]
    assert board["tiny-xs · human subset"] == sizes["tiny-xs · human subset"]
    assert len(board["tiny · human subset"]) == 2


def test_transfer_shares_the_table4_human_and_gpt_models(world):
    """Table 3's multi-response human and machine sets equal Table 4's human and GPT rows when the prompt caps match."""
    t3 = experiments.table3_sets(world, prompts=0)
    assert t3["multi-response, human"]["records"] == world.human
    assert t3["multi-response, machine"]["records"] == world.gpt(0)
    assert ABLATION[:2] == ("Human subset", "GPT subset")


def test_evaluate_scores_is_paired_and_takes_one_or_many_seeds(world):
    """One scores mapping gives one seed, a list gives one per seed; all share the bootstrap resamples."""
    recs = world.bench
    rng = np.random.default_rng(0)
    one = {(r.id, x.id): float(rng.normal()) for s in recs.values() for r in s for x in r.responses}
    out = experiments.evaluate_scores({"a": one, "b": [one, one]}, recs, n_boot=50, seed=1)
    assert [len(out["a"]), len(out["b"])] == [1, 2]
    a, b = experiments.estimate(out, "a"), experiments.estimate(out, "b")
    assert np.allclose((b - a.broadcast(2)).boot, 0)
    board = experiments.board(out)
    assert dict(zip(board["model"], board["seeds"])) == {"a": 1, "b": 2}
