"""Robustness of Fig. 5's claims across the humans' shared noise: CheemsBench re-annotated, the models' scores kept."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cheems_lib.analyses import downstream_correlation, downstream_population, downstream_robustness

from fig5_study import _comparators



def _noise_study(seed: int = 0):
    """A small simulated world (its CheemsBench and GPT copy) and Scores of 16 models (8 training sets x 2 seeds)
    scored by hand: a model's score is the hidden utility plus noise that grows with the set's index, and its
    downstream value falls with that noise; the comparators' scores are noise."""
    from types import SimpleNamespace

    from cheems_lib.world.simulation import WorldConfig, build_world

    w = build_world(WorldConfig(size="smoke", seed=seed, counts={"bench_open": 16, "bench_human": 16,
                                                                 "pref_human": 2, "pref_gpt": 2}))
    bench = {"open": w.files["cheems_bench/open.jsonl"], "human": w.files["cheems_bench/human.jsonl"]}
    world = SimpleNamespace(size="smoke", seed=seed, bench=bench, bench_records=bench["open"] + bench["human"],
                            files=w.files, summary=w.summary)
    utility = {(t["prompt_id"], t["response_id"]): t["utility"] for t in w.truth}
    rb, rmb = _comparators()
    names = [f"set{s} · seed {k}" for s in range(8) for k in range(2)]
    rng = np.random.default_rng(1)
    scores = {m: {**{key: u + rng.normal(0, 0.2 + 0.3 * i // 2) for key, u in utility.items()},
                  **{(r.id, x.id): rng.normal() for r in rb.records + rmb.records for x in r.responses}}
              for i, m in enumerate(names)}
    models = downstream_population.RewardModels({m: m for m in names}, {m: "g" for m in names}, {m: m.split(" ")[0] for m in names})
    sc = downstream_population.tabulate(downstream_population.benchmark_sets(world, rb, rmb), scores, {m: {} for m in names}, {}, models)
    quality = -np.array([0.2 + 0.3 * (i // 2) for i in range(len(names))])
    sc.down = pd.DataFrame({"Human win rate": quality + rng.normal(0, 0.1, len(names)),
                            "MT-bench-like grade": quality + rng.normal(0, 0.1, len(names))}, index=names)
    sc.picks = sc.outcomes = None
    return world, sc


class TestSharedNoiseSweep:
    def test_relabeled_keeps_responses_and_changes_only_cheemsbench_labels(self):
        """At the world's own shared noise the re-annotated benchmark is the world's (the same columns); at another
        value only the human-annotated CheemsBench columns move, and the responses are the same."""
        from dataclasses import replace

        from cheems_lib.world.annotators import HumanAnnotator
        from cheems_lib.world.simulation import WorldConfig, human_labels

        world, sc = _noise_study()
        config = WorldConfig(size="smoke", seed=0, counts={"bench_open": 16, "bench_human": 16},
                             human=replace(HumanAnnotator(), shared_noise=2.0))
        files = human_labels(config)
        other = {"open": files["cheems_bench/open.jsonl"], "human": files["cheems_bench/human.jsonl"]}
        assert [[x.content for x in r.responses] for r in other["open"]] == \
            [[x.content for x in r.responses] for r in world.bench["open"]]
        assert any(a.annotations != b.annotations for a, b in zip(other["human"], world.bench["human"]))
        moved = downstream_robustness.relabeled(sc, other).bench
        changed = {c for c in sc.bench.columns if not np.allclose(moved[c], sc.bench[c])}
        assert changed and changed <= {f"{b} {m}" for b in ("CheemsBench", "Open Prompt", "Human Instruction")
                                       for m in ("acc", "exact")}
        pd.testing.assert_frame_equal(downstream_robustness.relabeled(sc, world.bench).bench, sc.bench)

    def test_sweep_over_two_values_yields_robustness_claims(self):
        """A sweep over two values and the world's own gives one robustness claim per swept Fig. 5 claim; the point
        at the own value is the main claim's own test, and the claim's reason says what is held fixed."""
        from cheems_lib.world.annotators import HumanAnnotator
        from cheems_lib.analyses.claims import Ledger

        world, sc = _noise_study()
        sweeps = downstream_robustness.noise_sweeps(sc, world, [0.0, 0.3, 1.5], HumanAnnotator(), n_boot=100, seed=0, seeds=2)
        assert set(sweeps) == {"fig5-human-beats-gpt", "fig5-cheemsbench-best"}
        assert all(s["value"].tolist() == [0.0, 0.3, 1.5] for s in sweeps.values())
        ledger = Ledger("downstream", "test")
        downstream_correlation.add_claims(ledger, sc, n_boot=100, seed=0, seeds=2)
        for claim, sweep in sweeps.items():
            assert sweep.set_index("value").loc[0.3, "estimate"] == pytest.approx(ledger.claims[claim].estimate)
        assert sweeps["fig5-human-beats-gpt"]["estimate"].nunique() == 3  # the labels, hence the statistic, change
        downstream_robustness.add_noise_claims(ledger, sweeps, own=0.3)
        added = [ledger.claims[f"{c}-vs-shared-noise"] for c in sweeps]
        assert [c.kind for c in added] == ["robustness"] * 2
        assert all("held fixed" in c.reason and c.link == "downstream-shared-noise" and c.seeds == 2 for c in added)
        assert added[0].estimate == pytest.approx(ledger.claims[added[0].id.removesuffix("-vs-shared-noise")].estimate)

    def test_untestable_without_a_sweep_and_refused_on_another_world(self):
        """Without sweeps both claims are untestable with the given reason; without the GPT copy only that one is;
        a world whose responses the simulator does not reproduce is refused."""
        from cheems_lib.world.annotators import HumanAnnotator
        from cheems_lib.analyses.claims import Ledger

        ledger = Ledger("downstream", "test")
        downstream_robustness.add_noise_claims(ledger, None, own=0.3, reason="these are real files")
        assert {(c.kind, c.reason) for c in ledger.claims.values()} == {("untestable", "these are real files")}
        world, sc = _noise_study()
        sweeps = downstream_robustness.noise_sweeps(sc.__class__(**{**sc.__dict__, "bench": sc.bench.drop(
            columns=[c for c in sc.bench.columns if "GPT" in c])}), world, [0.3], HumanAnnotator(), n_boot=100)
        assert list(sweeps) == ["fig5-cheemsbench-best"]
        ledger = Ledger("downstream", "test")
        downstream_robustness.add_noise_claims(ledger, sweeps, own=0.3)
        assert ledger.claims["fig5-human-beats-gpt-vs-shared-noise"].kind == "untestable"
        world.seed = 5
        with pytest.raises(ValueError, match="changed its prompts or responses"):
            downstream_robustness.noise_sweeps(sc, world, [0.3], HumanAnnotator(), n_boot=100)


def test_claims_and_controls_add_fig5s_claims_then_the_controls(monkeypatch):
    """Fig. 5's claims come first, then the controls on the setting's tasks and annotators, with the same bootstrap
    seed and replicates; the controls' result is returned."""
    from types import SimpleNamespace

    calls = []
    monkeypatch.setattr(downstream_robustness, "add_claims", lambda *a, **kw: calls.append(("claims", a, kw)))
    monkeypatch.setattr(downstream_robustness, "add_robustness",
                        lambda *a, **kw: calls.append(("controls", a, kw)) or "robust")
    setting = SimpleNamespace(tasks="tasks", annotators="annotators")
    got = downstream_robustness.add_claims_and_controls("ledger", "scores", "world", setting, shared_noise=[0.5],
                                                        n_boot=30, seed=4, seeds=2)
    assert got == "robust"
    assert calls == [("claims", ("ledger", "scores"), {"n_boot": 30, "seed": 4, "seeds": 2}),
                     ("controls", ("ledger", "scores", "world", "tasks", "annotators"),
                      {"shared_noise": [0.5], "n_boot": 30, "seed": 4, "seeds": 2})]
