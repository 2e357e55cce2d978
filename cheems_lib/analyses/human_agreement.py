"""Two human scorings of the same answers (Table 5's nearest analogue): agreement, reversed pairs, conflicts.

The paper merges its annotators' comparisons with Algorithm 1 and reports the share of prompts whose annotations
conflict (Table 5). Real human scores (:mod:`cheems_lib.analyses.human_labels`) hold, for some models, a second
scoring of the same answers by another annotator. Per prompt, so that a bootstrap over prompts resamples a
prompt's answers together:

- :func:`rescoring` gives the two scorings' score table, the pairs they order the other way or tie in one only,
  and whether Algorithm 1 can reproduce both scorings at once (:class:`Rescoring`; :meth:`Rescoring.shift`, second
  minus first score);
- :func:`add_agreement_claims` tests agreement beyond chance (:func:`weighted_kappa`, quadratic, exact), opposite
  orders and the conflict ratio beside Table 5's (:func:`table5_human`);
- :func:`agreement_shares`, :func:`agreement_table`, :func:`agreement_values` and :func:`plot_agreement` show them;
- :func:`compare` does all of it for the human-labels chapter's data (:class:`Agreement`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Mapping, Sequence

import numpy as np

from .. import estimates
from ..conflicts import reproduced, resolve
from ..paper import table as paper_table
from ..records import FIRST, Record, SECOND, TIE
from ..world.best_of_n import prompt_resamples
from . import claims
from .human_labels import LEVELS, HumanData, scores_of
from .human_length_preference import add_untestable, estimate_with_interval, verdict_sentences


__all__ = ["compare", "Agreement", "rescoring", "Rescoring", "add_agreement_claims", "agreement_shares", "agreement_table",
           "agreement_values", "plot_agreement", "weighted_kappa", "NO_SECOND_SCORES", "CONFLICTS_STRICT",
           "CONFLICTS_TIES", "table5_human"]


def compare(data: HumanData, ledger: claims.Ledger, *, n_boot: int = estimates.N_BOOT, seed: int = 0) -> Agreement:
    """The two scorings of ``data``'s twice-scored answers (:func:`rescoring`), their claims added to ``ledger``
    (:func:`add_agreement_claims`; untestable without the human file, or without an answer scored twice, saying
    which), and where some answer was scored twice, the shares and the mean score shift the page shows."""
    rescored = rescoring(data.records or [])
    found = add_agreement_claims(ledger, rescored, n_boot=n_boot, seed=seed,
                                 missing=data.needs if data.records is None else NO_TWICE)
    if not len(rescored.table):
        return Agreement(rescored, found)
    return Agreement(rescored, found, agreement_shares(rescored, found, n_boot=n_boot, seed=seed),
                     rescored.shift(n_boot=n_boot, seed=seed))


@dataclass(frozen=True)
class Agreement:
    """What :func:`compare` found: the two scorings (``rescored``), the claims' estimates by claim id (``found``),
    and, where some answer was scored twice, :func:`agreement_shares` (``shares``) and :meth:`Rescoring.shift`
    (``shift``); both None otherwise."""

    rescored: Rescoring
    found: dict[str, estimates.Estimate]
    shares: dict[str, estimates.Estimate] | None = None
    shift: estimates.Estimate | None = None

    @property
    def twice(self) -> bool:
        """Whether some answer was scored twice."""
        return len(self.rescored.table) > 0

    def values(self, *, seed: int = 0) -> dict[str, int | str]:
        """What the prose quotes: :func:`agreement_values` with the shift and kappa, and the names of the two conflict
        shares (``conflicts_strict``, ``conflicts_ties``)."""
        return (agreement_values(self.rescored, self.shift, self.found["human-rescore-kappa"], seed=seed)
                | {"conflicts_strict": CONFLICTS_STRICT, "conflicts_ties": CONFLICTS_TIES})

    def table(self, *, seed: int = 0):
        """:func:`agreement_table` of the shares, kappa and the shift."""
        return agreement_table(self.shares, self.found["human-rescore-kappa"], self.shift, seed=seed)

    def figure(self, *, seed: int = 0):
        """:func:`plot_agreement` of the two scorings and the shares."""
        return plot_agreement(self.rescored, self.shares, seed=seed)


def rescoring(records: Sequence[Record]) -> Rescoring:
    """:class:`Rescoring` of the records whose answers have both ``human_scores`` and ``second_scores``
    (two or more such answers per prompt; the others are left out)."""
    rows = []
    for rec in records:
        first, second = scores_of(rec), scores_of(rec, "second_scores")
        ids = [x for x in rec.response_ids if x in first and x in second]
        if len(ids) < 2:
            continue
        table = np.zeros((LEVELS, LEVELS))
        for x in ids:
            table[first[x], second[x]] += 1
        pairs = strict = flipped = changed = 0
        for a, b in combinations(ids, 2):
            d1, d2 = np.sign(first[a] - first[b]), np.sign(second[a] - second[b])
            pairs += 1
            strict += bool(d1 and d2)
            flipped += bool(d1 and d2 and d1 != d2)
            changed += bool(d1) != bool(d2)
        rows.append((table, pairs, strict, flipped, changed, _conflicts(ids, first, second, ties=True),
                     _conflicts(ids, first, second, ties=False)))
    if not rows:
        zero = np.zeros(0)
        return Rescoring(np.zeros((0, LEVELS, LEVELS)), zero, zero, zero, zero, zero, zero)
    tables, *rest = zip(*rows)
    return Rescoring(np.array(tables), *(np.array(col, float) for col in rest))


@dataclass(frozen=True)
class Rescoring:
    """Per prompt with answers scored twice (rows in file order): ``table`` ``(prompts, K, K)`` counts of (first,
    second) scores; over the pairs of twice-scored answers, ``pairs`` all of them, ``strict`` those both scorings
    order strictly, ``reversed`` those of them ordered the other way, ``tie_changed`` those strict in one scoring and
    tied in the other; ``strict_conflicted`` 1 where Algorithm 1, given both scorings' strict pairwise calls, cannot
    reproduce them all (Table 5's statistic on these data: two scorings conflict where they order a pair opposite
    ways), ``conflicted`` the same with each scoring's ties as annotations too (then any tie-versus-strict change is a
    conflict: not comparable with Table 5, see :func:`add_agreement_claims`)."""

    table: np.ndarray
    pairs: np.ndarray
    strict: np.ndarray
    reversed: np.ndarray
    tie_changed: np.ndarray
    conflicted: np.ndarray
    strict_conflicted: np.ndarray

    def kappa(self, *, n_boot: int = estimates.N_BOOT, seed: int = 0) -> estimates.Estimate:
        """:func:`weighted_kappa` of the pooled table, its replicates from resampled prompts."""
        counts = prompt_resamples(len(self.table), n_boot, seed=seed, stream="weighted kappa")
        flat = self.table.reshape(len(self.table), -1)
        boot = [weighted_kappa(t.reshape(LEVELS, LEVELS)) for t in counts @ flat] if n_boot else ()
        return estimates.Estimate.single(weighted_kappa(self.table.sum(axis=0)), boot, n=len(self.table))

    def exact(self, *, n_boot: int = estimates.N_BOOT, seed: int = 0) -> estimates.Estimate:
        """Share of twice-scored answers given the same score both times."""
        same = np.trace(self.table, axis1=1, axis2=2)
        return estimates.ratio_estimate(same, self.table.sum(axis=(1, 2)), n_boot=n_boot, seed=seed)

    def shift(self, *, n_boot: int = estimates.N_BOOT, seed: int = 0) -> estimates.Estimate:
        """Mean score shift: the second score minus the first (score points, on 0-3) over the twice-scored answers;
        positive when the second scoring is the more generous. Its replicates resample prompts (a prompt's answers
        together). A shift away from zero says the two scorings differ in level (one annotator scores higher, or
        recalibrated), which kappa's disagreement mixes with disagreement about order."""
        step = np.subtract.outer(np.arange(LEVELS), np.arange(LEVELS)).T  # [first, second] -> second - first
        return estimates.ratio_estimate((self.table * step).sum(axis=(1, 2)), self.table.sum(axis=(1, 2)),
                                        n_boot=n_boot, seed=seed)

    @property
    def moves(self) -> tuple[int, int]:
        """Twice-scored answers scored higher the second time, and lower."""
        pooled = self.table.sum(axis=0)
        return int(np.triu(pooled, 1).sum()), int(np.tril(pooled, -1).sum())


