"""The Claims page (``notebooks/claims.md``): every chapter's claims read back and shown together.

Each chapter saves its claims through a :class:`cheems_lib.analyses.claims.Ledger`; the page reads the ones
written by the runs the pages show (:func:`load`, a :class:`Page`), adds the multiplicity rule
(:func:`cheems_lib.analyses.claims.multiplicity`), counts kinds and verdicts (:func:`summary`), draws every
interval (:func:`plot_intervals`), says what would decide each inconclusive finding (:func:`power_table`, rule
:func:`cheems_lib.estimates.scale_to_decide`) and lays out the ledger (:func:`ledger_styler`,
:func:`csv_frame`) and the world replicates' spread (:func:`replicate_styler`). The chapter keeps the prose
and publishes what these return.
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..estimates import HOLM_ALPHA, VERDICTS, counted, scale_to_decide, smallest_p
from ..publishing.chapters import CHAPTERS
from ..publishing.claims_files import load_shown
from .claim_registry import FAMILIES, KINDS
from .claims import CSV_COLUMNS, HOLM_KINDS, multiplicity, pd_na, to_frame

__all__ = ["VERDICT_COLOURS", "SHOWN_VERDICTS", "NOT_TESTING", "Page", "load", "shown_verdict", "summary",
           "ledger_text", "kinds_text", "holm_text", "findings_text", "plot_intervals", "decides_at",
           "power_table", "NONE", "interval_text", "link", "ledger_styler", "csv_frame", "replicate_styler"]

VERDICT_COLOURS = {"supported": "#2e7d32", "contradicted": "#c62828", "inconclusive": "#9c9c9c",
                   "insufficient data": "#d4a017", "untestable": "#7b6fa6"}
"""The colour of each verdict the page shows (:data:`SHOWN_VERDICTS`) in the interval figure and the ledger."""
SHOWN_VERDICTS = (*VERDICTS, "untestable")
"""The verdicts the page shows: :data:`cheems_lib.estimates.VERDICTS`, and *untestable* for a claim these data cannot
test (stored as inconclusive, its kind untestable: it is not a test that failed to decide)."""
_KIND_NOUNS = {"finding": ("finding", "findings"),
               "simulator-check": ("check of the simulator's labels", "checks of the simulator's labels"), "robustness": ("robustness sweep", "robustness sweeps"),
               "question": ("question of our own", "questions of our own"),
               "arithmetic": ("check of the paper's arithmetic", "checks of the paper's arithmetic"),
               "calibrated": ("calibrated claim", "calibrated claims"), "structural": ("structural claim", "structural claims"),
               "untestable": ("untestable claim", "untestable claims")}
NOT_TESTING = ("claims", "reproduce")
"""The chapters that test no claim of their own, so are never reported missing."""
_POWER_COLUMNS = ["id", "claim", "ours [95%]", "decided at the observed effect by"]


@dataclass(frozen=True)
class Page:
    """What the Claims page reads: ``ledger`` (every shown claim, with :data:`~cheems_lib.analyses.claims.CSV_COLUMNS`),
    ``stale`` (``{chapter: why}`` for files another run wrote, never used), ``order`` (the chapters with claims, in
    book order), ``missing`` (testing chapters without a claims file) and ``sources`` (of the rows, sorted)."""

    ledger: object
    stale: dict
    order: list
    missing: list
    sources: list


def load(claims_dir: str | Path, book_dir: str | Path) -> Page:
    """The claims of the runs the pages show (:func:`cheems_lib.publishing.claims_files.load_shown`) with the Holm-adjusted p
    and verdict and the power line's count (:func:`cheems_lib.analyses.claims.multiplicity`)."""
    rows, stale = load_shown(claims_dir, book_dir)
    ledger = multiplicity(to_frame(rows))
    order = list(dict.fromkeys(ledger["chapter"])) if len(ledger) else []
    testing = [c.name for c in CHAPTERS if c.name not in NOT_TESTING]
    missing = [name for name in testing if name not in order and name not in stale]
    sources = sorted(set(ledger["source"])) if len(ledger) else []
    return Page(ledger, stale, order, missing, sources)


def shown_verdict(r) -> str:
    """The verdict a ledger row shows: *untestable* for an untestable claim, else its verdict."""
    return "untestable" if r["kind"] == "untestable" else r["verdict"]


def _shown_verdicts(ledger):
    return ledger.apply(shown_verdict, axis=1) if len(ledger) else ledger.get("verdict")


def ledger_text(ledger) -> str:
    """One sentence: how many claims, from how many chapters, of each kind present, each count with the singular or
    plural its number needs: e.g. ``'4 claims from 1 chapter: 3 findings and 1 question of our own.'``"""
    chapters = ledger["chapter"].nunique() if len(ledger) else 0
    return f"{counted(len(ledger), 'claim')} from {counted(chapters, 'chapter')}: {kinds_text(ledger)}."


