"""The dataset construction ablation (paper §6.3, Table 4): which steps of building CheemsPreference help.

Table 4 trains one reward model per training set of
:data:`cheems_lib.distant_supervision.ABLATION` (the human subset, the GPT subset, each
processing step and both, and CheemsPreference) and reads off, row against row, what the
steps buy. Here each row is trained with several training seeds
(:func:`cheems_lib.analyses.experiments.table4_sets`, :func:`cheems_lib.analyses.experiments.evaluate`), and:

- :func:`beside_paper` sets our accuracies and Overall beside the paper's;
- :func:`cheems_lib.publishing.figures.overall_dots` draws each row's Overall per seed, its mean and interval;
- :func:`add_claims` tests the paper's claims on a :class:`cheems_lib.analyses.claims.Ledger`: one
  paired comparison per direction Table 4 shows (:data:`DIRECTIONS`), "CheemsPreference is
  the best" by :func:`cheems_lib.estimates.best_of`, the RewardBench claims (the human subset's
  weakness there tested on the RewardBench-like comparator of :mod:`cheems_lib.world.comparators`; the
  open RewardBench models untestable) and the abstract's CheemsRM claims (untestable).

For the preference chapter, which builds the sets: :func:`add_cycle_claim` records §4.2's "consistent
partial order" (no cycle, a conflict ratio of 0, after distant supervision) as a *structural* claim, and
:func:`length_balance` and :func:`plot_length_balance` show what length debiasing does to the chosen-longer
and chosen-shorter groups.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..baselines import CHANCE, null_controls
from ..distant_supervision import ABLATION
from ..estimates import VERDICTS, best_of, p_value
from ..world import comparators
from . import experiments
from .calibration import paper_gpt_human_ratio
from .claims import Claim
from .leaderboard import CONTROLS_SECTION, interval_cell, INTERVAL_SAYS as tmpl, leaderboard_frame

__all__ = ["Rows", "evaluate_rows", "gap_sentence", "PAPER_COLUMNS", "DIRECTIONS", "BEST_CLAIM", "best_rivals", "NO_REWARDBENCH", "paper_pair", "ratio_text", "beside_paper", "add_claims",
           "add_cycle_claim", "length_balance", "plot_length_balance"]

PAPER_COLUMNS = ["paper open acc", "paper human acc", "paper overall"]
"""The columns of :func:`beside_paper` that hold the paper's numbers (data/paper/table4_ablation.csv)."""

_HUMAN, _GPT, _LENGTH, _DISTANT, _ALL, _COMBINED = ABLATION
DIRECTIONS = (
    ("tab4-human-beats-gpt", _HUMAN, _GPT),
    ("tab4-length-debias-helps", _LENGTH, _GPT),
    ("tab4-distant-supervision-helps", _DISTANT, _GPT),
    ("tab4-all-strategies-beat-ds", _ALL, _DISTANT),
    ("tab4-all-strategies-beat-ld", _ALL, _LENGTH),
    ("tab4-combined-beats-human", _COMBINED, _HUMAN),
    ("tab4-combined-beats-processed-gpt", _COMBINED, _ALL),
)
"""Table 4's direction claims ``(claim id, a, b)``: row ``a`` scores a higher Overall than row ``b`` (each claim's words
are its registry entry's ``statement``, :mod:`cheems_lib.analyses.claim_registry`)."""