def add_agreement_claims(ledger: claims.Ledger, rescored: Rescoring | None, *, n_boot: int = estimates.N_BOOT,
                         seed: int = 0, missing: str = "") -> dict[str, estimates.Estimate]:
    """Two scorings of the same answers (the second by another annotator, named in the manifest; upstream says
    neither which is final nor whether the second was blind to the first): agreement beyond chance (our question),
    opposite orders (the paper's reason for Algorithm 1) and Table 5's conflict ratio of the two merged (our
    question, beside Table 5); untestable with ``missing`` without twice-scored answers. Returns the estimates by
    claim id.

    Which conflict share is compared with Table 5: the strict calls only (:data:`CONFLICTS_STRICT`). Table 5 counts
    the prompts whose annotations Algorithm 1 cannot all reproduce, cycles in a graph of comparisons (§3.2, appendix
    C); CheemsBench's annotators rank the responses and break equal scores by further comparison (appendix D), so a
    tie there is an annotator's explicit "same" call. A tie of two 0-3 scores is not: counting ties as annotations
    (:data:`CONFLICTS_TIES`) makes every pair tied in one scoring and strict in the other a conflict by construction,
    so that share is shown but given no verdict against the paper's number."""
    t5 = table5_human()
    paper5 = "Table 5, conflict ratio of the human annotations: " + ", ".join(f"{v:.4f} ({k})" for k, v in t5.items())
    top = max(t5, key=t5.get)
    link = dict(link="fig-human-labels-agreement")
    second = "the second by another annotator, named in the manifest"
    kappa = dict(link, paper_ref="", kind="question",
                 claim=f"do two human scorings of the same answers ({second}) agree beyond chance?",
                 reason="the project's own question: the paper reports no agreement coefficient (in its protocol, "
                        "appendix D.1, two independent annotators must reach a set agreement before a prompt is kept); "
                        "upstream does not say whether the second scoring was blind to the first",
                 statistic="Cohen's kappa with quadratic weights between the first and the second human scoring "
                           "(0-3) of the re-scored models' answers; 0 is chance agreement",
                 paper="appendix D.1: double-blind annotation by two independent annotators who must reach a set "
                       "agreement (no coefficient reported)")
    flips = dict(link, paper_ref="", kind="finding",
                 claim="human annotations of the same responses conflict: a second annotator orders some pairs the "
                       "other way",
                 statistic="share of the answer pairs (of a prompt's re-scored answers) that both human scorings "
                           "order strictly and the second orders the other way",
                 paper='"conflicts may arise due to the human preferences ambiguity and potential annotation errors" '
                       f"(§3.2); {paper5}")
    merged = dict(link, paper_ref="", kind="question",
                  claim="merged by Algorithm 1, do two human scorings of real Chinese writing conflict on more prompts "
                        "than the paper's human annotations of CheemsBench?",
                  reason="the project's own question, and another protocol: Table 5 merges rounds of triple-wise "
                         "comparisons of five responses per prompt; here the strict pairwise calls of two 0-3 scorings "
                         "of a prompt's re-scored answers. Ties are left out: CheemsBench's annotators break equal "
                         "scores by further comparison (appendix D), so its ties are explicit calls, while a tie of two "
                         "0-3 scores is not, and with ties every pair tied in one scoring and strict in the other "
                         "would be a conflict by construction (that share is shown, not compared)",
                  statistic="share of prompts whose two scorings' strict pairwise calls (ties left out) Algorithm 1 "
                            f"cannot all reproduce, minus the larger of Table 5's human ratios ({top}, {t5[top]:.4f})",
                  paper=paper5)
    if rescored is None or not len(rescored.table):
        for cid, fields in (("human-rescore-kappa", kappa), ("human-rescore-reversed", flips),
                            ("human-rescore-conflicts", merged)):
            add_untestable(ledger, cid, missing, **fields)
        return {}
    out = {"human-rescore-kappa": rescored.kappa(n_boot=n_boot, seed=seed),
           "human-rescore-reversed": estimates.ratio_estimate(rescored.reversed, rescored.strict, n_boot=n_boot, seed=seed),
           "human-rescore-conflicts": estimates.ratio_estimate(rescored.strict_conflicted, n_boot=n_boot, seed=seed)}
    ledger.add(claims.Claim.test("human-rescore-kappa", out["human-rescore-kappa"], "greater", seed=seed, **kappa,
                                 says=verdict_sentences("Weighted kappa {estimate:.3f} [{lo:.3f}, {hi:.3f}] (0: "
                                                        "chance, 1: perfect)",
                                                        "the two human scorings agree beyond chance.",
                                                        "they agree less than chance would.", "not clearly above chance.")))
    ledger.add(claims.Claim.test("human-rescore-reversed", out["human-rescore-reversed"], "greater", seed=seed, **flips,
                                 says=verdict_sentences("The second scoring orders {estimate:.3f} [{lo:.3f}, {hi:.3f}] "
                                                        "of the strictly ordered pairs the other way", "human scores of "
                                                        "the same answers conflict, as the paper's Table 5 shows for "
                                                        "its annotators.", "no conflict.", "not clearly above zero.")))
    ledger.add(claims.Claim.test("human-rescore-conflicts", out["human-rescore-conflicts"] - t5[top], "greater",
                                 seed=seed, **merged,
                                 says=verdict_sentences("Merged by Algorithm 1 with strict calls only, the share of "
                                                        "prompts on which the two scorings conflict, minus Table 5's "
                                                        "larger human ratio, is {estimate:+.3f} [{lo:+.3f}, {hi:+.3f}]",
                                                        "they conflict more often than the paper's human annotations.",
                                                        "they conflict less often than the paper's human annotations.",
                                                        "not clearly different from the paper's.")))
    return out


