"""Training steps: how an epoch's prompts become optimisation steps, each spread over the processes.

Every response of a prompt is in the same step (:mod:`cheems_lib.models.batching` packs whole prompts), so
each response is forwarded once per epoch and no pair is lost. A step is either ``global_batch`` sequences on
average (:func:`global_batch_steps`, the same steps for any number of processes) or ``grad_accum``
micro-batches per process; :func:`plan_epoch` chooses by the config. The plan is seeded by the training seed
and the epoch, so a resumed run replays it.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .batching import Batch, pack
from .training_config import TrainConfig
from .training_pairs import EncodedData

__all__ = ["global_batch_steps", "plan_epoch"]


def _epoch_batches(data: EncodedData, cfg: TrainConfig, epoch: int, padded: bool = False) -> list[Batch]:
    return pack(data.lengths, cfg.max_tokens_per_batch, seed=np.random.default_rng([cfg.seed, epoch]), padded=padded)


def _steps(batches: list[Batch], n_proc: int, accum: int) -> list[list[list[Batch]]]:
    """Group an epoch's batches into steps: step -> process -> its micro-batches (maybe fewer)."""
    per_step = n_proc * accum
    out = []
    for s in range(0, len(batches), per_step):
        group = batches[s:s + per_step]
        out.append([group[p::n_proc] for p in range(n_proc)])
    return out


def plan_epoch(data: EncodedData, cfg: TrainConfig, epoch: int, n_proc: int,
                 padded: bool = False) -> list[list[list[Batch]]]:
    """One epoch's plan, step -> process -> micro-batches: by ``global_batch`` sequences, or ``grad_accum``.
    ``padded``: micro-batches bounded in padded tokens (FSDP forwards each as one padded tensor)."""
    if cfg.global_batch:
        return global_batch_steps(data.lengths, cfg.global_batch, cfg.max_tokens_per_batch, n_proc,
                                  seed=np.random.default_rng([cfg.seed, epoch]), padded=padded)
    return _steps(_epoch_batches(data, cfg, epoch, padded), n_proc, cfg.grad_accum)


def global_batch_steps(lengths: Sequence[Sequence[int]], global_batch: int, max_tokens: int, n_proc: int, *,
                       seed: int | np.random.Generator = 0, padded: bool = False) -> list[list[list[Batch]]]:
    """Steps of ``global_batch`` sequences on average, whole prompts each, spread over ``n_proc`` processes.

    Prompts (each a list of response lengths) are shuffled; step k ends with the prompt that brings the
    running count of sequences to ``k * global_batch`` or past it, so the steps average ``global_batch``
    sequences and each is within one prompt of it. Each step's prompts are then packed into micro-batches
    (:func:`~cheems_lib.models.batching.pack`, ``max_tokens`` real tokens, or padded ones with ``padded``) and
    handed out largest first to
    the process with the fewest tokens so far. The steps and micro-batches do not depend on ``n_proc``, so
    any number of processes computes the same gradients. Returns step -> process -> micro-batches.

    Example: lengths ``[[5, 5], [5], [5, 5, 5]]`` shuffled into the order 0, 1, 2, global batch 3: the running
    counts 2, 3, 6 close a step at 3 (prompts 0, 1) and one at 6 (prompt 2).
    """
    rng = np.random.default_rng(seed)
    order = [int(i) for i in rng.permutation(len(lengths)) if len(lengths[i])]
    chosen, current, seen, target = [], [], 0, global_batch
    for i in order:
        current.append(i)
        seen += len(lengths[i])
        if seen >= target:
            chosen.append(current)
            current, target = [], (seen // global_batch + 1) * global_batch
    if current:
        chosen.append(current)
    steps = []
    for prompts in chosen:
        batches = [Batch([prompts[j] for j in b.prompts], b.n_sequences, b.tokens, b.oversize)
                   for b in pack([lengths[i] for i in prompts], max_tokens, seed=rng, padded=padded)]
        per_proc: list[list[Batch]] = [[] for _ in range(n_proc)]
        load = [0] * n_proc
        for b in sorted(batches, key=lambda b: -b.tokens):  # stable: ties keep the packed order
            p = load.index(min(load))
            per_proc[p].append(b)
            load[p] += b.tokens
        steps.append(per_proc)
    return steps
