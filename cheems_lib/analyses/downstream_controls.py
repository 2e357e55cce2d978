"""Controls of Fig. 5's claims (paper §6.2): null controls, equal size, length control, judge identity.

Fig. 5's claims compare Spearman correlations (:mod:`cheems_lib.analyses.downstream_correlation`). A claim can
hold for reasons other than the benchmark's labels, so the chapter shows controls beside it, never inside a
correlation and never as a finding:

- :func:`models_table` is the per-model table: the reward models, then the null controls (:func:`null_controls`:
  the Best-of-N samples and benchmarks scored by length and at random) and the exact chance (:func:`chance_row`),
  what length alone earns on each benchmark and task;
- :func:`add_controls` (on the same picks, nothing scored again) adds *robustness* rows for CheemsBench cut to each
  comparator's size (:func:`cheemsbench_at_size`, :func:`equal_size_table`), for length-controlled Best-of-N
  outcomes and for the old judge-identity case (:data:`CONTROL_CLAIMS`, by id).

The chapter's robustness section runs them with the humans' shared-noise sweep
(:func:`cheems_lib.analyses.downstream_robustness.add_robustness`).
"""
from __future__ import annotations

import zlib
from dataclasses import replace
from typing import Mapping

import numpy as np

from ..baselines import CHANCE, chance_metrics, CONTROLS, named_scores, NAMES
from ..estimates import all_of, Estimate
from ..world.best_of_n import TASK_LABELS
from .claims import Claim
from .downstream_claims import cheemsbench_best_claim, claim_statistic, human_beats_gpt_claim
from .downstream_correlation import task_average
from .downstream_population import (ANNOTATED_COMPARATORS, benchmark_sets, COMPARATORS, PAIRWISE, RewardModels, Scores, Setting,
                                    tabulate)

__all__ = ["models_table", "CONTROLS_GROUP", "null_controls", "chance_row", "add_controls", "CONTROL_CLAIMS",
           "EQUAL_SIZE_DRAWS", "cheemsbench_at_size", "equal_size_spearman", "equal_size_table"]


def models_table(scores: Scores, world, setting: "Setting", *, seed: int = 0):
    """The chapter's per-model table: the reward models by group and Human win rate (best first), then in their
    own group the null controls on the same benchmarks and samples (:func:`null_controls`, random drawn with
    ``seed``) and the exact chance (:func:`chance_row`). The downstream tasks come right after the group, before
    the benchmarks: the columns every row is read against stay in view on a narrow page."""
    import pandas as pd

    models = scores.table()
    columns = ["group", *scores.down.columns, *scores.bench.columns]
    win = [TASK_LABELS["human_win_rate"]][:TASK_LABELS["human_win_rate"] in models]
    chance = pd.DataFrame([{"group": CONTROLS_GROUP, **chance_row(world, setting)}], index=[CHANCE])
    return pd.concat([models.sort_values(["group", *win], ascending=[True] + [False] * len(win)),
                      null_controls(world, setting, seed=seed).table(), chance])[columns]


CONTROLS_GROUP = "null control (not in Fig. 5)"
"""The group of :func:`null_controls`' rows in :func:`models_table`."""


def null_controls(world, setting: "Setting", *, seed: int = 0) -> Scores:
    """The null controls of the per-model table, as :class:`cheems_lib.analyses.downstream_population.Scores` of their own:
    pick-longest, pick-shortest and random scores (:data:`cheems_lib.baselines.NAMES`, the random one drawn with
    ``seed``) on the same benchmarks and Best-of-N samples as the reward models. Nothing is trained or scored by a
    model; these rows show what length alone earns on each benchmark and task, and no correlation takes them."""
    benchmarks = benchmark_sets(world, setting.rewardbench, setting.rmb)
    records = [*world.bench_records, *setting.rewardbench.records, *setting.rmb.records]
    labels = {word: n for n, word in CONTROLS.items() if n in NAMES}  # pick-longest, pick-shortest, random
    models = RewardModels(labels, dict.fromkeys(labels, CONTROLS_GROUP), {k: k for k in labels})
    bench_scores = {k: named_scores(n, records, seed=seed) for k, n in labels.items()}
    bon_scores = {k: {t: named_scores(n, c.records, seed=seed) for t, c in setting.tasks.items()} for k, n in labels.items()}
    return tabulate(benchmarks, bench_scores, bon_scores, setting.tasks, models)


