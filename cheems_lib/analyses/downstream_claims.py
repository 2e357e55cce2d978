"""Fig. 5's claims (paper §6.2) as the chapter's modules share them: their texts, their statistic, and the two
main claims tested on any correlation.

Fig. 5's claims are tested on the population's correlations (:mod:`cheems_lib.analyses.downstream_correlation`),
again under controls (:mod:`cheems_lib.analyses.downstream_controls`), across the humans' shared noise and as
untestable rows where the population cannot run (:mod:`cheems_lib.analyses.downstream_robustness`). Each of those
modules builds its rows from here, so a claim reads the same wherever it appears:

- :data:`CHEEMSBENCH_BEST_CLAIM`, :data:`HUMAN_BEATS_GPT_CLAIM`, :data:`EVERY_TASK_CLAIM` and
  :data:`EVERY_TASK_QUOTE`: the claims' sentences and the paper's words;
- :func:`claim_statistic`: the sentence naming what a claim's estimate is, and :func:`resampled_units`, what its
  replicates resample;
- :func:`cheemsbench_best_claim` and :func:`human_beats_gpt_claim` test the two main claims on any Spearman
  correlation (the population's, length-controlled, re-annotated), and :func:`chinese_and_english_claim` is
  §6.2's reading across languages, untestable here.
"""
from __future__ import annotations

from typing import Sequence

from ..estimates import all_of, p_value, units_to_decide
from .claims import Claim
from .downstream_population import COMPARATORS, Scores

__all__ = ["CHEEMSBENCH_BEST_CLAIM", "HUMAN_BEATS_GPT_CLAIM", "EVERY_TASK_CLAIM", "EVERY_TASK_QUOTE",
           "claim_statistic", "resampled_units", "cheemsbench_best_claim", "human_beats_gpt_claim",
           "chinese_and_english_claim", "undecided_text"]


CHEEMSBENCH_BEST_CLAIM = "CheemsBench correlates more strongly with downstream quality than other benchmarks"
"""The claim of ``fig5-cheemsbench-best``."""


HUMAN_BEATS_GPT_CLAIM = ("The human-annotated benchmark correlates better with downstream quality than its "
                         "GPT-annotated copy")
"""The claim of ``fig5-human-beats-gpt``."""


EVERY_TASK_CLAIM = "CheemsBench correlates more strongly with each downstream task than every other benchmark"
"""The claim of ``fig5-cheemsbench-best-every-task``."""


EVERY_TASK_QUOTE = ('"Our benchmark exhibits significantly stronger correlations with downstream tasks compared to other '
                    'baselines, whether in Chinese or English tasks" (a plot without numbers)')
"""The paper's words behind ``fig5-cheemsbench-best-every-task`` and ``fig5-chinese-and-english-tasks``."""


_GPT_QUOTE = '"The benchmarks annotated by GPT demonstrate suboptimal correlation"'


_STATISTIC = ("Spearman correlation with downstream quality (averaged over the {tasks} tasks) of {a} minus that of {b}, "
              "across {n} reward models; paired bootstrap over {resampled} (each training set with its {k} training "
              "seeds)")


def claim_statistic(scores: Scores, a: str, b: str, seeds: int) -> str:
    """The statistic of a claim comparing ``a`` with ``b`` on ``scores`` (task-averaged Spearman correlations, paired
    over :func:`resampled_units`), each training set with ``seeds`` training seeds."""
    return _STATISTIC.format(tasks=" and ".join(scores.down.columns), a=a, b=b, n=len(scores.bench), k=seeds,
                             resampled=resampled_units(scores))


def resampled_units(scores: Scores) -> str:
    """What the claims' replicates resample: training sets, and the held-out prompts where the picks are known."""
    return "training sets" + (" and held-out prompts" if scores.picks is not None else "")


def cheemsbench_best_claim(spearman, statistic, seed: int, comparators: Sequence[str] = tuple(COMPARATORS)) -> Claim:
    """``fig5-cheemsbench-best``: CheemsBench's accuracy correlates more strongly than every independently built
    comparator (:func:`cheems_lib.estimates.all_of`). ``spearman(column)`` is a column's task-averaged Spearman
    correlation (:func:`cheems_lib.analyses.downstream_correlation.task_average`), ``statistic(a, b)`` the claim's
    statistic (:func:`claim_statistic`); ``comparators``: the comparator columns it is tested against."""
    versus = {c.removesuffix(" acc"): spearman("CheemsBench acc") - spearman(c) for c in comparators}
    verdict, closest, diff = all_of(versus, "greater", seed=seed)
    lo, hi = diff.interval(seed=seed)
    others = ", ".join(versus)
    interval = "{estimate:+.2f} [95% interval {lo:+.2f}, {hi:+.2f}]"
    return Claim(
        "fig5-cheemsbench-best", "", CHEEMSBENCH_BEST_CLAIM,
        kind="finding", verdict=verdict, estimate=diff.value, ci_low=lo, ci_high=hi, n=diff.n, unit=diff.unit,
        p=p_value(diff, "greater", seed=seed), direction="greater", link="paper-fig5",
        statistic=statistic("CheemsBench accuracy", f"each comparator ({others})")
        + "; the estimate is the comparison that decides the verdict",
        paper='"Our benchmark exhibits significantly stronger correlations with downstream tasks compared to other '
              'baselines" (a plot without numbers)',
        says={"supported": f"CheemsBench's accuracy correlates more strongly with downstream quality than every "
                           f"independently simulated comparator ({others}); the closest, {closest}, by "
                           "{estimate:.2f} [95% interval {lo:.2f}, {hi:.2f}] in Spearman correlation.",
              "contradicted": f"{closest} correlates more strongly with downstream quality than CheemsBench's "
                              f"accuracy: the difference in Spearman correlation (CheemsBench minus it) is {interval}.",
              "inconclusive": f"CheemsBench's accuracy does not correlate more strongly than every comparator by a "
                              f"paired interval: against {closest} the Spearman correlations with downstream quality "
                              f"differ by {interval}, an interval that includes zero, so this run cannot tell which "
                              "correlates more strongly."})


