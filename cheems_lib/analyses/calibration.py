"""Calibration: the simulated world (or the real files) beside the paper's Tables 1 and 5.

The functions take the files of the spec §6 layout (``{layout path: records}``, as
:func:`cheems_lib.world_files.load_world` returns them), so the same code describes the
real CheemsBench files when a user has them. :func:`checks` lists every calibration
target of the simulator with its value and whether it is met; the tests and the book
both use it. A quantity that is both a calibration target and a claim is checked with the
claim's threshold from :mod:`cheems_lib.analyses.claims`, so it has one threshold.
:func:`calibrated_claims` names the claims whose numbers the simulator was fitted to (their
kind is ``calibrated``) and what was fitted, read from the claims registry, ``data/paper/claims.yaml``, which also
names the claims the simulator is built to make true (kind ``structural``) and why.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..baselines import length_scores
from ..conflicts import conflict_stats, prompt_conflicts
from ..metrics import evaluate_subset
from ..paper import table
from ..records import strict_pairs
from ..world.annotators import GPTAnnotator, HumanAnnotator, position_share
from ..world.quality import TRAIT_LOGITS, UtilityWeights
from ..world.simulation import length_stats, MODELS, SIZES, SUBSETS
from ..world_files import GPT_LAYOUT, LAYOUT, PAPER_FILES
from .claim_registry import entry, registry
from .claims import CONFLICT_TOLERANCE, GPT_POSITION_TARGET, POSITION_EQUIVALENCE, TABLE1_TOLERANCE
from .experiments import GPT_PROMPTS

__all__ = ["TABLE1_COLUMNS", "TABLE5_FILES", "calibrated_claims", "claim_kind", "table1", "table1_per_prompt",
           "paper_table1", "paper_gpt_human_ratio", "table1_sizes", "table5", "table5_per_prompt", "checks",
           "PARAMETERS", "parameters", "fitted_to", "Thresholds", "THRESHOLDS"]

TABLE1_COLUMNS = {f.column: LAYOUT[key] for key, f in PAPER_FILES.items()}
"""Table 1's column -> layout path (from :data:`cheems_lib.world_files.PAPER_FILES`)."""
TABLE5_FILES = {(f.subset, who): (LAYOUT if who == "human" else GPT_LAYOUT)[key]
                for who in ("human", "gpt") for key, f in PAPER_FILES.items() if f.subset}
"""(Table 5's subset, annotator) -> layout path (from :data:`cheems_lib.world_files.PAPER_FILES`)."""
_BENCH = [LAYOUT[key] for key, f in PAPER_FILES.items() if f.subset]  # CheemsBench's human-annotated files
_GPT_BENCH = [GPT_LAYOUT[key] for key, f in PAPER_FILES.items() if f.subset]


@dataclass(frozen=True)
class Thresholds:
    """Every tolerance of :func:`checks`, in one table (:data:`THRESHOLDS`). A quantity that is also a claim
    takes the claim's threshold from :mod:`cheems_lib.analyses.claims`, so it has one threshold."""

    conflict_ratio: float = CONFLICT_TOLERANCE
    """± around each Table 5 conflict ratio (absolute), to which the annotators' noise is fitted: the claims'
    (``claims.CONFLICT_TOLERANCE``)."""
    human_position: float = POSITION_EQUIVALENCE
    """± around 0.5 for the human annotator's share of the second-shown response: the equivalence margin of
    the claim "no position preference" (``claims.POSITION_EQUIVALENCE``)."""
    gpt_position: float = GPT_POSITION_TARGET
    """The least share of the second-shown response for the simulated GPT-4o: the target of the claim that
    GPT-4o prefers it (``claims.GPT_POSITION_TARGET``)."""
    responses_per_prompt: float = 0.1
    """± responses per prompt (absolute): each prompt's count is drawn around Table 1's mean, so a file's mean
    misses it by sampling alone; a tenth of a response allows that and still catches a wrong distribution."""
    chars: float = 0.15
    """± of Table 1's mean prompt, chosen and rejected lengths (relative): a text is filler drawn around Table 1's
    mean plus its task's sentences, and which response is chosen is up to the annotators, so the means land near
    the target only; the chosen / rejected ratio, which the claims test, has the tighter ``table1`` tolerance."""
    table1: float = TABLE1_TOLERANCE
    """± of Table 1's comparisons per prompt and chosen/rejected length ratio (relative): the claims' on the
    same two numbers (``claims.TABLE1_TOLERANCE``)."""
    prompt_share: float = 0.02
    """± of one file's prompt count over Table 1's, divided by the other file's of its data set: rounding a
    count of n prompts moves it by up to 0.5/n, 1.7% for the smoke world's 30 human preference prompts."""
    length_baseline: float = 0.60
    """Ceiling of the longest-response baseline's accuracy on the benchmark: length must say little about
    quality, so no model scores well by length alone (ten points above a coin's 0.5 at most)."""
    learnable_margin: float = 0.10
    """Accuracy points by which an n-gram probe fitted on the clean (hidden-utility) labels must beat the
    length baseline: the text carries quality a reward model can learn, beyond length."""


