"""Reward models on real human scores: training sets, Best-of-N outcomes, the correlation over prompts, the claims."""
from __future__ import annotations

import math

import numpy as np
import pytest

from cheems_lib import estimates
from cheems_lib.analyses import claims, human_best_of_n as bon
from cheems_lib.world.best_of_n import prompt_resamples

from test_human_labels import _scored


@pytest.fixture
def no_glue(monkeypatch):
    """Claims glue their sentences into a notebook; outside one, nothing."""
    import myst_nb

    monkeypatch.setattr(myst_nb, "glue", lambda *a, **k: None)


def _spearman_literal(x, y) -> float:
    """Pearson correlation of average ranks, written out."""
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        out = [0.0] * len(v)
        i = 0
        while i < len(v):
            j = i
            while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                out[order[k]] = (i + j) / 2 + 1
            i = j + 1
        return out

    rx, ry = ranks(list(x)), ranks(list(y))
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    num = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    return num / math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))


class TestCorrelation:
    def test_spearman_rows_matches_the_literal_one(self):
        """Row by row equal to ranks-then-Pearson with average ranks for ties; a constant row is NaN."""
        rng = np.random.default_rng(1)
        x, y = rng.integers(0, 4, (6, 7)).astype(float), rng.integers(0, 4, (6, 7)).astype(float)
        got = bon.spearman_rows(x, y)
        for row in range(6):
            assert got[row] == pytest.approx(_spearman_literal(x[row], y[row]))
        assert np.isnan(bon.spearman_rows(np.ones((1, 4)), np.arange(4.0)[None]))[0]

    def test_each_replicate_recomputes_both_sides_on_resampled_prompts(self):
        """Point: Spearman of pooled accuracy and mean picked score; replicate b: the same on the prompts of resample b
        (each drawn prompt counted as often as drawn), for every model at once."""
        rng = np.random.default_rng(5)
        correct, total = rng.integers(0, 4, (5, 11)).astype(float), np.full(11, 3.0)
        picked = rng.integers(0, 4, (5, 11)).astype(float)
        est = bon.prompt_correlation(correct, total, picked, n_boot=4, seed=7)
        assert est.value == pytest.approx(_spearman_literal(correct.sum(1) / total.sum(), picked.mean(1)))
        assert est.n == 11
        counts = prompt_resamples(11, 4, seed=7, stream="benchmark prompts")
        for b in range(4):
            idx = np.repeat(np.arange(11), counts[b].astype(int))
            want = _spearman_literal(correct[:, idx].sum(1) / total[idx].sum(), picked[:, idx].mean(1))
            assert est.boot[0, b] == pytest.approx(want)

    def test_disjoint_prompts_serve_one_side_each(self):
        """With a downstream mask, the accuracy reads only the other prompts and the picks only these: changing a pick on
        a benchmark prompt, or a comparison on a downstream prompt, changes nothing."""
        rng = np.random.default_rng(6)
        correct, total = rng.integers(0, 4, (4, 10)).astype(float), np.full(10, 3.0)
        picked, mask = rng.integers(0, 4, (4, 10)).astype(float), np.arange(10) >= 6
        est = bon.prompt_correlation(correct, total, picked, n_boot=20, downstream=mask)
        p2, c2 = picked.copy(), correct.copy()
        p2[:, 0], c2[:, 9] = 3 - p2[:, 0], 3 - c2[:, 9]
        again = bon.prompt_correlation(c2, total, p2, n_boot=20, downstream=mask)
        assert est.value == again.value and np.array_equal(est.boot, again.boot, equal_nan=True) and est.n == 4

    def test_outcomes_by_hand(self):
        """Scores rank b above a above c: it gets a>c right and misses a>b (2 comparisons: a beats b and c, b and c
        tie); its pick is b, whose human score is 1."""
        rec = _scored("p", {"a": 1, "b": 2, "c": 3}, {"a": 3, "b": 1, "c": 1})
        correct, total, picked = bon.outcomes([rec], {("p", "a"): 0.5, ("p", "b"): 0.9, ("p", "c"): 0.1})
        assert (correct.tolist(), total.tolist(), picked.tolist()) == ([1.0], [2.0], [1.0])


