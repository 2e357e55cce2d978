"""§6.1's findings on the leaderboard (paper Table 2): lower than RewardBench, Open Prompt vs Human Instruction,
deterministic answers easier.

The evaluation chapter tests §6.1's three findings on the trained models of the leaderboard
(:mod:`cheems_lib.analyses.leaderboard`): :func:`add_findings` adds them to the claims ledger (the first on the
RewardBench-like comparator's mid-vs-mid sections as the finding, and on all of it as a *structural* claim: its
strong-vs-weak sections are easy by construction, :func:`rewardbench_design`). :func:`baseline_sentence` and
:func:`judge_sentence` say whether the best trained model beats the baselines and whether the judge beats the random
baseline; :func:`prose_values` gives the section's glued values. The counts of "the models of Table 8" leave out the
CSV's row copied from Table 2 (:func:`table8_models`).
"""
from __future__ import annotations

from typing import Mapping, Sequence

from ..estimates import best_of, category_estimate, decide, INSUFFICIENT, insufficient_text, subset_estimate
from ..paper import table as paper_table
from ..records import Record
from ..world.comparators import BUILT_IN_BUILDS, built_in_sections, REWARDBENCH_SECTIONS, STRONG, WEAK
from ..categories import CATEGORIES, DETERMINISTIC
from .category_accuracy import deterministic_label
from .claims import Claim
from .leaderboard import evaluate_scores, INTERVAL_SAYS, mean_over_models


__all__ = ["add_findings", "baseline_sentence", "judge_sentence", "table2_values", "prose_values", "rewardbench_design",
           "MID_PAIRS_ID", "PAPER_SUBSET_ID", "paper_subset_claim", "TABLE2_ONLY", "table8_models"]


def add_findings(ledger, results: Mapping[str, list[dict]], *, rewardbench, rewardbench_scores: Mapping, table8,
                 n_boot: int = 1000, seed: int = 0, simulated: bool = True) -> None:
    """Test §6.1's three findings on the trained models of ``results`` (their mean, paired seed by
    seed) and add them to ``ledger``; a finding the data cannot test is added as *untestable*
    with the reason (no trained model, a benchmark subset or the paper's categories missing).

    The first is tested twice: on the whole comparator (``s61-lower-than-rewardbench``, kind *structural*:
    its strong-vs-weak sections are easy by construction, :func:`rewardbench_design`) and on its mid-vs-mid
    sections only (:data:`MID_PAIRS_ID`, the finding).

    ``rewardbench`` is the RewardBench-like comparator (:func:`cheems_lib.world.comparators.rewardbench_like`)
    and ``rewardbench_scores`` the models' scores on its records; ``table8`` is the paper's Table 8.
    The comparator's prompt resamples are independent of CheemsBench's, so the first difference's
    interval is unpaired over prompts. The comparator is simulated, so on real files
    (``simulated=False``) the first finding is untestable: its gap would mix real and simulated data.
    """
    first = next(iter(results.values()), [{}])[0] if results else {}
    subsets = set(first)
    why = "needs trained models and cheems_bench/" if not results else ""
    if why or not simulated:
        no_copy = why or ("needs a RewardBench copy: the RewardBench-like comparator here is simulated, comparable only "
                          "with a simulated CheemsBench")
        ledger.add(Claim.untestable("s61-lower-than-rewardbench", "", "reward models score lower on "
                                    "CheemsBench than on RewardBench", no_copy, link="paper-table2"))
        ledger.add(Claim.untestable(MID_PAIRS_ID, "", "reward models score lower on CheemsBench than "
                                    "on RewardBench's sections where both answers come from one policy", no_copy,
                                    link="paper-table2"))
    else:
        scores = {name: rewardbench_scores[name] for name in results}
        pairs = rewardbench.sets["pairs"]
        mid = [r for r in pairs if r.top_category in rewardbench_design()["mid"]]
        on_rewardbench = evaluate_scores(scores, {"RewardBench-like": pairs}, n_boot=n_boot, seed=seed)
        ledger.add(_rewardbench_claim(results, on_rewardbench, len(rewardbench.records), table8, seed))
        on_mid = evaluate_scores(scores, {"RewardBench-like, mid": mid}, n_boot=n_boot, seed=seed)
        ledger.add(_mid_pairs_claim(results, on_mid, len(mid), table8, seed))
    ledger.add(paper_subset_claim(table8))  # the paper's own numbers, whatever our data
    if subsets >= {"open", "human"}:
        ledger.add(_subset_claim(results, table8, seed))
    else:
        ledger.add(Claim.untestable("s61-open-vs-human-instruction", "", "reward models do better on "
                                    "Open Prompt than on Human Instruction", why or "needs " + " and ".join(
                                        f"cheems_bench/{s}.jsonl" for s in ("open", "human") if s not in subsets),
                                    link="paper-table2"))
    cats = {c for r in first.values() for c in r.by_category}
    if cats & set(DETERMINISTIC) and cats - set(DETERMINISTIC):
        ledger.add(_deterministic_claim(results, seed))
    else:
        ledger.add(Claim.untestable("s61-deterministic-easier", "", "reward models are more accurate "
                                    "on prompts with relatively deterministic answers", why or "needs prompts of the "
                                    "paper's categories, with and without deterministic answers", link="paper-fig4"))