def beside_paper(results: Mapping[str, list[dict]], paper, *, seed: int = 0,
                 bench: Mapping[str, Sequence] | None = None):
    """One row per training set of ``results`` (in its order): its seeds, and per metric the paper's
    value beside ours as "mean [95% interval]". ``paper`` is Table 4 indexed by ``training_data``. With the
    benchmark's subsets ``bench``, the null controls follow in their own section
    (:func:`cheems_lib.baselines.null_controls`: point values; the paper's columns ``–``, it reports none)."""
    import pandas as pd

    ours = leaderboard_frame(results, seed=seed).set_index("model").loc[list(results)]

    def cell(name, col):
        return interval_cell(ours.loc[name], col)

    rows = [{"section": "training data (ours)", "training data": name, "seeds": int(ours.loc[name, "seeds"]),
             "paper open acc": paper.loc[name, "open_acc"], "ours open acc": cell(name, "open_acc"),
             "paper human acc": paper.loc[name, "human_acc"], "ours human acc": cell(name, "human_acc"),
             "paper overall": paper.loc[name, "overall"], "ours overall": cell(name, "overall")} for name in results]
    if bench and {"open", "human"} <= set(bench):
        nulls = null_controls({s: bench[s] for s in ("open", "human")}, seed=seed)
        for name, g in nulls[nulls["category"] == ""].set_index("subset").groupby("control", sort=False):
            exact = " (exact)" if name == CHANCE else ""
            overall = float(((g["accuracy"] + g["exact_match"]) / 2).mean())
            rows.append({"section": CONTROLS_SECTION, "training data": name, "seeds": "–", "paper open acc": "–",
                         "ours open acc": f"{g.loc['open', 'accuracy']:.3f}{exact}", "paper human acc": "–",
                         "ours human acc": f"{g.loc['human', 'accuracy']:.3f}{exact}", "paper overall": "–",
                         "ours overall": f"{overall:.3f}{exact}"})
    return pd.DataFrame(rows)


def paper_pair(paper, a: str, b: str) -> str:
    """The paper's Overall of Table 4's rows ``a`` and ``b`` (``paper`` indexed by ``training_data``), as a claim's
    ``paper`` field."""
    return f"Overall {paper.loc[a, 'overall']:.3f} ({a}) vs {paper.loc[b, 'overall']:.3f} ({b})"


def ratio_text(prompts: Mapping[str, int] | None) -> str:
    """The GPT : human training ratio of Table 4's first comparison (``prompts``: row -> training prompts), beside
    the paper's (Table 1, :func:`cheems_lib.analyses.calibration.paper_gpt_human_ratio`); empty without ``prompts``."""
    if not prompts:
        return ""
    return (f"; trained at GPT : human prompts {prompts[_GPT]:,} : {prompts[_HUMAN]:,} = "
            f"{prompts[_GPT] / prompts[_HUMAN]:.2f} : 1, the paper's {paper_gpt_human_ratio():.2f} : 1 (the "
            "sensitivity chapter sweeps the ratio)")


def _add_directions(ledger, overall: Mapping[str, object], paper, seed: int,
                    prompts: Mapping[str, int] | None = None) -> None:
    for cid, a, b in DIRECTIONS:  # direction, words and sentences: the registry's (claim_registry, claims.claim_sentences)
        ratio = ratio_text(prompts) if cid == DIRECTIONS[0][0] else ""
        ledger.add(Claim.test(cid, overall[a] - overall[b], seed=seed, statistic=f"Overall of {a} minus {b}, paired{ratio}",
                              paper=paper_pair(paper, a, b), link="paper-table4"))


def _add_rewardbench(ledger, paper, rewardbench: Mapping | None, why: str, seed: int) -> None:
    """The claims about RewardBench: its open reward models (untestable: not in the simulated world); the human
    subset weaker on RewardBench than CheemsPreference, tested on the RewardBench-like comparator when
    ``rewardbench`` (row -> accuracy Estimate on it, paired) is given, else untestable with ``why``; and the
    abstract's CheemsRM claims (untestable)."""
    rb_rows = [n for n in paper.index if n.startswith("RewardBench@")]
    ledger.add(Claim(
        "tab4-beats-rewardbench-rms", "", "a reward model trained on CheemsPreference beats the best open "
        "reward models of RewardBench on CheemsBench", "untestable", "inconclusive",
        reason="those rows are open 27B and 70B reward models trained on real English data, which the simulated world "
               "does not contain", paper=paper_pair(paper, _COMBINED, rb_rows[0]), link="paper-table4",
        says={v: "Whether CheemsPreference beats the open RewardBench reward models cannot be tested here: they are "
                 "not part of the simulated world." for v in VERDICTS}))
    rb_paper = (f"RewardBench {paper.loc[_HUMAN, 'rewardbench']:.3f} ({_HUMAN}) vs "
                f"{paper.loc[_COMBINED, 'rewardbench']:.3f} ({_COMBINED})")
    weak = dict(paper_ref="", claim="the human subset alone scores lower on RewardBench than "
                "CheemsPreference", paper=rb_paper, link="paper-table4")
    if rewardbench is None:
        ledger.add(Claim.untestable("tab4-human-weak-on-rewardbench", reason=why, **weak))
    else:
        from .leaderboard import INTERVAL_SAYS as tmpl

        ledger.add(Claim.test(
            "tab4-human-weak-on-rewardbench", rewardbench[_HUMAN] - rewardbench[_COMBINED], "less", seed=seed,
            kind="finding", **weak,
            statistic=f"accuracy on the RewardBench-like comparator (cheems_lib.world.comparators.rewardbench_like: its own "
                      f"prompts, policies and annotator panel) of {_HUMAN} minus {_COMBINED}, paired",
            says={"supported": f"On the RewardBench-like comparator, {_HUMAN} alone is less accurate than {_COMBINED}, as "
                               f"in the paper: {tmpl}.",
                  "contradicted": f"On the RewardBench-like comparator, {_HUMAN} alone is more accurate than "
                                  f"{_COMBINED}, unlike the paper: {tmpl}.",
                  "inconclusive": f"On the RewardBench-like comparator, {_HUMAN} and {_COMBINED} are not separated: "
                                  f"{tmpl}."}))
    _add_cheemsrm(ledger)


