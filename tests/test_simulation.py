"""The simulated world (spec §6): layout, determinism, Algorithm 1, calibration, response counts, cache."""
from __future__ import annotations

import json

import numpy as np
import pytest

from cheems_lib.analyses.calibration import TABLE1_COLUMNS, checks, table1, table5
from cheems_lib.conflicts import resolve
from cheems_lib.categories import CATEGORIES
from cheems_lib.world.corpus import Traits, make_task, render_response
from cheems_lib.records import read_records
from cheems_lib.world.simulation import SIZES, WorldConfig, build_world
from cheems_lib.world_files import GPT_LAYOUT, LAYOUT, write_world
from conftest import digest


class TestLayout:
    def test_every_file_of_the_spec_exists_and_loads(self, smoke_dir):
        """All spec §6 paths are written and load through the project's own loader."""
        for path in [*LAYOUT.values(), *GPT_LAYOUT.values()]:
            recs = read_records(smoke_dir / path)
            assert recs and all(r.rank is not None and r.annotations and r.category for r in recs)
        truth = [json.loads(l) for l in (smoke_dir / "truth.jsonl").read_text(encoding="utf-8").splitlines()]
        assert all(0 <= t["quality"] <= 5 for t in truth)
        summary = json.loads((smoke_dir / "summary.json").read_text(encoding="utf-8"))
        assert summary["seed"] == 3 and summary["simulator_version"]

    def test_ranks_are_algorithm_1_of_the_raw_annotations(self, smoke_dir):
        """Every written rank is Algorithm 1 applied to the written annotations."""
        for path in [*LAYOUT.values(), *GPT_LAYOUT.values()]:
            for r in read_records(smoke_dir / path):
                assert r.rank == resolve(r.response_ids, r.annotations)

    def test_gpt_variant_has_same_prompts_and_responses(self, smoke_dir):
        """The GPT benchmark variant holds the same prompts and responses as the human one."""
        for sub in ("open", "human"):
            human = read_records(smoke_dir / f"cheems_bench/{sub}.jsonl")
            gpt = read_records(smoke_dir / f"cheems_bench_gpt/{sub}.jsonl")
            assert [(r.id, r.responses) for r in human] == [(r.id, r.responses) for r in gpt]

    def test_benchmark_protocols(self, smoke_dir):
        """Humans: 5 rounds x 3 pairs with ties; GPT: all C(5,2) pairs once, no ties."""
        human = read_records(smoke_dir / "cheems_bench/open.jsonl")
        gpt = read_records(smoke_dir / "cheems_bench_gpt/open.jsonl")
        assert all(len(r.annotations) == 15 for r in human)
        assert any(p == "0" for r in human for *_, p in r.annotations)
        assert all(len({frozenset(a[:2]) for a in r.annotations}) == 10 == len(r.annotations) for r in gpt)
        assert not any(p == "0" for r in gpt for *_, p in r.annotations)

    def test_text_is_chinese(self, smoke_dir):
        """Simulated prompts are mostly Chinese characters."""
        recs = read_records(smoke_dir / "cheems_bench/human.jsonl")
        han = sum(1 for r in recs for ch in r.prompt if "\u4e00" <= ch <= "\u9fff")
        assert han / sum(len(r.prompt) for r in recs) > 0.5


class TestDeterminism:
    def test_same_seed_same_bytes(self, smoke_dir, tmp_path):
        """The same seed writes byte-identical files."""
        write_world(build_world(WorldConfig(size="smoke", seed=3)), tmp_path)
        assert digest(tmp_path) == digest(smoke_dir)

    def test_other_seed_other_bytes(self, smoke_dir, tmp_path):
        """Another seed writes other files."""
        write_world(build_world(WorldConfig(size="smoke", seed=4)), tmp_path)
        assert digest(tmp_path) != digest(smoke_dir)


class TestQualityIsVisible:
    def test_traits_change_the_text(self):
        """Right vs wrong answer, refusal vs compliance, truncation: a reader sees the difference."""
        rng = np.random.default_rng(0)
        math = make_task("数学", rng)
        right = render_response(math, Traits(correct=True), np.random.default_rng(1))
        wrong = render_response(math, Traits(correct=False), np.random.default_rng(1))
        assert f"答案是{math.answer}" in right and f"答案是{math.wrong}" in wrong
        unsafe = make_task("安全", rng)
        assert "不能" in render_response(unsafe, Traits(), rng)
        assert "步骤" in unsafe.prompt and "第一步" in render_response(unsafe, Traits(harmful=True), rng)

    def test_categories_have_glosses(self):
        """The eight top-level categories each have an English gloss."""
        assert len(CATEGORIES) == 8 and all(CATEGORIES.values())


@pytest.fixture(scope="module")
def calibration_world():
    """Full benchmark counts (Table 5's ratios are per prompt), a reduced preference set."""
    return build_world(WorldConfig(size="default", seed=0, counts={"pref_gpt": 1024, "pref_human": 120}))


class TestCalibration:
    def test_every_target_is_met(self, calibration_world):
        """Conflict ratios (Table 5), position shares, Table 1 lengths, length baseline, learnability."""
        w = calibration_world
        truth = {(t["prompt_id"], t["response_id"]): t["utility"] for t in w.truth}
        failed = [c for c in checks(w.files, length_scale=SIZES["default"]["length_scale"], truth=truth) if not c["ok"]]
        assert not failed, failed

    def test_tables_have_the_papers_shape(self, calibration_world):
        """Tables 1 and 5 of a world have the paper's columns and rows."""
        t1 = table1(calibration_world.files)
        assert list(t1.columns) == list(TABLE1_COLUMNS)
        assert len(table5(calibration_world.files)) == 4