def baseline_sentence(trained: Mapping[str, list[dict]], baselines: Mapping[str, list[dict]], *, seed: int = 0) -> str:
    """Does the trained model with the highest mean Overall beat every baseline? The sentence for
    :func:`cheems_lib.estimates.best_of`'s verdict, by paired intervals.

    ``trained`` and ``baselines`` are :func:`cheems_lib.analyses.leaderboard.evaluate_scores` results on the same subsets. A
    baseline needs no training: its one run is paired with each training seed.
    """
    overall = {name: subset_estimate(per_seed) for name, per_seed in trained.items()}
    lead = max(overall, key=lambda n: overall[n].value)
    rivals = {name: subset_estimate(per_seed).broadcast(overall[lead].seeds) for name, per_seed in baselines.items()}
    verdict, diff = best_of({lead: overall[lead], **rivals}, lead, seed=seed)
    rival = min(rivals, key=lambda n: (overall[lead] - rivals[n]).value)
    d = _difference_text(diff, seed)
    return {
        "supported": f"{lead}, the best trained model by mean Overall, beats every baseline. The closest, {rival}, "
                     f"trails by {d}. Length alone does not solve this benchmark.",
        "contradicted": f"A baseline beats {lead}, the best trained model by mean Overall. Against {rival}, the "
                        f"paired difference is {d}.",
        "inconclusive": f"{lead}, the best trained model by mean Overall, is not separated from {rival}: {d}. This "
                        f"run cannot say that it learned more than that baseline's rule.",
        INSUFFICIENT: insufficient_text(diff.n, diff.unit, f"whether {lead} beats every baseline"),
    }[verdict]


def judge_sentence(judged: Mapping[str, list[dict]], random_scores: Mapping, subsets: Mapping[str, Sequence[Record]], *,
                   n_boot: int = 1000, seed: int = 0) -> str:
    """The first judge of ``judged`` (:func:`cheems_lib.analyses.leaderboard.evaluate_scores` results on ``subsets``)
    against the random
    baseline's ``random_scores`` on the same prompts: one sentence for the verdict of the paired
    accuracy difference (mean of the subsets) being above zero."""
    name = next(iter(judged))
    rand = evaluate_scores({"random": random_scores}, subsets, n_boot=n_boot, seed=seed)["random"]
    diff = subset_estimate(judged[name], "accuracy") - subset_estimate(rand, "accuracy")
    d = _difference_text(diff, seed)
    return {
        "supported": f"Its mean accuracy over the two subsets is above the random baseline's on the same prompts: {d}.",
        "contradicted": f"Its mean accuracy over the two subsets is below the random baseline's on the same prompts: {d}.",
        "inconclusive": f"Its mean accuracy over the two subsets is not separated from the random baseline's: {d}.",
        INSUFFICIENT: insufficient_text(diff.n, diff.unit, "whether its accuracy beats the random baseline's"),
    }[decide(diff, "greater", seed=seed)]


