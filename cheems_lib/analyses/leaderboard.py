"""Leaderboards: many scorers on the benchmark subsets, with intervals, sorted like Table 2.

The one implementation: :func:`evaluate_scores` evaluates each model's scores (one mapping,
or one per training seed) on every subset with :func:`cheems_lib.metrics.evaluate_subset`
(bootstrap over prompts); :func:`leaderboard_frame` turns such results into one row per model:
accuracy and exact match per subset and Overall, means over seeds with 95% intervals.
:func:`leaderboard_text` is the plain-text table of ``cheems evaluate`` with several score files. :func:`category_accuracy` is per-category accuracy
as a long table without intervals, for one's own score files.

The evaluation chapter (Table 2, Fig. 4, §6.1) is built from the rest: :func:`score_models`
scores real reward models, :func:`table2_as_shown` is the table as shown (the models ranked, then the null
controls of :mod:`cheems_lib.baselines` in their own section, never ranked with them, with the exact chance),
:func:`category_table` is Fig. 4 as a table with the same controls per category, :func:`baseline_sentence` and
:func:`judge_sentence` say whether the best trained model beats the baselines and whether the
judge beats the random baseline, :func:`add_findings` tests §6.1's three findings (the first on the
RewardBench-like comparator's mid-vs-mid sections as the finding, and on all of it as a *structural* claim: its
strong-vs-weak sections are easy by construction, :func:`rewardbench_design`), and
:func:`category_estimates` and :func:`category_figure` are Fig. 4, and :func:`add_category_claims`
tests §6.1's reading of it category by category. The counts of "the models of Table 8" leave out the
CSV's row copied from Table 2 (:func:`table8_models`).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..baselines import CHANCE, chance_metrics, CONTROLS, named_scores, NAMES, null_controls
from ..estimates import best_of, category_estimate, decide, INSUFFICIENT, insufficient, insufficient_text, mean_of, subset_estimate
from ..metrics import evaluate_subset
from ..models.reward_model import load, placement_for
from ..models.scoring import score_records
from ..publishing.figures import seed_dots
from ..records import Record
from ..world.comparators import declared_mix, REWARDBENCH_SECTIONS, STRONG, WEAK
from ..world.corpus import CATEGORIES, DETERMINISTIC
from .claims import Claim

__all__ = ["evaluate_scores", "leaderboard_frame", "leaderboard_text", "category_accuracy", "baseline_scores",
           "score_models", "TABLE2_COLUMNS", "INTERVAL_SAYS", "interval_cell", "interval_text", "table2_as_shown",
           "MODELS_SECTION", "CONTROLS_SECTION", "EXACT_NOTE", "category_table", "prose_values",
           "baseline_sentence", "judge_sentence",
           "deterministic_label", "add_findings", "TABLE2_ONLY", "table8_models", "FIG4_CLAIMS", "add_category_claims",
           "category_estimates", "category_figure", "BUILT_IN_BUILDS", "MID_PAIRS_ID", "rewardbench_design"]


def baseline_scores(records: Sequence[Record], *, seed: int = 0) -> dict[str, dict]:
    """The three baselines every table shows (random, longest and shortest response), by their CLI names."""
    return {name: named_scores(name, records, seed=seed) for name in NAMES}


def evaluate_scores(scores_by_model: Mapping[str, Mapping | Sequence[Mapping]], subsets: Mapping[str, Sequence[Record]], *,
                    n_boot: int = 1000, seed: int = 0) -> dict[str, list[dict]]:
    """``{name: [{subset: SubsetResult} per seed]}`` from scores: per model one scores mapping (a
    baseline, a judge, a real model: one seed) or a list of them (one per training seed, as
    :func:`cheems_lib.analyses.experiments.score_family` gives). Bootstrapped with ``seed``, so every
    model's results are paired."""
    out = {}
    for name, scores in scores_by_model.items():
        per_seed = [scores] if isinstance(scores, Mapping) else list(scores)
        out[name] = [{sub: evaluate_subset(recs, sc, n_boot=n_boot, seed=seed) for sub, recs in subsets.items()}
                     for sc in per_seed]
    return out


