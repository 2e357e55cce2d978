"""An LLM judge checked against itself on real rankings (the real-data analogues of Fig. 15 and Table 5).

The paper builds CheemsPreference with GPT-4o because it scales, and distrusts it because GPT
annotations are "inconsistent and biased" (§4.2): GPT-4o prefers the later-shown response
(Fig. 15) and its annotations conflict more often than humans' (Table 5). The real data shipped
in ``data/real/`` lets these be measured on a real judge, gpt-3.5-turbo in LLMZoo
(:mod:`cheems_lib.llmzoo`), without a single human label:

- :func:`repeats`: LLMZoo ranked two answer sets of the same 70 questions; three answers occur in
  both, byte for byte, at other positions. Each pair of them was ranked twice. Whether the two
  rankings order the pair alike is the judge's **self-consistency**; over the pairs whose
  positions are swapped between the sets, the share won by the earlier-shown answer is its
  **position preference** (each such pair is seen once in each order, so the answers' quality
  cancels out: 0.5 means no preference).
- :func:`aspect_conflicts`: the judge ranked every answer set once per aspect (general,
  coherence, ...). Read as separate annotators and resolved by Algorithm 1, the aspects'
  rankings conflict on a share of prompts: the Table 5 statistic for one judge's criteria.
- :func:`add_claims`: both, as claims with 95% intervals from a bootstrap over prompts;
  :func:`add_length_claims`: the length preference of the judge's labels and of the preference
  file's (:func:`cheems_lib.analyses.annotation_bias.longer_share`), likewise;
  :func:`judge_shares` names their shares for :func:`plot_judge`.

Every statistic is counted per prompt, so a prompt's decisions are resampled together.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Iterable, Sequence

import numpy as np

from .. import estimates
from ..conflicts import reproduced
from ..paper import table as paper_table
from ..publishing.figures import seed_dots
from ..llmzoo import merge_aspects
from ..records import Record
from . import claims
from .annotation_bias import longer_share

__all__ = ["Repeats", "repeats", "shared_answers", "aspect_conflicts", "add_claims", "add_length_claims", "judge_shares", "plot_judge"]


@dataclass(frozen=True)
class Repeats:
    """Per prompt (one entry per prompt in both sets): over the answer pairs ranked in both sets,
    ``strict`` pairs ordered strictly in both, ``agree`` of them ordered the same way; over the
    pairs whose positions are swapped between the sets, ``swapped`` strict decisions (each set
    counts) and ``earlier`` of them won by the earlier-shown answer. ``pairs`` counts every
    repeated pair, ties included; ``prompts`` the prompts in both sets."""

    strict: np.ndarray
    agree: np.ndarray
    swapped: np.ndarray
    earlier: np.ndarray
    pairs: int
    prompts: int

    def consistency(self, *, n_boot: int = estimates.N_BOOT, seed: int = 0) -> estimates.Estimate:
        """Share of repeated, strictly ordered pairs ordered the same way in both sets."""
        return estimates.ratio_estimate(self.agree, self.strict, n_boot=n_boot, seed=seed)

    def earlier_share(self, *, n_boot: int = estimates.N_BOOT, seed: int = 0) -> estimates.Estimate:
        """Share of the swapped pairs' strict decisions won by the earlier-shown answer."""
        return estimates.ratio_estimate(self.earlier, self.swapped, n_boot=n_boot, seed=seed)


def repeats(first: Iterable[Record], second: Iterable[Record]) -> Repeats:
    """Compare two rankings of the same prompts (records with ``rank``; a response is the same
    answer in both when its id is, as the importers' md5-of-content ids make it)."""
    other = {r.id: r for r in second}
    rows = []
    for a in first:
        b = other.get(a.id)
        if b is None or a.rank is None or b.rank is None:
            continue
        pos_a, pos_b = ({x: i for i, x in enumerate(r.response_ids)} for r in (a, b))
        shared = [x for x in a.response_ids if x in pos_b and x in a.rank and x in b.rank]
        strict = agree = swapped = earlier = pairs = 0
        for x, y in combinations(shared, 2):
            pairs += 1
            da, db = np.sign(a.rank[y] - a.rank[x]), np.sign(b.rank[y] - b.rank[x])  # +1: x ranked better
            if da and db:
                strict += 1
                agree += da == db
            if (pos_a[x] < pos_a[y]) != (pos_b[x] < pos_b[y]):  # shown in the other order in the other set
                for d, pos in ((da, pos_a), (db, pos_b)):
                    if d:
                        swapped += 1
                        earlier += (d > 0) == (pos[x] < pos[y])
        rows.append((strict, agree, swapped, earlier, pairs))
    arr = np.array(rows, float).reshape(-1, 5)
    return Repeats(arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3], int(arr[:, 4].sum()), len(rows))