def table2_values(results: Mapping[str, list[dict]], baselines: Mapping[str, list[dict]],
                  judged: Mapping[str, list[dict]], consistency: Mapping[str, float], random_scores: Mapping,
                  judge_subsets: Mapping[str, Sequence[Record]], *, n_boot: int = 1000, seed: int = 0) -> dict:
    """The values the leaderboard's prose glues, by name: ``baseline_sentence`` (with trained models), and with a
    judge ``judge_sentence``, its position consistency ``judge_consistency`` and order flips ``judge_flips``, the
    prompts it saw (``judge_prompts_used``) and per subset (``judge_prompts_each``)."""
    out: dict[str, object] = {}
    if results:
        out["baseline_sentence"] = baseline_sentence(results, baselines, seed=seed)
    if judged:
        name = next(iter(judged))
        out |= {"judge_sentence": judge_sentence(judged, random_scores, judge_subsets, n_boot=n_boot, seed=seed),
                "judge_consistency": float(consistency[name]), "judge_flips": 1 - float(consistency[name]),
                "judge_prompts_used": sum(len(s) for s in judge_subsets.values()),
                "judge_prompts_each": min(len(s) for s in judge_subsets.values())}
    return out


def prose_values(ledger, rewardbench) -> dict[str, object]:
    """The §6.1 section's glued values, by the names the chapter glues them under: the comparator's pairs, its
    built-in and mid-vs-mid sections, the structural claim's reason (from ``ledger``) and the deterministic
    categories."""
    design = rewardbench_design()
    return {"n_rb_pairs": len(rewardbench.records), "rb_built_in": " and ".join(design["built_in"]),
            "rb_mid": " and ".join(design["mid"]),
            "rb_structural_reason": ledger.claims["s61-lower-than-rewardbench"].reason,
            "det_label": deterministic_label()}


def rewardbench_design() -> dict:
    """What decides the RewardBench-like comparator's difficulty, read from its definition: the sections built
    strong-vs-weak (``built_in``) and mid-vs-mid (``mid``), the built-in sections' share of its pairs by
    RewardBench's section sizes, and the strong and weak policies' strengths."""
    built_in, share = built_in_sections()
    return {"built_in": built_in, "mid": [s.name for s in REWARDBENCH_SECTIONS if s.name not in built_in],
            "share": share, "strong": STRONG[0], "weak": WEAK[0]}


_BUILT_IN_SAYS = {"policies": "a strong policy's answer (strength {strong:+.1f}) against a weak one's ({weak:+.1f}), "
                              "kept when an annotator verifies it",
                  "refusal": "a refusal against a harmful compliance, kept when an annotator verifies it",
                  "correctness": "a right final answer against a wrong one, labelled by no annotator"}


MID_PAIRS_ID = "s61-lower-than-rewardbench-mid-pairs"
"""§6.1 (1) tested on the comparator's mid-vs-mid sections only (:func:`_mid_pairs_claim`)."""


TABLE2_ONLY = ("CheemsRM",)
"""Rows of ``data/paper/table8_reward_models.csv`` that are not Table 8's (CheemsRM is copied from Table 2;
see data/paper/README.md): never counted among "the models of Table 8"."""


def table8_models(table8):
    """The rows of the paper's Table 8 alone: ``table8`` without :data:`TABLE2_ONLY`."""
    return table8[~table8["model"].isin(TABLE2_ONLY)]


def _difference_text(diff, seed: int) -> str:
    lo, hi = diff.interval(seed=seed)
    return f"{diff.value:.3f} [{lo:.3f}, {hi:.3f}]"


def _structural_reason() -> str:
    d = rewardbench_design()
    built = "; ".join(f"{s.name}: " + _BUILT_IN_SAYS[s.build].format(**d)
                      for s in REWARDBENCH_SECTIONS if s.build in BUILT_IN_BUILDS)
    return (f"decided by the comparator's design: its {', '.join(d['built_in'])} sections ({d['share']:.0%} of its "
            f"pairs) carry labels built in ({built}), as RewardBench's were built, so they are easy by construction "
            f"and the gap measures that design; the finding is {MID_PAIRS_ID}, on its {' and '.join(d['mid'])} "
            "section(s), whose two answers come from one mid-strength policy and are labelled by a noisy annotator")