def leaderboard_frame(results: Mapping[str, list[dict]], *, seed: int = 0):
    """One row per model of :func:`evaluate_scores` results: mean over seeds of each subset's
    accuracy and exact match and of Overall, with hierarchical 95% intervals (``_lo``/``_hi``)
    and the number of seeds; sorted by Overall."""
    import pandas as pd

    rows = []
    for name, per_seed in results.items():
        row: dict[str, Any] = {"model": name, "seeds": len(per_seed)}
        subsets = list(per_seed[0])
        columns = [(f"{s}_acc", "accuracy", [s]) for s in subsets] + [(f"{s}_exact", "exact_match", [s]) for s in subsets]
        for col, metric, subs in columns + [("overall", "overall", subsets)]:
            est = subset_estimate(per_seed, metric, subs)
            row[col] = est.value
            # too few prompts, or no width: no 95% interval (the one rule, estimates.insufficient)
            none = insufficient(est, seed=seed)
            row[f"{col}_lo"], row[f"{col}_hi"] = (float("nan"),) * 2 if none else est.interval(seed=seed)
        rows.append(row)
    return pd.DataFrame(rows).sort_values("overall", ascending=False, ignore_index=True)


def leaderboard_text(per_model: Mapping[str, Mapping], subsets: Sequence[str]) -> str:
    """Plain-text leaderboard of ``cheems evaluate`` JSON (``{model: {subset: {...}, "overall": x}}``):
    accuracy and exact match per subset (and Overall with two or more subsets), sorted by
    Overall (or, with one subset, its accuracy), ties in the given order."""
    several = len(subsets) >= 2
    key = (lambda kv: kv[1].get("overall", 0)) if several else (lambda kv: kv[1][subsets[0]]["accuracy"])
    head = ["model"] + [f"{s} {m}" for s in subsets for m in ("acc", "exact")] + (["overall"] if several else [])
    rows = [[name] + [f"{res[s][m]:.3f}" for s in subsets for m in ("accuracy", "exact_match")]
            + ([f"{res['overall']:.3f}"] if several else [])
            for name, res in sorted(per_model.items(), key=key, reverse=True)]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    fmt = lambda row: "  ".join(str(x).ljust(w) for x, w in zip(row, widths))
    return "\n".join([fmt(head), fmt(["-" * w for w in widths]), *map(fmt, rows)])


def category_accuracy(subsets: Mapping[str, Sequence[Record]], scores_by_model: Mapping[str, Mapping]):
    """Long table (model, subset, category, accuracy, prompts): the data of Fig. 4."""
    import pandas as pd

    rows = []
    for name, scores in scores_by_model.items():
        for sub, recs in subsets.items():
            res = evaluate_subset(recs, scores, n_boot=0)
            for cat, v in res.by_category.items():
                rows.append({"model": name, "subset": sub, "category": cat, "accuracy": v["accuracy"],
                             "prompts": v["prompts"]})
    return pd.DataFrame(rows)


def score_models(names: Sequence[str], record_sets: Sequence[Sequence[Record]], *, device: str | None = None,
                 dtype=None, batch_size: int = 16, device_map=None) -> list[dict[str, dict]]:
    """Scores of reward models given by hub name or path, one ``{name: scores}`` per record set
    (each model is loaded once and scores every set). A model loads straight onto ``device`` (the CPU by
    default), or with ``device_map`` (``"auto"``: spread over the devices, for one too large for a device)."""
    out: list[dict[str, dict]] = [{} for _ in record_sets]
    for name in names:
        model, tok = load(name, dtype=dtype, device_map=device_map or placement_for(name, device or "cpu", dtype))
        for scores, records in zip(out, record_sets):
            scores[name], _ = score_records(model, tok, records, batch_size=batch_size)
    return out


