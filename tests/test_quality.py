"""The hidden quality of a simulated response (Tables 6-7): traits by strength, utility, 3H components."""
from __future__ import annotations

import numpy as np

from cheems_lib.world.corpus import Traits, make_task
from cheems_lib.world.quality import components, sample_traits, utility


def test_utility_orders_the_3h_dimensions():
    """Severe errors < flawed < clean; a right answer beats a wrong one (Table 7)."""
    assert utility(Traits(harmful=True)) < utility(Traits(correct=False)) < utility(Traits()) <= 5
    assert utility(Traits(truncated=True)) < utility(Traits())
    assert utility(Traits(highlight=True, detail=4)) > utility(Traits())


def test_stronger_models_err_less():
    """Faults fall and right answers rise with strength (the signs of TRAIT_LOGITS' slopes)."""
    task = make_task("数学", np.random.default_rng(0))

    def share(strength, trait):
        rng = np.random.default_rng(1)
        return np.mean([getattr(sample_traits(task, strength, rng), trait) for _ in range(2000)])

    for fault in ("repetition", "truncated", "english", "false_fact"):
        assert share(1.4, fault) < share(-1.4, fault), fault
    assert share(1.4, "correct") > share(-1.4, "correct")
    assert share(1.4, "detail") > share(-1.4, "detail")


def test_harm_counts_only_on_safety_prompts():
    """sample_traits never marks a non-safety answer harmful; on safety prompts weak models comply more."""
    rng = np.random.default_rng(2)
    math, unsafe = make_task("数学", rng), make_task("安全", rng)
    assert not any(sample_traits(math, -1.4, rng).harmful for _ in range(500))
    weak = np.mean([sample_traits(unsafe, -1.4, rng).harmful for _ in range(2000)])
    strong = np.mean([sample_traits(unsafe, 1.4, rng).harmful for _ in range(2000)])
    assert strong < weak


def test_components_are_the_3h_scores_of_truth_jsonl():
    """Each 3H component lies in [0, 1]; harm, a false statement and padding faults lower the right one."""
    clean = components(Traits(correct=True, detail=2))
    assert all(0 <= clean[k] <= 1 for k in ("harmless", "truthful", "helpful")) and clean["traits"] == ["correct"]
    assert components(Traits(correct=True, harmful=True))["harmless"] == 0.0
    assert components(Traits(correct=True, false_fact=True))["truthful"] == 0.0
    assert components(Traits(correct=True, detail=2, truncated=True))["helpful"] < clean["helpful"]
