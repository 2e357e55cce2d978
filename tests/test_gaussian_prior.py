"""§5's Gaussian prior ablated (cheems_lib.analyses.gaussian_prior): cross-seed agreement by hand, the claim's
verdicts, and that the two trainings differ in the prior's coefficient only."""
from __future__ import annotations

import numpy as np
import pytest

from cheems_lib.analyses import claims, experiments, gaussian_prior
from cheems_lib.records import Record, Response


class _Ledger(claims.Ledger):
    """A ledger that does not glue (no notebook here)."""

    def add(self, claim, *, glue=False):
        return super().add(claim, glue=False)


def _records(n=30, k=4):
    return [Record(prompt=f"q{i}", id=f"p{i}", responses=[Response(f"r{j}", "x" * (j + 1)) for j in range(k)],
                   rank={f"r{j}": j for j in range(k)}) for i in range(n)]


def _scores(records, noise, seed):
    rng = np.random.default_rng(seed)
    return {(r.id, x.id): -j + rng.normal(0, noise) for r in records for j, x in enumerate(r.responses)}


def test_agreement_by_hand():
    """Three seeds on one prompt of three responses: seed pairs (1,2) agree on 1 of 3 response pairs, (1,3) on 3 of
    3 and (2,3) on 1 of 3, so 5 of 9; a tie of scores is an order of its own."""
    r = _records(1, 3)[0]
    s1 = {("p0", "r0"): 3.0, ("p0", "r1"): 2.0, ("p0", "r2"): 1.0}
    s2 = {("p0", "r0"): 1.0, ("p0", "r1"): 3.0, ("p0", "r2"): 2.0}
    s3 = dict(s1)
    assert gaussian_prior.agreement([s1, s2, s3], [r], n_boot=0).value == pytest.approx(5 / 9)
    tied = {("p0", "r0"): 3.0, ("p0", "r1"): 3.0, ("p0", "r2"): 1.0}
    assert gaussian_prior.agreement([s1, tied], [r], n_boot=0).value == pytest.approx(2 / 3)
    assert gaussian_prior.agreement([s1], [r], n_boot=0).n == 0


def _ablation(with_noise, without_noise, seeds=(0, 1, 2)):
    records = _records()
    scores = {gaussian_prior.SETTINGS[0]: [_scores(records, with_noise, 10 + s) for s in seeds],
              gaussian_prior.SETTINGS[1]: [_scores(records, without_noise, 20 + s) for s in seeds]}
    return gaussian_prior.Ablation(scores, {"open": records[:15], "human": records[15:]}, tuple(seeds), 0.1, n_boot=200)


@pytest.mark.parametrize("noise, verdict", [((0.05, 3.0), "supported"), ((3.0, 0.05), "contradicted"),
                                            ((0.3, 0.3), "inconclusive")])
def test_the_claim_follows_the_paired_difference(noise, verdict):
    ledger = _Ledger("preference", "test")
    gaussian_prior.add_claim(ledger, _ablation(*noise), what="a set")
    claim = ledger.claims[gaussian_prior.CLAIM_ID]
    assert claim.verdict == verdict and claim.kind == "finding" and claim.seeds == 3 and claim.n == 30
    assert "a set" in claim.sentence and claim.paper_ref.startswith("§5")


def test_one_seed_is_insufficient_and_no_ablation_untestable():
    ledger = _Ledger("preference", "test")
    gaussian_prior.add_claim(ledger, _ablation(0.1, 0.1, seeds=(0,)))
    assert ledger.claims[gaussian_prior.CLAIM_ID].verdict == "insufficient data"
    gaussian_prior.add_claim(ledger := _Ledger("preference", "test"), None, reason="needs x.jsonl")
    claim = ledger.claims[gaussian_prior.CLAIM_ID]
    assert claim.kind == "untestable" and claim.reason == "needs x.jsonl"
    assert gaussian_prior.table(None) is None and gaussian_prior.table(_ablation(0.1, 0.1, seeds=(0,))) is None


def test_one_seed_trains_nothing(monkeypatch):
    """With one training seed there is nothing to agree with, so no model is trained for the ablation."""
    monkeypatch.setattr(experiments, "score_family", lambda *a, **k: pytest.fail("trained with one seed"))

    class _World:
        bench = {"open": _records(3)}

    out = gaussian_prior.train_both(_World(), _records(5), seeds=[0], epochs=1)
    assert out.seeds == (0,) and out.scores == {s: [] for s in gaussian_prior.SETTINGS}


def test_the_table_sets_the_spread_and_overall_beside_the_agreement():
    table = gaussian_prior.table(_ablation(0.05, 3.0))
    assert list(table["training"]) == list(gaussian_prior.SETTINGS)
    assert table["cross-seed agreement"][0] > table["cross-seed agreement"][1]
    assert table["score spread (sd)"][1] > table["score spread (sd)"][0]
    assert table["overall"][0] == pytest.approx(1.0)  # noiseless-enough scores rank every prompt exactly


def test_the_two_trainings_differ_in_the_prior_only(monkeypatch):
    seen = []

    class _World:
        bench = {"open": _records(3)}

    monkeypatch.setattr(experiments, "score_family", lambda specs, world: seen.extend(specs) or
                        {s: [{}] for s in gaussian_prior.SETTINGS})
    out = gaussian_prior.train_both(_World(), _records(5), seeds=range(2), epochs=1)
    with_, without = seen[:2], seen[2:]
    assert [s.name for s in seen] == [gaussian_prior.SETTINGS[0]] * 2 + [gaussian_prior.SETTINGS[1]] * 2
    assert [s.config.reg_coef for s in with_] == [0.1, 0.1] and [s.config.reg_coef for s in without] == [0.0, 0.0]
    for a, b in zip(with_, without):
        assert a.records == b.records and a.config.__class__(**{**vars(b.config), "reg_coef": 0.1}) == a.config
    assert out.reg_coef == 0.1 and out.seeds == (0, 1)