def kinds_text(ledger) -> str:
    """The claims of ``ledger`` counted by kind, in :data:`~cheems_lib.analyses.claim_registry.KINDS` order: e.g.
    ``'2 calibrated claims and 4 structural claims'``; ``'none'`` for an empty ledger."""
    parts = [f"{n:,} {_KIND_NOUNS[k][n != 1]}" for k in KINDS
             if (n := int((ledger["kind"] == k).sum()) if len(ledger) else 0)]
    return (", ".join(parts[:-1]) + " and " + parts[-1]) if len(parts) > 1 else "".join(parts) or "none"


def _families(ledger) -> list[str]:
    """The families (:data:`~cheems_lib.analyses.claim_registry.FAMILIES`) present in ``ledger``, in that order."""
    present = set(ledger["family"]) if len(ledger) and "family" in ledger else set()
    return [f for f in FAMILIES if f in present]


def _family_holm(members, alpha: float) -> str:
    """One family's Holm clauses (``members``: its rows), without asides in parentheses."""
    findings = members[members["kind"].isin(HOLM_KINDS)]
    adjusted = findings[findings["holm"].fillna("") != ""]
    decided = adjusted[adjusted["verdict"].isin(("supported", "contradicted"))]
    changed = int((decided["holm"] != decided["verdict"]).sum())
    text = f"{counted(len(adjusted), 'finding')} with a p-value"
    left = len(findings) - len(adjusted)
    if left:
        text += f", {counted(left, 'finding')} without one not counted"
    text += ("; no decided verdict becomes inconclusive" if not changed else
             f"; {changed} of {counted(len(decided), 'decided verdict')} {'becomes' if changed == 1 else 'become'} "
             "inconclusive")
    replicates = adjusted["replicates"].dropna() if "replicates" in adjusted else adjusted.iloc[:0]
    replicates = replicates[replicates > 0]
    if len(adjusted) and len(replicates):
        fewest, first = int(replicates.min()), alpha / len(adjusted)
        floor = smallest_p(fewest)
        text += (f"; the first threshold, {alpha:g}/{len(adjusted)} = {first:.2g}, is "
                 + (f"above {floor:.2g}, the smallest nonzero p that {fewest:,} replicates can give" if floor <= first
                    else f"below {floor:.2g}, the smallest nonzero p that {fewest:,} replicates can give, so a finding "
                    "passes it only where no replicate crossed; more replicates, set by the parameter n_boot, would "
                    "resolve it"))
    return text


def holm_text(ledger, *, alpha: float = HOLM_ALPHA) -> str:
    """The multiplicity rule in short sentences, with this ledger's counts per family (the rule itself:
    :func:`cheems_lib.analyses.claims.multiplicity`; adjusted: the findings with a p-value, whose ``holm`` is set).
    E.g. ``'Multiplicity: Holm's step-down, within each family, keeps a supported or contradicted verdict only where
    its adjusted p is at most 0.05. Simulated: 9 findings with a p-value; 1 of 4 decided verdicts becomes
    inconclusive; ...'``"""
    text = (f"Multiplicity: Holm's step-down, within each family, keeps a supported or contradicted verdict only "
            f"where its adjusted p is at most {alpha:g}.")
    for name in _families(ledger):
        text += f" {name.capitalize()}: {_family_holm(ledger[ledger['family'] == name], alpha)}."
    return text


def findings_text(ledger) -> str:
    """The findings' verdicts counted per family, one sentence each: e.g. ``'Of the 12 findings on a simulated world,
    3 are supported, 1 contradicted, 7 inconclusive and 1 with insufficient data.'``; a sentence that says so when
    there is none."""
    out = []
    for name in _families(ledger):
        findings = ledger[(ledger["family"] == name) & (ledger["kind"] == "finding")]
        if not len(findings):
            continue
        n = {v: int((findings["verdict"] == v).sum()) for v in VERDICTS}
        where = "on a simulated world" if name == FAMILIES[0] else "on real data"
        out.append(f"Of the {counted(len(findings), 'finding')} {where}, {n['supported']} "
                   f"{'is' if n['supported'] == 1 else 'are'} supported, {n['contradicted']} contradicted, "
                   f"{n['inconclusive']} inconclusive and {n['insufficient data']} with insufficient data.")
    return " ".join(out) or "The ledger holds no finding."