class TestTrainingSets:
    def test_sets_and_population(self):
        """The human half in two forms and the preference file; every set at every size and seed, a set named in
        first_only at the first size only, each model named "<size> · <set>"."""
        train = [_scored(f"p{i}", dict.fromkeys("abcdef", 10), dict(zip("abcdef", [3, 2, 2, 1, 0, 0]))) for i in range(4)]
        pref = [_scored("d", {"x": 1, "y": 2}, {"x": 1, "y": 0})]
        sets = bon.training_sets(train, pref, answers=3, seed=0, preference_name="DPO-zh (model labels)")
        assert list(sets) == ["human half, 3 answers", "human half, one pair", "DPO-zh (model labels)"]
        assert all(len(r.responses) == 3 for r in sets["human half, 3 answers"])
        assert all(len(r.responses) == 2 for r in sets["human half, one pair"])
        specs = bon.population(sets, ["tiny-xs", "tiny-s"], seeds=[0, 1], epochs=1, first_only=("DPO-zh (model labels)",))
        names = [(s.name, s.config.seed, s.config.model) for s in specs]
        assert len(names) == (2 * 2 + 1) * 2 and ("tiny-s · DPO-zh (model labels)", 0, "tiny-s") not in names
        assert ("tiny-s · human half, one pair", 1, "tiny-s") in names


class TestClaims:
    def test_untestable_without_models(self, no_glue):
        """Without human scores every claim is untestable with that reason; without a preference file only the claims
        that need its model are, with theirs."""
        ledger = claims.Ledger("human_labels", "test")
        bon.add_transfer_claims(ledger, {}, None, None, missing_human="no human", missing_dpo="no dpo")
        bon.add_bon_claims(ledger, None, seeds=1, missing="no human")
        assert len(ledger.claims) == 6
        assert all(c.kind == "untestable" and c.reason == "no human" for c in ledger.claims.values())
        half = estimates.Estimate.single(0.5, np.linspace(0.45, 0.55, 100), n=40)
        ledger = claims.Ledger("human_labels", "test")
        bon.add_transfer_claims(ledger, {"h": half, "baseline:random": half, "baseline:longest": half}, "h", None,
                                missing_human="no human", missing_dpo="no dpo")
        reasons = {cid: c.reason for cid, c in ledger.claims.items() if c.kind == "untestable"}
        assert reasons == {"human-transfer-dpo-beats-random": "no dpo", "human-transfer-human-vs-dpo": "no dpo"}

    def test_kinds_and_verdicts(self, no_glue):
        """The human model beats random (our question: the paper never compares with chance), the human-versus-model-label comparison is our question with its
        confound as the reason; the disjoint-prompts correlation is the Best-of-N finding, the same-prompt one (accuracy
        and picks from the same human scores) a robustness claim with its reason."""
        ledger = claims.Ledger("human_labels", "test")
        # paired replicates of different spread, so every difference varies (equal spreads would give a difference
        # the same in every replicate: an interval of no width, insufficient data)
        one = estimates.Estimate.single(0.6, np.linspace(0.52, 0.68, 100), n=40)
        half = estimates.Estimate.single(0.5, np.linspace(0.45, 0.55, 100), n=40)
        near = estimates.Estimate.single(0.51, np.linspace(0.41, 0.61, 100), n=40)  # random's interval includes it
        accuracy = {"h": one, "d": near, "baseline:random": half, "baseline:longest": half}
        bon.add_transfer_claims(ledger, accuracy, "h", "d")
        assert ledger.claims["human-transfer-human-vs-dpo"].kind == "question"
        assert "confounded" in ledger.claims["human-transfer-human-vs-dpo"].reason
        assert ledger.claims["human-transfer-beats-random"].verdict == "supported"
        # the paper never compares with chance: our question, with the part of the paper it relates to
        assert ledger.claims["human-transfer-beats-random"].kind == "question"
        assert ledger.claims["human-transfer-beats-random"].paper_ref.startswith("ours (relates to ")
        assert ledger.claims["human-transfer-dpo-beats-random"].verdict == "inconclusive"
        rho = estimates.Estimate.single(0.7, np.linspace(0.4, 0.9, 100), n=50)
        result = bon.BestOfN(None, {}, rho, estimates.Estimate.single(0.1, np.linspace(-0.3, 0.5, 100), n=25), 12)
        bon.add_bon_claims(ledger, result, seeds=3)
        got = ledger.claims["human-bon-correlation-disjoint"]
        assert (got.kind, got.verdict, got.seeds, got.n) == ("finding", "inconclusive", 3, 25)
        assert "12 reward models" in got.sentence and "one half of the held-out prompts" in got.sentence
        same = ledger.claims["human-bon-correlation"]
        assert (same.kind, same.verdict, same.n) == ("robustness", "supported", 50)
        assert "same human scores" in same.reason and "no test of Fig. 5 by itself" in same.sentence

    def test_transfer_claims_name_the_preference_labels_as_given(self, no_glue):
        """The preference file's model is named by the words passed (the world's labels): without them no claim calls
        it DPO-zh or model labels; with DPO-zh's words the claim and the confound name DPO-zh's model labels."""
        half = estimates.Estimate.single(0.5, np.linspace(0.45, 0.55, 100), n=40)
        acc = {"h": half, "d": half, "baseline:random": half, "baseline:longest": half}
        ledger = claims.Ledger("human_labels", "test")
        bon.add_transfer_claims(ledger, acc, "h", "d", trained_on="the world folder's preference file (labels: people)",
                                their_prompts="the preference file's prompts", their_labels="the preference file's "
                                "labels (labels: people)", their_format="one pair per prompt")
        text = " ".join(c.claim + " " + c.reason for c in ledger.claims.values())
        assert "DPO-zh" not in text and "model labels" not in text and "model-generated" not in text
        assert "trained on the world folder's preference file (labels: people)" in ledger.claims[
            "human-transfer-dpo-beats-random"].claim
        ledger = claims.Ledger("human_labels", "test")
        bon.add_transfer_claims(ledger, acc, "h", "d", trained_on="DPO-zh's pairs (model labels, not human labels: "
                                "model-generated)", their_prompts="DPO-zh's general and medical questions",
                                their_labels="model-generated preferences")
        vs = ledger.claims["human-transfer-human-vs-dpo"]
        assert "DPO-zh's pairs (model labels, not human labels" in vs.claim and "DPO-zh's general" in vs.reason


