"""The Bradley-Terry objective over partial rankings (paper §5, Eq. 4), and the metrics one step logs.

Loss of one optimisation step, over its prompts' strictly ordered pairs ``P`` and scored responses ``R``
(ties give no pair)::

    L = mean_{(w, l) in P} -log sigmoid(r_w - r_l)  +  reg_coef * mean_{i in R} r_i^2

The second term is the Gaussian prior on rewards (Table 9: 0.1). The rewards come from one right-padded
forward (:func:`forward_rewards`) or from length-homogeneous groups (:func:`grouped_rewards`); a step's
``accuracy``, ``margin`` and reward statistics are summed in :class:`StepMetrics`. The loop that uses them is
:func:`cheems_lib.models.training.train`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Sequence

from .batching import forward_groups, pad_right

__all__ = ["bt_loss", "forward_rewards", "grouped_rewards", "StepMetrics"]


def bt_loss(rewards, pairs: Sequence[tuple[int, int]], reg_coef: float, *, n_pairs: int | None = None,
            n_rewards: int | None = None):
    """Bradley-Terry loss with the Gaussian prior, summed and divided by the step's counts.

    ``rewards`` is a 1-d tensor; ``pairs`` index into it. ``n_pairs``/``n_rewards`` default
    to this call's counts (plain means); the trainer passes the whole step's counts.
    Returns ``(loss, stats)`` with ``stats`` the summed pair loss, correct pairs and margin.
    """
    import torch
    import torch.nn.functional as F

    w = torch.tensor([p[0] for p in pairs], dtype=torch.long, device=rewards.device)
    l = torch.tensor([p[1] for p in pairs], dtype=torch.long, device=rewards.device)
    diff = rewards[w] - rewards[l]
    pair_loss = -F.logsigmoid(diff).sum()
    prior = (rewards ** 2).sum()
    loss = pair_loss / (n_pairs or len(pairs)) + reg_coef * prior / (n_rewards or rewards.numel())
    with torch.no_grad():
        stats = {"pair_loss": float(pair_loss), "correct": int((diff > 0).sum()), "margin": float(diff.sum()),
                 "pairs": len(pairs)}
    return loss, stats


def forward_rewards(model, seqs: Sequence[Sequence[int]], pad_id: int, device, options: dict | None = None):
    """Rewards of ``seqs`` (1-d, float32) in one right-padded forward, with the graph kept for backward.
    ``options``: extra forward arguments (:func:`~cheems_lib.models.batching.forward_options`: no key-value cache)."""
    ids, mask = pad_right(seqs, pad_id, device)
    return model(input_ids=ids, attention_mask=mask, **(options or {})).logits.squeeze(-1).float()


def grouped_rewards(model, seqs: Sequence[Sequence[int]], pad_id: int, device, max_tokens: int,
                    options: dict | None = None):
    """Rewards of all ``seqs`` in their original order, forwarded in length-homogeneous groups."""
    import torch

    groups = forward_groups([len(s) for s in seqs], max_tokens)
    parts = [forward_rewards(model, [seqs[j] for j in g], pad_id, device, options) for g in groups]
    order = torch.tensor([j for g in groups for j in g], device=device)
    return torch.empty(len(seqs), device=device, dtype=parts[0].dtype).index_copy(0, order, torch.cat(parts))


@dataclass
class StepMetrics:
    """Sums over one optimisation step's micro-batches (and, after :meth:`reduced`, its processes)."""

    pair_loss: float = 0.0
    correct: float = 0
    margin: float = 0.0
    pairs: float = 0
    r_sum: float = 0.0
    r_sq: float = 0.0
    n_r: float = 0
    tokens: float = 0
    forwards: float = 0
    per_process_forwards: tuple = ()  # after reduced(): each process's forwards this step (they must be equal)

    def add(self, stats: dict, rewards, seqs) -> None:
        """Add one micro-batch: its :func:`bt_loss` stats, its rewards and its sequences."""
        self.pair_loss += stats["pair_loss"]
        self.correct += stats["correct"]
        self.margin += stats["margin"]
        self.pairs += stats["pairs"]
        rd = rewards.detach().float()
        self.r_sum += float(rd.sum())
        self.r_sq += float((rd ** 2).sum())
        self.n_r += rd.numel()
        self.tokens += sum(len(s) for s in seqs)

    def reduced(self, accelerator) -> "StepMetrics":
        """The sums over every process and each process's forwards (one collective: every process calls it)."""
        import torch

        names = [f.name for f in fields(self) if f.name != "per_process_forwards"]
        n, rank = accelerator.num_processes, accelerator.process_index
        values = [getattr(self, k) for k in names] + [self.forwards if p == rank else 0.0 for p in range(n)]
        summed = accelerator.reduce(torch.tensor(values, dtype=torch.float64, device=accelerator.device), "sum").tolist()
        out = StepMetrics(**dict(zip(names, summed[:len(names)])))
        out.per_process_forwards = tuple(int(v) for v in summed[len(names):])
        return out

    def line(self, step: int, epoch: int, seconds: float, lr: float) -> dict:
        """The ``train_log.jsonl`` line: means per pair and per reward."""
        per_pair = max(self.pairs, 1)
        mean = self.r_sum / self.n_r
        return {"step": step, "epoch": epoch, "pairs": int(self.pairs), "loss": self.pair_loss / per_pair,
                "accuracy": self.correct / per_pair, "margin": self.margin / per_pair, "reward_mean": mean,
                "reward_std": math.sqrt(max(self.r_sq / self.n_r - mean ** 2, 0.0)),
                "tokens_per_s": self.tokens / max(seconds, 1e-9), "lr": lr,
                **({"forwards": list(self.per_process_forwards)} if self.per_process_forwards else {})}
