"""Scaling ladders: geometric sizes, nested seeded subsets, pair counts; the sweeps' curves, plots and claims."""
from __future__ import annotations

import numpy as np
import pytest

from cheems_lib.analyses import scaling
from cheems_lib.analyses.claims import Ledger
from cheems_lib.analyses.experiments import ModelSpec
from cheems_lib.metrics import SubsetResult

from conftest import make_record

LABELS = {"open": "Open Prompt", "human": "Human Instruction"}
SOURCE = "simulated world (size smoke, seed 0)"


def test_ladder():
    """Sizes halve down from the total, ascending; too few records for the ladder is refused."""
    assert scaling.ladder(3200, points=6) == [100, 200, 400, 800, 1600, 3200]
    assert scaling.ladder(10, points=2, ratio=5) == [2, 10]
    with pytest.raises(ValueError, match="needs at least 32 records"):
        scaling.ladder(20, points=6)


def test_nested_subsets_are_nested_ordered_and_seeded():
    """Each subset holds the smaller ones, in file order; the full size is the file; the seed picks the chain."""
    recs = [make_record(f"p{i}", "ab", rank={"a": 0, "b": 1}) for i in range(40)]
    subs = scaling.nested_subsets(recs, [5, 10, 20, 40], seed=1)
    ids = {n: [r.id for r in s] for n, s in subs.items()}
    assert subs[40] == recs  # the full size is the file itself, in order
    for small, big in [(5, 10), (10, 20), (20, 40)]:
        assert set(ids[small]) <= set(ids[big])
        assert ids[small] == sorted(ids[small], key=lambda i: int(i[1:]))
    assert ids == {n: [r.id for r in s] for n, s in scaling.nested_subsets(recs, [5, 10, 20, 40], seed=1).items()}
    assert ids[10] != [r.id for r in scaling.nested_subsets(recs, [10], seed=2)[10]]
    with pytest.raises(ValueError, match="exceeds"):
        scaling.nested_subsets(recs, [41])


def test_count_pairs():
    """Pairs of different rank only: ties and unranked records give none."""
    recs = [make_record("p", "abcd", rank={"a": 0, "b": 1, "c": 1, "d": 2}), make_record("q", "ab"),
            make_record("r", "ab", rank={"a": 0, "b": 0})]
    assert scaling.count_pairs(recs) == 5  # a>b, a>c, a>d, b>d, c>d; unranked and tied give none



def _result(accuracy: float, noise: np.ndarray) -> SubsetResult:
    return SubsetResult(accuracy, accuracy / 2, {}, 10, 0, accuracy + noise, accuracy / 2 + noise)


def _results(values: dict[str, list[tuple[float, float]]], spread: float = 0.01) -> dict[str, list[dict]]:
    """Fake evaluate() results: per model, per seed, (open, human) accuracy; replicates share part of their noise
    across models (as paired resamples do) and add their own, so a difference between models varies from replicate
    to replicate (with all noise shared it would be the same in each: an interval of no width, insufficient data)."""
    rng = np.random.default_rng(0)
    shared = rng.normal(0, spread, 200)
    return {name: [{sub: _result(acc, shared + rng.normal(0, spread / 2, 200))
                    for sub, acc in (("open", o), ("human", h))} for o, h in per_seed]
            for name, per_seed in values.items()}


LADDER = {"10 prompts": [(0.50, 0.52), (0.54, 0.56)], "20 prompts": [(0.60, 0.62), (0.64, 0.66)],
          "40 prompts": [(0.70, 0.72), (0.74, 0.76)]}


def _ladder_specs(sizes=(10, 20, 40), seeds=(0, 1)):
    """Specs in ladder_family's order (seed-major); seed s gives every record s + 2 ranked responses."""
    specs = []
    for s in seeds:
        ids = "abcd"[:s + 2]
        for n in sizes:
            recs = [make_record(f"p{i}", ids, rank={x: k for k, x in enumerate(ids)}) for i in range(n)]
            specs.append(ModelSpec(f"{n} prompts", recs, None))
    return specs


