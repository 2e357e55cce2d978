"""Table 5's conflict ratio with bootstrap intervals, and appendix C's claims tested on a world.

:mod:`cheems_lib.conflicts` is Algorithm 1 itself; the CLI, the simulator and the metrics import it, so it stays below
:mod:`cheems_lib.analyses.claims` and :mod:`cheems_lib.analyses.calibration`. This module sits above them and holds
what the conflicts chapter shows and measures:

- :func:`choose_example`, :func:`worked_example` and :func:`plot_worked_example`: Algorithm 1 step by step on one
  prompt (the user's file, the world's benchmark, or the shipped :data:`SHIPPED_EXAMPLE`);
  :func:`prompt_table` and :func:`pair_view_counts` describe a resolved file;
- :func:`conflict_estimate` and :func:`table5_estimates`: per-prompt conflict ratios (Table 5)
  with a bootstrap over prompts; :func:`plot_table5` and :func:`table5_styler` show them beside
  the paper's;
- :func:`add_equivalence_claim`, :func:`add_table5_claims` and :func:`add_near_tie_claim`: the
  chapter's claims, added to its :class:`~cheems_lib.analyses.claims.Ledger` (which glues their sentences;
  read them back from ``ledger.claims``).

A *world* is an opened :class:`cheems_lib.analyses.world_folder.World` (its ``files``, ``summary`` and ``truth``).
"""
from __future__ import annotations

from typing import Sequence

from .. import conflicts, estimates
from ..paper import table as paper_table
from ..publishing.figures import draw_preference_graph
from ..publishing.publish import md_code, md_text
from ..records import Record
from . import calibration, claims

__all__ = ["SUBSETS", "SUBSET_NAMES", "conflict_estimate", "table5_estimates", "paper_text", "plot_table5",
           "table5_styler", "add_equivalence_claim", "INSTRUCTION_CLAIMS", "add_table5_claims", "add_near_tie_claim", "SHIPPED_EXAMPLE",
           "choose_example", "worked_example", "plot_worked_example", "prompt_table", "pair_view_counts"]

SUBSETS = ("open_prompt", "human_instruction")
"""Table 5's subsets (CheemsBench's two prompt sets)."""
SUBSET_NAMES = {"open_prompt": "Open Prompt", "human_instruction": "Human Instruction"}
_ANNOTATOR_NAMES = {"human": "human", "gpt": "GPT-4o"}
_TABLE5_FORMAT = {"paper": "{:.4f}", "ours": "{:.4f}", "difference": "{:+.4f}", "ci_low": "{:.4f}",
                  "ci_high": "{:.4f}", "ours, per annotation": "{:.4f}"}


def conflict_estimate(files: dict, annotator: str, subsets: Sequence[str] = SUBSETS, *, n_boot: int = estimates.N_BOOT,
                      seed: int = 0) -> estimates.Estimate:
    """Per-prompt conflict ratio of ``annotator`` on ``subsets`` with a bootstrap over prompts (strata:
    subset and category); the same ``seed`` pairs the human and GPT-4o resamples of a prompt."""
    c = calibration.table5_per_prompt(files, annotator, subsets)
    return estimates.ratio_estimate(c["conflicted"], c["annotated"], strata=c["strata"], n_boot=n_boot, seed=seed)


def table5_estimates(files: dict, *, n_boot: int = estimates.N_BOOT, seed: int = 0):
    """:func:`cheems_lib.analyses.calibration.table5` plus each row's 95% interval (``ci_low``, ``ci_high``) and
    its per-annotation ratio (``ours, per annotation``)."""
    t5 = calibration.table5(files)
    for i, r in t5.iterrows():
        c = calibration.table5_per_prompt(files, r["annotator"], (r["subset"],))
        est = conflict_estimate(files, r["annotator"], (r["subset"],), n_boot=n_boot, seed=seed)
        t5.loc[i, "ci_low"], t5.loc[i, "ci_high"] = est.interval()
        t5.loc[i, "ours, per annotation"] = c["unreproduced"].sum() / c["annotations"].sum()
    return t5


