"""§5's Gaussian prior on rewards, ablated: does it stabilise training?

§5 adds to the Bradley-Terry loss "an additional regularization term (Hou et al., 2024), imposing a Gaussian prior on
the distribution of reward scores" (Eq. 4; Table 9: coefficient 0.1), "to further stabilize training". The paper
neither says what it stabilises nor shows it. The book reads it as: **models trained on the same data with different
training seeds agree more** with the prior than without it (a training whose outcome depends less on its seed is
the more stable one). :func:`train_both` trains the training set with the chapter's seeds twice, with the prior
(:attr:`cheems_lib.models.training_config.TrainConfig.reg_coef`, the models the chapter already has) and without it
(``reg_coef=0``), and scores both on the benchmark; :func:`agreement` is the statistic, per benchmark prompt the share
of its response pairs that two seeds' models order alike, over every pair of seeds; :func:`add_claim` tests the
prior's minus no prior's agreement, paired over prompts (claim :data:`CLAIM_ID`). :func:`table` sets beside it what
the prior does by construction (it shrinks the scores: their spread is not evidence) and the Overall accuracy.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import combinations
from typing import Mapping, Sequence

import numpy as np

from ..estimates import Estimate, ratio_estimate
from ..records import Record
from . import experiments
from .claims import Claim
from .leaderboard import evaluate_scores

__all__ = ["CLAIM_ID", "SETTINGS", "Ablation", "train_both", "agreement", "table", "add_claim"]

CLAIM_ID = "s5-gaussian-prior-stabilises"
SETTINGS = ("with the prior", "without the prior")
"""The two trainings compared, in order: the chapter's config (Table 9's coefficient) and the same with ``reg_coef=0``."""


@dataclass
class Ablation:
    """Both trainings' benchmark scores: ``scores[setting]`` holds one ``{(prompt id, response id): score}`` per
    training seed (``seeds``, in order), on the benchmark's subsets ``bench``; ``reg_coef`` is the prior's
    coefficient."""

    scores: dict[str, list[dict]]
    bench: dict[str, list[Record]]
    seeds: tuple[int, ...]
    reg_coef: float
    n_boot: int = 1000
    seed: int = 0

    @property
    def records(self) -> list[Record]:
        """Every benchmark prompt, subset after subset."""
        return [r for recs in self.bench.values() for r in recs]


def train_both(world, records: Sequence[Record], *, seeds: Sequence[int], epochs: int, n_boot: int = 1000,
               seed: int = 0) -> Ablation:
    """Train ``records`` with every seed of ``seeds``, with and without the prior (the with-prior models are the
    :class:`~cheems_lib.analyses.experiments.Family` ones the chapter trains: the zoo has them), and score the
    world's benchmark."""
    seeds = tuple(seeds)
    if len(seeds) < 2:  # nothing to agree with: the claim is insufficient data, so nothing is trained for it
        return Ablation({name: [] for name in SETTINGS}, dict(world.bench), seeds, 0.0, n_boot, seed)
    family = experiments.Family({SETTINGS[0]: list(records)}, seeds=seeds, epochs=epochs, group="§5 prior")
    specs = family.specs()
    specs += [experiments.ModelSpec(SETTINGS[1], s.records, replace(s.config, reg_coef=0.0), s.group) for s in specs]
    scores = experiments.score_family(specs, world)
    return Ablation(scores, dict(world.bench), seeds, specs[0].config.reg_coef, n_boot, seed)


