"""The leaderboard (paper Table 2): many scorers on the benchmark subsets, with intervals, sorted by Overall.

The one implementation: :func:`evaluate_scores` evaluates each model's scores (one mapping, or one per training
seed) on every subset with :func:`cheems_lib.metrics.evaluate_subset` (bootstrap over prompts);
:func:`leaderboard_frame` turns such results into one row per model: accuracy and exact match per subset and
Overall, means over seeds with 95% intervals. :func:`table2_as_shown` is the table as a chapter shows it (the
models ranked, then the null controls of :mod:`cheems_lib.baselines` in their own section, never ranked with them,
with the exact chance); :func:`baseline_scores` gives those controls' scores, :func:`score_models` scores real
reward models and :func:`judge_results` evaluates generative judges like them. :func:`leaderboard_text` is the plain-text table of ``cheems evaluate`` with several score files.

§6.1's findings on this table are :mod:`cheems_lib.analyses.leaderboard_findings`'; Fig. 4, accuracy per
category, is :mod:`cheems_lib.analyses.category_accuracy`'.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..baselines import CHANCE, chance_metrics, CONTROLS, named_scores, NAMES
from ..estimates import insufficient, mean_of, subset_estimate
from .model_comparison import rank_intervals, rank_text
from ..metrics import evaluate_subset
from ..models.judging import judge_all
from ..models.reward_model import load, placement_for
from ..models.scoring import score_records
from ..publishing.publish import key_first
from ..records import Record


__all__ = ["evaluate_scores", "leaderboard_frame", "table2_as_shown", "baseline_scores", "score_models",
           "judge_results", "leaderboard_text", "paired_text", "TABLE2_COLUMNS", "INTERVAL_SAYS", "interval_cell", "interval_text", "MODELS_SECTION", "RANK_NOTE", "table2_caption",
           "CONTROLS_SECTION", "EXACT_NOTE", "mean_over_models"]


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


_METRICS = (("acc", "accuracy"), ("exact", "exact_match"), ("micro_acc", "micro_accuracy"),
            ("micro_exact", "micro_exact_match"))
"""Each subset's columns of :func:`leaderboard_frame` (``<subset>_<short>``) and the metric each holds: the paper's
macro averages over top-level categories, and the micro ones beside them (over comparisons, over prompts)."""


def leaderboard_frame(results: Mapping[str, list[dict]], *, seed: int = 0):
    """One row per model of :func:`evaluate_scores` results: mean over seeds of each subset's
    accuracy and exact match (macro, the paper's; and micro, :data:`_METRICS`) and of Overall, with hierarchical 95%
    intervals (``_lo``/``_hi``) and the number of seeds; sorted by Overall."""
    import pandas as pd

    rows = []
    for name, per_seed in results.items():
        row: dict[str, Any] = {"model": name, "seeds": len(per_seed)}
        subsets = list(per_seed[0])
        columns = [(f"{s}_{short}", metric, [s]) for short, metric in _METRICS for s in subsets]
        for col, metric, subs in columns + [("overall", "overall", subsets), ("overall_micro", "overall_micro", subsets)]:
            est = subset_estimate(per_seed, metric, subs)
            row[col] = est.value
            # too few prompts, or no width: no 95% interval (the one rule, estimates.insufficient)
            none = insufficient(est, seed=seed)
            row[f"{col}_lo"], row[f"{col}_hi"] = (float("nan"),) * 2 if none else est.interval(seed=seed)
        rows.append(row)
    return pd.DataFrame(rows).sort_values("overall", ascending=False, ignore_index=True)


def table2_as_shown(evaluated: Sequence[tuple[Mapping[str, list[dict]], Mapping[str, Sequence[Record]]]],
                    kinds: Mapping[str, str], *, seed: int = 0, consistency: Mapping[str, float] | None = None):
    """Table 2 as the chapter shows it: section, model, Overall (its sort key, first so that it stays in view), rank,
    kind, prompts, seeds and the accuracy and exact match of each subset, macro (the paper's) then micro, each as
    ``value [95% interval]``. The reward models come first, sorted by Overall (:data:`MODELS_SECTION`), each with its
    rank, the rank's 95% interval over the bootstrap replicates and ``=1`` when it is statistically tied with the first
    (:func:`cheems_lib.analyses.model_comparison.rank_intervals`; rows evaluated on other prompts, a judge's, are
    compared unpaired); the null controls follow in their own section
    (:data:`CONTROLS_SECTION`, in :data:`cheems_lib.baselines.CONTROLS`' order, never ranked with
    the models), ending with the exact chance of the subsets the controls were evaluated on.

    ``evaluated`` lists ``(results, subsets)``: :func:`evaluate_scores` results and the subsets
    they were evaluated on (judges see fewer prompts); ``kinds`` maps each model to its kind. A
    result named as a control (``baseline:longest``, ...) goes to the controls. ``consistency`` (a judge's
    position consistency, :func:`judge_results`) adds the column ``order flips``: the share of pairs whose verdict
    flips when the answers are swapped, blank for a reward model.
    """
    import pandas as pd

    results = {name: res for group, _ in evaluated for name, res in group.items()}
    subsets_of = {name: subsets for group, subsets in evaluated for name in group}
    prompts = {name: sum(len(s) for s in subsets.values()) for name, subsets in subsets_of.items()}
    parts = []
    for section, names in ((MODELS_SECTION, [n for n in results if n not in CONTROLS]),
                           (CONTROLS_SECTION, [n for n in CONTROLS if n in results])):
        if not names:
            continue
        rows = leaderboard_frame({n: results[n] for n in names}, seed=seed)
        if section == CONTROLS_SECTION:
            rows = rows.set_index("model").loc[names].reset_index()
            rank = ["–"] * len(rows)
        else:
            ranks = rank_intervals({n: subset_estimate(results[n], "overall") for n in names}, seed=seed,
                                   groups={n: _prompts_key(subsets_of[n]) for n in names})
            rank = [rank_text(ranks[n]) for n in rows["model"]]
        shown = pd.DataFrame({"section": section, "model": rows["model"], "rank": rank,
                              "kind": rows["model"].map(lambda n: _control_kind(n) if n in CONTROLS else kinds.get(n, "")),
                              "prompts": rows["model"].map(prompts), "seeds": rows["seeds"]})
        for col, title in _titles(list(results[names[0]][0])):
            if col in rows:  # a benchmark subset the files do not hold has no columns
                shown[title] = interval_text(rows, col)
        if consistency:
            shown["order flips"] = rows["model"].map(lambda n: f"{1 - consistency[n]:.3f}" if n in consistency else "")
        parts.append(shown)
    control_subsets = next((subsets for group, subsets in evaluated if set(group) & set(CONTROLS)), None)
    if control_subsets:
        parts.append(pd.DataFrame([_chance_row(control_subsets)]))
    if not parts:
        return pd.DataFrame()
    table = pd.concat(parts, ignore_index=True)
    if "order flips" in table:  # the controls and the chance row have no verdicts to flip
        table["order flips"] = table["order flips"].fillna("")
    # Overall, the sort key, right after the model: in view at a page's width before the other columns
    return key_first(table, "Overall")


def baseline_scores(records: Sequence[Record], *, seed: int = 0) -> dict[str, dict]:
    """The three baselines every table shows (random, longest and shortest response), by their CLI names."""
    return {name: named_scores(name, records, seed=seed) for name in NAMES}


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


def judge_results(judges: Mapping[str, str], subsets: Mapping[str, Sequence[Record]], *, device: str | None = None,
                  dtype=None, batch_size: int = 16, n_boot: int = 1000, seed: int = 0
                  ) -> tuple[dict[str, list[dict]], dict[str, float], dict[str, dict]]:
    """``(results, consistency, scores)``: each judge of ``judges`` (row name -> hub name or path) shown every pair of
    ``subsets`` in both orders (:func:`cheems_lib.models.judging.judge_all`), its scores evaluated like the models'
    (:func:`evaluate_scores`, bootstrapped with ``seed``), its position consistency (over every pair it judged) and
    the scores themselves (for per-item results); ``({}, {}, {})`` without judges or subsets."""
    if not judges or not subsets:
        return {}, {}, {}
    scores, consistency = judge_all(judges, [r for recs in subsets.values() for r in recs], device=device,
                                    dtype=dtype, batch_size=batch_size)
    return evaluate_scores(scores, subsets, n_boot=n_boot, seed=seed), consistency, scores


def leaderboard_text(per_model: Mapping[str, Mapping], subsets: Sequence[str]) -> str:
    """Plain-text leaderboard of ``cheems evaluate`` JSON (``{model: {subset: {...}, "overall": x}}``): the rank
    (with its 95% interval and ``=1`` for a model tied with the first, when the objects carry ``rank``:
    :func:`cheems_lib.analyses.model_comparison.rank_text`), then per subset the paper's macro accuracy and exact
    match each beside its micro counterpart, Overall and its micro counterpart with two or more subsets, a judge's
    share of pairs whose verdict flips with the order (``position_flips``) when any model has one, and per subset
    its prompts with a comparison and comparisons; sorted by Overall (or, with one subset, its accuracy), ties in
    the given order."""
    several = len(subsets) >= 2
    key = (lambda kv: kv[1].get("overall", 0)) if several else (lambda kv: kv[1][subsets[0]]["accuracy"])
    ranked = any("rank" in res for res in per_model.values())
    flips = any("position_flips" in res.get(s, {}) for res in per_model.values() for s in subsets)
    metrics = (("acc", "accuracy"), ("micro acc", "micro_accuracy"), ("exact", "exact_match"),
               ("micro exact", "micro_exact_match"))
    head = (["rank"] if ranked else []) + ["model"] + [f"{s} {m}" for s in subsets for m, _ in metrics] + \
        (["overall", "overall micro"] if several else []) + (["flips"] if flips else []) + \
        [f"{s} n" for s in subsets]
    rows = [([rank_text(res)] if ranked else []) + [name] + [f"{res[s][m]:.3f}" for s in subsets for _, m in metrics]
            + ([f"{res['overall']:.3f}", f"{res['overall_micro']:.3f}"] if several else [])
            + ([_flip_text(res, subsets)] if flips else []) + [_counts_text(res[s]) for s in subsets]
            for name, res in sorted(per_model.items(), key=key, reverse=True)]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    fmt = lambda row: "  ".join(str(x).ljust(w) for x, w in zip(row, widths))
    note = "\nrank: 95% interval over bootstrap replicates; =1: not distinguishable from the first (paired " \
        "difference)" if any(res.get("rank_ci") for res in per_model.values()) else ""
    return "\n".join([fmt(head), fmt(["-" * w for w in widths]), *map(fmt, rows)]) + note


def _counts_text(res: Mapping) -> str:
    """``prompts / comparisons`` of one data file's result (the prompts with a comparison; ``by_category`` has them
    per category)."""
    cats = res["by_category"].values()
    return f"{sum(c['prompts'] for c in cats):,} / {sum(c['comparisons'] for c in cats):,}"


def _flip_text(res: Mapping, subsets: Sequence[str]) -> str:
    """A judge's pooled share of pairs whose verdict flips with the order, over the subsets; blank for a model."""
    cells = [res[s]["position_flips"] for s in subsets if "position_flips" in res.get(s, {})]
    pairs = sum(c["pairs"] for c in cells)  # the pairs with a verdict (pairs_missing are not among them)
    return f"{sum(c['flips'] for c in cells) / pairs:.3f}" if pairs else ""


def paired_text(paired: Mapping[str, Mapping], subsets: Sequence[str]) -> str:
    """Plain-text table of :func:`cheems_lib.analyses.model_comparison.paired_differences`: per model its difference
    from the baseline overall and in each subset's accuracy (``+0.012 [-0.004, +0.030]``; ``(no CI)`` where the data
    give no 95% interval), and the categories that differ after Holm's adjustment (``+``: the model is better,
    ``-``: worse; ``not tested`` without replicates)."""
    def cell(c: Mapping) -> str:
        text = f"{c['difference']:+.3f}"
        return text + (f" [{c['ci'][0]:+.3f}, {c['ci'][1]:+.3f}]" if "ci" in c else " (no CI)")

    first = next(iter(paired.values()), {})
    head = ["model"] + (["overall"] if "overall" in first else []) + [f"{s} acc" for s in subsets] + \
        ["categories that differ (Holm)"]
    rows = []
    for name, row in paired.items():
        cats = [(s, c, v) for s in subsets for c, v in row["subsets"][s]["by_category"].items()]
        differ = [f"{s}/{c} {'+' if v['difference'] > 0 else '-'}" for s, c, v in cats if v.get("differs")]
        tested = any("p_holm" in v for _, _, v in cats)
        rows.append([name] + ([cell(row["overall"])] if "overall" in row else []) +
                    [cell(row["subsets"][s]["accuracy"]) for s in subsets] +
                    [", ".join(differ) or ("none" if tested else "not tested (no intervals)")])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    fmt = lambda r: "  ".join(str(x).ljust(w) for x, w in zip(r, widths))  # noqa: E731
    baseline = first.get("baseline", "")
    return "\n".join([f"paired differences from {baseline} (95% intervals over the same resamples)", fmt(head),
                      fmt(["-" * w for w in widths]), *map(fmt, rows)])


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


RANK_NOTE = ("rank: 95% interval over the bootstrap replicates, =1: not distinguishable from the first (paired "
             "difference; a row evaluated on other prompts, such as a judge's, is ranked approximately and not tested "
             "for a tie)")
"""What a table's ``rank`` column shows (:func:`table2_as_shown`); the captions say it."""


def table2_caption(simulated: bool) -> str:
    """The caption of the evaluation chapter's Table 2: whose data, what the intervals, the rank and the micro
    columns are, and that the controls are not ranked."""
    return (f"Ours: {'simulated CheemsBench' if simulated else 'the benchmark files'}; trained models: mean over "
            f"training seeds; 95% intervals over seeds and prompts; {RANK_NOTE}; acc. and exact: the paper's macro "
            f"averages over categories, micro: over comparisons and over prompts; null controls in their own section, "
            f"not ranked; {EXACT_NOTE}")


EXACT_NOTE = ("–: the chance row is an exact expectation (cheems_lib.baselines.chance_level), "
              "so it has no seeds and no interval")
"""What a ``–`` in a table's chance row means; the captions say it."""


def _titles(subsets: Sequence[str]) -> list[tuple[str, str]]:
    """The shown columns for ``subsets``: Table 2's titles for its subsets, ``<subset> acc.``/``exact`` otherwise."""
    known = dict(TABLE2_COLUMNS)
    words = {"acc": "acc.", "exact": "exact", "micro_acc": "micro acc.", "micro_exact": "micro exact"}
    cols = [(f"{s}_{m}", known.get(f"{s}_{m}", f"{_SUBSET_TITLES.get(s, s)} {words[m]}"))
            for s in subsets for m, _ in _METRICS]
    return cols + [("overall", "Overall"), ("overall_micro", "Overall (micro)")]


_SUBSET_TITLES = {"open": "Open Prompt", "human": "Human Instr."}
"""Table 2's names of the benchmark's subsets, for the columns the paper's table does not have (micro)."""


def _prompts_key(subsets: Mapping[str, Sequence[Record]]) -> tuple:
    """What a row was evaluated on, comparably: each subset's prompt ids (rows on other prompts are not paired)."""
    return tuple((name, tuple(r.id for r in recs)) for name, recs in subsets.items())


def _control_kind(name: str) -> str:
    """A null control's kind in a table: ``null control: pick-longest``, ..."""
    return f"null control: {CONTROLS[name]}"


def _chance_row(subsets: Mapping[str, Sequence[Record]]) -> dict:
    """The exact chance of ``subsets`` (:func:`cheems_lib.baselines.chance_metrics`) as a shown row."""
    chance = {s: chance_metrics(recs) for s, recs in subsets.items()}
    values = {f"{s}_{m}": c[key] for s, c in chance.items() for m, key in (("acc", "accuracy"), ("exact", "exact_match"))}
    for s, c in chance.items():  # micro: every comparison's chance is 1/2; exact match weighs each prompt alike
        cats = c["by_category"].values()
        values[f"{s}_micro_acc"] = 0.5 if cats else float("nan")
        prompts = sum(v["prompts"] for v in cats)
        values[f"{s}_micro_exact"] = sum(v["exact_match"] * v["prompts"] for v in cats) / prompts if prompts \
            else float("nan")
    values["overall"] = float(np.mean([(c["accuracy"] + c["exact_match"]) / 2 for c in chance.values()]))
    values["overall_micro"] = float(np.mean([(values[f"{s}_micro_acc"] + values[f"{s}_micro_exact"]) / 2
                                             for s in chance]))
    row = {"section": CONTROLS_SECTION, "model": CHANCE, "rank": "–", "kind": _control_kind(CHANCE),
           "prompts": sum(len(r) for r in subsets.values()), "seeds": "–"}
    return row | {title: f"{values[col]:.3f} (exact)" for col, title in _titles(list(subsets)) if col in values}


def mean_over_models(results: Mapping[str, list[dict]], stat):
    """``stat(name)`` averaged over the models of ``results``, paired seed by seed. A model with one run (one loaded
    from a path, a models file's entry: no training seeds here) is paired with each training seed of the others,
    as a baseline is (:meth:`cheems_lib.estimates.Estimate.broadcast`)."""
    stats = [stat(name) for name in results]
    most = max(e.seeds for e in stats)
    return mean_of([e.broadcast(most) if e.seeds == 1 and most > 1 else e for e in stats])
