"""The evaluation chapter's pieces, shared by the leaderboard, Fig. 4 and §6.1 tests."""
from __future__ import annotations

import numpy as np
import pytest

from cheems_lib.analyses import leaderboard as lb
from cheems_lib.analyses.leaderboard import baseline_scores
from cheems_lib.world.simulation import WorldConfig, build_world


@pytest.fixture(scope="module")
def chapter():
    """Subsets, scores and evaluate_scores results shaped like the evaluation chapter's."""
    w = build_world(WorldConfig(size="smoke", seed=0))
    subsets = {"open": w.files["cheems_bench/open.jsonl"], "human": w.files["cheems_bench/human.jsonl"]}
    truth = {(t["prompt_id"], t["response_id"]): t["utility"] for t in w.truth}
    rng = np.random.default_rng(0)
    noisy = {k: v + rng.normal(0, 1.0) for k, v in truth.items()}
    records = [r for s in subsets.values() for r in s]
    scores = {"oracle": [truth, noisy], "noisy": [noisy, {k: -v for k, v in noisy.items()}]}
    base_scores = baseline_scores(records, seed=1)
    small = {k: v[:15] for k, v in subsets.items()}
    return dict(subsets=subsets, truth=truth, small=small, base_scores=base_scores,
                results=lb.evaluate_scores(scores, subsets, n_boot=60, seed=0),
                baselines=lb.evaluate_scores(base_scores, subsets, n_boot=60, seed=0),
                judged=lb.evaluate_scores({"judge": truth}, small, n_boot=60, seed=0))