class TestSweeps:
    def test_points_and_curve(self):
        """Dots are each seed's accuracy at its own x; the curve is the mean over seeds with an interval around it."""
        results = _results(LADDER)
        dots = scaling.sweep_points(results, {n: [1.0, 2.0] for n in LADDER}, LABELS)
        assert len(dots) == 3 * 2 * 2
        row = dots[(dots["model"] == "20 prompts") & (dots["subset"] == "Human Instruction")]
        assert row["accuracy"].tolist() == [0.62, 0.66] and row["x"].tolist() == [1.0, 2.0]
        curve = scaling.sweep_curve(results, {n: 5.0 for n in LADDER}, LABELS)
        assert curve["subset"].tolist()[:2] == list(LABELS.values())
        open40 = curve[(curve["model"] == "40 prompts") & (curve["subset"] == "Open Prompt")].iloc[0]
        assert open40["accuracy"] == pytest.approx(0.72) and open40["seeds"] == 2
        assert open40["lo"] < open40["accuracy"] < open40["hi"]

    def test_data_sweep_counts_pairs_per_seed(self):
        """Fig. 6's x is each seed's own pair count (the curve: their mean) and prompts is the subset size."""
        dots, curve = scaling.data_sweep(_ladder_specs(), _results(LADDER), LABELS)
        # seed 0: 2 responses -> 1 pair per record; seed 1: 3 responses -> 3 pairs per record
        assert dots[dots["model"] == "20 prompts"]["x"].tolist() == [20, 20, 60, 60]
        assert dict(zip(curve["model"], curve["x"])) == {"10 prompts": 20.0, "20 prompts": 40.0, "40 prompts": 80.0}
        assert dict(zip(curve["model"], curve["prompts"])) == {"10 prompts": 10, "20 prompts": 20, "40 prompts": 40}

    def test_size_sweep_names_models_by_size(self):
        """Fig. 7's x is the parameter count; the curve's model column is the size name."""
        results = _results({"a · human": [(0.5, 0.5)], "b · human": [(0.7, 0.7)]})
        dots, curve = scaling.size_sweep(results, {"a · human": 100, "b · human": 1000},
                                         {"a · human": "tiny-xs", "b · human": "tiny"}, LABELS)
        assert sorted(set(dots["x"])) == [100, 1000]
        assert set(curve["model"]) == {"tiny-xs", "tiny"} and (curve["parameters"] == curve["x"]).all()


class TestPlotAndTable:
    def test_plot_shows_the_curve_and_the_seeds(self):
        """One log-x panel per subset: the line is the curve's means by x, the black dots are the seeds' accuracies."""
        dots, curve = scaling.data_sweep(_ladder_specs(), _results(LADDER), LABELS)
        fig = scaling.plot_sweep(dots, curve, xlabel="pairs", color="#4e79a7", title="t")
        assert [ax.get_title() for ax in fig.axes] == list(LABELS.values())
        for ax, sub in zip(fig.axes, LABELS.values()):
            want = curve[curve["subset"] == sub].sort_values("x")
            assert ax.get_xscale() == "log" and ax.get_xlabel() == "pairs"
            assert np.allclose(ax.lines[0].get_ydata(), want["accuracy"])
            seeds = dots[dots["subset"] == sub]
            assert np.allclose(ax.collections[-1].get_offsets(), seeds[["x", "accuracy"]].to_numpy())
            assert not ax.texts
        fig.clf()

    def test_plot_annotates_after_layout(self):
        """With annotate, each mean is labelled with the named column, one label per model and panel."""
        results = _results({"a · human": [(0.5, 0.5)], "b · human": [(0.7, 0.7)]})
        dots, curve = scaling.size_sweep(results, {"a · human": 100, "b · human": 1000},
                                         {"a · human": "tiny-xs", "b · human": "tiny"}, LABELS)
        fig = scaling.plot_sweep(dots, curve, xlabel="p", color="#e15759", title="t", annotate="model")
        assert [sorted(t.get_text() for t in ax.texts) for ax in fig.axes] == [["tiny", "tiny-xs"]] * 2
        fig.clf()

    def test_interval_table(self):
        """Cells read "mean [low, high]" with three decimals, one column per subset, one row per index value."""
        curve = scaling.sweep_curve(_results(LADDER), {n: 1.0 for n in LADDER}, LABELS)
        table = scaling.interval_table(curve, ["model"])
        assert list(table.columns) == sorted(LABELS.values()) and len(table) == 3
        row = curve[(curve["model"] == "10 prompts") & (curve["subset"] == "Open Prompt")].iloc[0]
        assert table.loc["10 prompts", "Open Prompt"] == f"{row['accuracy']:.3f} [{row['lo']:.3f}, {row['hi']:.3f}]"


    def test_interval_table_with_the_null_controls(self):
        """Given the benchmark, the models' rows are followed by the null controls in their own section: each
        control's subset accuracy from null_controls, chance marked exact, "–" in the other index levels."""
        from cheems_lib.analyses.leaderboard import CONTROLS_SECTION
        from cheems_lib.baselines import null_controls

        bench = {k: [make_record(f"{k}{i}", "abc", rank={"a": 0, "b": 1, "c": 2}) for i in range(4)] for k in LABELS}
        for recs in bench.values():
            recs[0].responses[0].content = "the longest response of all"
        curve = scaling.sweep_curve(_results(LADDER), {n: 1.0 for n in LADDER}, LABELS).assign(prompts=1)
        table = scaling.interval_table(curve, ["model", "prompts"], bench, LABELS, sort="model", seed=2)
        assert list(table.index.get_level_values("section")) == ["reward models"] * 3 + [CONTROLS_SECTION] * 4
        longest = table.loc[(CONTROLS_SECTION, "null control: pick-longest", "–")]
        ref = null_controls(bench, seed=2).set_index(["control", "subset", "category"])
        assert longest["Open Prompt"] == f"{ref.loc[('baseline:longest', 'open', ''), 'accuracy']:.3f}"
        assert table.loc[(CONTROLS_SECTION, "null control: chance", "–"), "Human Instruction"] == "0.500 (exact)"