class TestResponseCounts:
    @pytest.mark.parametrize("mean, sd", [(5.07, 3.55), (5.29, 3.05), (4.0, 1.9)])
    def test_pmf_has_the_requested_moments(self, mean, sd):
        """The beta-binomial response-count distribution has exactly the mean and spread asked for."""
        from cheems_lib.world.simulation import response_count_pmf

        pmf = response_count_pmf(mean, sd)
        m = sum(k * p for k, p in pmf.items())
        var = sum(k * k * p for k, p in pmf.items()) - m * m
        assert sum(pmf.values()) == pytest.approx(1) and m == pytest.approx(mean) and var == pytest.approx(sd * sd)
        assert min(pmf) == 2 and max(pmf) == len(__import__("cheems_lib.world.simulation").world.simulation.MODELS)

    def test_impossible_spread_is_refused(self):
        """A spread beyond the two-point distribution on the bounds is an error naming the allowed range."""
        from cheems_lib.world.simulation import response_count_pmf

        with pytest.raises(ValueError, match="must lie between"):
            response_count_pmf(5.07, 4.5)

    def test_files_are_prefix_stable_in_their_prompt_count(self):
        """Simulating fewer prompts of a file gives the first prompts of the larger file (sweeps rely on it)."""
        full = build_world(WorldConfig(size="smoke", seed=2)).files["cheems_preference/gpt.jsonl"]
        part = build_world(WorldConfig(size="smoke", seed=2, counts={"pref_gpt": 20})).files["cheems_preference/gpt.jsonl"]
        assert part == full[:20]

    def test_tie_margin_multiplier_lowers_comparisons(self):
        """A wider human tie margin on a benchmark file gives fewer comparisons there and leaves the other file alone."""
        from dataclasses import replace

        from cheems_lib.world import simulation

        base = table1(build_world(WorldConfig(size="smoke", seed=0)).files)
        spec = simulation.SUBSETS["bench_open"]
        try:
            simulation.SUBSETS["bench_open"] = replace(spec, human_tie=spec.human_tie * 2)
            wide = table1(build_world(WorldConfig(size="smoke", seed=0)).files)
        finally:
            simulation.SUBSETS["bench_open"] = spec
        col = "comparisons_excluding_ties"
        assert wide.loc[col, "cheemsbench_open_prompt"] < base.loc[col, "cheemsbench_open_prompt"]
        assert wide.loc[col, "cheemsbench_human_instruction"] == base.loc[col, "cheemsbench_human_instruction"]


def test_fingerprint_hashes_every_module_a_world_is_made_of(monkeypatch):
    """fingerprint() reads each cheems_lib module simulation.py reaches, so a cached world never goes stale."""
    from pathlib import Path

    from cheems_lib.world import simulation
    from test_imports import import_graph

    graph, reached, todo = import_graph(), set(), ["world.simulation"]
    while todo:
        for m in graph[todo.pop()] - reached:
            reached.add(m)
            todo.append(m)
    # paper.py: its CSV is hashed instead; outputs.py only moves files; figures.py only draws (conflicts' plots)
    reached -= {"paper", "outputs", "publishing.figures"}
    read, read_bytes = [], Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: read.append(self.name) or read_bytes(self))
    simulation.fingerprint()
    files = {m.split(".")[-1] + ".py" for m in reached | {"world.simulation"}}  # read_bytes sees the file name
    assert files <= set(read), sorted(files - set(read))


def test_human_labels_relabel_the_same_responses():
    """human_labels gives build_world's human files at the world's own annotator, and other labels of the very same
    prompts and responses at another shared noise; a subset without human labels is refused."""
    from dataclasses import replace

    from cheems_lib.world.annotators import HumanAnnotator
    from cheems_lib.world.simulation import human_labels

    config = WorldConfig(size="smoke", seed=2, counts={"bench_open": 12, "bench_human": 12, "pref_human": 2, "pref_gpt": 2})
    world = build_world(config).files
    own = human_labels(config)
    other = human_labels(replace(config, human=replace(HumanAnnotator(), shared_noise=1.5)))
    for path in (LAYOUT["bench_open"], LAYOUT["bench_human"]):
        assert [(r.id, r.annotations) for r in own[path]] == [(r.id, r.annotations) for r in world[path]]
        assert [(r.prompt, [(x.id, x.content) for x in r.responses]) for r in other[path]] == \
            [(r.prompt, [(x.id, x.content) for x in r.responses]) for r in world[path]]
        assert any(a.annotations != b.annotations for a, b in zip(other[path], world[path]))
    with pytest.raises(ValueError, match="no human labels"):
        human_labels(config, ("pref_gpt",))


def test_the_shipped_release_example_is_what_its_script_writes(tmp_path):
    """data/examples/release is cut from the simulator by data/examples/make_release.py: rerunning the script
    gives the shipped files byte for byte (a simulator change that moves them fails here: rerun the script)."""
    import subprocess
    import sys

    from conftest import ROOT

    subprocess.run([sys.executable, str(ROOT / "data/examples/make_release.py"), str(tmp_path)], check=True,
                   capture_output=True, cwd=ROOT)
    shipped = ROOT / "data/examples/release"
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert written == sorted(p.relative_to(shipped).as_posix() for p in shipped.rglob("*") if p.is_file())
    for rel in written:
        assert (tmp_path / rel).read_bytes() == (shipped / rel).read_bytes(), rel