TABLE2_COLUMNS = (("open_acc", "Open Prompt acc."), ("open_exact", "Open Prompt exact"),
                  ("human_acc", "Human Instr. acc."), ("human_exact", "Human Instr. exact"), ("overall", "Overall"))
"""The :func:`leaderboard_frame` columns Table 2 shows, with their titles."""
INTERVAL_SAYS = "{estimate:.3f} [{lo:.3f}, {hi:.3f}] (95% interval; training seeds: {seeds})"
"""How a claim sentence quotes its estimate (a ``Claim.says`` fragment)."""


def interval_cell(row, column: str) -> str:
    """``value [lo, hi]`` (three decimals) of one :func:`leaderboard_frame` row's ``column``; the value alone
    where the data give no 95% interval (too few prompts, or one of no width)."""
    if row[column + "_lo"] != row[column + "_lo"]:  # NaN
        return f"{row[column]:.3f}"
    return f"{row[column]:.3f} [{row[column + '_lo']:.3f}, {row[column + '_hi']:.3f}]"


def interval_text(frame, column: str) -> list[str]:
    """:func:`interval_cell` for each row of a :func:`leaderboard_frame` column."""
    return [interval_cell(row, column) for _, row in frame.iterrows()]


MODELS_SECTION = "reward models (ranked by Overall)"
CONTROLS_SECTION = "null controls (not ranked)"
"""The two sections of every accuracy table: the models, ranked, and the null controls
(:data:`cheems_lib.baselines.CONTROLS`) below them, never ranked with them."""
EXACT_NOTE = ("–: the chance row is an exact expectation (cheems_lib.baselines.chance_level), "
              "so it has no seeds and no interval")
"""What a ``–`` in a table's chance row means; the captions say it."""


def _titles(subsets: Sequence[str]) -> list[tuple[str, str]]:
    """The shown columns for ``subsets``: Table 2's titles for its subsets, ``<subset> acc.``/``exact`` otherwise."""
    known = dict(TABLE2_COLUMNS)
    cols = [(f"{s}_{m}", known.get(f"{s}_{m}", f"{s} {'acc.' if m == 'acc' else 'exact'}"))
            for s in subsets for m in ("acc", "exact")]
    return cols + [("overall", "Overall")]


def _control_kind(name: str) -> str:
    """A null control's kind in a table: ``null control: pick-longest``, ..."""
    return f"null control: {CONTROLS[name]}"


def _chance_row(subsets: Mapping[str, Sequence[Record]]) -> dict:
    """The exact chance of ``subsets`` (:func:`cheems_lib.baselines.chance_metrics`) as a shown row."""
    chance = {s: chance_metrics(recs) for s, recs in subsets.items()}
    values = {f"{s}_{m}": c[key] for s, c in chance.items() for m, key in (("acc", "accuracy"), ("exact", "exact_match"))}
    values["overall"] = float(np.mean([(c["accuracy"] + c["exact_match"]) / 2 for c in chance.values()]))
    row = {"section": CONTROLS_SECTION, "model": CHANCE, "kind": _control_kind(CHANCE),
           "prompts": sum(len(r) for r in subsets.values()), "seeds": "–"}
    return row | {title: f"{values[col]:.3f} (exact)" for col, title in _titles(list(subsets)) if col in values}