def paper_text() -> str:
    """The paper's Table 5 as a sentence fragment, e.g. ``Open Prompt: human 0.0000, GPT-4o 0.0000; ...``."""
    paper5 = paper_table("table5_conflict_ratio")
    return "; ".join(f"{SUBSET_NAMES[s]}: " + ", ".join(f"{_ANNOTATOR_NAMES[a]} {v:.4f}"
                                                         for a, v in zip(g["annotator"], g["conflict_ratio"]))
                     for s, g in paper5.groupby("subset", sort=False))


def plot_table5(t5):
    """Horizontal bars of :func:`table5_estimates`: the paper's ratio (grey) beside ours (blue, with its
    95% interval), one row per subset and annotator. Returns the matplotlib Figure."""
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(7, 3.2))
    y = np.arange(len(t5))
    ax.barh(y + 0.2, t5["paper"], height=0.4, color="#9c9c9c", label="paper")
    ax.barh(y - 0.2, t5["ours"], height=0.4, color="#4e79a7", label="ours (95% interval)",
            xerr=[t5["ours"] - t5["ci_low"], t5["ci_high"] - t5["ours"]], capsize=3)
    ax.set_yticks(y, [f"{SUBSET_NAMES[s]} / {a}" for s, a in zip(t5["subset"], t5["annotator"])])
    ax.invert_yaxis()
    ax.set_xlabel("conflict ratio (share of prompts)")
    ax.legend(loc="lower right")
    fig.tight_layout()
    return fig


def table5_styler(t5):
    """:func:`table5_estimates` formatted for ``publish.table``: four decimals, signed differences, no index; the
    paper's ratio, ours and their difference right after the row's subset and annotator, the file last (so the
    difference is in view on a narrow page)."""
    first = ["subset", "annotator", "paper", "ours", "difference"]
    t5 = t5[[c for c in first if c in t5] + [c for c in t5 if c not in first + ["file"]] + ["file"]]
    return t5.style.format(_TABLE5_FORMAT).hide(axis="index")


def add_equivalence_claim(ledger: claims.Ledger, n_graphs: int, *, seed: int = 0) -> None:
    """Claim ``alg1-scc-equivalence``: the literal loop and SCC merging agree on ``n_graphs`` random
    graphs (:func:`cheems_lib.conflicts.literal_agreement`); inconclusive when none are drawn."""
    agree = conflicts.literal_agreement(n_graphs, seed=seed)
    ledger.add(claims.Claim(
        id="alg1-scc-equivalence", paper_ref="",
        claim=("merging cycles one at a time (Algorithm 1) gives the same ranking as merging strongly connected "
               "components"),
        kind="structural", reason=("a theorem, proved in this chapter; the random graphs test the code, and a single "
                                   "disagreement would be a bug in cheems_lib.conflicts, not evidence about the claim"),
        verdict=("inconclusive" if not n_graphs else "supported" if agree == n_graphs else "contradicted"),
        estimate=agree / n_graphs if n_graphs else float("nan"), seeds=1,
        statistic="share of random annotation graphs on which both give the same ranking",
        paper="Algorithm 1 (merge one cycle at a time, then topological sort)", link="paper-alg1",
        says={"supported": f"Literal Algorithm 1 and SCC merging agree on all {n_graphs} random graphs, as the "
                           "proof says they must.",
              "contradicted": f"Literal Algorithm 1 and SCC merging disagree on {n_graphs - agree} of "
                              f"{n_graphs} random graphs: a bug in cheems_lib.conflicts (the proof above rules "
                              "out a real difference).",
              "inconclusive": "No random graphs were drawn, so the code was not compared (the proof above still "
                              "holds)."}))