def chance_row(world, setting: "Setting") -> dict[str, float]:
    """The exact expectation under uniformly random scores, by the columns of
    :func:`cheems_lib.analyses.downstream_population.tabulate`: each benchmark's accuracy and exact match
    (:func:`cheems_lib.baselines.chance_metrics`; RMB-like BoN accuracy is its exact match, as there) and each
    task's value (a random pick's expected outcome: the mean over each prompt's samples, averaged over prompts)."""
    benchmarks = benchmark_sets(world, setting.rewardbench, setting.rmb)
    row = {}
    for name, records in benchmarks.items():
        chance = chance_metrics(records)
        if name == "RMB-like BoN":
            row[f"{name} acc"] = chance["exact_match"]
            continue
        row[f"{name} acc"] = chance["accuracy"]
        if name not in PAIRWISE:
            row[f"{name} exact"] = chance["exact_match"]
    for t, c in setting.tasks.items():
        row[TASK_LABELS[t]] = float(np.mean(c.outcome.mean(axis=1)))
    return row


def add_controls(ledger, scores: Scores, *, length_controlled: Mapping[str, np.ndarray] | None = None,
                 identity: Mapping[str, np.ndarray] | None = None, n_boot: int = 1000, seed: int = 0,
                 seeds: int = 1) -> None:
    """Fig. 5's claims under controls, each a *robustness* claim (never a finding): CheemsBench cut to each
    comparator's size (prompts, compared pairs); both claims with ``length_controlled`` task outcomes
    (:func:`cheems_lib.world.best_of_n.length_controlled`, by task column); the human-versus-GPT claim with the
    MT-bench-like task graded by CheemsBench's own GPT annotator (``identity``: the old construction, which
    decides that claim by identity). The same picks throughout: nothing is scored again."""
    down_boot = scores.prompt_boot(n_boot, seed)
    has_gpt = "CheemsBench GPT acc" in scores.bench.columns

    def spearman_of(sc, boot):
        return lambda column: task_average(sc.bench, sc.down, column, n_boot=n_boot, seed=seed, clusters=sc.clusters,
                                           down_boot=boot)

    def statistic(a, b):
        return claim_statistic(scores, a, b, seeds)

    spearman = spearman_of(scores, down_boot)
    interval = "{estimate:+.2f} [95% interval {lo:+.2f}, {hi:+.2f}]"
    for match in ("pairs", "prompts"):
        versus = {c.removesuffix(" acc"): equal_size_spearman(scores, c, match, n_boot=n_boot, seed=seed,
                                                              down_boot=down_boot) - spearman(c) for c in COMPARATORS}
        verdict, closest, diff = all_of(versus, "greater", seed=seed)
        lo, hi = diff.interval(seed=seed)
        ledger.add(Claim(
            f"fig5-cheemsbench-best-equal-{match}", "", f"CheemsBench correlates more strongly with "
            f"downstream quality than other benchmarks, with CheemsBench cut to each one's number of {match}",
            kind="robustness", verdict=verdict, estimate=diff.value, ci_low=lo, ci_high=hi, n=diff.n, unit=diff.unit,
            seeds=seeds, direction="greater", link="paper-fig5",
            reason=f"fig5-cheemsbench-best at equal size: CheemsBench has far more prompts and compared pairs than "
                   f"the comparators, and a larger benchmark correlates better by its size alone; here it is cut to "
                   f"each comparator's {match} ({EQUAL_SIZE_DRAWS} random cuts averaged)",
            statistic=statistic(f"CheemsBench accuracy cut to the comparator's {match}", "each comparator"),
            says={"supported": f"Cut to each comparator's number of {match}, CheemsBench still correlates more "
                               f"strongly than every comparator; the closest, {closest}, by {interval}.",
                  "contradicted": f"Cut to {closest}'s number of {match}, CheemsBench correlates less strongly than "
                                  f"it: {interval}.",
                  "inconclusive": f"Cut to each comparator's number of {match}, CheemsBench minus {closest} is "
                                  f"{interval}, an interval that includes zero."}))
    annotated = "fig5-cheemsbench-best-annotated"
    if ANNOTATED_COMPARATORS[0] in scores.bench.columns:
        ledger.add(_control(cheemsbench_best_claim(spearman, statistic, seed, ANNOTATED_COMPARATORS), annotated,
                            "Against the comparators' annotated pairs only: ", ANNOTATED_REASON, seeds=seeds,
                            claim=CONTROL_CLAIMS[annotated]))
    else:
        ledger.add(Claim.untestable(annotated, "", CONTROL_CLAIMS[annotated], "the RewardBench-like "
                                    "comparator has no annotated pairs at this size", link="paper-fig5"))
    for id in [] if has_gpt else ["fig5-human-beats-gpt-length-controlled", "fig5-human-beats-gpt-judge-identity"]:
        ledger.add(Claim.untestable(id, "", CONTROL_CLAIMS[id], "the files hold no GPT-annotated copy of "
                                    "CheemsBench (cheems_bench_gpt/)", link="paper-fig5"))
    if has_gpt and not identity:
        ledger.add(Claim.untestable("fig5-human-beats-gpt-judge-identity", "",
                                    CONTROL_CLAIMS["fig5-human-beats-gpt-judge-identity"],
                                    "the GPT copy's annotator is not a simulated one here", link="paper-fig5"))
    if length_controlled:
        lc = scores.variant(length_controlled)
        lc_spearman, reason = spearman_of(lc, lc.prompt_boot(n_boot, seed)), (
            "the same claim with the task values length-controlled (best_of_n.length_controlled: the outcome's "
            "within-prompt linear dependence on log length removed), so a judge's length preference cannot carry it")
        ledger.add(_control(cheemsbench_best_claim(lc_spearman, statistic, seed),
                            "fig5-cheemsbench-best-length-controlled", "Length-controlled Best-of-N: ", reason,
                            seeds=seeds))
        if has_gpt:
            ledger.add(_control(human_beats_gpt_claim(lc_spearman, statistic, True, seed),
                                "fig5-human-beats-gpt-length-controlled", "Length-controlled Best-of-N: ", reason,
                                seeds=seeds))
    if identity and has_gpt:  # the judge-identity row
        same = scores.variant(identity)
        ledger.add(_control(
            human_beats_gpt_claim(spearman_of(same, same.prompt_boot(n_boot, seed)), statistic, True, seed),
            "fig5-human-beats-gpt-judge-identity", "With the MT-bench-like task graded by CheemsBench's own GPT "
            "annotator: ", "the old construction, kept as a sensitivity row: the MT-bench-like judge is CheemsBench's "
            "GPT annotator itself, so on that task the GPT copy is scored by its own annotator and the claim is "
            "decided by that identity as much as by the annotations",
            statistic=statistic("the human-annotated CheemsBench accuracy", "the GPT-annotated copy's")
            + "; the MT-bench-like task graded by CheemsBench's GPT annotator itself (same samples and picks)",
            seeds=seeds))