THRESHOLDS = Thresholds()
"""The tolerances :func:`checks` uses (see :class:`Thresholds` for why each)."""

def calibrated_claims() -> dict[str, str]:
    """Claim id -> what the simulator was fitted to, for every claim the registry
    (:mod:`cheems_lib.analyses.claim_registry`) calls ``calibrated``."""
    return {e.id: e.reason for e in registry().values() if e.kind == "calibrated"}


def claim_kind(claim_id: str, simulated: bool) -> dict[str, str]:
    """``kind`` and ``reason`` of a claim from its registry entry (:func:`cheems_lib.analyses.claim_registry.entry`):
    on a world the simulator wrote (``simulated``: it has a ``summary.json``, also when read from a folder) its
    ``kind`` (``calibrated``, ``structural`` or ``simulator-check``, with what was fitted or built), on real files
    its ``real_kind`` (a ``finding``, where nothing was fitted or built)."""
    e = entry(claim_id)
    kind = e.kind_on(simulated)
    return {"kind": kind, "reason": "" if kind == "finding" else e.reason}


def table1(files: dict, *, length_scale: float = 1.0, columns: dict | None = None):
    """Table 1's statistics of ``files`` in the paper's shape; lengths divided by ``length_scale``.

    ``comparisons_excluding_ties`` counts the pairs with different ranks (what the metrics
    compare); ``comparisons_per_prompt`` is added so counts of different sizes compare.
    ``columns`` (column name -> layout path) defaults to :data:`TABLE1_COLUMNS`.
    """
    import pandas as pd

    cols = {}
    for col, path in (columns or TABLE1_COLUMNS).items():
        if path not in files:
            continue
        recs = files[path]
        st = length_stats(recs)
        cols[col] = {
            "prompts": len(recs), "responses_per_prompt": st["responses_per_prompt"],
            "comparisons_excluding_ties": st["comparisons_excluding_ties"],
            "comparisons_per_prompt": st["comparisons_excluding_ties"] / len(recs),
            "avg_chars_prompt": st["avg_chars_prompt"] / length_scale,
            "avg_chars_chosen": st["avg_chars_chosen"] / length_scale,
            "avg_chars_rejected": st["avg_chars_rejected"] / length_scale,
        }
    return pd.DataFrame(cols)


def table1_per_prompt(records) -> dict[str, np.ndarray]:
    """Per record, for a bootstrap over prompts: ``comparisons`` (pairs in different rank layers, i.e.
    excluding ties) and the summed characters of their ``chosen`` and ``rejected`` responses, and
    ``all_pairs`` (C(n, 2), the comparisons if every pair were ordered).

    ``chosen.sum() / comparisons.sum()`` is :func:`table1`'s ``avg_chars_chosen`` (before length
    scaling), so ``chosen.sum() / rejected.sum()`` is the ratio of mean chosen to mean rejected length.
    """
    out = {k: np.zeros(len(records)) for k in ("comparisons", "chosen", "rejected", "all_pairs")}
    for k, r in enumerate(records):
        size = {x.id: len(x.content) for x in r.responses}
        n = len(r.responses)
        out["all_pairs"][k] = n * (n - 1) / 2
        for a, b in strict_pairs(r.rank or {}):
            out["comparisons"][k] += 1
            out["chosen"][k] += size[a]
            out["rejected"][k] += size[b]
    return out


def paper_table1():
    """The paper's Table 1 with ``comparisons_per_prompt`` added."""
    paper = table("table1_statistics").set_index("statistic")
    paper.loc["comparisons_per_prompt"] = paper.loc["comparisons_excluding_ties"] / paper.loc["prompts"]
    return paper