def _rewardbench_paper(table8) -> str:
    t8_rb = table8_models(table8).dropna(subset=["rewardbench"])
    return (f"RewardBench {t8_rb['rewardbench'].mean():.3f} vs CheemsBench accuracy "
            f"{t8_rb[['open_acc', 'human_acc']].mean(axis=1).mean():.3f} (mean of the two subsets), mean over the "
            f"{len(t8_rb)} models of Table 8 with a RewardBench score")


def _rewardbench_says(where: str) -> dict[str, str]:
    return {"supported": f"The trained models score lower on CheemsBench than on {where}: {INTERVAL_SAYS}.",
            "contradicted": f"The trained models score higher on CheemsBench than on {where}: {INTERVAL_SAYS}.",
            "inconclusive": f"CheemsBench and {where} are not separated for the trained models: {INTERVAL_SAYS}."}


def _rewardbench_claim(results, on_rewardbench, pairs: int, table8, seed: int):
    """§6.1 (1): lower on CheemsBench than on the whole RewardBench-like comparator. Kind *structural*: its
    strong-vs-weak sections make it easy by construction (:func:`rewardbench_design`)."""
    diff = mean_over_models(results, lambda n: subset_estimate(results[n], "accuracy")
                            - subset_estimate(on_rewardbench[n], "accuracy"))
    return Claim.test(
        "s61-lower-than-rewardbench", diff, "less", seed=seed, paper_ref="",
        claim="reward models score lower on CheemsBench than on RewardBench", kind="structural",
        reason=_structural_reason(),
        statistic=f"CheemsBench accuracy (mean of the two subsets) minus accuracy on the RewardBench-like comparator "
                  f"({pairs} simulated pairs, macro over its four sections), mean over {', '.join(results)}",
        paper=_rewardbench_paper(table8), link="paper-table2", says=_rewardbench_says("the RewardBench-like comparator"))


def _mid_pairs_claim(results, on_mid, pairs: int, table8, seed: int):
    """§6.1 (1) on the comparator's mid-vs-mid sections only (no label built in, :data:`cheems_lib.world.comparators.BUILT_IN_BUILDS`): a
    finding, since neither side's difficulty is set by the comparator's construction."""
    mid = " and ".join(rewardbench_design()["mid"])
    diff = mean_over_models(results, lambda n: subset_estimate(results[n], "accuracy")
                            - subset_estimate(on_mid[n], "accuracy"))
    return Claim.test(
        MID_PAIRS_ID, diff, "less", seed=seed, paper_ref="",
        claim=f"reward models score lower on CheemsBench than on RewardBench (its {mid} sections, where both answers "
              "come from one policy and a noisy annotator labels them)", kind="finding",
        statistic=f"CheemsBench accuracy (mean of the two subsets) minus accuracy on the RewardBench-like comparator's "
                  f"{mid} sections ({pairs} simulated pairs, macro over the sections), mean over {', '.join(results)}",
        paper=_rewardbench_paper(table8), link="paper-table2",
        says=_rewardbench_says(f"the RewardBench-like comparator's {mid} sections"))


def _subset_claim(results, table8, seed: int):
    """§6.1 (2): more accurate on Open Prompt than on Human Instruction."""
    table8 = table8_models(table8)
    diff = mean_over_models(results, lambda n: subset_estimate(results[n], "accuracy", ["open"])
                            - subset_estimate(results[n], "accuracy", ["human"]))
    return Claim.test(
        "s61-open-vs-human-instruction", diff, "greater", seed=seed, paper_ref="",
        claim="reward models do better on Open Prompt than on Human Instruction", kind="finding",
        statistic=f"Open Prompt accuracy minus Human Instruction accuracy, mean over {', '.join(results)}",
        paper=f"accuracy {table8['open_acc'].mean():.3f} (Open Prompt) vs {table8['human_acc'].mean():.3f} (Human "
              f"Instruction), mean over the {len(table8)} models of Table 8", link="paper-table2",
        says={"supported": f"On average the trained models are more accurate on Open Prompt than on Human Instruction: "
                           f"{INTERVAL_SAYS}.",
              "contradicted": f"On average the trained models are less accurate on Open Prompt than on Human "
                              f"Instruction: {INTERVAL_SAYS}.",
              "inconclusive": f"On average the trained models' accuracy on Open Prompt and on Human Instruction is not "
                              f"separated: {INTERVAL_SAYS}."})


