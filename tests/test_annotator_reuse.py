"""Table 4's first comparison with the human training subset relabelled by annotators drawn apart from the
benchmark's (cheems_lib.analyses.annotator_reuse)."""
from __future__ import annotations

import pandas as pd
import pytest

from cheems_lib.analyses import annotator_reuse, claims, sensitivity, world_folder
from cheems_lib.world.annotators import HumanAnnotator
from cheems_lib.world.panels import shared_parameters


class _Ledger(claims.Ledger):
    """A ledger that does not glue (no notebook here)."""

    def add(self, claim, *, glue=False):
        return super().add(claim, glue=False)


def _fake_difference(seen):
    def fake(world_, first, second, bench, cfg, names=None):
        seen.append((list(first), list(second), bench))
        return {"estimate": 0.05, "ci_low": 0.01, "ci_high": 0.09, "seeds": 1, "n": 87, "verdict": "supported",
                "diff": None}
    return fake


def test_the_sweep_relabels_only_the_human_training_subset(monkeypatch):
    """Row 0 trains on the world's own human subset; each drawn row on the same prompts and responses relabelled by
    an annotator that shares no parameter with the benchmark's; the GPT subset and the benchmark never change."""
    world = world_folder.open_world("", "smoke", 0)
    seen = []
    monkeypatch.setattr(annotator_reuse, "difference", _fake_difference(seen))
    sweep = annotator_reuse.annotator_sweep(world, annotators=2)
    assert list(sweep["value"]) == [0.0, 1.0, 2.0] and "diff" not in sweep
    assert sweep["annotator"][0].startswith("the benchmark's own") and sweep["annotator"][1].startswith("drawn")
    own, *drawn = seen
    assert own[0] == world.human
    for first, second, bench in drawn:
        assert [r.id for r in first] == [r.id for r in world.human] and first != world.human
        assert [[x.content for x in r.responses] for r in first] == [[x.content for x in r.responses]
                                                                     for r in world.human]
        assert second == own[1] == world.gpt(len(world.human)) and bench == world.bench
    assert sweep.attrs["diffs"] == {0.0: None, 1.0: None, 2.0: None}
    assert annotator_reuse.world_annotator(world) == HumanAnnotator()


def test_the_drawn_annotators_differ_in_preferences_only():
    """Each drawn annotator's tie margin and length preference are its own (none equal to the benchmark's); its
    noise is the benchmark annotator's, so the relabelled subset is no noisier."""
    own = HumanAnnotator()
    drawn = annotator_reuse.drawn_annotators(own, seed=0, size=5)
    assert sorted(shared_parameters(drawn, [own])) == sorted({"shared_noise", "noise"})
    assert all(a.shared_noise == own.shared_noise and a.noise == own.noise for a in drawn)
    assert len({a.tie_margin for a in drawn}) == 5


@pytest.mark.parametrize("verdicts, verdict, words", [
    (["supported", "supported", "supported"], "supported", "does not rest on annotator reuse"),
    (["supported", "contradicted", "supported"], "contradicted", "verdict rests on annotator reuse"),
    (["supported", "inconclusive", "supported"], "inconclusive", "may rest on annotator reuse"),
    (["inconclusive", "supported", "supported"], "inconclusive", "no definite 1 : 1 result"),
])
def test_the_claim_says_what_the_one_to_one_result_rests_on(verdicts, verdict, words):
    sweep = pd.DataFrame({"value": [0.0, 1.0, 2.0], "estimate": [0.04, 0.03, 0.02], "ci_low": [0.01, -0.01, 0.0],
                          "ci_high": [0.07, 0.06, 0.05], "seeds": [3] * 3, "n": [87] * 3, "verdict": verdicts})
    ledger = _Ledger("sensitivity", "test")
    annotator_reuse.add_claim(ledger, sweep)
    claim = ledger.claims[annotator_reuse.CLAIM_ID]
    assert claim.verdict == verdict and claim.kind == "robustness" and words in claim.sentence
    assert claim.estimate == 0.04 and claim.seeds == 3 and claim.link == "sensitivity-annotator"


def test_without_a_sweep_the_claim_is_untestable_with_its_reason():
    ledger = _Ledger("sensitivity", "test")
    annotator_reuse.add_claim(ledger, None)
    claim = ledger.claims[annotator_reuse.CLAIM_ID]
    assert claim.kind == "untestable" and claim.reason == sensitivity.ASSUMPTIONS["annotator"].unswept_reason
    assert claim.sentence == sensitivity.ASSUMPTIONS["annotator"].unswept_says
    annotator_reuse.add_claim(ledger := _Ledger("sensitivity", "test"), None, reason="needs x.jsonl")
    assert ledger.claims[annotator_reuse.CLAIM_ID].reason == "needs x.jsonl"
    assert "needs x.jsonl" in ledger.claims[annotator_reuse.CLAIM_ID].sentence


def _estimate(value, seed):
    import numpy as np

    from cheems_lib.estimates import Estimate

    return Estimate.single(value, value + np.random.default_rng(seed).normal(0, 0.01, 400), n=87)


@pytest.mark.parametrize("estimates, words", [
    ([0.06, 0.02, 0.03], "sharing the benchmark's annotator raises it by +0.035 ["),
    ([0.0, 0.03, 0.04], "sharing the benchmark's annotator lowers it by -0.035 ["),
    ([0.025, 0.02, 0.03], "the two are not separated (+0.000 ["),
])
def test_a_held_verdict_says_how_much_of_its_size_the_shared_annotator_accounts_for(estimates, words):
    """The own annotator's difference minus the drawn ones' mean, paired replicate by replicate: decided by its
    interval, not read off the point estimates."""
    sweep = pd.DataFrame({"value": [0.0, 1.0, 2.0], "estimate": estimates, "ci_low": [0.005] * 3,
                          "ci_high": [0.06] * 3, "seeds": [1] * 3, "n": [87] * 3, "verdict": ["supported"] * 3})
    sweep.attrs["diffs"] = {v: _estimate(e, i) for i, (v, e) in enumerate(zip(sweep["value"], estimates))}
    ledger = _Ledger("sensitivity", "test")
    annotator_reuse.add_claim(ledger, sweep)
    sentence = ledger.claims[annotator_reuse.CLAIM_ID].sentence
    assert words in sentence and f"against {min(estimates[1:]):+.3f} to {max(estimates[1:]):+.3f} with the drawn" in sentence


def test_without_the_estimates_the_size_is_reported_not_judged():
    sweep = pd.DataFrame({"value": [0.0, 1.0], "estimate": [0.06, 0.02], "ci_low": [0.01] * 2, "ci_high": [0.09] * 2,
                          "seeds": [1] * 2, "n": [87] * 2, "verdict": ["supported"] * 2})
    ledger = _Ledger("sensitivity", "test")
    annotator_reuse.add_claim(ledger, sweep)
    assert ledger.claims[annotator_reuse.CLAIM_ID].sentence.endswith(
        "Its size: +0.060, against +0.020 to +0.020 with the drawn ones.")
