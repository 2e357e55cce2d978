"""The comparator benchmarks: independent of CheemsBench, declared mix, seeded, definite labels."""
from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pytest

from types import SimpleNamespace

from cheems_lib.world import comparators as cmp
from cheems_lib.world import panels
from cheems_lib.world.annotators import GPTAnnotator, HumanAnnotator
from cheems_lib.world.simulation import WorldConfig, build_world

BUILDERS = {"rewardbench": cmp.rewardbench_like, "rmb": cmp.rmb_like}


@pytest.fixture(scope="module")
def smoke_bench():
    """The smoke world's CheemsBench records (human-annotated subsets)."""
    files = build_world(WorldConfig(size="smoke", seed=0)).files
    return files["cheems_bench/open.jsonl"] + files["cheems_bench/human.jsonl"]


def _chosen_rejected(rec):
    best = [k for k, v in rec.rank.items() if v == 0]
    return best, [k for k, v in rec.rank.items() if v > 0]


@pytest.mark.parametrize("name", list(BUILDERS))
def test_prompts_disjoint_from_cheemsbench(name, smoke_bench):
    """No comparator prompt text or id is one of CheemsBench's when its prompts are excluded."""
    texts, ids = {r.prompt for r in smoke_bench}, {r.id for r in smoke_bench}
    comp = BUILDERS[name](0, 200, exclude=texts)
    assert not texts & {r.prompt for r in comp.records}
    assert not ids & {r.id for r in comp.records}


def test_exclude_is_honoured():
    """Excluding a draw's prompt texts makes the next draw avoid every one of them."""
    first = {r.prompt for r in cmp.rewardbench_like(0, 150).records}
    again = cmp.rewardbench_like(0, 150, exclude=first)
    assert not first & {r.prompt for r in again.records}


@pytest.mark.parametrize("name, sections", [("rewardbench", cmp.REWARDBENCH_SECTIONS), ("rmb", cmp.RMB_SECTIONS)])
def test_category_mix_matches_declared(name, sections):
    """Shares of prompts per section and per simulator category are the declared ones (±0.04 at 1,500 prompts)."""
    comp = BUILDERS[name](1, 1500)
    per_section, per_category = cmp.declared_mix(sections)
    assert sum(per_section.values()) == pytest.approx(1.0) and sum(per_category.values()) == pytest.approx(1.0)
    n = len(comp.records)
    for s, share in per_section.items():
        assert sum(r.category[0] == s for r in comp.records) / n == pytest.approx(share, abs=0.04)
    for c, share in per_category.items():
        assert sum(r.category[1] == c for r in comp.records) / n == pytest.approx(share, abs=0.04)
    assert {r.category[1] for r in comp.records} <= set(per_category)


def test_rewardbench_mix_differs_from_cheemsbench():
    """The RewardBench-like mix is not CheemsBench's: safety and reasoning weigh far more."""
    from cheems_lib.world.simulation import SUBSETS

    _, mix = cmp.declared_mix(cmp.REWARDBENCH_SECTIONS)
    open_mix = SUBSETS["bench_open"].mix
    assert sum(abs(mix.get(c, 0.0) - w) for c, w in open_mix.items()) > 0.5


@pytest.mark.parametrize("name, default", [("rewardbench", HumanAnnotator()), ("rmb", GPTAnnotator())])
def test_panel_differs_from_cheemsbench_annotators_and_is_seeded(name, default):
    """The comparator's annotators share no parameter value with CheemsBench's; the same seed gives the same panel."""
    a, b, c = (BUILDERS[name](s, 5).panel for s in (3, 3, 4))
    assert a == b and a != c
    assert panels.shared_parameters(a, [default]) == []
    assert panels.shared_parameters(a, [HumanAnnotator(), GPTAnnotator()]) == []


@pytest.mark.parametrize("name", list(BUILDERS))
def test_same_seed_identical_records(name):
    """Same seed and size: identical records and sets; another seed: other prompts."""
    a, b, c = BUILDERS[name](7, 60), BUILDERS[name](7, 60), BUILDERS[name](8, 60)
    assert [r.to_json() for r in a.records] == [r.to_json() for r in b.records]
    assert {k: [r.to_json() for r in v] for k, v in a.sets.items()} == {k: [r.to_json() for r in v] for k, v in b.sets.items()}
    assert [r.prompt for r in a.records] != [r.prompt for r in c.records]


def test_rewardbench_pairs_have_definite_chosen_and_rejected():
    """Every pair has one chosen (rank 0) and one rejected (rank 1), the chosen usually better in hidden utility."""
    comp = cmp.rewardbench_like(0, 400)
    assert len(comp.records) == 400 and comp.responses == 800 and comp.sets["pairs"] is comp.records
    agree = {}
    for rec in comp.records:
        chosen, rejected = _chosen_rejected(rec)
        assert len(rec.responses) == 2 and len(chosen) == len(rejected) == 1
        assert set(rec.rank) == set(rec.response_ids)
        agree.setdefault(rec.category[0], []).append(comp.utility[(rec.id, chosen[0])] > comp.utility[(rec.id, rejected[0])])
    assert set(agree) == {s.name for s in cmp.REWARDBENCH_SECTIONS}
    assert all(np.mean(v) > 0.75 for v in agree.values())
    # chosen sits first about half the time, so a response's position says nothing
    first = np.mean([rec.rank[rec.responses[0].id] == 0 for rec in comp.records])
    assert 0.4 < first < 0.6