def agreement_shares(rescored: Rescoring, found: Mapping[str, estimates.Estimate], *, n_boot: int = estimates.N_BOOT,
                     seed: int = 0) -> dict[str, estimates.Estimate]:
    """How often two scorings differ, by name: answers scored alike, pairs reversed or tie-changed, prompts in
    conflict with strict calls only (:data:`CONFLICTS_STRICT`, the one compared with Table 5) and with ties
    (:data:`CONFLICTS_TIES`, not comparable); ``found`` are :func:`add_agreement_claims`' estimates, reused."""
    share = lambda num, den=None: estimates.ratio_estimate(num, den, n_boot=n_boot, seed=seed)  # noqa: E731
    return {"same score both times": rescored.exact(n_boot=n_boot, seed=seed),
            "pairs strict in both, reversed": found["human-rescore-reversed"],
            "pairs strict in one, tied in the other": share(rescored.tie_changed, rescored.pairs),
            CONFLICTS_STRICT: found["human-rescore-conflicts"],
            CONFLICTS_TIES: share(rescored.conflicted)}


def agreement_table(shares: Mapping[str, estimates.Estimate], kappa: estimates.Estimate,
                    shift: estimates.Estimate | None = None, *, seed: int = 0):
    """The agreement statistics with their intervals and counts (kappa, then the mean score shift of
    :meth:`Rescoring.shift` when given, then ``shares``), then Table 5's human conflict ratios (``paper``)."""
    import pandas as pd

    over = lambda name: next((w for w in ("pairs", "prompts") if name.startswith(w)), "twice-scored answers")  # noqa: E731
    first = {"weighted kappa (quadratic)": kappa}
    if shift is not None:
        first["mean score shift, second minus first (score points)"] = shift
    rows = [{"statistic": name, "over": over(name),
             "ours [95%]": estimate_with_interval(est, seed, "+.3f" if "shift" in name else ".3f"),
             "prompts": est.n, "paper": "–"} for name, est in {**first, **shares}.items()]
    rows += [{"statistic": f"Table 5 conflict ratio, human · {k.replace('_', ' ')}", "over": "prompts",
              "ours [95%]": "–", "prompts": None, "paper": f"{v:.4f}"} for k, v in table5_human().items()]
    return pd.DataFrame(rows)