def _add_cheemsrm(ledger) -> None:
    """The abstract's and introduction's claims about CheemsRM (the paper's 72B reward model), untestable here."""
    why = ("no CheemsRM: the paper's reward model, Qwen2.5-72B-Instruct trained on the real CheemsPreference, is not "
           "part of these files, and tiny models trained on a simulated world cannot stand for it against Table 8's "
           "real models")
    ledger.add(Claim.untestable(
        "abs-cheemsrm-state-of-the-art", "", "a reward model trained on CheemsPreference "
        "(CheemsRM) achieves state-of-the-art performance on CheemsBench", why, link="paper-table4",
        paper='"based on CheemsPreference, we construct an RM that achieves state-of-the-art performance on CheemsBench"'))
    ledger.add(Claim.untestable(
        "abs-cheemsrm-good-on-rewardbench", "", "CheemsRM performs well on the English RewardBench", why,
        link="paper-table4", paper='"achieving state-of-the-art results on CheemsBench and performing well on the '
                                   'English RewardBench"'))


BEST_CLAIM = ("human + processed GPT (CheemsPreference) is the best training set: it also beats the rows no other "
              "claim compares it with")
"""``tab4-combined-best``: CheemsPreference against the rows that :data:`DIRECTIONS` does not compare it with, so that
no comparison is tested (and counted) twice; "best" holds when this and those two claims are all supported."""


def best_rivals() -> list[str]:
    """The rows ``tab4-combined-best`` compares CheemsPreference with: every other row of Table 4's ablation except
    those a claim of :data:`DIRECTIONS` already compares it with.

    >>> best_rivals()
    ['GPT subset', 'GPT subset w/ length debiasing', 'GPT subset w/ distant supervision']
    """
    compared = {b for _, a, b in DIRECTIONS if a == _COMBINED}
    return [n for n in ABLATION if n != _COMBINED and n not in compared]


def _add_best(ledger, overall: Mapping[str, object], paper, seed: int) -> None:
    """CheemsPreference beats each row of :func:`best_rivals` only if its paired interval beats that row's."""
    rows = {n: e for n, e in overall.items() if n == _COMBINED or n in best_rivals()}
    verdict, diff = best_of(rows, _COMBINED, seed=seed)
    rival = min((n for n in rows if n != _COMBINED), key=lambda n: (overall[_COMBINED] - overall[n]).value)
    lo, hi = diff.interval(seed=seed)
    paper_rival = paper.loc[best_rivals(), "overall"].idxmax()
    ledger.add(Claim(
        "tab4-combined-best", "", BEST_CLAIM,
        "finding", verdict, estimate=diff.value, ci_low=lo, ci_high=hi, seeds=diff.seeds, n=diff.n, unit=diff.unit,
        p=p_value(diff, "greater", seed=seed), direction="greater",
        statistic=f"Overall of {_COMBINED} minus the closest of {', '.join(best_rivals())} ({rival}), paired; it beats "
                  "them only if it beats each",
        paper=f"{paper_pair(paper, _COMBINED, paper_rival)}, the best of those rows", link="paper-table4",
        says={"supported": f"{_COMBINED} beats every other row by paired intervals; the closest, {rival}, by {tmpl}.",
              "contradicted": f"{_COMBINED} is not the best: at least one row beats it by a paired interval "
                              f"(closest difference, to {rival}: {tmpl}).",
              "inconclusive": f"{_COMBINED} is not separated from every other row: its paired difference to {rival} "
                              f"is {tmpl}."}))