def _control(base, id: str, prefix: str, reason: str, **changes):
    """``base`` (a claim) as a *robustness* row: its id, a sentence prefix naming the variant, and why it is run; ``changes``
    (the population's training ``seeds`` among them: every training set has them all) replace other fields."""
    return replace(base, id=id, kind="robustness", reason=reason,
                   says={k: prefix + v for k, v in base.says.items()}, **changes)


ANNOTATED_REASON = ("fig5-cheemsbench-best without labels built in by how a pair was made: most RewardBench-like pairs "
                    "pit a strong policy against a weak one, a refusal against a harmful compliance or a right answer "
                    "against a wrong one, labels that follow the hidden utility by construction, so the main claim "
                    "could rest on them; here the comparators keep only the pairs an annotator or grader labelled "
                    "(the RewardBench-like close pairs, RMB's pairs and Best-of-N sets)")
"""Why ``fig5-cheemsbench-best-annotated`` is run (:func:`add_controls`)."""

CONTROL_CLAIMS = {
    "fig5-cheemsbench-best-annotated": "CheemsBench correlates more strongly with downstream quality than other "
                                       "benchmarks, against the comparators' annotated pairs only",
    "fig5-cheemsbench-best-equal-pairs": "CheemsBench correlates more strongly with downstream quality than other "
                                         "benchmarks, with CheemsBench cut to each one's number of pairs",
    "fig5-cheemsbench-best-equal-prompts": "CheemsBench correlates more strongly with downstream quality than other "
                                           "benchmarks, with CheemsBench cut to each one's number of prompts",
    "fig5-cheemsbench-best-length-controlled": "CheemsBench correlates more strongly with length-controlled downstream "
                                               "quality than other benchmarks",
    "fig5-human-beats-gpt-length-controlled": "The human-annotated benchmark correlates better with length-controlled "
                                              "downstream quality than its GPT-annotated copy",
    "fig5-human-beats-gpt-judge-identity": "The human-annotated benchmark correlates better with downstream quality than "
                                           "its GPT-annotated copy when the MT-bench-like judge is the copy's annotator",
}
"""The robustness rows of :func:`add_controls`, by id (listed as untestable where Fig. 5 cannot run)."""