def agreement_values(rescored: Rescoring, shift: estimates.Estimate | None = None, kappa: estimates.Estimate | None = None,
                     *, seed: int = 0) -> dict[str, int | str]:
    """The counts the prose quotes: answers, prompts and most answers per prompt scored twice, those scored higher
    and lower the second time, Table 1's responses per prompt of CheemsBench's Open Prompt subset; with ``shift``
    (:meth:`Rescoring.shift`) and ``kappa``, each with its 95% interval."""
    per_prompt = rescored.table.sum(axis=(1, 2))
    t1 = paper_table("table1_statistics").set_index("statistic")
    higher, lower = rescored.moves
    out = {"n_twice": int(per_prompt.sum()), "n_twice_prompts": len(per_prompt), "n_twice_models": int(per_prompt.max()),
           "n_second_higher": higher, "n_second_lower": lower,
           "table1_responses": f'{float(t1.loc["responses_per_prompt", "cheemsbench_open_prompt"]):g}'}
    if shift is not None:
        out["score_shift"] = estimate_with_interval(shift, seed, "+.3f")
    if kappa is not None:
        out["kappa"] = estimate_with_interval(kappa, seed)
    return out


def plot_agreement(rescored: Rescoring, shares: Mapping[str, estimates.Estimate], *, seed: int = 0):
    """Left: the two scorings' table of counts (first scoring's score by row). Right: ``shares`` (name -> Estimate,
    :func:`agreement_shares`) with 95% intervals, and the paper's Table 5 human conflict ratios as plain points."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    paper = {f"paper, Table 5: human · {k.replace('_', ' ')}": v for k, v in table5_human().items()}

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [2, 3]})
    sns.heatmap(rescored.table.sum(axis=0).astype(int), annot=True, fmt="d", cmap="Blues", cbar=False, ax=left)
    left.set(xlabel="second scoring (human score)", ylabel="first scoring (human score)",
             title="the same answers scored twice")
    rows = list(shares.items()) + [(name, None) for name in paper]
    for y, (name, est) in enumerate(rows[::-1]):
        if est is None:
            right.plot([paper[name]], [y], "o", color="#f28e2b")
            continue
        lo, hi = est.interval(seed=seed)
        right.errorbar([est.value], [y], xerr=[[est.value - lo], [hi - est.value]], fmt="D", color="black", capsize=3)
    right.set_yticks(range(len(rows)), [name for name, _ in rows[::-1]])
    right.set(xlim=(0, 1), xlabel="share (ours: black, 95% interval; paper: orange)", title="how often they differ")
    right.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def weighted_kappa(table) -> float:
    """Cohen's kappa with quadratic weights of a ``K x K`` table of counts (rows: the first scoring's score,
    columns: the second's), for scores on an ordered scale 0 .. K-1:

        kappa_w = 1 - sum_ij w_ij O_ij / sum_ij w_ij E_ij,   w_ij = (i - j)^2 / (K - 1)^2,

    ``O`` the observed shares and ``E`` the shares expected from the two margins alone (``E_ij = row_i col_j``).
    1 is perfect agreement, 0 what independent scorings with these margins agree by chance (Cohen 1968).
    NaN when the margins leave no disagreement to expect (both scorings give one score only).

    >>> weighted_kappa([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]])  # 2 vs 3 and 3 vs 2: worked out in the tests
    0.8
    """
    obs = np.asarray(table, float)
    k = obs.shape[0]
    obs = obs / obs.sum()
    weight = (np.subtract.outer(np.arange(k), np.arange(k)) ** 2) / (k - 1) ** 2
    expected = np.outer(obs.sum(axis=1), obs.sum(axis=0))
    chance = float((weight * expected).sum())
    return 1.0 - float((weight * obs).sum()) / chance if chance > 0 else math.nan


NO_TWICE = "needs answers scored twice (second_scores)"
"""The reason of every agreement claim when the human file has no answer scored twice."""


NO_SECOND_SCORES = ("*Skipped: the agreement of two scorings; no answer of the human file has a second score "
                    "(`second_scores`).*")
"""The page's sentence when the human file has no answer scored twice."""


