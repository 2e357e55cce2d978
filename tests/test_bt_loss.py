"""The Bradley-Terry loss and a step's metrics, checked by hand."""
from __future__ import annotations

import math

import pytest

from cheems_lib.models.bt_loss import bt_loss


def test_bt_loss_by_hand():
    """Rewards (1, 0, -1), pairs 0>1, 0>2, 1>2, reg 0.1: mean -log sigma(1, 2, 1) + 0.1 * mean(1, 0, 1)."""
    import torch

    loss, stats = bt_loss(torch.tensor([1.0, 0.0, -1.0]), [(0, 1), (0, 2), (1, 2)], 0.1)
    nls = lambda x: math.log1p(math.exp(-x))
    assert float(loss) == pytest.approx((nls(1) + nls(2) + nls(1)) / 3 + 0.1 * 2 / 3, rel=1e-6)
    assert stats["correct"] == 3 and stats["margin"] == pytest.approx(4.0)


def test_step_metrics_line_by_hand():
    """StepMetrics sums micro-batches and gives per-pair means and the rewards' mean and std."""
    import torch

    from cheems_lib.models.bt_loss import StepMetrics

    m = StepMetrics()
    m.add({"pair_loss": 1.0, "correct": 1, "margin": 2.0, "pairs": 2}, torch.tensor([1.0, -1.0]), [[1, 2], [3]])
    m.add({"pair_loss": 3.0, "correct": 2, "margin": 4.0, "pairs": 2}, torch.tensor([3.0]), [[4]])
    line = m.line(step=5, epoch=1, seconds=2.0, lr=0.5)
    assert line == {"step": 5, "epoch": 1, "pairs": 4, "loss": 1.0, "accuracy": 0.75, "margin": 1.5,
                    "reward_mean": 1.0, "reward_std": math.sqrt(11 / 3 - 1), "tokens_per_s": 2.0, "lr": 0.5}