class TestClaims:
    def test_data_summary(self):
        """The prose's ranges come from the ladder's ends; accuracy rising with size gives a rank correlation of 1."""
        results = _results(LADDER)
        _, curve = scaling.data_sweep(_ladder_specs(), results, LABELS)
        summary = scaling.data_summary(results, curve)
        assert summary == {"data_range": "10 to 40", "data_pairs_range": "20 to 80", "data_span": 4.0,
                           "data_rho": pytest.approx(1.0)}

    def test_data_claim_supported_and_contradicted(self):
        """More data wins: the estimate is the largest minus the smallest set's mean accuracy; falling accuracy contradicts."""
        for values, verdict in ((LADDER, "supported"), (dict(zip(LADDER, list(LADDER.values())[::-1])), "contradicted")):
            results = _results(values)
            _, curve = scaling.data_sweep(_ladder_specs(), results, LABELS)
            claim = scaling.add_data_claim(Ledger("scaling", SOURCE), results, curve)
            assert claim.verdict == verdict and claim.seeds == 2
            assert claim.estimate == pytest.approx(0.2 if verdict == "supported" else -0.2)
            assert claim.sentence.startswith(verdict.capitalize()) and "(40 vs 10 prompts)" in claim.sentence

    def test_size_claims_compare_by_parameters(self):
        """The comparison is the most minus the fewest parameters, whatever the order; the instruct claim is untestable."""
        results = _results({"big": [(0.8, 0.8)], "small": [(0.6, 0.6)], "mid": [(0.7, 0.7)]})
        ledger = Ledger("scaling", SOURCE)
        scaling.add_size_claims(ledger, results, {"big": 900, "small": 10, "mid": 90},
                                {"big": "tiny", "small": "tiny-xs", "mid": "tiny-s"})
        size, instruct = ledger.claims.values()
        assert size.id == "fig7-model-scaling" and size.verdict == "supported"
        assert size.estimate == pytest.approx(0.2)
        assert size.sentence.startswith("Supported: A larger reward model is more accurate on CheemsBench.")
        assert "(tiny, 900 parameters, vs tiny-xs, 10)" in size.sentence
        assert instruct.kind == "untestable" and instruct.verdict == "inconclusive"


def _finished_run(folder, records, seed=0):
    """A folder as `cheems train --output` leaves it, as far as the scaling chapter reads it."""
    import json

    from cheems_lib.records import data_fingerprint

    folder.mkdir(parents=True)
    (folder / "cheems_train.json").write_text(json.dumps({"config": {"seed": seed},
                                                          "data_fingerprint": data_fingerprint(records)}))
    return folder


def test_sizes_trained_elsewhere(tmp_path, monkeypatch):
    """Fig. 7's sizes too large for one device come from a checkpoints file (run on the same records, with the
    training seed) and are scored as they are, never trained here; one missing from it is refused in one line with
    the fix; tiny sizes never ask for the device's memory."""
    from cheems_lib.analyses import experiments
    from cheems_lib.input_files import DataError

    recs = [make_record(f"p{i}", "ab", rank={"a": 0, "b": 1}) for i in range(4)]
    big, small = "Qwen/Qwen2.5-72B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct"
    run = _finished_run(tmp_path / "rm-72b", recs)
    mapping = tmp_path / "trained.yaml"
    mapping.write_text(f"{big}: {run}\n")
    gpu = 80 * 2**30
    assert scaling.checkpoints_for([small, big], [0], recs, checkpoints_file=str(mapping), memory=gpu) == {big: {0: str(run)}}
    monkeypatch.setattr(scaling, "device_memory", lambda device: pytest.fail("tiny sizes need no memory lookup"))
    assert scaling.checkpoints_for(["tiny-xs", "tiny"], [0, 1], recs) == {}
    with pytest.raises(ValueError, match=rf"^{big}: too large to train here .*\(fix: train it with `accelerate launch "
                                         r"--config_file configs/fsdp_72b.yaml .* -p checkpoints_file FILE"):
        scaling.checkpoints_for([small, big], [0], recs, memory=gpu)
    with pytest.raises(DataError, match="trained on other records"):
        scaling.checkpoints_for([big], [0], recs[:2], checkpoints_file=str(mapping), memory=gpu)
    with pytest.raises(DataError, match="trained with seed 0, not training seed 1"):
        scaling.checkpoints_for([big], [1], recs, checkpoints_file=str(mapping), memory=gpu)
    with pytest.raises(DataError, match=r"1 folder\(s\) for the training seeds \[0, 1\]"):
        scaling.checkpoints_for([big], [0, 1], recs, checkpoints_file=str(mapping), memory=gpu)

    family = experiments.model_sizes(recs, [big], seeds=[0], epochs=1, trained={big: {0: str(run)}})
    monkeypatch.setattr(experiments.zoo, "train_or_load", lambda *a, **k: pytest.fail("a size handed in was trained"))
    assert experiments.train(family.specs(), progress=False) == [run]