def test_rmb_sets():
    """Pairwise records hold one chosen and one rejected; Best-of-N records one winner over all the other responses."""
    comp = cmp.rmb_like(0, 150)
    assert comp.responses == 150 * cmp.RMB_RESPONSES
    scored = {(r.id, x.id) for r in comp.records for x in r.responses}
    for rec in comp.sets["pairwise"]:
        chosen, rejected = _chosen_rejected(rec)
        assert len(chosen) == len(rejected) == 1 and {(rec.id, x) for x in rec.rank} <= scored
    assert comp.sets["bon"]
    for rec in comp.sets["bon"]:
        chosen, rejected = _chosen_rejected(rec)
        assert len(chosen) == 1 and len(rejected) == cmp.RMB_RESPONSES - 1
    right = [comp.utility[(r.id, _chosen_rejected(r)[0][0])] >= max(comp.utility[(r.id, k)] for k in _chosen_rejected(r)[1])
             for r in comp.sets["bon"]]
    assert np.mean(right) > 0.6


def test_for_world_excludes_the_world_and_equals_the_builders(smoke_bench):
    """for_world builds both comparators as rewardbench_like/rmb_like would, at the world's scale, none of its prompts."""
    world = SimpleNamespace(bench_records=smoke_bench, length_scale=0.5)
    rb, rmb = cmp.for_world(world, seed=1, rewardbench_pairs=6, rmb_prompts=5)
    prompts = {r.prompt for r in smoke_bench}
    for comp, build, size in [(rb, cmp.rewardbench_like, 6), (rmb, cmp.rmb_like, 5)]:
        alone = build(1, size, length_scale=0.5, exclude=prompts)
        assert [r.to_json() for r in comp.records] == [r.to_json() for r in alone.records]
        assert not prompts & {r.prompt for r in comp.records}


def test_prose_values_count_the_comparators():
    """The glued sizes are the comparators' record and set counts; the shares are the declared ones."""
    rb, rmb = cmp.rewardbench_like(0, 8), cmp.rmb_like(0, 6)
    v = cmp.prose_values(rb, rmb)
    assert (v["n_rb_pairs"], v["n_rmb_prompts"], v["n_rmb_pairs"], v["n_rmb_bon"]) == \
        (8, 6, len(rmb.sets["pairwise"]), len(rmb.sets["bon"]))
    assert v["n_comparator_responses"] == 2 * 8 + cmp.RMB_RESPONSES * 6
    share = cmp.declared_mix(cmp.RMB_SECTIONS)[0]
    assert v["rmb_sections"].split(", ") == [f"{s} {w:.0%}" for s, w in share.items()]
    assert (v["rmb_pair_gap"], v["rmb_bon_gap"]) == (cmp.PAIR_GAP, cmp.BON_GAP)


class TestPanels:
    def test_draw_panel_in_ranges_and_independent_streams(self):
        """Members lie in the declared ranges; another stream with the same seed gives another panel."""
        p = panels.draw_panel("human", seed=0, size=6, stream="x")
        assert p == panels.draw_panel("human", seed=0, size=6, stream="x")
        assert p != panels.draw_panel("human", seed=0, size=6, stream="y")
        for m in p:
            for k, (lo, hi) in panels.RANGES["human"].items():
                assert lo <= asdict(m)[k] <= hi
        with pytest.raises(ValueError, match="panel kind"):
            panels.draw_panel("robot", seed=0, size=1, stream="x")

    def test_pair_verdict_and_grade(self):
        """A noiseless judge without length preference picks the higher utility and ties within its margin."""
        judge = HumanAnnotator(shared_noise=0.0, noise=0.0, tie_margin=0.5, length_bias=0.0)
        rng = np.random.default_rng(0)
        assert panels.pair_verdict([3.0, 1.0], [10, 10], judge, rng) == 1
        assert panels.pair_verdict([1.0, 3.0], [10, 10], judge, rng) == -1
        assert panels.pair_verdict([2.0, 2.2], [10, 10], judge, rng) == 0
        g = panels.grade([0.3, 5.0], [10, 10], GPTAnnotator(noise=0.0, length_bias=0.0), rng)
        assert g.tolist() == [1.0, 10.0]

    def test_sharing_table(self):
        """Each cell lists shared_parameters of a judge group and a benchmark's annotators, none, or unknown."""
        judges = {"j": [HumanAnnotator(noise=0.123)], "g": [GPTAnnotator(noise=0.9)]}
        annotators = {"same": [HumanAnnotator()], "drawn": panels.draw_panel("human", seed=0, size=2, stream="t"),
                      "real": None}
        t = panels.sharing_table(judges, annotators)
        assert list(t.index) == ["j", "g"] and list(t.columns) == ["same", "drawn", "real"]
        assert t.loc["j", "same"] == ", ".join(panels.shared_parameters(judges["j"], annotators["same"]))
        assert t.loc["j", "drawn"] == t.loc["g", "same"] == "none"
        assert t.loc["g", "real"] == "real annotators: unknown"