def summary(ledger):
    """``(counts, numbers)``: the kind-by-verdict table, and the page's glued counts: ``n_<kind>`` per kind,
    ``n_findings_<verdict>`` per verdict (spaces as underscores), ``n_pooled`` (findings over three or more
    training seeds), ``n_forced``, ``holm_rule`` (the multiplicity sentences, :func:`holm_text`), ``findings_text``
    (the findings' verdicts per family, :func:`findings_text`) and ``ledger_text`` (the counts by kind,
    :func:`ledger_text`). The table's columns are :data:`SHOWN_VERDICTS`: untestable claims under *untestable*."""
    import pandas as pd

    counts = pd.crosstab(ledger["kind"], _shown_verdicts(ledger).rename("verdict")).reindex(
        index=list(KINDS), columns=list(SHOWN_VERDICTS), fill_value=0) if len(ledger) else pd.DataFrame()
    findings = ledger[ledger["kind"] == "finding"] if len(ledger) else ledger
    numbers = {f"n_{kind}": int((ledger["kind"] == kind).sum()) if len(ledger) else 0 for kind in KINDS}
    for verdict in VERDICTS:
        numbers[f"n_findings_{verdict.replace(' ', '_')}"] = (int((findings["verdict"] == verdict).sum())
                                                            if len(findings) else 0)
    numbers["n_pooled"] = int((findings["seeds"] >= 3).sum()) if len(findings) else 0
    numbers["n_forced"] = int(ledger["forced"].sum()) if "forced" in ledger else 0
    numbers["holm_rule"] = holm_text(ledger)
    numbers["findings_text"] = findings_text(ledger)
    numbers["ledger_text"] = ledger_text(ledger)
    return counts, numbers


def plot_intervals(ledger):
    """Every claim with an interval, top to bottom in ledger order: its estimate (a dot, filled for a finding) and
    95% interval (a line), coloured by verdict, with zero marked. Returns the matplotlib Figure."""
    import matplotlib.pyplot as plt

    shown = ledger[np.isfinite(ledger["ci_low"].astype(float))] if len(ledger) else ledger
    fig, ax = plt.subplots(figsize=(8, 0.32 * max(len(shown), 4) + 1.2))
    for y, (_, r) in enumerate(shown.iloc[::-1].iterrows()):
        colour = VERDICT_COLOURS[shown_verdict(r)]
        ax.plot([r["ci_low"], r["ci_high"]], [y, y], color=colour, lw=2.5)
        ax.plot(r["estimate"], y, "o", color=colour, mfc="white" if r["kind"] != "finding" else colour)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(range(len(shown)), [f"{i} ({k})" for i, k in zip(shown["id"][::-1], shown["kind"][::-1])], fontsize=8)
    ax.set_xlabel("estimate and 95% interval (each claim's own statistic; filled: finding)")
    for verdict, colour in VERDICT_COLOURS.items():
        ax.plot([], [], color=colour, lw=2.5, label=verdict)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def decides_at(r) -> str:
    """The power line of one inconclusive finding (a ledger row; rule: :func:`cheems_lib.estimates.scale_to_decide`):
    the count of its units, and of training seeds where it has several, that would decide it at the observed effect."""
    direction, margin, unit = (r.get(c) for c in ("direction", "margin", "unit"))  # absent from older files
    if not all(np.isfinite(float(r[c])) for c in ("estimate", "ci_low", "ci_high")):
        return "no interval to scale: the claim's statistic has no bootstrap interval"
    k = scale_to_decide(float(r["estimate"]), float(r["ci_low"]), float(r["ci_high"]),
                        "" if pd_na(direction) else direction, 0.0 if pd_na(margin) else float(margin))
    unit = "prompt" if pd_na(unit) else unit
    if not np.isfinite(k):
        return "no count decides it: the estimate sits on the boundary its verdict needs"
    text = (f"about {int(r['decides_at_n']):,} {unit}s (now {int(r['n']):,}, ×{k:.1f})"
            if not pd_na(r["decides_at_n"]) else f"×{k:.1f} the {unit}s")
    seeds = int(r["seeds"]) if np.isfinite(float(r["seeds"])) else 0
    return text + (f", or about {int(np.ceil(seeds * k - 1e-9))} training seeds (now {seeds})" if seeds > 1 else "")


def power_table(ledger):
    """``(undecided, table)``: every inconclusive finding (as many as the summary counts), and one row each with
    its interval and :func:`decides_at`."""
    import pandas as pd

    undecided = ledger[(ledger["kind"] == "finding") & (ledger["verdict"] == "inconclusive")] if len(ledger) else ledger
    if not len(undecided):
        return undecided, pd.DataFrame(columns=_POWER_COLUMNS)
    ours = [interval_text(r) for _, r in undecided.iterrows()]
    decided_by = [decides_at(r) for _, r in undecided.iterrows()]
    return undecided, pd.DataFrame({"id": undecided["id"], "claim": undecided["claim"], "ours [95%]": ours,
                                    "decided at the observed effect by": decided_by})