def table2_as_shown(evaluated: Sequence[tuple[Mapping[str, list[dict]], Mapping[str, Sequence[Record]]]],
                    kinds: Mapping[str, str], *, seed: int = 0):
    """Table 2 as the chapter shows it: section, model, kind, prompts, seeds and the accuracy and exact
    match of each subset and Overall as ``value [95% interval]``. The reward models come first, sorted
    by Overall (:data:`MODELS_SECTION`); the null controls follow in their own section
    (:data:`CONTROLS_SECTION`, in :data:`cheems_lib.baselines.CONTROLS`' order, never ranked with
    the models), ending with the exact chance of the subsets the controls were evaluated on.

    ``evaluated`` lists ``(results, subsets)``: :func:`evaluate_scores` results and the subsets
    they were evaluated on (judges see fewer prompts); ``kinds`` maps each model to its kind. A
    result named as a control (``baseline:longest``, ...) goes to the controls.
    """
    import pandas as pd

    results = {name: res for group, _ in evaluated for name, res in group.items()}
    prompts = {name: sum(len(s) for s in subsets.values()) for group, subsets in evaluated for name in group}
    parts = []
    for section, names in ((MODELS_SECTION, [n for n in results if n not in CONTROLS]),
                           (CONTROLS_SECTION, [n for n in CONTROLS if n in results])):
        if not names:
            continue
        rows = leaderboard_frame({n: results[n] for n in names}, seed=seed)
        if section == CONTROLS_SECTION:
            rows = rows.set_index("model").loc[names].reset_index()
        shown = pd.DataFrame({"section": section, "model": rows["model"],
                              "kind": rows["model"].map(lambda n: _control_kind(n) if n in CONTROLS else kinds.get(n, "")),
                              "prompts": rows["model"].map(prompts), "seeds": rows["seeds"]})
        for col, title in _titles(list(results[names[0]][0])):
            if col in rows:  # a benchmark subset the files do not hold has no columns
                shown[title] = interval_text(rows, col)
        parts.append(shown)
    control_subsets = next((subsets for group, subsets in evaluated if set(group) & set(CONTROLS)), None)
    if control_subsets:
        parts.append(pd.DataFrame([_chance_row(control_subsets)]))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def category_table(results: Mapping[str, list[dict]], subsets: Mapping[str, Sequence[Record]], subset: str, *,
                   seed: int = 0):
    """Fig. 4 as a table for one subset: per top-level category (deterministic ones marked ``*``) and over
    all categories (macro), the accuracy of each model of ``results`` (mean over its seeds), then, in their
    own section, the null controls of :func:`cheems_lib.baselines.null_controls` on the same records
    (pick-longest, pick-shortest, random, drawn over all of ``subsets`` as in Table 2, and the exact chance). A category a model has no prompt of shows ``–``."""
    import pandas as pd

    nulls = null_controls(subsets, seed=seed)  # random drawn over all the subsets, as the leaderboard's baseline:random
    nulls = nulls[nulls["subset"] == subset]
    cats = [c for c in nulls["category"].drop_duplicates() if c]
    title = lambda c: f"{CATEGORIES.get(c, c)}{' *' if c in DETERMINISTIC else ''}" if c else "all categories"  # noqa: E731
    rows = []
    for name, per_seed in results.items():
        acc = {"": np.mean([r[subset].accuracy for r in per_seed])}
        acc |= {c: np.mean([r[subset].by_category[c]["accuracy"] for r in per_seed])
                for c in cats if all(c in r[subset].by_category for r in per_seed)}
        rows.append({"section": "reward models", "model": name} | {title(c): f"{acc[c]:.3f}" if c in acc else "–"
                                                                   for c in ["", *cats]})
    for name, group in nulls.groupby("control", sort=False):
        acc = dict(zip(group["category"], group["accuracy"]))
        rows.append({"section": CONTROLS_SECTION, "model": name} | {title(c): f"{acc[c]:.3f}" for c in ["", *cats]})
    return pd.DataFrame(rows)


def _difference_text(diff, seed: int) -> str:
    lo, hi = diff.interval(seed=seed)
    return f"{diff.value:.3f} [{lo:.3f}, {hi:.3f}]"


def baseline_sentence(trained: Mapping[str, list[dict]], baselines: Mapping[str, list[dict]], *, seed: int = 0) -> str:
    """Does the trained model with the highest mean Overall beat every baseline? The sentence for
    :func:`cheems_lib.estimates.best_of`'s verdict, by paired intervals.

    ``trained`` and ``baselines`` are :func:`evaluate_scores` results on the same subsets. A
    baseline needs no training: its one run is paired with each training seed.
    """
    overall = {name: subset_estimate(per_seed) for name, per_seed in trained.items()}
    lead = max(overall, key=lambda n: overall[n].value)
    rivals = {name: subset_estimate(per_seed).broadcast(overall[lead].seeds) for name, per_seed in baselines.items()}
    verdict, diff = best_of({lead: overall[lead], **rivals}, lead, seed=seed)
    rival = min(rivals, key=lambda n: (overall[lead] - rivals[n]).value)
    d = _difference_text(diff, seed)
    return {
        "supported": f"{lead}, the trained model with the highest mean Overall, beats every baseline by a paired interval "
                     f"(the closest, {rival}, by {d}): length alone, the longest- or shortest-response rule, does not "
                     "solve this benchmark.",
        "contradicted": f"A baseline beats {lead}, the trained model with the highest mean Overall: against {rival} the "
                        f"paired difference is {d}.",
        "inconclusive": f"{lead}, the trained model with the highest mean Overall, is not separated from {rival} by a "
                        f"paired interval ({d}), so this run cannot say that it learned more than that baseline's rule.",
        INSUFFICIENT: insufficient_text(diff.n, diff.unit, f"whether {lead} beats every baseline"),
    }[verdict]


def judge_sentence(judged: Mapping[str, list[dict]], random_scores: Mapping, subsets: Mapping[str, Sequence[Record]], *,
                   n_boot: int = 1000, seed: int = 0) -> str:
    """The first judge of ``judged`` (:func:`evaluate_scores` results on ``subsets``) against the random
    baseline's ``random_scores`` on the same prompts: one sentence for the verdict of the paired
    accuracy difference (mean of the subsets) being above zero."""
    name = next(iter(judged))
    rand = evaluate_scores({"random": random_scores}, subsets, n_boot=n_boot, seed=seed)["random"]
    diff = subset_estimate(judged[name], "accuracy") - subset_estimate(rand, "accuracy")
    d = _difference_text(diff, seed)
    return {
        "supported": f"Its accuracy, mean over the two subsets, is above the random baseline's on the same prompts by {d}.",
        "contradicted": f"Its accuracy, mean over the two subsets, is below the random baseline's on the same prompts by "
                        f"{d}.",
        "inconclusive": f"Its accuracy, mean over the two subsets, is not separated from the random baseline's on the "
                        f"same prompts (difference {d}).",
        INSUFFICIENT: insufficient_text(diff.n, diff.unit, "whether its accuracy beats the random baseline's"),
    }[decide(diff, "greater", seed=seed)]


def deterministic_label() -> str:
    """The English names of the categories with relatively deterministic answers (§6.1 (3)), joined."""
    return ", ".join(CATEGORIES[c] for c in DETERMINISTIC)


def _mean_over(results: Mapping[str, list[dict]], stat):
    """``stat(name)`` averaged over the models of ``results``, paired seed by seed. A model with one run (one loaded
    from a path, a models file's entry: no training seeds here) is paired with each training seed of the others,
    as a baseline is (:meth:`cheems_lib.estimates.Estimate.broadcast`)."""
    stats = [stat(name) for name in results]
    most = max(e.seeds for e in stats)
    return mean_of([e.broadcast(most) if e.seeds == 1 and most > 1 else e for e in stats])


TABLE2_ONLY = ("CheemsRM",)
"""Rows of ``data/paper/table8_reward_models.csv`` that are not Table 8's (CheemsRM is copied from Table 2;
see data/paper/README.md): never counted among "the models of Table 8"."""


def table8_models(table8):
    """The rows of the paper's Table 8 alone: ``table8`` without :data:`TABLE2_ONLY`."""
    return table8[~table8["model"].isin(TABLE2_ONLY)]


BUILT_IN_BUILDS = ("policies", "refusal", "correctness")
"""The RewardBench-like comparator's section builds (:class:`cheems_lib.world.comparators.Section`) whose label is built
in: a strong policy's answer against a weak one's or a refusal against a harmful compliance, each kept only when an
annotator verifies it (as RewardBench's chat and safety sections were made), and a right final answer against a
wrong one with no annotator at all (no label noise). Its other sections pair two answers of one mid-strength policy,
labelled by a noisy annotator."""
_BUILT_IN_SAYS = {"policies": "a strong policy's answer (strength {strong:+.1f}) against a weak one's ({weak:+.1f}), "
                              "kept when an annotator verifies it",
                  "refusal": "a refusal against a harmful compliance, kept when an annotator verifies it",
                  "correctness": "a right final answer against a wrong one, labelled by no annotator"}
MID_PAIRS_ID = "s61-lower-than-rewardbench-mid-pairs"
"""§6.1 (1) tested on the comparator's mid-vs-mid sections only (:func:`_mid_pairs_claim`)."""


def rewardbench_design() -> dict:
    """What decides the RewardBench-like comparator's difficulty, read from its definition: the sections built
    strong-vs-weak (``built_in``) and mid-vs-mid (``mid``), the built-in sections' share of its pairs by
    RewardBench's section sizes, and the strong and weak policies' strengths."""
    share = declared_mix(REWARDBENCH_SECTIONS)[0]
    built_in = [s.name for s in REWARDBENCH_SECTIONS if s.build in BUILT_IN_BUILDS]
    return {"built_in": built_in, "mid": [s.name for s in REWARDBENCH_SECTIONS if s.build not in BUILT_IN_BUILDS],
            "share": sum(share[n] for n in built_in), "strong": STRONG[0], "weak": WEAK[0]}


def prose_values(ledger, rewardbench) -> dict[str, object]:
    """The §6.1 section's glued values, by the names the chapter glues them under: the comparator's pairs, its
    built-in and mid-vs-mid sections, the structural claim's reason (from ``ledger``) and the deterministic
    categories."""
    design = rewardbench_design()
    return {"n_rb_pairs": len(rewardbench.records), "rb_built_in": " and ".join(design["built_in"]),
            "rb_mid": " and ".join(design["mid"]),
            "rb_structural_reason": ledger.claims["s61-lower-than-rewardbench"].reason,
            "det_label": deterministic_label()}


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
    diff = _mean_over(results, lambda n: subset_estimate(results[n], "accuracy")
                      - subset_estimate(on_rewardbench[n], "accuracy"))
    return Claim.test(
        "s61-lower-than-rewardbench", diff, "less", seed=seed, paper_ref="§6.1 (1), Table 2",
        claim="reward models score lower on CheemsBench than on RewardBench", kind="structural",
        reason=_structural_reason(),
        statistic=f"CheemsBench accuracy (mean of the two subsets) minus accuracy on the RewardBench-like comparator "
                  f"({pairs} simulated pairs, macro over its four sections), mean over {', '.join(results)}",
        paper=_rewardbench_paper(table8), link="paper-table2", says=_rewardbench_says("the RewardBench-like comparator"))