def _gpt_claim(ledger: claims.Ledger, world, common: dict, *, n_boot: int, seed: int) -> claims.Claim:
    """Claim ``tab5-gpt-more-conflicts`` (pooled over both subsets, paired by prompt); untestable
    when the world holds no GPT-4o annotations of the benchmark."""
    cid = "tab5-gpt-more-conflicts"
    common = dict(common, claim=("GPT-4o's annotations conflict more often than human annotations of the same "
                                 "prompts"),
                  statistic="conflict ratio (share of prompts), GPT-4o minus human, both subsets pooled")
    if not all(calibration.TABLE5_FILES[(s, a)] in world.files for s in SUBSETS for a in ("human", "gpt")):
        absent = [calibration.TABLE5_FILES[(s, a)] for s in SUBSETS for a in ("human", "gpt")
                  if calibration.TABLE5_FILES[(s, a)] not in world.files]
        if any(p.startswith("cheems_bench/") for p in absent):
            return ledger.add(claims.Claim.untestable(cid, common["paper_ref"], common["claim"],
                                                      "needs " + ", ".join(absent), **{k: v for k, v in common.items()
                                                                                       if k not in ("paper_ref", "claim")}))
        return ledger.add(claims.Claim(
            id=cid, verdict="inconclusive", kind="untestable",
            reason="these files hold no GPT-4o annotations of the benchmark (cheems_bench_gpt/)", **common,
            says={"inconclusive": "These files hold no GPT-4o annotations of the benchmark, so the first claim is "
                                  "not tested."}))
    diff = (conflict_estimate(world.files, "gpt", n_boot=n_boot, seed=seed)
            - conflict_estimate(world.files, "human", n_boot=n_boot, seed=seed))
    return ledger.add(claims.Claim.test(
        cid, diff, "greater", seed=seed, **common, **calibration.claim_kind(cid, world.summary is not None),
        says={"supported": "As in the paper, GPT-4o's annotations conflict more often: its conflict ratio is higher "
                           "by {estimate:.3f} (95% interval {lo:.3f} to {hi:.3f}).",
              "contradicted": "Unlike the paper, GPT-4o's annotations conflict less often: GPT-4o minus human is "
                              "{estimate:+.3f} (95% interval {lo:+.3f} to {hi:+.3f}).",
              "inconclusive": "These prompts cannot tell whether GPT-4o's annotations conflict more often: GPT-4o "
                              "minus human is {estimate:+.3f} (95% interval {lo:+.3f} to {hi:+.3f})."}))


INSTRUCTION_CLAIMS = {"human": "tab5-human-instruction-more-conflicts", "gpt": "tab5-gpt-instruction-more-conflicts"}
"""Table 5's subset comparison per annotator: annotations conflict more often on Human Instruction than on Open Prompt
(the paper's Table 5 has it for both its human annotators and GPT-4o)."""
_WHO = {"human": ("human", "human annotations"), "gpt": ("GPT-4o", "GPT-4o's annotations")}


def add_table5_claims(ledger: claims.Ledger, world, *, n_boot: int = estimates.N_BOOT, seed: int = 0) -> None:
    """Table 5's claims: GPT-4o conflicts more than humans (``tab5-gpt-more-conflicts``), and each annotator's
    annotations conflict more on Human Instruction than on Open Prompt (:data:`INSTRUCTION_CLAIMS`; two sets of
    prompts, so their resamples are drawn independently: seeds ``seed + 1`` and ``seed``)."""
    common = dict(paper_ref="", paper=paper_text(), link="paper-table5")
    _gpt_claim(ledger, world, common, n_boot=n_boot, seed=seed)
    for annotator, cid in INSTRUCTION_CLAIMS.items():
        _instruction_claim(ledger, world, common, annotator, cid, n_boot=n_boot, seed=seed)


def _instruction_claim(ledger: claims.Ledger, world, common: dict, annotator: str, cid: str, *, n_boot: int,
                       seed: int) -> None:
    """One annotator's Human Instruction minus Open Prompt conflict ratio (untestable without both its files)."""
    name, whose = _WHO[annotator]
    what = f"{whose} conflict more often on Human Instruction prompts than on Open Prompt prompts"
    absent = [calibration.TABLE5_FILES[(s, annotator)] for s in SUBSETS
              if calibration.TABLE5_FILES[(s, annotator)] not in world.files]
    if absent:
        ledger.add(claims.Claim.untestable(cid, common["paper_ref"], what, "needs " + " and ".join(absent),
                                           paper=common["paper"], link=common["link"]))
        return
    diff = (conflict_estimate(world.files, annotator, ("human_instruction",), n_boot=n_boot, seed=seed + 1)
            - conflict_estimate(world.files, annotator, ("open_prompt",), n_boot=n_boot, seed=seed))
    tail = "Human Instruction minus Open Prompt is {estimate:+.3f} (95% interval {lo:+.3f} to {hi:+.3f})"
    ledger.add(claims.Claim.test(
        cid, diff, "greater", seed=seed, **common, **calibration.claim_kind(cid, world.summary is not None),
        claim=what, statistic=f"{name} conflict ratio (share of prompts), Human Instruction minus Open Prompt",
        says={"supported": f"As in the paper, {whose} conflict more often on Human Instruction prompts: by "
                           "{estimate:.3f} (95% interval {lo:.3f} to {hi:.3f}).",
              "contradicted": f"Unlike the paper, {whose} conflict less often on Human Instruction prompts: {tail}.",
              "inconclusive": f"These prompts cannot tell on which subset {whose} conflict more often: {tail}."}))


