"""§6.1's findings on the leaderboard: the baseline and judge sentences, the three claims, Table 8's counts."""
from __future__ import annotations

import numpy as np
import pytest

from cheems_lib import paper
from cheems_lib.analyses import leaderboard as lb, leaderboard_findings
from cheems_lib.estimates import best_of, subset_estimate
from cheems_lib.analyses.claims import Claim, Ledger

from evaluation_chapter import chapter  # noqa: F401 (a fixture)


def test_baseline_sentence_follows_best_of(chapter):
    """The sentence is best_of's verdict for the best trained model against the broadcast baselines."""
    c = chapter
    anti = lb.evaluate_scores({"anti": {k: -v for k, v in c["truth"].items()}}, c["subsets"], n_boot=60)
    cases = [(c["results"], "oracle, the best trained model by mean Overall, beats every baseline."),
             (anti, "A baseline beats anti")]
    for trained, start in cases:
        lead = max(trained, key=lambda n: subset_estimate(trained[n]).value)
        ests = {lead: subset_estimate(trained[lead]),
                **{n: subset_estimate(r).broadcast(len(trained[lead])) for n, r in c["baselines"].items()}}
        verdict, _ = best_of(ests, lead)
        text = leaderboard_findings.baseline_sentence(trained, c["baselines"])
        assert verdict in ("supported", "contradicted") and text.startswith(start)


def test_judge_sentence_says_above_or_below_random(chapter):
    """A perfect judge is above the random baseline on the same prompts, a reversed one below."""
    c = chapter
    random = c["base_scores"]["baseline:random"]
    assert "is above the random" in leaderboard_findings.judge_sentence(c["judged"], random, c["small"], n_boot=60)
    anti = lb.evaluate_scores({"anti": {k: -v for k, v in c["truth"].items()}}, c["small"], n_boot=60)
    assert "is below the random" in leaderboard_findings.judge_sentence(anti, random, c["small"], n_boot=60)


def test_add_findings_adds_the_s61_claims_with_hand_computed_estimates(chapter):
    """The §6.1 claims, in order (the first on the whole comparator, structural, and on its mid-vs-mid sections, the
    finding), with estimates equal to the per-seed differences averaged by hand."""
    from cheems_lib.world import comparators
    from cheems_lib import paper
    from cheems_lib.baselines import length_scores

    c = chapter
    rb = comparators.rewardbench_like(0, 24)
    rb_scores = {"oracle": [length_scores(rb.records)] * 2, "noisy": [length_scores(rb.records, prefer="shorter")] * 2}
    ledger = Ledger("evaluation", "test")
    leaderboard_findings.add_findings(ledger, c["results"], rewardbench=rb, rewardbench_scores=rb_scores,
                                      table8=paper.table("table8_reward_models"), n_boot=60)
    assert list(ledger.claims) == ["s61-lower-than-rewardbench", leaderboard_findings.MID_PAIRS_ID,
                                   leaderboard_findings.PAPER_SUBSET_ID, "s61-open-vs-human-instruction",
                                   "s61-deterministic-easier"]
    mid = [r for r in rb.sets["pairs"] if r.top_category == "chat-hard"]
    on_rb = lb.evaluate_scores(rb_scores, {"rb": rb.sets["pairs"], "mid": mid}, n_boot=0)
    cheems, cheems_mid = ([np.mean([(s["open"].accuracy + s["human"].accuracy) / 2 - r[part].accuracy
                                    for s, r in zip(c["results"][m], on_rb[m])]) for m in c["results"]]
                          for part in ("rb", "mid"))
    open_human = [np.mean([s["open"].accuracy - s["human"].accuracy for s in c["results"][m]]) for m in c["results"]]
    assert ledger.claims["s61-lower-than-rewardbench"].estimate == pytest.approx(np.mean(cheems))
    assert ledger.claims[leaderboard_findings.MID_PAIRS_ID].estimate == pytest.approx(np.mean(cheems_mid))
    assert ledger.claims[leaderboard_findings.MID_PAIRS_ID].n == len(mid) < len(rb.sets["pairs"])
    assert ledger.claims["s61-open-vs-human-instruction"].estimate == pytest.approx(np.mean(open_human))
    assert all(isinstance(cl, Claim) and "{" not in cl.sentence for cl in ledger.claims.values())
    kinds = {cid: cl.kind for cid, cl in ledger.claims.items()}
    assert kinds == {"s61-lower-than-rewardbench": "structural", leaderboard_findings.MID_PAIRS_ID: "finding",
                     "s61-open-vs-human-instruction": "finding", "s61-deterministic-easier": "finding",
                     leaderboard_findings.PAPER_SUBSET_ID: "arithmetic"}