def paper_gpt_human_ratio() -> float:
    """The paper's GPT-annotated prompts per human-annotated prompt in CheemsPreference (Table 1)."""
    t1 = paper_table1()
    return float(t1.loc["prompts", "cheemspreference_gpt"] / t1.loc["prompts", "cheemspreference_human"])


def table1_sizes(size: str) -> dict[str, int]:
    """The simulator's prompt count of each Table 1 column at ``size`` (for :func:`checks`' ``sizes``)."""
    return {f.column: SIZES[size][key] for key, f in PAPER_FILES.items()}


def table5(files: dict):
    """Conflict ratios beside the paper's Table 5 (only rows whose file is present; a GPT-4o row also
    needs its human file, whose prompt order it follows). No row: an empty frame with the columns."""
    import pandas as pd

    paper = table("table5_conflict_ratio")
    rows = []
    for _, r in paper.iterrows():
        path = TABLE5_FILES[(r["subset"], r["annotator"])]
        if path in files and TABLE5_FILES[(r["subset"], "human")] in files:
            rows.append({"subset": r["subset"], "annotator": r["annotator"], "file": path,
                         "paper": r["conflict_ratio"], "ours": conflict_stats(files[path])["conflict_ratio"]})
    out = pd.DataFrame(rows, columns=["subset", "annotator", "file", "paper", "ours"])
    out["difference"] = out["ours"] - out["paper"]
    return out


def table5_per_prompt(files: dict, annotator: str, subsets=("open_prompt", "human_instruction")) -> dict:
    """Per prompt of Table 5's ``subsets``, in the order of the human-annotated files: ``annotated``,
    ``conflicted`` (see :func:`cheems_lib.conflicts.prompt_conflicts`) and ``strata`` (subset and
    category), so the human and the GPT annotations of a prompt share its bootstrap draws
    (:func:`cheems_lib.estimates.ratio_estimate` with one seed)."""
    recs, strata = [], []
    for sub in subsets:
        human = files[TABLE5_FILES[(sub, "human")]]
        path = TABLE5_FILES[(sub, annotator)]
        by_id = {r.id: r for r in files[path]}
        missing = [r.id for r in human if r.id not in by_id]
        if missing:
            raise ValueError(f"{path}: prompt {missing[0]} of {TABLE5_FILES[(sub, 'human')]} is missing "
                             "(fix: annotate the same prompts in both files)")
        recs += [by_id[r.id] for r in human]
        strata += [f"{sub}/{r.top_category}" for r in human]
    return {**prompt_conflicts(recs), "strata": np.array(strata, dtype=object)}