def human_beats_gpt_claim(spearman, statistic, has_gpt: bool, seed: int) -> Claim:
    """``fig5-human-beats-gpt``: the human-annotated CheemsBench correlates better than its GPT-annotated copy
    (untestable without one, ``has_gpt`` False); ``spearman`` and ``statistic`` as :func:`cheemsbench_best_claim`'s."""
    if not has_gpt:
        return Claim("fig5-human-beats-gpt", "", HUMAN_BEATS_GPT_CLAIM, kind="untestable",
                     verdict="inconclusive", link="paper-fig5", paper=_GPT_QUOTE,
                     reason="the files hold no GPT-annotated copy of CheemsBench (cheems_bench_gpt/)",
                     says={"inconclusive": "The files hold no GPT-annotated copy of CheemsBench, so the human-annotated "
                                           "benchmark cannot be compared with one here."})
    interval = "{estimate:+.2f} [95% interval {lo:+.2f}, {hi:+.2f}]"
    return Claim.test(
        "fig5-human-beats-gpt", spearman("CheemsBench acc") - spearman("CheemsBench GPT acc"), "greater", seed=seed,
        paper_ref="", kind="finding", link="paper-fig5", claim=HUMAN_BEATS_GPT_CLAIM,
        statistic=statistic("the human-annotated CheemsBench accuracy", "the GPT-annotated copy's")
        + "; every downstream judge is drawn independently of the benchmark's annotators (the MT-bench-like judge "
          "from the GPT-like ranges, on a stream of its own)",
        paper=_GPT_QUOTE,
        says={"supported": "The human-annotated CheemsBench correlates better with downstream quality than its "
                           "GPT-annotated copy: the Spearman correlation is higher by {estimate:.2f} "
                           "[95% interval {lo:.2f}, {hi:.2f}].",
              "contradicted": "The GPT-annotated copy correlates better with downstream quality than the "
                              f"human-annotated CheemsBench: the difference in Spearman correlation is {interval}.",
              "inconclusive": "The Spearman correlations of the human-annotated CheemsBench and of its GPT-annotated "
                              f"copy with downstream quality differ by {interval}: the interval includes zero, so "
                              "this run cannot tell which correlates better."})


def chinese_and_english_claim() -> Claim:
    """§6.2's "whether in Chinese or English tasks": untestable, the simulated world has one language."""
    return Claim.untestable(
        "fig5-chinese-and-english-tasks", "", "CheemsBench's advantage holds on the Chinese (win rate, "
        "MT-bench-zh) and on the English (MT-bench) tasks alike", "the simulated world writes one language: its "
        "MT-bench-like task is not an English task, so the language of a task cannot vary here (each task alone is "
        "fig5-cheemsbench-best-every-task)", link="paper-fig5", paper=EVERY_TASK_QUOTE)


def undecided_text(claim: Claim | None, n_sets: int) -> str:
    """One sentence when ``claim`` (a Fig. 5 claim over ``n_sets`` training sets) is inconclusive: that this many
    sets cannot decide it, and about how many would at the observed effect
    (:func:`cheems_lib.estimates.units_to_decide`); else that it decides it.

    >>> c = Claim("fig5-x", "", "x", "finding", "inconclusive", estimate=0.01, ci_low=-0.01, ci_high=0.03)
    >>> undecided_text(c, 15)
    'With 15 training sets this run cannot decide it: at the observed effect about 60 would.'
    """
    if claim is None:
        return "The claim was not tested."
    if claim.verdict != "inconclusive":
        return f"With {n_sets} training sets this run decides it."
    n = units_to_decide(claim.estimate, claim.ci_low, claim.ci_high, n_sets, claim.direction or "greater")
    more = f"at the observed effect about {n:,} would" if n else "no number of them would at the observed effect"
    return f"With {n_sets} training sets this run cannot decide it: {more}."