def shared_answers(first: Iterable[Record], second: Iterable[Record]) -> list[int]:
    """Per prompt in both sets, how many of its answers (by id) both sets hold: the answers :func:`repeats`
    can compare.

    >>> from cheems_lib.records import Response
    >>> a = Record(prompt="q", id="p", responses=[Response("x", "甲"), Response("y", "乙"), Response("z", "丙")])
    >>> shared_answers([a], [Record(prompt="q", id="p", responses=[Response("y", "乙"), Response("x", "甲")])])
    [2]
    """
    other = {r.id: set(r.response_ids) for r in second}
    return [len(other[r.id] & set(r.response_ids)) for r in first if r.id in other]


def aspect_conflicts(records: Sequence[Record], aspects: Iterable[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per record: 1 when Algorithm 1 cannot reproduce every pairwise comparison of its
    ``aspects`` rankings (default: every aspect it has; :func:`cheems_lib.llmzoo.merge_aspects`),
    else 0; and 1 when it has such comparisons (the Table 5 numerator and denominator)."""
    merged, _ = merge_aspects(records, aspects)
    conflicted = np.array([float(bool(m.annotations) and not all(reproduced(m.annotations, m.rank))) for m in merged])
    annotated = np.array([float(bool(m.annotations)) for m in merged])
    return conflicted.reshape(-1), annotated.reshape(-1)


def _untestable(ledger: claims.Ledger, cid: str, why: str, **fields) -> claims.Claim:
    fields.pop("reason", None)  # a question's reason where it can be tested; here what is missing says why
    return ledger.add(claims.Claim.untestable(cid, reason=why, **fields))


def add_claims(ledger: claims.Ledger, *, bench: Sequence[Record] | None, second: Sequence[Record] | None,
               judge: str, n_boot: int = estimates.N_BOOT, seed: int = 0,
               needs_second: str = "a second answer set of the same prompts") -> dict[str, estimates.Estimate]:
    """The judge's position preference and self-consistency across ``bench`` and ``second`` (two
    answer sets ranked by ``judge``), and the conflict ratio of ``bench``'s aspect rankings merged
    by Algorithm 1; each untestable, with its reason, when its data is missing. Returns the
    estimates by claim id."""
    t5 = paper_table("table5_conflict_ratio").set_index(["subset", "annotator"])["conflict_ratio"]
    gpt5 = f"{t5['open_prompt', 'gpt']:.4f} (Open Prompt) and {t5['human_instruction', 'gpt']:.4f} (Human Instruction)"
    out: dict[str, estimates.Estimate] = {}
    # our questions, not findings: a fresh referee's read found both confounded
    pos = dict(paper_ref="", link="fig-real-judge",
               claim=f"does {judge}, like GPT-4o in Fig. 15 (appendix D.3), prefer the answer shown later?",
               reason="the project's own question, and confounded: in each LLMZoo file an answer keeps one position "
                      "per model, so every swapped pair moves one model's answer across the set, and the second set "
                      "also replaces one answer with another; a change of set and a change of position cannot be "
                      "told apart",
               statistic=f"{judge}'s share of strict decisions won by the earlier-shown answer, over repeated pairs "
                         "shown in both orders, minus 0.5",
               paper='"GPT-4o generally prefers responses that are placed later" (plot only)')
    cons = dict(paper_ref="", link="fig-real-judge",
                claim=f"{judge}'s rankings are not self-consistent: it orders some repeated pairs differently",
                statistic=f"share of repeated, strictly ordered answer pairs that {judge} orders differently in the "
                          "two answer sets",
                paper=f"GPT annotations are \"inconsistent\" (§4.2); GPT-4o's conflict ratio is {gpt5} in Table 5 "
                      "(a share of prompts with a cycle, not this share of pairs)")
    if bench is None or second is None:
        why = "needs " + ("a benchmark file" if bench is None else needs_second)
        _untestable(ledger, "real-judge-position", why, **pos)
        _untestable(ledger, "real-judge-consistency", why, **cons)
    else:
        rep = repeats(bench, second)
        est = rep.earlier_share(n_boot=n_boot, seed=seed)
        out["real-judge-position"] = est
        described = "{estimate:.3f} [{lo:.3f}, {hi:.3f}] from 0.5"
        ledger.add(claims.Claim.test(
            "real-judge-position", est - 0.5, "less", seed=seed, kind="question", **pos, says={
                "supported": f"The earlier-shown answer won less than half of the swapped pairs' decisions "
                             f"({described}): {judge} prefers the later position, as GPT-4o does in the paper.",
                "contradicted": f"The earlier-shown answer won more than half of the swapped pairs' decisions "
                                f"({described}): {judge} prefers the earlier position, unlike GPT-4o in the paper.",
                "inconclusive": f"The earlier-shown answer's share of the swapped pairs' decisions differs by "
                                f"{described}: no clear position preference."}))
        est = rep.consistency(n_boot=n_boot, seed=seed)
        out["real-judge-consistency"] = est
        ledger.add(claims.Claim.test(
            "real-judge-consistency", -est + 1, "greater", seed=seed, kind="question", **cons, says={
                "supported": f"{judge} ordered {{estimate:.3f}} [{{lo:.3f}}, {{hi:.3f}}] of the repeated pairs "
                             "differently the second time: not self-consistent, as the paper says of GPT's labels.",
                "inconclusive": f"{judge} ordered {{estimate:.3f}} [{{lo:.3f}}, {{hi:.3f}}] of the repeated pairs "
                                "differently the second time: not clearly above zero."}))
    merged = dict(paper_ref="", link="fig-real-judge",
                  claim=f"do {judge}'s rankings by separate aspects, merged by Algorithm 1, conflict more often than "
                        "GPT-4o's annotations on Open Prompt?",
                  reason="the project's own question, and not the paper's statistic: a tie under one aspect against "
                         "a strict order under another counts as a conflict, while Table 5's ratio comes from "
                         "forced-choice pairwise calls on one criterion, without ties",
                  statistic="share of prompts whose merged aspect rankings Algorithm 1 cannot all reproduce, minus "
                            f"GPT-4o's Open Prompt conflict ratio ({t5['open_prompt', 'gpt']:.4f})",
                  paper=f"GPT-4o's conflict ratio: {gpt5}")
    with_aspects = [r for r in bench or [] if len((r.extra.get("aspects") or {})) > 1]
    if not with_aspects:
        _untestable(ledger, "real-aspect-conflicts", "needs records with rankings by two or more aspects "
                    "(the aspects field that .venv/bin/cheems import llmzoo writes)", **merged)
    else:
        conflicted, annotated = aspect_conflicts(with_aspects)
        est = estimates.ratio_estimate(conflicted, annotated, n_boot=n_boot, seed=seed)
        out["real-aspect-conflicts"] = est
        ratio = "{estimate:+.3f} [{lo:+.3f}, {hi:+.3f}] from GPT-4o's Open Prompt ratio"
        ledger.add(claims.Claim.test(
            "real-aspect-conflicts", est - float(t5["open_prompt", "gpt"]), "greater", seed=seed, kind="question",
            **merged, says={
                "supported": f"The merged aspect rankings conflict on more prompts ({ratio}): one judge's criteria "
                             "disagree with each other more often than GPT-4o's pairwise annotations of CheemsBench "
                             "do in the paper.",
                "contradicted": f"The merged aspect rankings conflict on fewer prompts ({ratio}).",
                "inconclusive": f"The merged aspect rankings' conflict ratio differs by {ratio}: not clearly.",
                estimates.INSUFFICIENT: estimates.insufficient_text(est.n, est.unit, "whether the merged aspect "
                                                                    "rankings conflict more often than GPT-4o's")}))
    return out


def add_length_claims(ledger: claims.Ledger, *, bench: Sequence[Record] | None, preference: Sequence[Record] | None,
                      judge: str, n_boot: int = estimates.N_BOOT, seed: int = 0) -> dict[str, estimates.Estimate]:
    """Whether ``judge``'s labels (``bench``) and the preference file's (``preference``) favour the longer response
    (appendix D.3, Fig. 15): the share of strict decisions won by the longer response against 0.5
    (:func:`cheems_lib.analyses.annotation_bias.longer_share`); each untestable, with its reason, when its file is
    missing. Returns the estimates by claim id."""
    # paper reference and kind: the registry (the judge's is a finding; the preference file's, whose pairs were
    # generated rather than annotated, our question)
    fields = dict(paper_ref="", kind="", link="fig-real-judge",
                  paper='"when the response length difference is moderate, both human and GPT annotators tend to '
                        'favor longer responses" (plot only)')
    out: dict[str, estimates.Estimate] = {}
    for cid, recs, who, needs in (("real-judge-length", bench, judge, "a benchmark file"),
                                  ("real-preference-length", preference, "the preference file's labels",
                                   "cheems_preference.jsonl")):
        claim = f"{who} prefer{'s' if cid == 'real-judge-length' else ''} the longer response"
        if recs is None:
            ledger.add(claims.Claim.untestable(cid, claim=claim, reason="needs " + needs, **fields))
            continue
        est = out[cid] = longer_share(recs, n_boot=n_boot, seed=seed)
        share = (f"The longer response won {{estimate:+.3f}} [{{lo:+.3f}}, {{hi:+.3f}}] from half of the strict "
                 f"decisions ({who})")
        ledger.add(claims.Claim.test(cid, est - 0.5, "greater", seed=seed, claim=claim, **fields,
                                     statistic=f"share of strict decisions won by the longer response, minus 0.5 ({who})",
                                     says=_length_says(share, judged=cid == "real-judge-length")))
    return out


def _length_says(share: str, *, judged: bool) -> dict[str, str]:
    """The sentences of a length claim: a judge's preference is compared with the paper's annotators; a preference
    file's generated pairs say how the pairs were made, not what an annotator prefers."""
    if judged:
        return {"supported": share + ": a length preference, as in the paper.",
                "contradicted": share + ": the shorter is preferred, unlike the paper.",
                "inconclusive": share + ": no clear length preference."}
    return {"supported": share + ": the longer response is the chosen one more often, a property of how the "
                                 "pairs were made.",
            "contradicted": share + ": the shorter response is the chosen one more often, a property of how the "
                                    "pairs were made.",
            "inconclusive": share + ": no clear length difference between chosen and rejected."}


SHARES = {"real-judge-consistency": "ordered alike both times",
          "real-judge-position": "won by the earlier-shown answer",
          "real-judge-length": "won by the longer answer (judge)",
          "real-preference-length": "won by the longer answer (preference labels)"}
"""How :func:`plot_judge` names the shares of :func:`add_claims` and :func:`add_length_claims`, in its order."""


def judge_shares(found: dict[str, estimates.Estimate]) -> dict[str, estimates.Estimate]:
    """The shares among ``found`` (estimates by claim id), named and ordered as :data:`SHARES`, for :func:`plot_judge`."""
    return {name: found[cid] for cid, name in SHARES.items() if cid in found}


def plot_judge(shares: dict[str, estimates.Estimate], conflicts: estimates.Estimate | None, *, seed: int = 0):
    """Two panels: ``shares`` (name -> share estimate; 0.5 means no preference) with their 95%
    intervals, and the merged aspects' conflict ratio below the paper's Table 5, set apart as another statistic
    and without an interval where it has no 95% interval (``conflicts`` None: the paper's only). Returns the
    matplotlib Figure."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 0.45 * max(len(shares), 5) + 1.4),
                                      gridspec_kw={"width_ratios": [3, 2]})
    if shares:
        seed_dots(shares, ax=left, seed=seed, xlabel="share of strict decisions")
        left.axvline(0.5, color="grey", lw=1, ls="--")
        left.set_xlim(0, 1)
    left.set_title("Consistency, position and length (ours)")
    t5 = paper_table("table5_conflict_ratio")
    rows = [(f"paper: {a} · {s.replace('_', ' ')}", v, v, v) for s, a, v in t5.itertuples(index=False)]
    if conflicts is not None:
        # another statistic (a tie under one aspect against an order under another counts), so it is drawn apart,
        # below a line, and without an interval when its interval is no 95% interval (estimates.insufficient)
        lo, hi = (conflicts.value,) * 2 if estimates.insufficient(conflicts, seed=seed) else conflicts.interval(seed=seed)
        rows.append(("ours: merged aspects (ties count;\nnot Table 5's statistic)", conflicts.value, lo, hi))
        right.axhline(len(rows) - 1.5, color="grey", lw=0.8)
    for y, (name, v, lo, hi) in enumerate(rows):
        ours = name.startswith("ours")
        right.errorbar([v], [y], xerr=[[v - lo], [hi - v]], fmt="D" if ours else "o",
                       color="black" if ours else "#f28e2b", capsize=3)
    right.set_yticks(range(len(rows)), [r[0] for r in rows])
    right.set(xlim=(0, 1.05), xlabel="conflict ratio (share of prompts)", title="Conflicts: Table 5, and ours")
    right.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig
