"""cheems_lib.analyses.world_folder: a world folder opened, simulated or real, whole or missing files; training seeds
named."""
from __future__ import annotations

import shutil

import pytest

from cheems_lib.analyses import world_folder
from cheems_lib.analyses.world_folder import open_world
from cheems_lib.world.simulation import WorldConfig, build_world
from cheems_lib.world_files import write_world
from conftest import release_folder


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


class TestWorldOnReleaseFolders:
    def test_complete_release_opens_like_the_simulated_world(self, smoke_dir, tmp_path):
        """A release folder with a subset field gives the same human/GPT subsets and bench as the §6 files,
        and is real: not simulated, no truth, length scale 1, labels unknown."""
        sim = open_world(str(smoke_dir))
        real = open_world(str(release_folder(smoke_dir, tmp_path / "r")))
        assert [r.id for r in real.human] == [r.id for r in sim.human]
        assert [r.id for r in real.gpt(5)] == [r.id for r in sim.gpt(5)]
        assert set(real.bench) == {"open", "human"} and real.truth is None and real.summary is None
        assert not real.simulated and sim.simulated and real.length_scale == 1.0
        assert real.labels == "unknown labels" and real.label == f"the files in {tmp_path / 'r'}"

    def test_missing_files_are_none_not_keyerror(self, smoke_dir, tmp_path):
        """Only the open subset and an unsplit preference file: human and gpt are None, bench has one subset,
        preference is the whole file, and missing() names the file a section needs."""
        w = open_world(str(release_folder(smoke_dir, tmp_path / "r", subset=False, files=("open", "preference"))))
        assert w.human is None and w.gpt() is None and list(w.bench) == ["open"]
        assert len(w.preference) == len(open_world(str(smoke_dir)).preference)
        assert w.missing("Table 1", "cheems_bench/human.jsonl", "cheems_bench/open.jsonl") == (
            "*Skipped: Table 1; it needs `cheems_bench/human.jsonl`, which this folder does not hold.*")
        assert "the human and GPT subsets of `cheems_preference.jsonl`" in w.missing("Table 4", "cheems_preference/human.jsonl")
        assert w.missing("Table 1", "cheems_bench/open.jsonl") is None


def test_missing_says_how_to_split_one_preference_file(smoke_dir, tmp_path):
    """An unsplit cheems_preference.jsonl: a section needing the human/GPT subsets says how to split it."""
    (tmp_path / "r").mkdir()
    shutil.copy(smoke_dir / "cheems_preference/gpt.jsonl", tmp_path / "r" / "cheems_preference.jsonl")
    w = open_world(str(tmp_path / "r"))
    assert w.human is None and w.conditions["preference"] and not w.conditions["pref-split"]
    assert "`-p human_ids FILE`" in w.missing("Table 4", "cheems_preference/human.jsonl", "cheems_preference/gpt.jsonl")


def test_a_simulated_folder_is_described_by_its_own_summary(smoke_dir):
    """world_dir pointing at a `cheems simulate` folder: simulated, with the folder's size and seed (which a
    sensitivity sweep re-simulates), whatever the chapter's size and seed parameters say."""
    w = open_world(str(smoke_dir), "default", 0)
    assert w.simulated and (w.size, w.seed) == ("smoke", 3) and w.label == "the simulated world (size smoke, seed 3)"


@pytest.mark.parametrize("seeds, text", [((0, 1, 2), "0-2"), ((3,), "3"), ((0, 2, 5), "0, 2, 5")])
def test_seeds_text(seeds, text):
    """Seeds are described compactly in provenance lines."""
    assert world_folder.seeds_text(seeds) == text
