"""cheems_lib.analyses.experiments: the world, the named training sets and families over training seeds."""
from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import numpy as np

import pytest

from cheems_lib.analyses import experiments
from cheems_lib.analyses.leaderboard import evaluate_scores, leaderboard_frame
from cheems_lib.models import zoo
from cheems_lib.distant_supervision import ABLATION
from cheems_lib.analyses.experiments import open_world
from cheems_lib.world.simulation import WorldConfig, build_world
from cheems_lib.world_files import write_world
from cheems_lib.models.zoo import zoo_key
from conftest import make_record, release_folder


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
    out = evaluate_scores({"a": one, "b": [one, one]}, recs, n_boot=50, seed=1)
    assert [len(out["a"]), len(out["b"])] == [1, 2]
    a, b = experiments.estimate(out, "a"), experiments.estimate(out, "b")
    assert np.allclose((b - a.broadcast(2)).boot, 0)
    board = leaderboard_frame(out)
    assert dict(zip(board["model"], board["seeds"])) == {"a": 1, "b": 2}



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

    monkeypatch.setattr("cheems_lib.models.zoo.train_or_load", lambda records, config, **kw: "golden")
    monkeypatch.setattr("cheems_lib.models.zoo.score_or_load", scores)


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

    monkeypatch.setattr("cheems_lib.models.zoo.score_or_load", fake_scores)
    out = experiments.evaluate(specs, smoke_world, n_boot=10, seed=0, progress=False)
    assert list(out) == list(dict.fromkeys(s.name for s in specs)) and all(len(v) == 3 for v in out.values())
    accs = [r["open"].accuracy for r in next(iter(out.values()))]
    assert len(set(accs)) == 3 and len(recs) > 0


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


def test_leaderboard_family_trains_on_whatever_preference_file_exists(smoke_dir, tmp_path):
    """Split subsets: the human and GPT models; one unsplit file: tiny and tiny-xs on it; no preference
    file: no model (the evaluation chapter then shows the baselines only)."""
    full = experiments.leaderboard_family(open_world(str(smoke_dir)), seeds=(0,), epochs=1, gpt_prompts=0)
    assert list(full.sets) == ["tiny · human subset", "tiny · GPT subset", "tiny-xs · human subset"]
    (tmp_path / "one" / "cheems_bench").mkdir(parents=True)
    shutil.copy(smoke_dir / "cheems_preference/gpt.jsonl", tmp_path / "one" / "cheems_preference.jsonl")
    one = experiments.leaderboard_family(open_world(str(tmp_path / "one")), seeds=(0,), epochs=1)
    assert list(one.sets) == ["tiny · preference set", "tiny-xs · preference set"]
    assert one.models == {"tiny-xs · preference set": "tiny-xs"}
    shutil.copy(smoke_dir / "cheems_bench/open.jsonl", tmp_path / "one" / "cheems_bench" / "open.jsonl")
    (tmp_path / "one" / "cheems_preference.jsonl").unlink()
    assert experiments.leaderboard_family(open_world(str(tmp_path / "one")), seeds=(0,), epochs=1).sets == {}


def test_a_simulated_folder_is_described_by_its_own_summary(smoke_dir):
    """world_dir pointing at a `cheems simulate` folder: simulated, with the folder's size and seed (which a
    sensitivity sweep re-simulates), whatever the chapter's size and seed parameters say."""
    w = open_world(str(smoke_dir), "default", 0)
    assert w.simulated and (w.size, w.seed) == ("smoke", 3) and w.label == "the simulated world (size smoke, seed 3)"


def test_leaderboard_models_loads_the_models_file_entries(world, tmp_path):
    """A models file's checkpoint is loaded with from_pretrained and scored under its row name, exactly as
    score_records scores the loaded model; a path named twice is loaded once; no zoo model is trained then."""
    from types import SimpleNamespace

    from cheems_lib.analyses.model_list import choose
    from cheems_lib.models.reward_model import build_tiny, load, train_tokenizer
    from cheems_lib.models.scoring import score_records

    world = experiments.World(directory=world.directory, files={k: v[:4] for k, v in world.files.items()},
                              length_scale=1.0, simulated=True, size="smoke", seed=3)
    texts = [t for r in world.bench_records for t in [r.prompt, *(x.content for x in r.responses)]]
    tok = train_tokenizer(texts, vocab_size=600)
    build_tiny("tiny-xs", tok, seed=1).save_pretrained(tmp_path / "rm")
    tok.save_pretrained(tmp_path / "rm")
    (tmp_path / "rm" / "cheems_train.json").write_text("{}")  # the marker of a trained head (this test's stand-in)
    (tmp_path / "models.yaml").write_text(f"models:\n  - path: {tmp_path / 'rm'}\n    name: mine\n  - baseline:longest\n",
                                          encoding="utf-8")
    chosen = choose([str(tmp_path / "rm")], [], tmp_path / "models.yaml")
    rewardbench = SimpleNamespace(records=world.bench_records[:2])
    board = experiments.leaderboard_models(world, rewardbench, models=chosen.models, zoo=chosen.zoo, seeds=(0,),
                                           epochs=1)
    model, tok = load(tmp_path / "rm")
    ref, _ = score_records(model, tok, world.bench_records)
    assert list(board.scores) == [str(tmp_path / "rm")] and board.family is None  # one row: the same path twice
    assert board.scores[str(tmp_path / "rm")] == ref and board.kinds == {str(tmp_path / "rm"): "discriminative"}


def test_leaderboard_models_skips_zoo_models_the_folder_cannot_train(world):
    """A zoo name the world's preference files cannot train is skipped with a note naming what they train."""
    from types import SimpleNamespace

    board = experiments.leaderboard_models(world, SimpleNamespace(records=[]), zoo=["tiny · preference set"],
                                           seeds=(0,), epochs=1)
    assert board.scores == {} and board.family is not None and not board.family.sets
    assert "tiny · preference set" in board.skipped and "tiny · human subset" in board.skipped
