"""Fig. 5's shared claims: their statistic, the two main claims on any correlation, the same texts everywhere."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from cheems_lib.analyses import downstream_claims, downstream_robustness
from cheems_lib.analyses.claims import Ledger
from cheems_lib.analyses.downstream_population import COMPARATORS
from cheems_lib.estimates import Estimate

from fig5_study import _scores


def _spearman(values: dict[str, float]):
    """A ``spearman(column)`` of fixed correlations over 40 training sets, each column's replicates narrow around its
    value (drawn once per column, so the differences have intervals of some width)."""
    noise = {c: np.random.default_rng(i).normal(0, 0.01, 400) for i, c in enumerate(values)}
    return lambda column: Estimate.single(values[column], values[column] + noise[column], n=40, unit="training set")


def _statistic(a, b):
    return f"{a} minus {b}"


def test_claim_statistic_names_the_tasks_models_seeds_and_what_is_resampled():
    """The statistic names the tasks and models of the scores and the training seeds; the replicates resample the
    held-out prompts only where the scores keep the picks."""
    scores = _scores(n_sets=5, seeds=2)
    text = downstream_claims.claim_statistic(scores, "A", "B", 3)
    assert text.startswith("Spearman correlation with downstream quality (averaged over the Human win rate and "
                           "MT-bench-like grade tasks) of A minus that of B, across 10 reward models")
    assert "paired bootstrap over training sets (each training set with its 3 training seeds)" in text
    assert downstream_claims.resampled_units(scores) == "training sets"
    with_picks = replace(scores, picks={})
    assert downstream_claims.resampled_units(with_picks) == "training sets and held-out prompts"
    assert "over training sets and held-out prompts" in downstream_claims.claim_statistic(with_picks, "A", "B", 3)


@pytest.mark.parametrize("closest, verdict", [(0.5, "supported"), (0.9, "contradicted")])
def test_cheemsbench_best_claim_is_decided_by_the_closest_comparator(closest, verdict):
    """CheemsBench against every comparator: the estimate is the comparison with the closest one, named in the
    sentence."""
    values = {"CheemsBench acc": 0.7, COMPARATORS[0]: 0.1, COMPARATORS[1]: closest, COMPARATORS[2]: 0.2}
    claim = downstream_claims.cheemsbench_best_claim(_spearman(values), _statistic, 0)
    name = COMPARATORS[1].removesuffix(" acc")
    assert (claim.id, claim.claim, claim.verdict) == ("fig5-cheemsbench-best", downstream_claims.CHEEMSBENCH_BEST_CLAIM,
                                                      verdict)
    assert claim.estimate == pytest.approx(0.7 - closest) and claim.unit == "training set"
    others = ", ".join(c.removesuffix(" acc") for c in COMPARATORS)
    assert claim.statistic.startswith(f"CheemsBench accuracy minus each comparator ({others})")
    assert name in claim.sentence


def test_human_beats_gpt_claim_without_a_gpt_copy_is_untestable():
    """No GPT-annotated copy: untestable, and no correlation is asked for."""
    def no_correlation(column):
        raise AssertionError(f"asked for {column}")

    claim = downstream_claims.human_beats_gpt_claim(no_correlation, _statistic, False, 0)
    assert (claim.kind, claim.claim) == ("untestable", downstream_claims.HUMAN_BEATS_GPT_CLAIM)
    assert "no GPT-annotated copy" in claim.sentence


def test_human_beats_gpt_claim_is_the_paired_difference():
    """With the copy: the human-annotated accuracy's correlation minus the copy's, a finding."""
    claim = downstream_claims.human_beats_gpt_claim(
        _spearman({"CheemsBench acc": 0.8, "CheemsBench GPT acc": 0.3}), _statistic, True, 0)
    assert (claim.id, claim.kind, claim.verdict) == ("fig5-human-beats-gpt", "finding", "supported")
    assert claim.estimate == pytest.approx(0.5)
    assert claim.statistic.startswith("the human-annotated CheemsBench accuracy minus the GPT-annotated copy's")


def test_chinese_and_english_claim_is_untestable_with_the_papers_words():
    claim = downstream_claims.chinese_and_english_claim()
    assert (claim.id, claim.kind) == ("fig5-chinese-and-english-tasks", "untestable")
    assert claim.paper == downstream_claims.EVERY_TASK_QUOTE


def test_a_claim_reads_the_same_where_it_cannot_be_tested():
    """The robustness section's untestable rows carry the same claim texts as the tested claims."""
    ledger = Ledger("downstream", "test")
    downstream_robustness.add_untestable_claims(ledger, "needs x")
    assert ledger.claims["fig5-cheemsbench-best"].claim == downstream_claims.CHEEMSBENCH_BEST_CLAIM
    assert ledger.claims["fig5-human-beats-gpt"].claim == downstream_claims.HUMAN_BEATS_GPT_CLAIM
    every = ledger.claims["fig5-cheemsbench-best-every-task"]
    assert (every.claim, every.paper) == (downstream_claims.EVERY_TASK_CLAIM, downstream_claims.EVERY_TASK_QUOTE)
    assert downstream_robustness.NOISE_TARGETS["fig5-cheemsbench-best"].claim == downstream_claims.CHEEMSBENCH_BEST_CLAIM
