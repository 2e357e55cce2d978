"""cheems_lib.experiments: the world, the named training sets and families over training seeds."""
from __future__ import annotations

import shutil
import threading

import pytest

from cheems_lib import experiments, zoo
from cheems_lib.experiments import open_world
from cheems_lib.simulation import WorldConfig, build_world, write_world
from conftest import make_record


def test_family_trains_every_set_with_every_seed():
    """A family's specs are every (set, seed) pair; only the config's seed differs between seeds."""
    recs = [make_record("p1", "ab", rank={"a": 0, "b": 1})]
    fam = experiments.Family({"x": recs, "y": recs}, seeds=(0, 1, 2), epochs=1, models={"y": "tiny-xs"})
    specs = fam.specs()
    assert [(s.name, s.config.seed) for s in specs] == [(n, k) for n in "xy" for k in range(3)]
    assert {s.config.model for s in specs if s.name == "y"} == {"tiny-xs"} and all(s.config.epochs == 1 for s in specs)


@pytest.mark.parametrize("seeds, text", [((0, 1, 2), "0-2"), ((3,), "3"), ((0, 2, 5), "0, 2, 5")])
def test_seeds_text(seeds, text):
    """Seeds are described compactly in provenance lines."""
    assert experiments.seeds_text(seeds) == text


def test_busy_entry_is_skipped_not_waited_for(tmp_path, monkeypatch):
    """While another holder trains a model, train() does the other models first and then waits for it."""
    a = [make_record("p1", "ab", rank={"a": 0, "b": 1})]
    b = [make_record("p2", "ab", rank={"a": 1, "b": 0})]
    fam = experiments.Family({"a": a, "b": b}, seeds=(0,), epochs=1)
    order = []

    def fake(records, config, *, wait=True, **kw):
        key = "a" if records is a else "b"
        if key == "a" and not wait:
            raise zoo.Busy(key)
        order.append((key, wait))
        return tmp_path / key

    monkeypatch.setattr(zoo, "train_or_load", fake)
    assert experiments.train(fam.specs(), progress=False) == [tmp_path / "a", tmp_path / "b"]
    assert order == [("b", False), ("a", True)]


def test_zoo_lock_can_be_tried(tmp_path):
    """zoo's lock raises Busy instead of waiting when asked not to wait."""
    entry = tmp_path / "rm-x"
    with zoo._locked(entry):
        with pytest.raises(zoo.Busy):
            with zoo._locked(entry, wait=False):
                pass
    done = threading.Event()
    with zoo._locked(entry, wait=False):
        done.set()
    assert done.is_set()


class TestWorldTruth:
    def test_truth_is_the_simulators_and_absent_for_real_files(self, tmp_path):
        """World.truth maps (prompt id, response id) to the hidden utility written by the simulator, and is
        None for a folder without truth.jsonl (real files)."""
        built = build_world(WorldConfig(size="smoke", seed=3))
        write_world(built, tmp_path / "sim")
        truth = open_world(str(tmp_path / "sim")).truth
        assert truth == {(t["prompt_id"], t["response_id"]): t["utility"] for t in built.truth}
        shutil.copytree(tmp_path / "sim", tmp_path / "real")
        (tmp_path / "real" / "truth.jsonl").unlink()
        assert open_world(str(tmp_path / "real")).truth is None