NO_REWARDBENCH = ("needs the RewardBench-like comparator (cheems_lib.world.comparators.rewardbench_like), which is simulated "
                  "and so comparable only with reward models trained on a simulated world")
"""Why ``tab4-human-weak-on-rewardbench`` is untestable on real files."""


def add_claims(ledger, overall: Mapping[str, object], paper, *, seed: int = 0, rewardbench: Mapping | None = None,
               why_no_rewardbench: str = NO_REWARDBENCH, prompts: Mapping[str, int] | None = None) -> dict[str, int]:
    """Add Table 4's claims to ``ledger``; count the ledger's tested claims: ``{"n_claims_supported", "n_claims"}``.

    ``overall`` maps each row of :data:`~cheems_lib.distant_supervision.ABLATION` to its Overall
    :class:`~cheems_lib.estimates.Estimate` (all paired); ``paper`` is Table 4 indexed by ``training_data``.
    ``rewardbench`` maps the rows to their accuracy on the RewardBench-like comparator (paired; None on
    real files: the RewardBench claim is then untestable with ``why_no_rewardbench``). ``prompts`` (row ->
    training prompts) puts the GPT : human ratio of the first comparison beside the paper's (:func:`ratio_text`).
    """
    _add_directions(ledger, overall, paper, seed, prompts)
    _add_rewardbench(ledger, paper, rewardbench, why_no_rewardbench, seed)
    _add_best(ledger, overall, paper, seed)
    tested = [c for c in ledger.claims.values() if c.kind == "finding"]
    return {"n_claims_supported": sum(c.verdict == "supported" for c in tested), "n_claims": len(tested)}


def add_untestable_claims(ledger, paper, reason: str) -> dict[str, int]:
    """Table 4's claims when the files cannot build the ablation (e.g. ``reason="needs
    cheems_preference/human.jsonl"``): every claim *untestable* with ``reason``; counts as :func:`add_claims`."""
    for cid, a, b in DIRECTIONS:
        ledger.add(Claim.untestable(cid, "", "", reason, paper=paper_pair(paper, a, b),
                                    link="paper-table4"))
    _add_rewardbench(ledger, paper, None, reason, 0)
    ledger.add(Claim.untestable("tab4-combined-best", "", BEST_CLAIM, reason, link="paper-table4"))
    return {"n_claims_supported": 0, "n_claims": 0}


def add_cycle_claim(ledger, report: Mapping | None, *, reason: str = "") -> None:
    """§4.2: after distant supervision the GPT annotations have "a consistent partial order": no directed
    cycle and a conflict ratio of 0 in :func:`cheems_lib.distant_supervision.filter_by_reward`'s ``report``.
    *structural*: comparisons that all agree with one scoring cannot form a cycle, so the count checks the code,
    not the paper; *contradicted* would be a bug. ``report`` None: untestable with ``reason``."""
    fields = dict(paper_ref="", link="tab-preference-distant-supervision",
                  claim="after distant supervision the GPT annotations have no cycles (a consistent partial order)",
                  paper='"we employ an RM trained on human-annotated data to filter these annotations and establish a '
                        'consistent partial order"')
    if report is None:
        ledger.add(Claim.untestable("s42-no-cycles-after-ds", reason=reason, **fields))
        return
    ratio, cycles = float(report["conflict_ratio_after"]), int(report["cycles_after"])
    before = f"{report['cycles_before']:,} cycles in {report['prompts_with_cycles_before']:,} prompts before filtering"
    ledger.add(Claim(
        "s42-no-cycles-after-ds", verdict="supported" if ratio == 0 and cycles == 0 else "contradicted", kind="structural",
        estimate=ratio, n=int(report["prompts"]), **fields,
        reason="kept comparisons all agree with one reward model's scores, and such comparisons cannot form a cycle "
               "(a theorem); the count tests the code",
        statistic="conflict ratio of the GPT subset after distant supervision (Table 5's statistic), and its cycles",
        says={"supported": f"After distant supervision the GPT subset has no cycle and a conflict ratio of "
                           f"{{estimate:.3f}} ({before}), as §4.2 says.",
              "contradicted": f"After distant supervision the GPT subset still has {cycles:,} cycles, a conflict "
                              f"ratio of {{estimate:.3f}} ({before}): a bug, since kept comparisons agree with one "
                              "scoring."}))