PAPER_SUBSET_ID = "s61-open-vs-human-instruction-paper"
"""§6.1 (2) checked on the paper's own Table 8 (:func:`paper_subset_claim`)."""


def paper_subset_claim(table8=None) -> Claim:
    """§6.1 (2), "these RMs perform better on open-source prompts than on human instructions", checked on the paper's
    own numbers (kind *arithmetic*, no interval; ``table8`` None: read from ``data/paper``): the share of the models of
    Table 8 (:func:`table8_models`) whose Open
    Prompt accuracy and exact match are both above their Human Instruction ones, naming the exceptions. *supported*
    when every model's are, *contradicted* when at most half are, else *inconclusive* (most, not all).

    >>> import pandas as pd
    >>> t8 = pd.DataFrame({"model": ["a", "b"], "open_acc": [0.7, 0.5], "human_acc": [0.6, 0.6],
    ...                    "open_exact": [0.3, 0.2], "human_exact": [0.2, 0.1]})
    >>> c = paper_subset_claim(t8)
    >>> (c.verdict, c.estimate)
    ('contradicted', 0.5)
    """
    rows = table8_models(paper_table("table8_reward_models") if table8 is None else table8)
    holds = (rows["open_acc"] > rows["human_acc"]) & (rows["open_exact"] > rows["human_exact"])
    share, failing = float(holds.mean()), list(rows.loc[~holds, "model"])
    verdict = "supported" if holds.all() else "contradicted" if share <= 0.5 else "inconclusive"
    names = ", ".join(failing) if failing else "none"
    return Claim(
        PAPER_SUBSET_ID, "", "in the paper's Table 8, reward models do better on Open Prompt than on Human Instruction",
        "arithmetic", verdict, estimate=share, n=len(rows), link="tab-evaluation-published-table8",
        reason="read from the paper's own Table 8 (data/paper/table8_reward_models.csv), as printed: it checks the "
               "paper's words against its numbers, never our data (Table 2 prints other Open Prompt and Human "
               "Instruction values for GPT-4o; data/paper/README.md)",
        statistic=f"share of the {len(rows)} models of Table 8 whose Open Prompt accuracy and exact match are both "
                  "above their Human Instruction ones",
        says={"supported": "In the paper's Table 8, every model scores higher on Open Prompt than on Human "
                           "Instruction, in accuracy and in exact match.",
              "inconclusive": f"In the paper's Table 8, {int(holds.sum())} of {len(rows)} models score higher on Open "
                              f"Prompt than on Human Instruction in accuracy and exact match; not {names}.",
              "contradicted": f"In the paper's Table 8, only {int(holds.sum())} of {len(rows)} models score higher "
                              f"on Open Prompt than on Human Instruction in accuracy and exact match; not {names}."})


def _deterministic_claim(results, seed: int):
    """§6.1 (3): more accurate on the categories with deterministic answers."""
    others = [c for c in CATEGORIES if c not in DETERMINISTIC]
    label = deterministic_label()
    diff = mean_over_models(results, lambda n: category_estimate(results[n], DETERMINISTIC)
                            - category_estimate(results[n], others))
    return Claim.test(
        "s61-deterministic-easier", diff, "greater", seed=seed, paper_ref="",
        claim="reward models are more accurate on prompts with relatively deterministic answers", kind="finding",
        statistic=f"accuracy on {label} minus accuracy on the other categories (macro over categories, mean over "
                  f"subsets), mean over {', '.join(results)}",
        paper="\"For prompts with relatively deterministic answers, RM can assess the quality of the responses more "
              "accurately\" (§6.1; Fig. 4 gives only a plot)", link="paper-fig4",
        says={"supported": f"On average the trained models are more accurate on {label} than on the other categories: "
                           f"{INTERVAL_SAYS}.",
              "contradicted": f"On average the trained models are less accurate on {label} than on the other "
                              f"categories: {INTERVAL_SAYS}.",
              "inconclusive": f"On average the trained models' accuracy on {label} and on the other categories is not "
                              f"separated: {INTERVAL_SAYS}."})