def checks(files: dict, *, length_scale: float = 1.0, truth: dict | None = None, sizes: dict | None = None) -> list[dict]:
    """Every calibration target: ``{"check", "target", "value", "ok"}`` per row.

    ``sizes`` (the simulator's prompt counts) enables the count-proportion check; ``truth``
    (``{(prompt_id, response_id): utility}``) enables the learnability check. Every tolerance is
    :data:`THRESHOLDS`'s.
    """
    out, th = [], THRESHOLDS

    def add(name, target, value, ok):
        out.append({"check": name, "target": target, "value": float(value), "ok": bool(ok)})

    for _, r in table5(files).iterrows():
        add(f"conflict ratio, {r['subset']} / {r['annotator']}", f"{r['paper']:.4f} ± {th.conflict_ratio:g}",
            r["ours"], abs(r["ours"] - r["paper"]) <= th.conflict_ratio)
    human = [rec for p in _BENCH if p in files for rec in files[p]]
    gpt = [rec for p in _GPT_BENCH if p in files for rec in files[p]]
    if human:
        v = position_share(human)
        add("human: share of decisions for the second-shown response", f"0.50 ± {th.human_position:g}", v,
            abs(v - 0.5) <= th.human_position)
    if gpt:
        v = position_share(gpt)
        add("GPT: share of decisions for the second-shown response", f"≥ {th.gpt_position:g}", v,
            v >= th.gpt_position)
    ours = table1(files, length_scale=length_scale)
    paper = paper_table1()
    for col in ours.columns:
        for stat in ("responses_per_prompt", "avg_chars_prompt", "avg_chars_chosen", "avg_chars_rejected"):
            p, v = paper.loc[stat, col], ours.loc[stat, col]
            tol = th.responses_per_prompt if stat == "responses_per_prompt" else th.chars * p
            add(f"Table 1 {stat}, {col}", f"{p:g} ± {tol:.3g}", v, abs(v - p) <= tol)
        p, v = paper.loc["comparisons_per_prompt", col], ours.loc["comparisons_per_prompt", col]
        add(f"Table 1 comparisons per prompt, {col}", f"{p:.2f} ± {th.table1:.0%}", v,
            abs(v / p - 1) <= th.table1)
    gpt_pref = "cheemspreference_gpt"
    if gpt_pref in ours.columns:
        p, v = (t.loc["avg_chars_chosen", gpt_pref] / t.loc["avg_chars_rejected", gpt_pref] for t in (paper, ours))
        add(f"Table 1 chosen / rejected length, {gpt_pref}", f"{p:.3f} ± {th.table1:.0%}", v,
            abs(v / p - 1) <= th.table1)
    if sizes:
        ratios = {col: sizes[col] / paper.loc["prompts", col] for col in ours.columns if col in sizes}
        groups = [("cheemsbench_open_prompt", "cheemsbench_human_instruction"), ("cheemspreference_gpt", "cheemspreference_human")]
        for a, b in groups:
            if a in ratios and b in ratios:
                rel = ratios[a] / ratios[b]
                add(f"prompt counts in Table 1's proportion, {a} : {b}", f"1.00 ± {th.prompt_share:.2f}", rel,
                    abs(rel - 1) <= th.prompt_share)
    for path in _BENCH:
        if path in files:
            acc = evaluate_subset(files[path], length_scores(files[path]), n_boot=0).accuracy
            add(f"longest-response baseline accuracy, {path}", f"< {th.length_baseline:.2f}", acc,
                acc < th.length_baseline)
    if truth is not None and LAYOUT["pref_human"] in files:
        from ..baselines import NgramProbe

        probe = NgramProbe().fit(files[LAYOUT["pref_human"]], truth)
        for path in _BENCH:
            if path in files:
                acc = evaluate_subset(files[path], probe.score(files[path]), n_boot=0).accuracy
                base = evaluate_subset(files[path], length_scores(files[path]), n_boot=0).accuracy
                add(f"learnable: n-gram probe on clean labels beats length by ≥ {th.learnable_margin:.2f}, {path}",
                    f"≥ {base + th.learnable_margin:.3f}", acc, acc >= base + th.learnable_margin)
    return out


# Every parameter of the simulator: (name, value getter, what fixes it, why). "fitted: X" parameters are
# fitted to the paper number X; "assumed" ones are fitted to nothing and are the simulation's assumptions.
def _human():
    return HumanAnnotator()


def _gpt():
    return GPTAnnotator()


def _subsets(attr):
    return ", ".join(f"{k} {getattr(s, attr):g}" for k, s in SUBSETS.items())


