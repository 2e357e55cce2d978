"""cheems_lib.analyses.experiments: the named training sets and families over training seeds."""
from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import numpy as np

import pytest

from cheems_lib.analyses import experiments, world_folder
from cheems_lib.analyses.leaderboard import evaluate_scores, leaderboard_frame
from cheems_lib.models import zoo
from cheems_lib.distant_supervision import ABLATION
from cheems_lib.analyses.world_folder import open_world
from cheems_lib.world.simulation import WorldConfig, build_world
from cheems_lib.models.zoo import zoo_key
from conftest import make_record


def test_family_trains_every_set_with_every_seed():
    """A family's specs are every (set, seed) pair; only the config's seed differs between seeds."""
    recs = [make_record("p1", "ab", rank={"a": 0, "b": 1})]
    fam = experiments.Family({"x": recs, "y": recs}, seeds=(0, 1, 2), epochs=1, models={"y": "tiny-xs"})
    specs = fam.specs()
    assert [(s.name, s.config.seed) for s in specs] == [(n, k) for n in "xy" for k in range(3)]
    assert {s.config.model for s in specs if s.name == "y"} == {"tiny-xs"} and all(s.config.epochs == 1 for s in specs)


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


@pytest.fixture(scope="module")
def world():
    w = build_world(WorldConfig(size="smoke", seed=3))
    return world_folder.World(directory=Path("unused"), files=w.files, length_scale=1.0, simulated=True,
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
    return world_folder.World(directory=tmp_path_factory.mktemp("world"), files=world.files, length_scale=1 / 3,
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


def _fake_scoring(monkeypatch):
    """No training: each model's path names its training seed, and each seed scores at random."""
    monkeypatch.setattr(experiments, "train", lambda specs, progress=True: [f"seed{s.config.seed}" for s in specs])

    def fake_scores(path, records, **kw):
        rng = np.random.default_rng(int(path[-1]))
        return {(r.id, x.id): float(rng.normal()) for r in records for x in r.responses}

    monkeypatch.setattr("cheems_lib.models.zoo.score_or_load", fake_scores)


def _summary(results: dict) -> dict:
    """Results as comparable values: per model, seed and subset, accuracy, exact match and the bootstrap replicates."""
    return {name: [{sub: (r.accuracy, r.exact_match, r.boot_accuracy.tolist()) for sub, r in run.items()}
                   for run in runs] for name, runs in results.items()}


def test_evaluate_with_controls_adds_the_null_controls_on_the_same_records(smoke_world, monkeypatch):
    """The family's results, then the null controls drawn and bootstrapped with the same seed on the same records
    (default: the benchmark), so that every comparison is paired."""
    from cheems_lib.analyses.leaderboard import baseline_scores
    from cheems_lib.baselines import NAMES

    _fake_scoring(monkeypatch)
    family = experiments.table3_family({"a": {"records": smoke_world.human}}, seeds=(0, 1), epochs=1)
    assert (family.group, family.seeds, list(family.sets)) == ("Table 3", (0, 1), ["a"])
    out = experiments.evaluate_with_controls(family, smoke_world, n_boot=10, seed=2)
    assert list(out) == ["a", *NAMES] and len(out["a"]) == 2
    assert _summary(out) == _summary({**experiments.evaluate(family, smoke_world, n_boot=10, seed=2, progress=False),
                                      **evaluate_scores(baseline_scores(smoke_world.bench_records, seed=2),
                                                        smoke_world.bench, n_boot=10, seed=2)})
    one = {"open": smoke_world.bench["open"]}
    assert list(experiments.evaluate_with_controls(family, smoke_world, records=one, n_boot=10)["a"][0]) == ["open"]


def test_preference_file_results_train_one_model_on_the_preference_file(smoke_world, monkeypatch):
    """One tiny model on the whole preference file, with every training seed, then the controls; nothing without
    a preference file or an answer set to score."""
    from types import SimpleNamespace

    _fake_scoring(monkeypatch)
    trained = []
    monkeypatch.setattr(experiments, "train", lambda specs, progress=True: trained.extend(specs) or
                        [f"seed{s.config.seed}" for s in specs])
    one = {"benchmark": smoke_world.bench["open"]}
    name, out = experiments.preference_file_results(smoke_world, one, seeds=range(2), epochs=1, n_boot=10, seed=0)
    assert name == experiments.PREFERENCE_FILE_MODEL and len(out[name]) == 2 and list(out[name][0]) == ["benchmark"]
    assert [(s.name, s.config.seed, len(s.records)) for s in trained] == [(name, k, len(smoke_world.preference))
                                                                         for k in (0, 1)]
    family = experiments.Family({name: smoke_world.preference}, seeds=(0, 1), epochs=1)
    assert _summary(out) == _summary(experiments.evaluate_with_controls(family, smoke_world, records=one, n_boot=10))
    assert experiments.preference_file_results(smoke_world, {}, seeds=(0,), epochs=1) == (None, {})
    assert experiments.preference_file_results(SimpleNamespace(preference=None), one, seeds=(0,), epochs=1) == (None, {})


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


def test_leaderboard_models_loads_the_models_file_entries(world, tmp_path):
    """A models file's checkpoint is loaded with from_pretrained and scored under its row name, exactly as
    score_records scores the loaded model; a path named twice is loaded once; no zoo model is trained then."""
    from types import SimpleNamespace

    from cheems_lib.publishing.model_list import choose
    from cheems_lib.models.reward_model import build_tiny, load, train_tokenizer
    from cheems_lib.models.scoring import score_records

    world = world_folder.World(directory=world.directory, files={k: v[:4] for k, v in world.files.items()},
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