def add_near_tie_claim(ledger: claims.Ledger, world, *, n_boot: int = estimates.N_BOOT,
                       seed: int = 0) -> None:
    """Claim ``alg1-conflicts-near-ties``: near-ties (hidden utilities within
    :data:`cheems_lib.analyses.claims.NEAR_TIE_UTILITY`) are more common among the human annotations the ranking
    does not reproduce than among all human annotations; untestable without hidden utilities (``world.truth``)."""
    common = dict(paper_ref="", link="paper-alg1",
                  claim="annotations that conflict compare responses of comparable quality",
                  statistic=(f"share of near-ties (hidden utilities within {claims.NEAR_TIE_UTILITY:g}) among human "
                             "annotations not reproduced, minus their share among all human annotations"),
                  paper='"these responses exhibit comparable quality" (appendix C, no number given)')
    bench_files = [calibration.TABLE5_FILES[(s, "human")] for s in SUBSETS]
    if world.truth is not None and not all(p in world.files for p in bench_files):
        ledger.add(claims.Claim.untestable("alg1-conflicts-near-ties", reason="needs " + " and ".join(bench_files),
                                           **common))
        return
    if world.truth is None:
        ledger.add(claims.Claim(
            id="alg1-conflicts-near-ties", verdict="inconclusive", kind="untestable", **common,
            reason="real files carry no hidden utility to tell near-ties by",
            says={"inconclusive": "Real files carry no hidden utility, so the premise is not measured here."}))
        return
    bench = [(s, r) for s in SUBSETS for r in world.files[calibration.TABLE5_FILES[(s, "human")]]]
    strata = [f"{s}/{r.top_category}" for s, r in bench]
    counts = conflicts.near_tie_counts([r for _, r in bench], world.truth, claims.NEAR_TIE_UTILITY)
    near_bad = estimates.ratio_estimate(counts["near_unreproduced"], counts["unreproduced"], strata=strata,
                                     n_boot=n_boot, seed=seed)
    near_all = estimates.ratio_estimate(counts["near_all"], counts["all"], strata=strata, n_boot=n_boot, seed=seed)
    shares = (f"Near-ties make up {near_bad.value:.0%} of the human annotations that the ranking does not reproduce, "
              f"against {near_all.value:.0%} of all human annotations")
    ledger.add(claims.Claim.test(
        "alg1-conflicts-near-ties", near_bad - near_all, "greater", seed=seed, **common, kind="structural",
        reason=("every simulated annotator perceives the hidden utility with noise, so its decisions flip, and "
                "get overruled, mostly where utilities are close; this measures how strongly, not whether real "
                "annotators behave so"),
        says={"supported": shares + ": more by {estimate:.3f} (95% interval {lo:.3f} to {hi:.3f}).",
              "contradicted": shares + ": fewer, by {estimate:+.3f} (95% interval {lo:+.3f} to {hi:+.3f}).",
              "inconclusive": shares + "; the difference, {estimate:+.3f} (95% interval {lo:+.3f} to {hi:+.3f}), "
                                       "is not clear of zero."}))


# ---- the worked example and the tables of a resolved file -------------------------------------------------------

SHIPPED_EXAMPLE = "data/examples/annotations.jsonl"
"""The hand-written example file shipped with the book (the conflicts chapter's default ``data_path``)."""
_SCANNED = 500


