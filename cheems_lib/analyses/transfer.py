"""Simulated analogues of the open preference datasets of Table 3 (paper §6.1).

The paper trains reward models on open preference datasets and scores them on CheemsBench.
Those datasets differ in several ways at once (:data:`TABLE3_DATASETS`): pairwise or
multi-response, human- or machine-annotated, general or narrow (math, safety), English or
Chinese. The simulated world's preference set can be changed one property at a time:

- :func:`pairwise_only` -- one chosen/rejected pair per prompt instead of a ranking of
  several responses (the format of HH-RLHF, Chatbot Arena, HelpSteer2, Skywork, ...);
- :func:`domain_only` -- a narrow domain (math);
- :func:`noisy_labels` -- labels flipped at random (no Table 3 row is known to differ only so;
  not trained by the chapter, to keep the CPU budget).

:func:`analogues` builds the sets the chapter trains. Each has the properties of
:data:`PROPERTIES` (annotation, format, domain, labels), the property it isolates, and the
Table 3 rows it stands for: those whose annotation, format and domain are all its own (a
test checks them against :data:`TABLE3_DATASETS` and ``data/paper/table3_datasets.csv``).
:func:`nearest` names the rows that differ from an analogue in one property only.

The chapter's tables and claims: :func:`table3` (ours), :func:`published_table3` (the paper's,
with our properties), :func:`add_claims` (Table 3's claims: the project's two questions, kind
``question``, the untestable language claim, and the paper's best dataset per language, kind
``arithmetic``, read from the paper's own table by :func:`add_best_dataset_claims`) and :func:`effects` (each change of
:data:`EFFECTS` against its reference); its figure is :func:`cheems_lib.publishing.figures.overall_dots`.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np

from ..baselines import CHANCE, chance_metrics, CONTROLS, NAMES
from ..conflicts import resolve_records
from ..estimates import counted, decide, INSUFFICIENT, VERDICTS
from ..paper import table
from ..records import FIRST, SECOND, Record, strict_pairs
from ..world_files import LAYOUT
from .claims import Claim
from .leaderboard import CONTROLS_SECTION, interval_cell as _interval

__all__ = ["TABLE3_PROMPTS", "pairwise_only", "domain_only", "noisy_labels", "analogues", "PROPERTIES", "TABLE3_DATASETS",
           "nearest", "annotation_pairs", "HUMAN_CLAIM", "table3_groups", "paper_accuracy", "MULTI_HUMAN", "MULTI_MACHINE", "PAIR_HUMAN", "PAIR_MACHINE",
           "EFFECTS", "table3", "published_table3", "paper_groups_text", "add_claims", "add_untestable_claims", "best_dataset",
           "add_best_dataset_claims", "effects", "add_real_claims"]

TABLE3_PROMPTS = 800
"""The Table 3 prompt count: the GPT-annotated prompts (the subset's first) of each multi-response
machine-annotated analogue (:func:`analogues`); equal to :data:`cheems_lib.analyses.experiments.GPT_PROMPTS`,
so the ``multi-response, machine`` set is Table 4's GPT subset row and the zoo trains it once. The chapters'
``prompts`` / ``transfer_prompts`` default to it (tests/test_chapters.py checks the parameters cells)."""
PROPERTIES = ("annotation", "format", "domain")
"""The properties an analogue shares with the Table 3 rows it stands for."""

# What each Table 3 dataset is, as its own release describes it. The Cheems paper prints only
# the names and citations (appendix E), so these are ours; "unknown" where the paper cites no
# source we could place or the release does not say. Labels from community votes count as human.
TABLE3_DATASETS: dict[str, dict[str, str]] = {
    "HH-RLHF-cn": {"annotation": "human", "format": "pairwise", "domain": "general",
                   "note": "a Chinese translation of HH-RLHF (no source cited); assumed to keep its human labels"},
    "Huozi": {"annotation": "unknown", "format": "unknown", "domain": "general",
              "note": "Huozi-Team (2024), open-domain chat; how its preferences were labelled is not stated in the paper"},
    "Kyara": {"annotation": "unknown", "format": "unknown", "domain": "unknown",
              "note": "Yang (2024); the paper gives no description"},
    "Zhihu": {"annotation": "human", "format": "pairwise", "domain": "general",
              "note": "Yucheng (2023): Zhihu answer pairs ranked by community votes"},
    "ChatbotArena": {"annotation": "human", "format": "pairwise", "domain": "general",
                     "note": "Zheng et al. (2023): users vote between two chatbots' answers"},
    "HH-RLHF": {"annotation": "human", "format": "pairwise", "domain": "general",
                "note": "Bai et al. (2022), Ganguli et al. (2022): crowdworkers pick the more helpful or harmless reply"},
    "MathPreference": {"annotation": "unknown", "format": "unknown", "domain": "math",
                       "note": "no source cited; math by its name"},
    "Nectar": {"annotation": "machine", "format": "multi-response", "domain": "general",
               "note": "Zhu et al. (2023): GPT-4 ranks 7 responses per prompt"},
    "PKU-SafeRLHF": {"annotation": "human", "format": "pairwise", "domain": "safety",
                     "note": "Ji et al. (2024): human preference pairs on safety-related prompts"},
    "Skywork": {"annotation": "machine", "format": "pairwise", "domain": "general",
                "note": "Liu et al. (2024a): curated pairs, most scored by a reward model or built with GPT-4 "
                        "(its HelpSteer2 part is human)"},
    "MathStackExchange": {"annotation": "human", "format": "multi-response", "domain": "math",
                          "note": "Lambert et al. (2023): several answers per math question, ranked by votes"},
    "UltraFeedback": {"annotation": "machine", "format": "multi-response", "domain": "general",
                      "note": "Cui et al. (2023): GPT-4 rates 4 responses per prompt"},
    "HelpSteer2": {"annotation": "human", "format": "pairwise", "domain": "general",
                   "note": "Wang et al. (2024d): human ratings of 2 responses per prompt"},
}


def nearest(props: dict[str, str]) -> dict[str, str]:
    """``{dataset: property}`` for the Table 3 rows that differ from ``props`` in exactly one known property.

    Table 3's labels count as they were annotated, so an analogue whose ``labels`` were changed
    differs from every row in ``labels`` too.

    >>> sorted(nearest({"annotation": "machine", "format": "multi-response", "domain": "math"}).items())
    [('MathStackExchange', 'annotation'), ('Nectar', 'domain'), ('UltraFeedback', 'domain')]
    """
    out = {}
    for name, row in TABLE3_DATASETS.items():
        if all(row[p] != "unknown" for p in PROPERTIES):
            differ = [p for p in PROPERTIES if row[p] != props[p]]
            differ += ["labels"] if props.get("labels", "as annotated") != "as annotated" else []
            if len(differ) == 1:
                out[name] = differ[0]
    return out


def table3_groups() -> dict[str, tuple[str, ...]]:
    """Table 3's datasets grouped by ``"format, annotation"`` (rows with either unknown left out)."""
    out: dict[str, tuple[str, ...]] = {}
    for name, row in TABLE3_DATASETS.items():
        if "unknown" not in (row["format"], row["annotation"]):
            key = f"{row['format']}, {row['annotation']}-annotated"
            out[key] = out.get(key, ()) + (name,)
    return out


def pairwise_only(records: Sequence[Record], *, seed: int | np.random.Generator = 0) -> list[Record]:
    """Keep one random strictly ordered pair per prompt (two responses, ranks 0 and 1)."""
    rng = np.random.default_rng(seed)
    out = []
    for rec in records:
        pairs = strict_pairs(rec.rank or {})
        if not pairs:
            continue
        w, l = pairs[int(rng.integers(len(pairs)))]
        keep = [x for x in rec.responses if x.id in (w, l)]
        out.append(replace(rec, responses=keep, annotations=[(w, l, FIRST)], rank={w: 0, l: 1}))
    return out


def domain_only(records: Sequence[Record], category: str) -> list[Record]:
    """Only the prompts whose top-level category is ``category``."""
    return [r for r in records if r.top_category == category]


def noisy_labels(records: Sequence[Record], *, flip: float, seed: int | np.random.Generator = 0) -> list[Record]:
    """Flip each strict annotation with probability ``flip``, then re-rank with Algorithm 1."""
    rng = np.random.default_rng(seed)
    swap = {FIRST: SECOND, SECOND: FIRST}
    out = []
    for rec in records:
        anns = [(a, b, swap[p] if p in swap and rng.random() < flip else p) for a, b, p in rec.annotations]
        out.append(replace(rec, annotations=anns, rank=None))
    resolve_records(out)
    return out


def annotation_pairs(human: Sequence[Record], gpt: Sequence[Record], *, seed: int = 0) -> tuple[list[Record], list[Record]]:
    """The two sets of the annotation-source comparison (``tab3-human-beats-machine``): one pair per prompt of
    ``human`` and as many pairs, one per prompt, from ``gpt`` (the GPT-annotated subset, in order). The chapter's
    analogues and the sensitivity chapter's sweep of that comparison both build them here."""
    pair_human = pairwise_only(human, seed=seed)
    return pair_human, pairwise_only(gpt, seed=seed)[:len(pair_human)]


def _analogue(records, annotation, format, domain, isolates, stands_for=(), labels="as annotated"):
    return {"records": records, "annotation": annotation, "format": format, "domain": domain, "labels": labels,
            "isolates": isolates, "stands_for": tuple(stands_for)}


def analogues(files: dict, *, prompts: int = TABLE3_PROMPTS, seed: int = 0) -> dict[str, dict]:
    """The chapter's training sets, ``{name: {"records", "annotation", "format", "domain", "labels",
    "isolates", "stands_for"}}``, built from the world's preference set.

    The multi-response machine-annotated sets take the first ``prompts`` GPT-annotated prompts
    (0: all). The two pairwise sets are the comparison of annotation source: one pair per prompt
    of the human subset, and as many pairs (one per prompt) from the GPT-annotated subset.
    """
    human, gpt_all = files[LAYOUT["pref_human"]], files[LAYOUT["pref_gpt"]]
    gpt = gpt_all[:prompts] if prompts else list(gpt_all)
    pair_human, pair_machine = annotation_pairs(human, gpt_all, seed=seed)
    return {
        "multi-response, human": _analogue(
            list(human), "human", "multi-response", "general",
            "the reference of the format comparison (Table 4's Human subset row)"),
        "multi-response, machine": _analogue(
            list(gpt), "machine", "multi-response", "general",
            "the reference of the domain and label-noise comparisons (Table 4's GPT subset row)",
            stands_for=("UltraFeedback", "Nectar")),
        "pairwise, human": _analogue(
            pair_human, "human", "pairwise", "general",
            "format: one pair per prompt of the multi-response human set (same prompts and labels)",
            stands_for=("HH-RLHF", "ChatbotArena", "HelpSteer2", "HH-RLHF-cn", "Zhihu")),
        "pairwise, machine": _analogue(
            pair_machine, "machine", "pairwise", "general",
            "annotation source: machine instead of human labels, as many pairs as the pairwise human set",
            stands_for=("Skywork",)),
        "math only, machine": _analogue(
            domain_only(gpt_all, "数学")[: prompts or None], "machine", "multi-response", "math",
            "domain: math prompts only instead of all categories (and fewer prompts)"),
    }


def paper_accuracy():
    """Table 3 (``data/paper/table3_datasets.csv``) with ``mean_acc``, the mean of its two accuracies,
    indexed by dataset."""
    t3 = table("table3_datasets").set_index("dataset")
    t3["mean_acc"] = t3[["open_acc", "human_acc"]].mean(axis=1)
    return t3


MULTI_HUMAN, MULTI_MACHINE = "multi-response, human", "multi-response, machine"
PAIR_HUMAN, PAIR_MACHINE = "pairwise, human", "pairwise, machine"

EFFECTS: dict[str, tuple[str, str, str]] = {
    PAIR_HUMAN: (MULTI_HUMAN, "less", "a pairwise set holds fewer comparisons per prompt"),
    PAIR_MACHINE: (PAIR_HUMAN, "less", "machine labels are further from the benchmark's human annotators"),
    "math only, machine": (MULTI_MACHINE, "less", "a math-only set never shows the other categories' failure modes; "
                           "it also has fewer prompts, so size and domain are confounded here"),
}
"""Each one-property change the chapter reads, as ``{variant: (reference, direction, mechanism)}``:
the variant's reference set, the expected direction of its Overall against that reference, and
the simulated mechanism behind that expectation."""


def _table3_row(name: str, d: dict | None, board) -> dict:
    near = nearest(d) if d and not d["stands_for"] else {}  # only where no row shares all three
    r = board.loc[name]
    # the results first, after the row's name: at a page's width they are in view, the descriptions scroll
    return {"training data": name, "overall": _interval(r, "overall"),
            "open acc": _interval(r, "open_acc"), "open exact": _interval(r, "open_exact"),
            "human acc": _interval(r, "human_acc"), "human exact": _interval(r, "human_exact"),
            "prompts": len(d["records"]) if d else "-", "seeds": int(r["seeds"]),
            **{k: d[k] if d else "-" for k in ("annotation", "format", "domain", "labels", "isolates")},
            "stands for (Table 3)": ", ".join(d["stands_for"]) if d and d["stands_for"] else "-",
            "one property away": ", ".join(f"{n} ({p})" for n, p in near.items()) or "-"}


def table3(sets: dict[str, dict], board, subsets: dict[str, Sequence[Record]] | None = None):
    """Our Table 3: a row per analogue of ``sets`` (:func:`analogues`: its properties, what it isolates,
    the rows it stands for or, standing for none, those :func:`nearest` it), each metric as ``value [95%
    interval]``; then, in their own section (:data:`cheems_lib.analyses.leaderboard.CONTROLS_SECTION`), the
    other models of ``board`` (the null controls) and, given the benchmark's ``subsets``, the exact chance
    (:func:`cheems_lib.baselines.chance_metrics`).

    ``board`` is :func:`cheems_lib.analyses.leaderboard.leaderboard_frame` indexed by model.
    """
    import pandas as pd

    rows = [{"section": "training data (ours)", **_table3_row(name, d, board)} for name, d in sets.items()]
    others = sorted((n for n in board.index if n not in sets), key=lambda n: list(CONTROLS).index(n) if n in CONTROLS else 0)
    rows += [{"section": CONTROLS_SECTION, **_table3_row(name, None, board)} for name in others]
    if subsets and {"open", "human"} <= set(subsets):
        chance = {s: chance_metrics(subsets[s]) for s in ("open", "human")}
        values = {f"{s} {m}": chance[s][key] for s in chance for m, key in (("acc", "accuracy"), ("exact", "exact_match"))}
        values["overall"] = float(np.mean([(c["accuracy"] + c["exact_match"]) / 2 for c in chance.values()]))
        rows.append({**dict.fromkeys(rows[0], "-"), "section": CONTROLS_SECTION, "training data": CHANCE, "seeds": "–",
                     **{k: f"{v:.3f} (exact)" for k, v in values.items()}})
    return pd.DataFrame(rows)


def published_table3(sets: dict[str, dict]):
    """The paper's Table 3 with our :data:`PROPERTIES` and note of each dataset and the analogue of
    ``sets`` that stands for it ("-" for none)."""
    analogue_of = {d: name for name, a in sets.items() for d in a["stands_for"]}
    published = table("table3_datasets")
    for prop in (*PROPERTIES, "note"):
        published[prop] = [TABLE3_DATASETS[d][prop] for d in published["dataset"]]
    published["our analogue"] = [analogue_of.get(d, "-") for d in published["dataset"]]
    results = ["open_acc", "open_exact", "human_acc", "human_exact"]  # first after the name, as in our Table 3
    return published[["dataset", *results, *(c for c in published.columns if c not in ("dataset", *results))]]


def paper_groups_text() -> str:
    """Table 3's mean accuracy (of its two subsets) per dataset, grouped by :func:`table3_groups`."""
    t3 = paper_accuracy()
    return "; ".join(f"{group}: " + ", ".join(f"{d} {t3.loc[d, 'mean_acc']:.3f}" for d in names)
                     for group, names in table3_groups().items())


def _sized(sets: dict[str, dict], name: str) -> str:
    return f"{name} ({counted(len(sets[name]['records']), 'prompt')})"


def _language_claim():
    """Chinese vs English data: untestable on a world with one language."""
    t3 = paper_accuracy()
    zh, en = t3[t3["language"] == "zh"]["mean_acc"], t3[t3["language"] == "en"]["mean_acc"]
    return Claim(
        "tab3-chinese-vs-english", "", "the best English datasets transfer better than the best Chinese ones",
        "untestable", "inconclusive", reason="the simulated world has one language, and translation artefacts are not "
        "modelled, so no variant here differs by language", paper=f"best Chinese {zh.idxmax()} {zh.max():.3f}, best "
        f"English {en.idxmax()} {en.max():.3f} (mean accuracy)", link="tab-transfer-published-table3",
        says={v: "Whether English data transfers better than Chinese data cannot be tested here: the simulated world has "
                 "one language and no translation." for v in VERDICTS})


_MULTI_CLAIM = "multi-response preference data transfers better than pairwise data"
HUMAN_CLAIM = "human-annotated preference data transfers better than machine-annotated data"
"""The claim of ``tab3-human-beats-machine`` (our question; the sensitivity chapter sweeps it too)."""
_QUESTION = ("the project's own question, not a claim of the paper: §6.1 draws no conclusion on {what}, and "
             "Table 3 cannot, since format, annotation, domain, size and language vary together across its rows")


def _comparisons_per_prompt(records) -> float:
    """Mean strict comparisons (pairs with different ranks) per prompt of ``records``."""
    return sum(len(strict_pairs(r.rank or {})) for r in records) / max(len(records), 1)


def add_untestable_claims(ledger, reason: str) -> None:
    """Table 3's claims when the files cannot build the variants (``reason``, e.g. ``"needs
    cheems_preference/human.jsonl"``): the two questions *untestable*, the paper's own table read as ever."""
    ledger.add(Claim.untestable("tab3-multi-response-helps", "", _MULTI_CLAIM, reason, link="paper-table3"))
    ledger.add(Claim.untestable("tab3-human-beats-machine", "", HUMAN_CLAIM, reason, link="paper-table3"))
    ledger.add(_language_claim())
    add_best_dataset_claims(ledger)


def add_claims(ledger, sets: dict[str, dict], overall: dict, *, seed: int = 0) -> None:
    """Test Table 3's questions on the analogues of ``sets`` and add them to ``ledger``: multi-response
    beats pairwise data and human beats machine labels (paired differences of ``overall``,
    ``{name: Estimate}``; kind ``question``: the project's, not the paper's, see :mod:`cheems_lib.analyses.claims`),
    English vs Chinese data (untestable here) and the paper's best dataset per language
    (:func:`add_best_dataset_claims`)."""
    groups = paper_groups_text()
    multi = _comparisons_per_prompt(sets[MULTI_HUMAN]["records"])
    pair = _comparisons_per_prompt(sets[PAIR_HUMAN]["records"])
    ledger.add(Claim.test(
        "tab3-multi-response-helps", overall[MULTI_HUMAN] - overall[PAIR_HUMAN], "greater", seed=seed,
        paper_ref="", claim=_MULTI_CLAIM, kind="question",
        reason=_QUESTION.format(what="format") + f"; confounded here: the multi-response set trains on {multi:.1f} "
        f"comparisons per prompt, its pairwise copy on {pair:.1f}, so the difference is as much the number of "
        "comparisons as the format",
        statistic=f"Overall of {_sized(sets, MULTI_HUMAN)} minus {_sized(sets, PAIR_HUMAN)}: the same "
                  f"prompts and human labels, one pair kept per prompt ({multi:.1f} vs {pair:.1f} comparisons per "
                  "prompt); paired",
        paper=f"no claim; mean accuracy in Table 3 by format and annotation: {groups} (format, annotation, domain and "
              "language vary together there)",
        link="paper-table3"))
    ledger.add(Claim.test(
        "tab3-human-beats-machine", overall[PAIR_HUMAN] - overall[PAIR_MACHINE], "greater", seed=seed,
        paper_ref="", claim=HUMAN_CLAIM, kind="question", reason=_QUESTION.format(what="annotation source"),
        statistic=f"Overall of {_sized(sets, PAIR_HUMAN)} minus {_sized(sets, PAIR_MACHINE)}: one pair "
                  "per prompt in both, as many pairs, human vs machine labels; paired",
        paper=f"no claim; mean accuracy in Table 3 by format and annotation: {groups}",
        link="paper-table3"))
    ledger.add(_language_claim())
    add_best_dataset_claims(ledger)


_BEST = {"tab3-huozi-best-chinese": ("zh", "Huozi", 'among the Chinese datasets, "Huozi" performs best'),
         "tab3-ultrafeedback-best-english": ("en", "UltraFeedback", 'the "Ultrafeedback" leads among English datasets')}
_COLUMNS = {"open_acc": "Open Prompt accuracy", "open_exact": "Open Prompt exact", "human_acc": "Human Instruction "
            "accuracy", "human_exact": "Human Instruction exact"}


def best_dataset(language: str, dataset: str) -> dict:
    """Is ``dataset`` the best of Table 3's ``language`` rows? Its Overall (the mean of the four columns, as
    Table 2's Overall) minus the runner-up's, the runner-up, and the columns where another row is higher
    (``{column: (row, margin)}``), all read from ``data/paper/table3_datasets.csv``."""
    t3 = paper_accuracy()
    rows = t3[t3["language"] == language]
    overall = rows[list(_COLUMNS)].mean(axis=1)
    rival = overall.drop(dataset).idxmax()
    behind = {}
    for col in _COLUMNS:
        best = rows[col].drop(dataset).idxmax()
        if rows.loc[best, col] > rows.loc[dataset, col]:
            behind[col] = (best, float(rows.loc[best, col] - rows.loc[dataset, col]))
    return {"margin": float(overall[dataset] - overall[rival]), "rival": rival, "behind": behind,
            "overall": float(overall[dataset])}


def add_best_dataset_claims(ledger) -> None:
    """§6.1's best dataset per language (Huozi among the Chinese, UltraFeedback among the English rows),
    kind ``arithmetic``: a claim about the paper's printed Table 3, checked on those numbers (no interval:
    the paper gives none), never on our data, whose world has neither dataset nor language. *supported*
    when its Overall beats every other row of its language, *contradicted* when some row's is higher."""
    for cid, (language, dataset, words) in _BEST.items():
        best = best_dataset(language, dataset)
        behind = "; ".join(f"{_COLUMNS[c]}: {r} is higher by {m:.3f}" for c, (r, m) in best["behind"].items())
        tail = f" It is not first in every column ({behind})." if behind else " It is first in every column."
        which = "Chinese" if language == "zh" else "English"
        ledger.add(Claim(
            cid, "", f"{dataset} is the best {which} preference dataset of Table 3", "arithmetic",
            "supported" if best["margin"] > 0 else "contradicted", estimate=best["margin"],
            reason="read from the paper's own Table 3 (data/paper/table3_datasets.csv): it checks the paper's words "
                   "against its numbers; our simulated world has neither the dataset nor a second language",
            statistic=f"Table 3 Overall (mean of its four columns) of {dataset} minus the best other {which} row's "
                      f"({best['rival']})", paper=f'"{words}"', link="tab-transfer-published-table3",
            says={"supported": f"In the paper's Table 3, {dataset} has the highest Overall of the {which} rows "
                               f"({best['overall']:.3f}, {{estimate:.3f}} above {best['rival']}).{tail}",
                  "contradicted": f"In the paper's Table 3, {best['rival']} has a higher Overall than {dataset} "
                                  f"(by {{estimate:.3f}}), against the paper's words.{tail}"}))


def _effect(sets: dict[str, dict], overall: dict, variant: str, seed: int) -> tuple[dict, str]:
    """One row of :func:`effects` and its sentence."""
    reference, expected, mechanism = EFFECTS[variant]
    change = sets[variant]["isolates"]
    diff = overall[variant] - overall[reference]
    lo, hi = diff.interval(seed=seed)
    verdict = decide(diff, "greater", seed=seed)
    effect = {"supported": "raises", "contradicted": "lowers", "inconclusive": "does not measurably change",
              INSUFFICIENT: f"rests on too few prompts ({diff.n}) to measure its effect on"}[verdict]
    row = {"variant": variant, "reference": reference, "isolates": change, "seeds": diff.seeds,
           "Overall difference [95%]": f"{diff.value:+.3f} [{lo:+.3f}, {hi:+.3f}]",
           "Overall": INSUFFICIENT if verdict == INSUFFICIENT else effect.replace("does not measurably change",
                                                                                 "not separated")}
    topic = change.split(":")[0]
    what = (f"{topic[:1].upper()}{topic[1:]}: {variant} against {reference} {effect} Overall, "
            f"{diff.value:+.3f} [{lo:+.3f}, {hi:+.3f}]")
    if verdict in ("inconclusive", INSUFFICIENT):
        return row, what + "."
    agrees = decide(diff, expected, seed=seed) == "supported"
    return row, f"{what}, {'as expected if' if agrees else 'although'} {mechanism}."


def effects(sets: dict[str, dict], overall: dict, *, seed: int = 0):
    """What each one-property change of :data:`EFFECTS` does to Overall (paired with its reference):
    a table (difference, 95% interval, raises / lowers / not separated) and a short sentence per change for the
    prose, naming the simulated mechanism where the change is separated from zero."""
    import pandas as pd

    rows, sentences = zip(*(_effect(sets, overall, variant, seed) for variant in EFFECTS))
    return pd.DataFrame(list(rows)), " ".join(sentences)


def add_real_claims(ledger, accuracy: dict, trained: str | None, *, seed: int = 0, reason: str = "") -> None:
    """The transfer question on real files: does a reward model trained on one source's preference
    labels (``trained``, a key of ``accuracy``) rank another source's answers better than the random
    baseline, and better than the longest-response baseline? ``accuracy`` maps model names to
    :class:`~cheems_lib.estimates.Estimate` of benchmark accuracy (paired resamples). Without a trained
    model (``trained`` None) both claims are untestable with ``reason``."""
    random, longest = NAMES[0], NAMES[1]
    zh = paper_accuracy().query("language == 'zh'")["open_acc"]
    paper = (f"Table 3: reward models trained on Chinese open datasets reach accuracy {zh.min():.3f} to {zh.max():.3f} "
             "on CheemsBench Open Prompt (another benchmark and other models: a reference, not a target)")
    # our questions (the paper never compares with these baselines); kind, reference and reason: the registry
    fields = dict(paper_ref="", kind="", paper=paper, link="fig-real-transfer")
    claim_random = "a reward model trained on one source's preference labels ranks another source's answers better than chance"
    claim_longest = ("a reward model trained on one source's preference labels ranks another source's answers better "
                     "than always preferring the longest answer")
    if trained is None:
        ledger.add(Claim.untestable("real-transfer-beats-random", claim=claim_random, reason=reason, **fields))
        ledger.add(Claim.untestable("real-transfer-beats-longest", claim=claim_longest, reason=reason, **fields))
        return
    ours = accuracy[trained]
    base = {n: accuracy[n].broadcast(ours.seeds) if accuracy[n].seeds == 1 else accuracy[n] for n in (random, longest)}
    ledger.add(Claim.test("real-transfer-beats-random", ours - base[random], "greater", seed=seed,
                          claim=claim_random, statistic=f"accuracy of {trained} minus {random}'s; paired", **fields))
    ledger.add(Claim.test("real-transfer-beats-longest", ours - base[longest], "greater", seed=seed,
                          claim=claim_longest, statistic=f"accuracy of {trained} minus {longest}'s; paired", **fields))