def _mid_pairs_claim(results, on_mid, pairs: int, table8, seed: int):
    """§6.1 (1) on the comparator's mid-vs-mid sections only (no label built in, :data:`BUILT_IN_BUILDS`): a
    finding, since neither side's difficulty is set by the comparator's construction."""
    mid = " and ".join(rewardbench_design()["mid"])
    diff = _mean_over(results, lambda n: subset_estimate(results[n], "accuracy")
                      - subset_estimate(on_mid[n], "accuracy"))
    return Claim.test(
        MID_PAIRS_ID, diff, "less", seed=seed, paper_ref="§6.1 (1), Table 2",
        claim=f"reward models score lower on CheemsBench than on RewardBench (its {mid} sections, where both answers "
              "come from one policy and a noisy annotator labels them)", kind="finding",
        statistic=f"CheemsBench accuracy (mean of the two subsets) minus accuracy on the RewardBench-like comparator's "
                  f"{mid} sections ({pairs} simulated pairs, macro over the sections), mean over {', '.join(results)}",
        paper=_rewardbench_paper(table8), link="paper-table2",
        says=_rewardbench_says(f"the RewardBench-like comparator's {mid} sections"))


def _subset_claim(results, table8, seed: int):
    """§6.1 (2): more accurate on Open Prompt than on Human Instruction."""
    table8 = table8_models(table8)
    diff = _mean_over(results, lambda n: subset_estimate(results[n], "accuracy", ["open"])
                      - subset_estimate(results[n], "accuracy", ["human"]))
    return Claim.test(
        "s61-open-vs-human-instruction", diff, "greater", seed=seed, paper_ref="§6.1 (2), Table 2",
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


def _deterministic_claim(results, seed: int):
    """§6.1 (3): more accurate on the categories with deterministic answers."""
    others = [c for c in CATEGORIES if c not in DETERMINISTIC]
    label = deterministic_label()
    diff = _mean_over(results, lambda n: category_estimate(results[n], DETERMINISTIC)
                      - category_estimate(results[n], others))
    return Claim.test(
        "s61-deterministic-easier", diff, "greater", seed=seed, paper_ref="§6.1 (3), Fig. 4",
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
        ledger.add(Claim.untestable("s61-lower-than-rewardbench", "§6.1 (1), Table 2", "reward models score lower on "
                                    "CheemsBench than on RewardBench", no_copy, link="paper-table2"))
        ledger.add(Claim.untestable(MID_PAIRS_ID, "§6.1 (1), Table 2", "reward models score lower on CheemsBench than "
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
    if subsets >= {"open", "human"}:
        ledger.add(_subset_claim(results, table8, seed))
    else:
        ledger.add(Claim.untestable("s61-open-vs-human-instruction", "§6.1 (2), Table 2", "reward models do better on "
                                    "Open Prompt than on Human Instruction", why or "needs " + " and ".join(
                                        f"cheems_bench/{s}.jsonl" for s in ("open", "human") if s not in subsets),
                                    link="paper-table2"))
    cats = {c for r in first.values() for c in r.by_category}
    if cats & set(DETERMINISTIC) and cats - set(DETERMINISTIC):
        ledger.add(_deterministic_claim(results, seed))
    else:
        ledger.add(Claim.untestable("s61-deterministic-easier", "§6.1 (3), Fig. 4", "reward models are more accurate "
                                    "on prompts with relatively deterministic answers", why or "needs prompts of the "
                                    "paper's categories, with and without deterministic answers", link="paper-fig4"))


_FIG4_WORDS = ('"On the open-source prompt subset, RMs show competence in "Reasoning" but struggle in other '
               'categories. On the human instruction subset, models excel in "Reasoning" and "Complex Instructions" '
               'but perform poorly in tasks involving "Understanding"" (§6.1; Fig. 4 gives only a plot)')
FIG4_CLAIMS = {
    "fig4-open-reasoning-strong": ("open", "推理", "greater"),
    "fig4-human-reasoning-strong": ("human", "推理", "greater"),
    "fig4-human-complex-strong": ("human", "复杂指令", "greater"),
    "fig4-human-understanding-weak": ("human", "理解", "less"),
}
"""§6.1's reading of Fig. 4, one claim per category named: ``{id: (subset, category, direction)}``; each
compares the category's accuracy with the macro mean of the subset's other categories."""


def add_category_claims(ledger, results: Mapping[str, list[dict]], *, seed: int = 0) -> None:
    """Add :data:`FIG4_CLAIMS` to ``ledger``: per claim, the category's accuracy minus the mean accuracy of
    the subset's other categories (macro, mean over the trained models of ``results``, paired); untestable
    when the models, the subset or the category are missing."""
    first = next(iter(results.values()), [{}])[0] if results else {}
    for cid, (subset, cat, direction) in FIG4_CLAIMS.items():
        name, where = CATEGORIES[cat], {"open": "Open Prompt", "human": "Human Instruction"}[subset]
        present = [c for c in CATEGORIES if subset in first and c in first[subset].by_category]
        others = [c for c in present if c != cat]
        word = "more" if direction == "greater" else "less"
        fields = dict(paper_ref="§6.1, Fig. 4", link="paper-fig4", paper=_FIG4_WORDS,
                      claim=f"reward models are {word} accurate on {name} than on the other categories of {where}")
        if cat not in present or not others:
            why = "needs trained models and cheems_bench/" if not results else (
                f"needs cheems_bench/{subset}.jsonl with the category {cat} ({name}) and at least one other")
            ledger.add(Claim.untestable(cid, reason=why, **fields))
            continue
        diff = _mean_over(results, lambda n: category_estimate(results[n], [cat], [subset])
                          - category_estimate(results[n], others, [subset]))
        ledger.add(Claim.test(
            cid, diff, direction, seed=seed, kind="finding", **fields,
            statistic=f"{where} accuracy on {name} minus the mean accuracy of its other {len(others)} categories "
                      f"(macro), mean over {', '.join(results)}; paired",
            says={"supported": f"On {where} the trained models are {word} accurate on {name} than on the other "
                               f"categories, as in the paper: {INTERVAL_SAYS}.",
                  "contradicted": f"On {where} the trained models are {'less' if word == 'more' else 'more'} accurate "
                                  f"on {name} than on the other categories, unlike the paper: {INTERVAL_SAYS}.",
                  "inconclusive": f"On {where} the trained models' accuracy on {name} and on the other categories is "
                                  f"not separated: {INTERVAL_SAYS}."}))


def category_estimates(results: Mapping[str, list[dict]], subset: str) -> dict[str, Any]:
    """Fig. 4's rows for one subset, each averaged over the models of ``results`` (paired seed by seed):
    the subset's accuracy, the deterministic categories and the others, then each category
    (deterministic ones marked ``*``)."""
    present = [c for c in CATEGORIES if c in next(iter(results.values()))[0][subset].by_category]
    rows = {"all categories (subset accuracy)": _mean_over(results, lambda n: subset_estimate(results[n], "accuracy",
                                                                                             [subset]))}
    for label, group in [(f"deterministic: {deterministic_label()}", [c for c in present if c in DETERMINISTIC]),
                         ("other categories", [c for c in present if c not in DETERMINISTIC])]:
        if group:
            rows[label] = _mean_over(results, lambda n: category_estimate(results[n], group, [subset]))
    for c in present:
        rows[f"{CATEGORIES[c]}{' *' if c in DETERMINISTIC else ''}"] = _mean_over(
            results, lambda n: category_estimate(results[n], [c], [subset]))
    return rows


def category_figure(results: Mapping[str, list[dict]], *, seed: int = 0):
    """Fig. 4: :func:`category_estimates` of the Open Prompt and Human Instruction subsets side by
    side (:func:`cheems_lib.publishing.figures.seed_dots`), one legend on top; returns the Figure."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 5.5), sharex=True)
    for ax, (sub, title) in zip(axes, [("open", "Open Prompt"), ("human", "Human Instruction")]):
        seed_dots(category_estimates(results, sub), ax=ax, seed=seed, xlabel="accuracy, mean over the trained models")
        ax.set_title(title)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=8,
               frameon=False)
    fig.tight_layout()
    return fig