NONE = "–"
"""What a ledger cell shows for a value the claim does not have (not a missing number's text): no paper number (our own
question), no estimate or interval, no Holm verdict (outside the family of findings)."""


def interval_text(r) -> str:
    """A ledger row's ``estimate [ci_low, ci_high]`` (three decimals); the estimate alone without an interval, or
    when the verdict is *insufficient data* (too few units, or an interval of no width, is no 95% interval:
    the one rule of :func:`cheems_lib.estimates.insufficient`); :data:`NONE` without an estimate."""
    if not np.isfinite(float(r["estimate"])):
        return NONE
    if not np.isfinite(float(r["ci_low"])) or r.get("verdict") == "insufficient data":
        return f"{r['estimate']:.3f}"
    return f"{r['estimate']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"


def link(target, text=None) -> str:
    """``chapter#anchor`` as an HTML link to that chapter's page (its text: ``text``, else the target)."""
    page, _, anchor = str(target).partition("#")
    return f'<a href="{page}.html{"#" + anchor if anchor else ""}">{html.escape(str(text or target))}</a>'


def _details(r, where: str) -> str:
    """The claim's text, then its details on demand (a closed ``<details>``): the statistic, the paper's section and
    words, what could decide it by construction (a simulated world's), its family, training seeds, units, why its
    kind, and where it is shown. Every text escaped."""
    facts = [("statistic", r["statistic"]), ("paper", r["paper_ref"]), ("the paper's words", r.get("paper_words")),
             ("what could decide it by construction", r.get("mechanism")), ("family", r.get("family")),
             ("training seeds", "" if pd_na(r["seeds"]) else int(r["seeds"])),
             ("n", "" if pd_na(r["n"]) else int(r["n"])), (f"why {r['kind']}", r["reason"])]
    items = "".join(f"<li><b>{html.escape(k)}</b>: {html.escape(str(v))}</li>" for k, v in facts
                    if not pd_na(v) and str(v) != "")
    return (f"{html.escape(str(r['claim']))}<details><summary>details</summary><ul>{items}"
            f"<li><b>shown in</b>: {link(where)}</li></ul></details>")


def ledger_styler(ledger):
    """The ledger as the page shows it, one compact row per claim: its id (a link to where it is shown), the
    claim with its details on demand (:func:`_details`), the paper's numbers, ours with its interval, verdict
    (coloured; forced ones marked), kind, family (Holm is applied within each) and Holm verdict. A missing value
    shows :data:`NONE`."""
    import pandas as pd

    if not len(ledger):
        return pd.DataFrame().style
    where = [f"{c}#{lk}" if lk else c for c, lk in zip(ledger["chapter"], ledger["link"].fillna(""))]
    table = pd.DataFrame({
        "id": [link(w, i) for w, i in zip(where, ledger["id"])],
        "claim": [_details(r, w) for (_, r), w in zip(ledger.iterrows(), where)],
        "paper's numbers": ledger["paper"].map(lambda v: NONE if pd_na(v) or v == "" else html.escape(str(v))),
        "ours [95%]": ledger.apply(interval_text, axis=1),
        "verdict": _shown_verdicts(ledger) + np.where(ledger["forced"], " (forced)", ""), "kind": ledger["kind"],
        "family": ledger["family"] if "family" in ledger else NONE,
        "Holm": ledger["holm"].replace("", NONE).fillna(NONE)})
    return table.style.hide(axis="index").map(
        lambda v: f"color: {VERDICT_COLOURS.get(str(v).removesuffix(' (forced)'), 'inherit')}", subset=["verdict"])


def csv_frame(ledger):
    """``tables/claims.csv``'s rows: the ledger's :data:`~cheems_lib.analyses.claims.CSV_COLUMNS`."""
    import pandas as pd

    return ledger[CSV_COLUMNS] if len(ledger) else pd.DataFrame(columns=CSV_COLUMNS)


def replicate_styler(frame):
    """The replicate table as the page shows it (:func:`cheems_lib.publishing.replicates.compare`'s frame, flips and
    reversals in red); the CSV keeps every column, as numbers."""
    hidden = ["chapter", "worlds", "min", "max"]
    names = {"mean_ci_width": "mean 95% width",
             **{c: c.replace("estimate_seed", "world seed ").replace("verdict_seed", "verdict, seed ")
                for c in frame.columns if "_seed" in c}}
    return (frame.style.hide(axis="index").hide(hidden, axis="columns").format(precision=3, na_rep="-", escape="html")
            .map(lambda v: "color: #c62828" if v == "yes" else "", subset=["flips", "reverses"])
            .relabel_index([names.get(c, c) for c in frame.columns if c not in hidden], axis="columns"))