def equal_size_table(scores: Scores, *, n_boot: int = 1000, seed: int = 0):
    """Per comparator: its size, and the Spearman correlation with downstream quality (task average, 95%
    interval) of CheemsBench at full size, cut to the comparator's prompts, cut to its compared pairs, and
    of the comparator itself."""
    import pandas as pd

    down_boot = scores.prompt_boot(n_boot, seed)

    def text(e):
        lo, hi = e.interval(seed=seed)
        return f"{e.value:.2f} [{lo:.2f}, {hi:.2f}]"

    def spearman(column):
        return task_average(scores.bench, scores.down, column, n_boot=n_boot, seed=seed, clusters=scores.clusters,
                            down_boot=down_boot)

    full = text(spearman("CheemsBench acc"))
    rows = [{"comparator": c.removesuffix(" acc"), "its prompts": scores.sizes[c]["prompts"],
             "its pairs": scores.sizes[c]["pairs"], "CheemsBench, full size": full,
             **{f"CheemsBench at its {m}": text(equal_size_spearman(scores, c, m, n_boot=n_boot, seed=seed,
                                                                    down_boot=down_boot)) for m in ("prompts", "pairs")},
             "the comparator": text(spearman(c))} for c in COMPARATORS]
    return pd.DataFrame(rows)


EQUAL_SIZE_DRAWS = 20
"""Random subsamples of CheemsBench averaged at each comparator's size (one subsample is noisy)."""


_SIZE_STREAM = zlib.crc32(b"equal size")


def cheemsbench_at_size(scores: Scores, *, prompts: int | None = None, pairs: int | None = None,
                        draws: int = EQUAL_SIZE_DRAWS, seed: int = 0) -> np.ndarray:
    """``(draws, models)``: CheemsBench accuracy (macro over categories, as its full-size column) on
    ``draws`` random subsamples of its prompts: ``prompts`` of them, or the fewest whose compared pairs
    reach ``pairs``. All draws come from one matrix of random orders (seeded), the same for every model.
    """
    correct, total, cats = scores.pairs
    if (prompts is None) == (pairs is None):
        raise ValueError("give prompts or pairs, not both")
    order = np.argsort(np.random.default_rng([seed, _SIZE_STREAM]).random((draws, total.size)), axis=1)
    if prompts is not None:
        take = np.arange(total.size)[None, :] < prompts
    else:
        before = np.cumsum(total[order], axis=1) - total[order]  # pairs taken before each prompt
        take = before < pairs
    chosen = np.zeros((draws, total.size))
    np.put_along_axis(chosen, order, take.astype(float), axis=1)
    per_cat = []
    for cat in sorted(set(cats.tolist())):
        m = cats == cat
        t = chosen[:, m] @ total[m]
        with np.errstate(invalid="ignore", divide="ignore"):
            per_cat.append(np.where(t[:, None] > 0, (chosen[:, m] @ correct[:, m].T) / t[:, None], np.nan))
    return np.nanmean(np.stack(per_cat), axis=0)


def equal_size_spearman(scores: Scores, comparator: str, match: str, *, n_boot: int = 1000, seed: int = 0,
                        down_boot: Mapping | None = None):
    """CheemsBench's Spearman correlation with downstream quality (task average) when cut to ``comparator``'s
    size (``match``: ``prompts`` or ``pairs``), averaged over :data:`EQUAL_SIZE_DRAWS` subsamples; the
    replicates are paired with every other :func:`cheems_lib.analyses.downstream_correlation.task_average` of the
    same seed."""
    import pandas as pd

    at = cheemsbench_at_size(scores, **{match: scores.sizes[comparator][match]}, seed=seed)
    bench = pd.DataFrame(at.T, index=scores.bench.index, columns=[f"draw {d}" for d in range(len(at))])
    per_draw = [task_average(bench, scores.down, c, n_boot=n_boot, seed=seed, clusters=scores.clusters,
                             down_boot=down_boot) for c in bench.columns]
    return Estimate(np.mean([e.point for e in per_draw], axis=0), np.nanmean([e.boot for e in per_draw], axis=0),
                    per_draw[0].n, per_draw[0].unit)