def length_balance(reports: Mapping[str, dict]):
    """Chosen-longer and chosen-shorter counts before and after debiasing, for the GPT subset alone
    and after distant supervision: one row per data and moment, from :func:`cheems_lib.distant_supervision.ablation`'s reports."""
    import pandas as pd

    rows = []
    for data, key in (("GPT subset", "length_debias_only"), ("after distant supervision", "length_debias")):
        for when in ("before", "after"):
            rows.append({"data": data, "when": when, "chosen longer": reports[key][f"chosen_longer_{when}"],
                         "chosen shorter": reports[key][f"chosen_shorter_{when}"]})
    return pd.DataFrame(rows)


def plot_length_balance(balance):
    """Bars of :func:`length_balance`: one panel per data, before and after, longer (blue) and shorter (orange)."""
    import seaborn as sns

    long = balance.melt(id_vars=["data", "when"], var_name="group", value_name="comparisons")
    grid = sns.catplot(long, x="when", y="comparisons", hue="group", col="data", kind="bar", height=3.2, aspect=1.2,
                       palette=["#4e79a7", "#f28e2b"])
    return grid.figure


@dataclass
class Rows:
    """Table 4's rows as the chapter evaluates them (:func:`evaluate_rows`)."""

    family: Any  # the experiments.Family of the training sets
    results: dict  # training set -> per-seed benchmark results
    overall: dict  # training set -> its Overall Estimate
    rewardbench: dict | None  # training set -> its accuracy Estimate on the RewardBench-like comparator (simulated only)

    @property
    def prompts(self) -> dict[str, int]:
        """Each training set's prompts (its records, one per prompt), by row: the ``prompts`` of :func:`add_claims`."""
        return {name: len(records) for name, records in self.family.sets.items()}


def evaluate_rows(world, variants: Mapping[str, Sequence], *, seeds: Sequence[int], epochs: int, n_boot: int = 1000,
                  seed: int = 0) -> Rows:
    """Each training set of ``variants`` trained over ``seeds`` and evaluated on the benchmark, and on the
    RewardBench-like comparator where the world is simulated (a simulated comparator only beside a simulated world)."""
    family = experiments.Family(variants, seeds=tuple(seeds), epochs=epochs, group="Table 4")
    results = experiments.evaluate(family, world, n_boot=n_boot, seed=seed)
    overall = {name: experiments.estimate(results, name) for name in variants}
    on_rewardbench = None
    if world.simulated:
        rewardbench = comparators.rewardbench_like(seed, length_scale=world.length_scale,
                                                   exclude={r.prompt for r in world.bench_records})
        rb_results = experiments.evaluate(family, world, n_boot=n_boot, seed=seed, progress=False,
                                          records={"RewardBench-like": rewardbench.sets["pairs"]})
        on_rewardbench = {name: experiments.estimate(rb_results, name, "accuracy") for name in variants}
    return Rows(family, results, overall, on_rewardbench)


def gap_sentence(overall: Mapping, table4) -> str:
    """How far this run's Overall rows lie from the paper's Table 4 (``table4`` indexed by training set)."""
    gaps = [abs(overall[n].value - float(table4.loc[n, "overall"])) for n in overall if n in table4.index]
    if not gaps:
        return "this run has no Overall rows to set beside the paper's"
    return (f"this run's Overall rows lie within {max(gaps):.3f} of the paper's (at most; {statistics.median(gaps):.3f} "
            "typically)")