CONFLICTS_STRICT = "prompts in conflict, strict calls only (Table 5's analogue)"
"""The share of prompts whose two scorings' strict calls Algorithm 1 cannot all reproduce: a pair one scoring orders
one way and the other the other way. Compared with Table 5 (claim ``human-rescore-conflicts``)."""


CONFLICTS_TIES = "prompts in conflict, ties included (not comparable with Table 5)"
"""The same with each scoring's ties as annotations: any pair tied in one scoring and strict in the other is then a
conflict by construction, and on a 0-3 scale ties are common, so this share is shown and never tested against
Table 5 (see :func:`add_agreement_claims`)."""


def table5_human() -> dict[str, float]:
    """Table 5's conflict ratios of the human annotations, by subset."""
    t5 = paper_table("table5_conflict_ratio")
    return dict(zip(t5.loc[t5["annotator"] == "human", "subset"], t5.loc[t5["annotator"] == "human", "conflict_ratio"]))


def _calls(ids: Sequence[str], scores: Mapping[str, int], *, ties: bool) -> list[tuple[str, str, str]]:
    """The pairwise calls one scoring implies: "1" (first better), "2" or, with ``ties``, "0"."""
    calls = [(a, b, FIRST if scores[a] > scores[b] else SECOND if scores[a] < scores[b] else TIE)
             for a, b in combinations(ids, 2)]
    return [c for c in calls if ties or c[2] != TIE]


def _conflicts(ids: Sequence[str], first: Mapping[str, int], second: Mapping[str, int], *, ties: bool) -> float:
    calls = _calls(ids, first, ties=ties) + _calls(ids, second, ties=ties)
    return float(bool(calls) and not all(reproduced(calls, resolve(ids, calls))))