def agreement(per_seed: Sequence[Mapping], records: Sequence[Record], *, n_boot: int = 1000, seed: int = 0) -> Estimate:
    """How alike the models of ``per_seed`` (one score mapping per training seed) order the responses of ``records``:
    per prompt, over every two seeds and every two responses, the share ordered the same way (equal scores count as
    an order of their own); a ratio over prompts with a bootstrap over them (the same ``seed`` pairs two estimates on
    the same ``records``). Fewer than two seeds leave nothing to compare: n is 0.

    >>> from cheems_lib.records import Response
    >>> r = Record(prompt="q", id="p", responses=[Response(i, "x") for i in "abc"], rank={"a": 0, "b": 1, "c": 2})
    >>> s1 = {("p", "a"): 3.0, ("p", "b"): 2.0, ("p", "c"): 1.0}
    >>> s2 = {("p", "a"): 3.0, ("p", "b"): 1.0, ("p", "c"): 2.0}
    >>> round(agreement([s1, s2], [r], n_boot=0).value, 3)
    0.667
    """
    agree, total = np.zeros(len(records)), np.zeros(len(records))
    for i, r in enumerate(records):
        ids = [x.id for x in r.responses]
        for a, b in combinations(per_seed, 2):
            sa, sb = (np.array([s[(r.id, x)] for x in ids]) for s in (a, b))
            da, db = (np.sign(v[:, None] - v[None, :])[np.triu_indices(len(ids), 1)] for v in (sa, sb))
            agree[i] += float((da == db).sum())
            total[i] += da.size
    return ratio_estimate(agree, total, n_boot=n_boot, seed=seed)


def _spread(per_seed: Sequence[Mapping]) -> float:
    """The scores' standard deviation over the benchmark's responses, averaged over seeds."""
    return float(np.mean([np.std(list(s.values())) for s in per_seed]))


def table(ablation: Ablation | None):
    """One row per setting: its seeds, the cross-seed agreement (the tested statistic), the scores' spread (which the
    prior shrinks by construction) and the Overall on the benchmark, mean over seeds; None without an ablation."""
    import pandas as pd

    if ablation is None or len(ablation.seeds) < 2:
        return None
    rows = []
    for name in SETTINGS:
        per_seed = ablation.scores[name]
        results = evaluate_scores({name: per_seed}, ablation.bench, n_boot=0, seed=ablation.seed)[name]
        rows.append({"training": name, "seeds": len(per_seed),
                     "cross-seed agreement": agreement(per_seed, ablation.records, n_boot=0).value,
                     "score spread (sd)": _spread(per_seed),
                     "overall": float(np.mean([np.mean([r.score for r in res.values()]) for res in results]))})
    return pd.DataFrame(rows)


def add_claim(ledger, ablation: Ablation | None, *, what: str = "the training set", reason: str = "") -> None:
    """Record :data:`CLAIM_ID` from ``ablation`` (:func:`train_both`): the prior's cross-seed agreement minus no
    prior's, paired over benchmark prompts, *supported* when it is above 0. *untestable* with ``reason`` when
    ``ablation`` is None; *insufficient data* with one training seed."""
    if ablation is None:
        ledger.add(Claim.untestable(CLAIM_ID, "", "", reason, link="preference-prior"))
        return
    statistic = (f"share of benchmark response pairs two training seeds' models order alike, trained on {what} with "
                 f"the prior (coefficient {ablation.reg_coef:g}) minus without, paired over prompts (the seeds are "
                 "the chapter's, not resampled)")
    if len(ablation.seeds) < 2:
        ledger.add(Claim(CLAIM_ID, "", "", "", "insufficient data", n=0, statistic=statistic,
                         link="preference-prior", says={"insufficient data": "With one training seed there are no "
                                                        "two models of one training to compare: the prior's effect on "
                                                        "stability needs two seeds or more."}))
        return
    with_, without = (agreement(ablation.scores[s], ablation.records, n_boot=ablation.n_boot, seed=ablation.seed)
                      for s in SETTINGS)
    # the words, the direction and the sentences: the registry's (claim_registry, claims.claim_sentences)
    tested = Claim.test(CLAIM_ID, with_ - without, seed=ablation.seed, statistic=statistic,
                        paper="no number: §5 states it", link="preference-prior")
    tested.seeds = len(ablation.seeds)  # one statistic over every seed's models, not a mean over seeds
    ledger.add(tested)
