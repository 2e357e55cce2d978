"""Scaling trends (paper §6.4, Figs. 6-7): training-set ladders and model sizes.

Fig. 6 trains reward models on growing subsets of CheemsPreference and plots accuracy
against the number of training pairs; Fig. 7 does the same against model size.
:func:`ladder` gives geometric subset sizes, :func:`nested_subsets` draws them so that
each smaller subset is contained in the larger ones (one seed = one nested chain, records
kept in their original order, so the full set is the unchanged file), :func:`count_pairs`
and :func:`cheems_lib.reward_model.count_parameters` give the two x axes. The models are built by
:func:`cheems_lib.experiments.ladder_family` and :func:`cheems_lib.experiments.model_sizes`;
their intervals over training seeds come from :mod:`cheems_lib.claims`.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .records import Record, strict_pairs

__all__ = ["ladder", "nested_subsets", "count_pairs"]


def ladder(total: int, *, points: int = 6, ratio: float = 2.0) -> list[int]:
    """``points`` sizes from ``total`` down by ``ratio`` each, ascending.

    >>> ladder(3200, points=6)
    [100, 200, 400, 800, 1600, 3200]
    """
    if total / ratio ** (points - 1) < 1:
        raise ValueError(f"a ladder of {points} points with ratio {ratio} needs at least "
                         f"{int(np.ceil(ratio ** (points - 1)))} records, got {total} (fix: lower points or ratio)")
    return [int(round(total / ratio**k)) for k in range(points)][::-1]


def nested_subsets(records: Sequence[Record], sizes: Sequence[int], *, seed: int = 0) -> dict[int, list[Record]]:
    """For each size, the first ``size`` records of one seeded permutation, in file order.

    Smaller subsets are contained in larger ones; the size ``len(records)`` is the file itself.
    """
    if max(sizes) > len(records):
        raise ValueError(f"subset size {max(sizes)} exceeds the {len(records)} records available")
    perm = np.random.default_rng(seed).permutation(len(records))
    return {n: [records[i] for i in np.sort(perm[:n])] for n in sizes}


def count_pairs(records: Sequence[Record]) -> int:
    """Ordered training pairs (responses of different rank) in ``records``: Fig. 6's x axis."""
    return sum(len(strict_pairs(rec.rank or {})) for rec in records)