class TestBestOfN:
    def test_picks_references_and_correlation_without_training(self):
        """Three fake models on twelve held-out prompts: each row's accuracy and Best-of-N score equal a hand
        computation from its scores, the reference picks are the oracle, the random pick's expectation and the length
        controls, and the correlation is over the twelve prompts."""
        from types import SimpleNamespace

        from cheems_lib.analyses import human_labels as hl, leaderboard

        recs = [_scored(f"p{i}", {"a": 10, "b": 20, "c": 30}, {"a": 3, "b": 1, "c": 0}, tag=f"t{i % 2}") for i in range(24)]
        train, held = hl.split_halves(recs, seed=0)
        data = hl.HumanData("x", recs, train, held, None, [], "")
        prefer = {"good": ["a", "b", "c"], "mid": ["b", "a", "c"], "bad": ["c", "b", "a"]}  # best first
        scores = {name: [{(r.id, x): -k for r in held for k, x in enumerate(order)}] for name, order in prefer.items()}
        specs = [SimpleNamespace(name=n, group=f"set {n}", config=SimpleNamespace(seed=0, model="tiny-xs")) for n in prefer]
        controls = leaderboard.baseline_scores(data.held, seed=0)
        trained = bon.Trained(data, specs, scores, controls, {}, "good", None)
        result = trained.best_of_n(n_boot=50, seed=0)
        rows = result.frame.set_index("model")
        assert rows.loc["good · seed 0", "accuracy"] == 1.0 and rows.loc["bad · seed 0", "accuracy"] == 0.0
        assert rows.loc["mid · seed 0", "accuracy"] == pytest.approx(2 / 3)
        assert [rows.loc[f"{n} · seed 0", "Best-of-N human score"] for n in prefer] == [3.0, 1.0, 0.0]
        assert result.lines["best answer (oracle)"] == 3.0 and result.lines["random pick (expected)"] == pytest.approx(4 / 3)
        assert result.lines["pick-longest"] == 0.0 and result.lines["pick-shortest"] == 3.0
        assert result.models == 3 and result.rho.value == pytest.approx(1.0) and result.rho.n == len(held)
        again = bon.best_of_n(trained, n_boot=50, seed=0)  # the module's call is the method's, None without models
        assert again.frame.equals(result.frame) and again.rho.value == result.rho.value
        assert bon.best_of_n(None, n_boot=50) is None