def test_rewardbench_claim_on_the_whole_comparator_is_structural():
    """The RewardBench-like comparator's chat and safety sections pair a strong policy with a weak one (or a refusal
    with a harmful compliance) and keep only verified pairs, and its reasoning section labels right over wrong with no
    annotator (its design, read from comparators.py): the claim on all of it is structural, with a generated reason
    naming that design and the finding on the one section whose label is not built in (chat-hard); the split follows
    each section's build, never a typed list."""
    from cheems_lib.world import comparators

    design = leaderboard_findings.rewardbench_design()
    builds = {s.name: s.build for s in comparators.REWARDBENCH_SECTIONS}
    assert design["built_in"] == ["chat", "safety", "reasoning"] and design["mid"] == ["chat-hard"]
    assert {builds[n] for n in design["built_in"]} == set(comparators.BUILT_IN_BUILDS) == {"policies", "refusal", "correctness"}
    assert design["share"] == pytest.approx((358 + 740 + 1431) / 2985)
    assert (design["strong"], design["weak"]) == (comparators.STRONG[0], comparators.WEAK[0])
    reason = leaderboard_findings._structural_reason()
    assert "chat, safety, reasoning sections (85% of its pairs)" in reason and "+1.2" in reason and "-1.2" in reason
    assert "verifies" in reason and "no annotator" in reason and leaderboard_findings.MID_PAIRS_ID in reason
    assert "chat-hard section(s)" in reason


def test_table8_counts_leave_out_the_table2_row():
    """The paper's wording counts Table 8's models: the CSV's CheemsRM row (copied from Table 2) is not one of
    them, so the counts are 36 models and 33 with a RewardBench score, as the paper's Table 8 prints."""
    from cheems_lib import paper

    t8 = paper.table("table8_reward_models")
    models = leaderboard_findings.table8_models(t8)
    assert len(models) == len(t8) - 1 == 36 and models["rewardbench"].notna().sum() == 33
    assert "CheemsRM" in set(t8["model"]) - set(models["model"])


def test_table8_counts_in_the_claims(chapter):
    """The §6.1 claims quote the counts of Table 8 alone, never the CSV's row count."""
    from cheems_lib.world import comparators
    from cheems_lib import paper
    from cheems_lib.baselines import length_scores

    t8 = paper.table("table8_reward_models")
    rb = comparators.rewardbench_like(0, 24)
    rb_scores = {m: [length_scores(rb.records)] * 2 for m in chapter["results"]}
    ledger = Ledger("evaluation", "test")
    leaderboard_findings.add_findings(ledger, chapter["results"], rewardbench=rb, rewardbench_scores=rb_scores, table8=t8, n_boot=60)
    models = leaderboard_findings.table8_models(t8)
    assert f"the {len(models)} models of Table 8" in ledger.claims["s61-open-vs-human-instruction"].paper
    assert f"the {models['rewardbench'].notna().sum()} models of Table 8 with a RewardBench" in \
        ledger.claims["s61-lower-than-rewardbench"].paper
    assert f"{len(t8)} models" not in ledger.claims["s61-open-vs-human-instruction"].paper


def test_findings_untestable_without_models_or_on_real_files():
    """No trained model (no preference file): every §6.1 claim is untestable and says what it needs."""
    from cheems_lib.analyses.claims import Ledger
    from cheems_lib.analyses.leaderboard_findings import add_findings

    ledger = Ledger("evaluation", "test")
    add_findings(ledger, {}, rewardbench=None, rewardbench_scores={}, table8=None, simulated=False)
    assert [(c.id, c.kind) for c in ledger.claims.values()] == [
        ("s61-lower-than-rewardbench", "untestable"), (leaderboard_findings.MID_PAIRS_ID, "untestable"),
        (leaderboard_findings.PAPER_SUBSET_ID, "arithmetic"), ("s61-open-vs-human-instruction", "untestable"),
        ("s61-deterministic-easier", "untestable")]  # the paper's own numbers are checked whatever the files hold
    assert all(c.reason == "needs trained models and cheems_bench/" for c in ledger.claims.values()
               if c.kind == "untestable")


def test_judge_sentence_on_too_few_prompts_says_insufficient_data(chapter):
    """A judge on five prompts per subset gets the insufficient-data sentence with the count, not a verdict."""
    c = chapter
    few = {k: v[:5] for k, v in c["subsets"].items()}
    judged = lb.evaluate_scores({"judge": c["truth"]}, few, n_boot=60, seed=0)
    text = leaderboard_findings.judge_sentence(judged, c["base_scores"]["baseline:random"], few, n_boot=60)
    assert text.startswith("Insufficient data: ") and "needs at least 10" in text and "above" not in text


def test_paper_subset_claim_reads_the_papers_table8():
    """§6.1 (2) on the paper's own Table 8: the share of its models better on Open Prompt in both accuracy and exact
    match, and the exceptions named, counted by hand from the CSV."""
    t8 = leaderboard_findings.table8_models(paper.table("table8_reward_models"))
    holds = (t8["open_acc"] > t8["human_acc"]) & (t8["open_exact"] > t8["human_exact"])
    claim = leaderboard_findings.paper_subset_claim()
    assert (claim.kind, claim.estimate, claim.n) == ("arithmetic", holds.mean(), len(t8))
    assert claim.verdict == ("supported" if holds.all() else "inconclusive" if holds.mean() > 0.5 else "contradicted")
    assert all(name in claim.sentence for name in t8.loc[~holds, "model"])