def choose_example(sources: Sequence[tuple[str, Sequence[Record]]]) -> tuple[Record, str]:
    """The worked example's record and the sentence that says where it comes from.

    ``sources`` are ``(label, records)`` in order of preference (e.g. ``data_path``, the
    ``world_dir`` benchmark files, then :data:`SHIPPED_EXAMPLE`): the first that holds an annotated
    prompt is used, and of its first 500 annotated prompts the one whose annotations hold the largest
    cycle (the first on a tie). The sentence names the prompt and its file, and the sources passed
    over for holding no annotated prompt, so the page says plainly when it shows the shipped example. The
    sentence is Markdown (the labels as given, the id as code, the prompt's excerpt escaped), for ``glue:md``.
    """
    import networkx as nx

    skipped = []
    for label, recs in sources:
        annotated = [r for r in recs if r.annotations][:_SCANNED]
        if not annotated:
            skipped.append(label)
            continue
        graphs = [conflicts.preference_graph(r.response_ids, r.annotations) for r in annotated]
        sizes = [max(len(c) for c in nx.strongly_connected_components(g)) for g in graphs]
        best = max(range(len(annotated)), key=lambda i: (sizes[i], -i))
        rec, size = annotated[best], sizes[best]
        excerpt = rec.prompt if len(rec.prompt) <= 40 else rec.prompt[:40] + "…"
        why = (f"the one whose annotations contradict each other most (a cycle through {size} responses)" if size > 1
               else "none of them contradicts itself, so nothing is merged here")
        text = (f"The example is prompt {md_code(rec.id)} of {label} (“{md_text(excerpt)}”): of its first {len(annotated):,} annotated "
                f"prompts, {why}.")
        if skipped:
            text = f"{' and '.join(skipped)} hold{'s' if len(skipped) == 1 else ''} no annotated prompt. " + text
        return rec, text[0].upper() + text[1:]
    raise ValueError(f"no annotated prompt in {', '.join(skipped)} (fix: a data_path with raw annotations)")


def worked_example(record: Record) -> dict:
    """Algorithm 1 step by step on one record (:func:`cheems_lib.conflicts.resolve_literal`), for the chapter.

    Returns ``rank``, the annotation graph ``before`` merging and the graph ``after`` the last
    merge, ``merged`` (the first merged cycle's responses, comma-separated, or ``"none"``),
    ``rounds`` (peeling rounds) and ``table`` (response, content and round, best round first; a
    response no annotation mentions is "not ranked", last).
    """
    import pandas as pd

    ids = record.response_ids
    steps: list = []
    rank = conflicts.resolve_literal(ids, record.annotations, steps=steps)
    before = conflicts.preference_graph(ids, record.annotations)
    table = pd.DataFrame({"response": ids, "content": [r.content for r in record.responses],
                          "round": [rank.get(i, len(ids)) for i in ids]}).sort_values("round", kind="stable")
    table["round"] = pd.Series([int(r) if r < len(ids) else "not ranked" for r in table["round"]], index=table.index,
                               dtype=object)
    return {"rank": rank, "before": before, "after": steps[-1][1] if steps else before,
            "merged": ", ".join(sorted(steps[0][0])) if steps else "none",
            "rounds": max(rank.values(), default=-1) + 1, "table": table}


def plot_worked_example(example: dict):
    """Two panels of a :func:`worked_example`: the annotation graph (cycles in orange), and the merged
    graph laid out in columns by peeling round, best on the left. Returns the matplotlib Figure."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    draw_preference_graph(example["before"], ax=axes[0], title="annotations (orange: on a cycle)")
    draw_preference_graph(example["after"], ax=axes[1], rank=example["rank"], title="after merging, columns = rounds")
    fig.tight_layout()
    return fig


def prompt_table(records: Sequence[Record]):
    """One row per resolved record: prompt, category, responses, annotations, annotations ``not
    reproduced`` by its ranking, and peeling ``rounds`` (a DataFrame)."""
    import pandas as pd

    return pd.DataFrame([{
        "prompt": r.id, "category": r.top_category, "responses": len(r.responses), "annotations": len(r.annotations),
        "not reproduced": len(r.annotations) - sum(conflicts.reproduced(r.annotations, r.rank)),
        "rounds": max(r.rank.values()) + 1 if r.rank else 0,
    } for r in records])


def pair_view_counts(records: Sequence[Record]) -> dict[str, int | float]:
    """Ordered pairs the resolved ``records`` assert in the ``layers`` and the ``implied`` view of
    :func:`cheems_lib.conflicts.ordered_pairs`, and the implied view's ``share`` of the layer view's (NaN without pairs)."""
    layers = sum(len(conflicts.ordered_pairs(r, view="layers")) for r in records)
    implied = sum(len(conflicts.ordered_pairs(r, view="implied")) for r in records)
    return {"layers": layers, "implied": implied, "share": implied / layers if layers else float("nan")}