def test_checkpoints_file_is_checked_before_any_kernel(tmp_path):
    """The scaling chapter's checkpoints_file: a folder without a finished run is refused with its line and the fix;
    a good file is allowed and its checkpoints' files are part of the chapter's cache key."""
    from cheems_lib.publishing.chapters import check_value, parameters_of
    from cheems_lib.publishing.execute import input_files
    from conftest import ROOT

    spec = parameters_of(ROOT / "notebooks" / "scaling.md")["checkpoints_file"]
    run = _finished_run(tmp_path / "rm", [make_record("p0", "ab", rank={"a": 0, "b": 1})])
    (run / "config.json").write_text("{}")
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(f"Qwen/Qwen2.5-72B-Instruct: {run}\n")
    bad.write_text(f"Qwen/Qwen2.5-32B-Instruct: {tmp_path / 'unfinished'}\n")
    assert check_value(str(good), spec, tmp_path) is None
    problem, fix = check_value(str(bad), spec, tmp_path)
    assert problem.startswith("line 1: Qwen/Qwen2.5-32B-Instruct: ") and "no cheems_train.json" in problem
    assert "--resume" in fix
    assert run / "config.json" in input_files({"checkpoints_file": str(good)}, {"checkpoints_file": spec}, tmp_path)


class _World:
    """What the chapter's setup reads of a world: its benchmark subsets, preference files and manifest."""

    def __init__(self, bench=("open", "human"), preference=True, human=True, gpt=True, comparable=True):
        rec = [make_record("p", "ab", rank={"a": 0, "b": 1})]
        self.bench = {k: rec for k in bench}
        self.preference = rec * 3 if preference else None
        self.human = rec if human else None
        self._gpt, self._comparable = (rec * 2 if gpt else None), comparable

    def gpt(self):
        return self._gpt

    def comparable(self, key):
        return self._comparable


class TestChapterSetup:
    def test_why_skipped_names_the_missing_files(self):
        """Both sweeps need a benchmark subset and the preference file; either subset suffices."""
        assert scaling.why_skipped(_World()) is None and scaling.why_skipped(_World(bench=("human",))) is None
        assert scaling.why_skipped(_World(bench=(), preference=False)) == (
            "*Skipped: Figs. 6 and 7; it needs `cheems_bench/open.jsonl` or `cheems_bench/human.jsonl` and "
            "`cheems_preference.jsonl`, which this folder does not hold.*")

    def test_subsets_and_size_training_set(self):
        """Subsets keep the paper's order; Fig. 7 trains on the human subset where there is one, else the whole set."""
        assert scaling.subset_labels(_World(bench=("human", "open"))) == LABELS
        assert scaling.subset_labels(_World(bench=("human",))) == {"human": "Human Instruction"}
        world = _World()
        assert scaling.size_training_set(world) == (world.human, "golden human")
        world = _World(human=False)
        assert scaling.size_training_set(world) == (world.preference, "preference-set")

    def test_prose_values(self):
        """The prose names both subsets, one CheemsBench subset, or a file that is not CheemsBench, and says
        whether CheemsPreference could be built."""
        both = scaling.prose_values(_World(), [0, 1, 2])
        assert both["seeds_text"] == "0-2" and both["n_seeds"] == 3 and both["size_what"] == "golden human"
        assert both["bench_what"] == "the two CheemsBench subsets" and both["rho_subsets"] == "both subsets"
        assert both["pref_what"].startswith("CheemsPreference (")
        one = scaling.prose_values(_World(bench=("open",), gpt=False), [0])
        assert one["bench_what"] == "the CheemsBench Open Prompt subset" and one["rho_subsets"] == "the Open Prompt subset"
        assert one["pref_what"].startswith("the preference set as it is")
        other = scaling.prose_values(_World(bench=("human",), comparable=False, human=False), [0])
        assert other["bench_what"] == "the benchmark file cheems_bench/human.jsonl" and other["size_what"] == "preference-set"