_T5, _T1C = "fitted: Table 5 conflict ratios", "fitted: Table 1 comparisons per prompt"
PARAMETERS = [
    ("HumanAnnotator.shared_noise", lambda: _human().shared_noise, "assumed",
     "how differently people perceive one response, shared by every round: it creates no conflicts, so Table 5 "
     "cannot fit it, yet it sets how accurate human labels are next to GPT's fitted noise (swept in the "
     "sensitivity chapter)"),
    ("HumanAnnotator.noise", lambda: _human().noise, _T5,
     "one round's own perception noise; the best fit is none, as conflicts come from how ties chain"),
    ("HumanAnnotator.tie_margin", lambda: _human().tie_margin, "assumed (scale)",
     "the utility gap below which annotators call a tie; on the benchmark only its product with the fitted SubsetSpec.human_tie matters, on "
     "the golden preference subset it sets the ties that SubsetSpec.responses_sd is fitted around"),
    ("HumanAnnotator.length_bias, length_peak", lambda: f"{_human().length_bias:g}, {_human().length_peak:g}",
     "assumed", "shaped after Fig. 15a (longer wins at moderate, shorter at large differences); no numeric target"),
    ("GPTAnnotator.noise", lambda: _gpt().noise, _T5, "noise of one pairwise call"),
    ("GPTAnnotator.position_bias", lambda: _gpt().position_bias, "fitted: Fig. 15d",
     "share of decisions for the response shown second"),
    ("GPTAnnotator.length_bias", lambda: _gpt().length_bias, "fitted: Table 1 chosen / rejected length (GPT)",
     "its direction follows Fig. 15c"),
    ("GPTAnnotator.length_peak", lambda: _gpt().length_peak, "assumed",
     "length difference at which GPT's length bonus saturates; no numeric target"),
    ("SubsetSpec.mix", lambda: "per file (simulation.SUBSETS)", "assumed",
     "category shares per file; the paper shows its taxonomy (Figs. 8-10), not the shares"),
    ("SubsetSpec.responses_mean", lambda: _subsets("responses_mean"), "fitted: Table 1 responses per prompt", ""),
    ("SubsetSpec.responses_sd", lambda: _subsets("responses_sd"), _T1C,
     "spread of the response counts of the preference files (a beta-binomial at Table 1's mean)"),
    ("SubsetSpec.human_tie", lambda: _subsets("human_tie"), "fitted: Table 1 comparisons per prompt and Table 5 conflict ratios, jointly",
     "how often the human annotators of each benchmark file call a tie"),
    ("SubsetSpec.gpt_difficulty", lambda: _subsets("gpt_difficulty"), _T5, "GPT's noise multiplier per file"),
    ("SubsetSpec.human_difficulty", lambda: _subsets("human_difficulty"), _T5,
     "multiplies HumanAnnotator.noise, so it has no effect while the fitted noise is 0"),
    ("SubsetSpec.prompt_chars, response_chars", lambda: "per file (simulation.SUBSETS)", "fitted: Table 1 lengths", ""),
    ("simulation.MODELS", lambda: _models_text(), "assumed",
     "policies from weak to strong; verbosity is independent of strength so that length says little about "
     f"quality (checked: the longest-response baseline stays below {THRESHOLDS.length_baseline:.2f} accuracy)"),
    ("quality.TRAIT_LOGITS, DETAIL_P, UTILITY", lambda: _traits_text(), "assumed",
     "how strength sets each visible trait and how traits set the 0-5 utility; shaped after Tables 6-7, no "
     "numeric target"),
    ("panels.RANGES", lambda: "per annotator kind (cheems_lib.world.panels)", "assumed",
     "ranges from which the independent comparators' annotators and the win-rate judges draw their "
     "parameters, apart from CheemsBench's annotators"),
    ("SIZES length_scale", lambda: "1/3 below paper size", "assumed", "shorter texts keep CPU training fast; "
     "lengths are divided by it before any comparison with the paper"),
    ("chapters' GPT : human training prompts", lambda: _ratio_text(), "assumed",
     lambda: f"the paper's ratio is {paper_gpt_human_ratio():.1f} : 1 (Table 1); the chapters train on fewer GPT prompts to "
             "fit the CPU budget (swept in the sensitivity chapter)"),
]


def parameters():
    """Every simulator parameter with its current value, what fixes it (``fitted: <paper number>`` or
    ``assumed``) and why, as a DataFrame (values are read from the live defaults, never typed)."""
    import pandas as pd

    return pd.DataFrame([{"parameter": name, "value": str(get()), "fixed by": how, "why": why() if callable(why) else why}
                         for name, get, how, why in PARAMETERS])


def fitted_to() -> str:
    """The paper numbers the simulator's parameters are fitted to, read from :data:`PARAMETERS` ("fitted: X"),
    for prose that says what was fitted (never a typed list that can fall behind).

    >>> "Table 5 conflict ratios" in fitted_to() and "Table 1 lengths" in fitted_to()
    True
    """
    targets = set()
    for _, _, how, _ in PARAMETERS:
        if how.startswith("fitted: "):
            targets |= {t.strip().removesuffix(", jointly") for t in how.removeprefix("fitted: ").split(" and ")}
    return "; ".join(sorted(targets, key=lambda t: (not t.startswith("Table"), t)))


def _models_text() -> str:
    strength, verbosity = [m[1] for m in MODELS], [m[2] for m in MODELS]
    return (f"{len(MODELS)} models, strength {min(strength):g} to {max(strength):g}, "
            f"verbosity {min(verbosity):g} to {max(verbosity):g}")


def _traits_text() -> str:
    from dataclasses import fields

    return f"{len(TRAIT_LOGITS)} trait (intercept, slope) pairs, detail level, {len(fields(UtilityWeights))} utility weights"


def _ratio_text() -> str:
    return f"{GPT_PROMPTS} : {SIZES['default']['pref_human']} (default world)"
