"""cheems_lib.experiments: the opened world."""
from __future__ import annotations

import shutil

from cheems_lib.experiments import open_world
from cheems_lib.simulation import WorldConfig, build_world, write_world


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
