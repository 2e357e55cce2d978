"""Real human scores of Chinese writing (WritingPreferenceBench zh): what they say about length and agreement.

Every other real file of ``data/real/`` carries model labels. WritingPreferenceBench (Ying et al., "Beyond
Correctness: Evaluating Subjective Writing Preferences Across Cultures", arXiv 2510.14616, 2025; upstream
``WritingPreferenceBench/Writing-Preference-Bench``, licence ODC-BY) has trained human annotators score
each model's answer to a Chinese writing prompt from 0 to 3; for some models the upstream files hold a second
scoring of the same answers by another annotator (named in the manifest). Upstream says neither which scoring is
final nor whether the second annotator saw the first scores.
One record per prompt (:mod:`cheems_lib.records`): ``rank`` orders the answers by their human score (0 best,
equal scores tie) and :attr:`~cheems_lib.records.Record.extra` holds ``human_scores`` and ``second_scores``
(``{model: 0..3}``). :func:`open_data` reads them (:func:`cheems_lib.world_files.read_ranked`, then
:func:`check_scores`; :class:`HumanData`) and deals the prompts into two halves (:func:`split_halves`, within each
genre tag). What this module measures, each statistic per prompt so that a bootstrap over prompts resamples a
prompt's answers together:

- length (appendix D.3, Fig. 15; Table 1): :func:`longer_wins` counts the strictly ordered pairs won by the
  longer answer, in a band of length difference or ratio (:func:`length_bands`; an association, since a band
  matches its pairs on length alone, not on quality); :func:`length_gap` the characters the higher-scored answer
  has over the lower-scored one; :func:`add_length_claims` tests Fig. 15's two sentences about human annotators;
- agreement (Table 5's nearest analogue): :func:`weighted_kappa` (quadratic, exact), :func:`rescoring`
  (per prompt: the two scorings' score table, the pairs they order the other way or tie in one only, and
  whether Algorithm 1 can reproduce both scorings at once), :meth:`Rescoring.shift` (second minus first score),
  :func:`add_agreement_claims`.

Reward models trained on these scores, and a real Best-of-N, are :mod:`cheems_lib.analyses.human_best_of_n`'s.
The genre tags (many, a few prompts each) only deal the split: no interval is stratified on them, since a
stratified bootstrap over one-prompt strata has no width (:func:`pooled` drops them before evaluation).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from itertools import combinations
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from .. import estimates
from ..conflicts import reproduced, resolve
from ..paper import table as paper_table
from ..publishing.provenance import file_source
from ..publishing.publish import md_code, md_text
from ..records import FIRST, SECOND, TIE, DataError, ReadReport, Record, _where, show, strict_pairs
from ..world_files import UNKNOWN_LABELS, model_labels, read_ranked
from ..world.best_of_n import prompt_resamples
from . import claims, experiments

__all__ = ["CITATION", "ATTRIBUTION", "LEVELS", "scores_of", "check_scores", "HumanData", "preference_name", "open_data",
           "split_halves", "pooled", "keep_answers", "longer_wins", "length_gap", "DIFFERENCE_BANDS", "RATIO_BANDS",
           "length_bands", "length_tables", "weighted_kappa", "Rescoring", "rescoring", "agreement_shares",
           "CONFLICTS_STRICT", "CONFLICTS_TIES", "agreement_table", "agreement_values", "TABLE1_HUMAN", "table1_lengths",
           "table5_human", "add_length_claims", "add_agreement_claims", "plot_length", "plot_agreement"]

CITATION = ("WritingPreferenceBench zh (Ying et al., \"Beyond Correctness: Evaluating Subjective Writing Preferences "
            "Across Cultures\", arXiv 2510.14616, 2025; upstream WritingPreferenceBench/Writing-Preference-Bench; "
            "licence ODC-BY)")
"""How every page that uses these human scores cites them (ODC-BY asks for the attribution)."""
ATTRIBUTION = "WritingPreferenceBench zh, Ying et al. 2025, arXiv 2510.14616, ODC-BY"
"""The short attribution every download's source carries (:meth:`HumanData.source`)."""
LEVELS = 4
"""The human score is one of 0, 1, 2, 3."""


def scores_of(record: Record, field: str = "human_scores") -> dict[str, int]:
    """``record``'s scores ``{answer id: 0..3}`` from ``extra[field]`` (``human_scores`` or ``second_scores``),
    only for answers the record holds; ``{}`` when it has none."""
    ids = set(record.response_ids)
    return {k: int(v) for k, v in (record.extra.get(field) or {}).items() if k in ids}


def _score_problem(scores: Any, ids: Sequence[str], field: str, *, every: bool) -> str | None:
    """What is wrong with one record's ``field`` (``{answer id: 0..3}``), or None."""
    if not isinstance(scores, dict):
        return f"has no {show(field)} object (answer id -> integer score 0-3)" if scores is None else \
            f"has {show(field)} {show(scores)}, not an object (answer id -> integer score 0-3)"
    unknown = [k for k in scores if k not in ids]
    if unknown:
        return f"has {show(field)} for {show(unknown[0])}, which is not one of its responses ({show(list(ids))})"
    bad = next(((k, v) for k, v in scores.items() if isinstance(v, bool) or not isinstance(v, int)
                or not 0 <= v < LEVELS), None)
    if bad is not None:
        return f"has {show(field)} {show(bad[1])} for response {show(bad[0])}, not an integer 0-{LEVELS - 1}"
    missing = [x for x in ids if x not in scores] if every else []
    return f"has no {show(field)} for response {show(missing[0])}" if missing else None


def check_scores(records: Sequence[Record], path: str | Path) -> None:
    """Refuse a human-score file this chapter would misread, once, before anything is computed: every response of a
    record has an integer score 0-3 in ``extra["human_scores"]``; ``second_scores``, where a record has it, names only
    its responses, each with an integer 0-3; and ``rank`` orders the responses as ``human_scores`` do (a higher score
    in an earlier round, equal scores tied), since the length and agreement statistics read ``rank`` and the
    Best-of-N reads the scores. The first problem raises :class:`~cheems_lib.records.DataError`, one line naming the
    file, the record's line and the fix.

    >>> from cheems_lib.records import Response
    >>> r = Record("q", [Response("a", "x"), Response("b", "y")], id="p", rank={"a": 0, "b": 1},
    ...            extra={"human_scores": {"a": 3, "b": 5}}, origin="h.jsonl:7")
    >>> try:
    ...     check_scores([r], "h.jsonl")
    ... except DataError as e:
    ...     print(str(e).partition(" (fix")[0])
    h.jsonl:7: prompt "p" has "human_scores" 5 for response "b", not an integer 0-3
    """
    fix = ('give every record "human_scores" (each response id -> an integer 0-3) and "rank" in that order, '
           '"second_scores" optional in the same form, or pass -p human_path a file of human scores such as '
           "data/real/writingpref/writingpref_zh.jsonl.xz")
    for rec in records:
        line = _where(rec)[1]
        ids = rec.response_ids
        problem = (_score_problem(rec.extra.get("human_scores"), ids, "human_scores", every=True)
                   or ("second_scores" in rec.extra
                       and _score_problem(rec.extra["second_scores"], ids, "second_scores", every=False)))
        if not problem:
            scores, rank = rec.extra["human_scores"], rec.rank or {}
            flipped = next(((a, b) for a, b in combinations(ids, 2)
                            if (scores[a] > scores[b]) - (scores[a] < scores[b])
                            != (rank.get(b, 0) > rank.get(a, 0)) - (rank.get(b, 0) < rank.get(a, 0))), None)
            if flipped is not None:
                a, b = flipped
                problem = (f"ranks responses {show(a)} and {show(b)} (rounds {rank.get(a)} and {rank.get(b)}) otherwise "
                           f"than their human scores ({scores[a]} and {scores[b]})")
        if problem:
            raise DataError(path, line, f"prompt {show(rec.id)} {problem}", fix)


def split_halves(records: Sequence[Record], *, seed: int = 0) -> tuple[list[Record], list[Record]]:
    """Two halves by prompt: each genre tag's prompts (``top_category``) are shuffled with ``seed``, the tags
    laid end to end in sorted order and the prompts dealt alternately, so every tag is split as evenly as its
    count allows and the halves differ by at most one prompt. Each half keeps the file's order.

    >>> from cheems_lib.records import Response
    >>> recs = [Record("q", [Response("a", "x")], id=str(i), category=["t" if i < 4 else "u"]) for i in range(6)]
    >>> [len(h) for h in split_halves(recs, seed=1)]
    [3, 3]
    """
    rng = np.random.default_rng(seed)
    tags = sorted({r.top_category for r in records})
    dealt = [i for t in tags for i in rng.permutation([k for k, r in enumerate(records) if r.top_category == t])]
    first = {int(i) for i in dealt[0::2]}
    return ([r for k, r in enumerate(records) if k in first], [r for k, r in enumerate(records) if k not in first])


def pooled(records: Sequence[Record]) -> list[Record]:
    """``records`` without their genre tag: the benchmark metrics then pool every prompt in one stratum (their
    macro average over categories is the pooled value, their bootstrap is not stratified)."""
    return [replace(r, category=None) for r in records]


def keep_answers(records: Sequence[Record], answers: int, *, seed: int = 0) -> list[Record]:
    """Each record with at most ``answers`` of its answers, drawn without replacement (seeded), ranking and
    scores cut to them: a training prompt costs the tiny model one sequence per answer kept."""
    rng = np.random.default_rng(seed)
    out = []
    for rec in records:
        if len(rec.responses) <= answers:
            out.append(rec)
            continue
        keep = sorted(rng.choice(len(rec.responses), size=answers, replace=False).tolist())
        ids = {rec.responses[k].id for k in keep}
        extra = {k: ({m: s for m, s in v.items() if m in ids} if isinstance(v, dict) else v) for k, v in rec.extra.items()}
        out.append(replace(rec, responses=[rec.responses[k] for k in keep], extra=extra,
                           rank=None if rec.rank is None else {m: v for m, v in rec.rank.items() if m in ids}))
    return out


@dataclass
class HumanData:
    """What the chapter reads: the human scores of ``path`` (None when the file does not exist), their two halves
    (:func:`split_halves`), and the world folder's preference file, which trains the reward models compared with the
    human-score ones; its labels are named as the world states them (:attr:`preference_labels`)."""

    path: str
    records: list[Record] | None
    train: list[Record]
    held_tagged: list[Record]
    """The held-out half with its genre tags (:attr:`held` drops them)."""
    preference: list[Record] | None
    preference_files: list[Path]
    preference_labels: str
    """Who labelled the preference file, as the world says (:meth:`cheems_lib.analyses.experiments.World.file_labels`:
    its manifest entry's ``labels``, "the simulator's annotators", or "unknown labels")."""
    preference_name: str = "preference file"
    """How tables name the preference file's training set: ``DPO-zh (model labels)`` for ``data/real``'s
    (:func:`preference_name`)."""
    preference_content: str | None = None
    """What the preference file holds, as the world's manifest says (its entry's ``content``, else the manifest's
    ``name``); None without a manifest."""
    reading: ReadReport | None = None
    """What reading the human file did besides parsing it (records ranked on read with Algorithm 1)."""

    @property
    def held(self) -> list[Record]:
        """The held-out half as the benchmark metrics read it: :func:`pooled`, no interval stratified on a tag."""
        return pooled(self.held_tagged)

    @property
    def needs(self) -> str:
        """The reason of every claim the missing human file leaves untestable."""
        return f"needs the human scores, {self.path}, which does not exist"

    @property
    def model_labelled(self) -> bool:
        """Whether the world says its preference file carries model labels (:func:`cheems_lib.world_files.model_labels`,
        the one rule); false without the file."""
        return bool(self.preference_files) and model_labels(self.preference_labels)

    @property
    def dpo(self) -> bool:
        """Whether the world's manifest says the preference file holds DPO-zh's pairs (``data/real``'s): the prose
        about DPO-zh's prompts is shown only then."""
        return bool(self.preference_files) and "DPO-zh" in (self.preference_content or "")

    @property
    def labels_text(self) -> str:
        """The preference file's labels as prose names them: "model labels, not human labels: model-generated" when
        the world says a model made them, else "labels: ..." as it states them; "no preference file" without one."""
        if not self.preference_files:
            return "no preference file"
        labels = self.preference_labels
        if self.model_labelled:
            return labels if labels.lower().startswith("model labels") else f"model labels, not human labels: {labels}"
        return "labels unknown (no manifest says who made them)" if labels == UNKNOWN_LABELS else f"labels: {labels}"

    def transfer_words(self) -> dict[str, str]:
        """What :func:`cheems_lib.analyses.human_best_of_n.add_transfer_claims` says of the preference file: the
        training data (``trained_on``), its prompts, its labels as the world states them, and its form."""
        trained_on = "DPO-zh's pairs" if self.dpo else "the world folder's preference file"
        most = max((len(r.responses) for r in self.preference or []), default=2)
        return {"trained_on": f"{trained_on} ({self.labels_text})",
                "their_prompts": "DPO-zh's general and medical questions" if self.dpo else "the preference file's prompts",
                "their_labels": ("model-generated preferences" if self.model_labelled else
                                 f"the preference file's labels ({self.labels_text})"),
                "their_format": "one pair per prompt" if most <= 2 else f"the preference file's up to {most} answers"}

    def source(self, seeds: Sequence[int], fallback: str) -> str:
        """The ``data:`` source of the chapter's numbers: each file read with its SHA-256 and who labelled it (the
        human scores with their attribution, which their licence asks for), and the training seeds; ``fallback`` (the
        world's source) when neither file is there."""
        used = [f"{file_source(self.path).removeprefix('data: ')} (human scores: {ATTRIBUTION})"] if self.records else []
        if self.preference_files:
            used.append(f"{file_source(*self.preference_files).removeprefix('data: ')} (labels: {self.preference_labels})")
        return f"data: {', '.join(used)}; training seeds {experiments.seeds_text(seeds)}" if used else fallback

    def notes(self) -> list[str]:
        """The Markdown sentences at the top of the page, beside the world's
        (:attr:`cheems_lib.analyses.experiments.World.about`): each file with its SHA-256 and who labelled it, or
        what was skipped for want of it, and what reading the human file did besides parsing it."""
        human = (f"Data: human scores: {md_code(file_source(self.path))}, from {md_text(CITATION)}."
                 if self.records is not None else f"*Skipped: every section that needs human scores; they are read "
                                                  f"from {md_code(self.path)}, which does not exist.*")
        if self.reading:
            human = " ".join([human, *self.reading.sentences(name=md_code, code=md_code)])
        pref = (f"{'Model labels, not human labels' if self.model_labelled else 'Preference labels'}"
                f": {md_code(file_source(*self.preference_files))} (labels: {md_text(self.preference_labels)}) trains "
                f"the reward models named {md_text(self.preference_name)}."
                if self.preference_files else "*Skipped: the reward models trained on the world folder's preference "
                                              "file; they need `cheems_preference.jsonl` in the world folder.*")
        return [human, pref]

    def conditions(self) -> dict[str, bool]:
        """For :func:`cheems_lib.publishing.publish.show_conditions`: ``human`` (the human file was read),
        ``preference`` (the world has a preference file), ``pref-model`` (the world says it carries model labels),
        ``dpo`` (its manifest says it holds DPO-zh's pairs)."""
        return {"human": self.records is not None, "preference": self.preference is not None,
                "pref-model": self.model_labelled, "dpo": self.dpo}

    def prose_values(self) -> dict[str, Any]:
        """The values the chapter's prose quotes (glued, never typed): counts, lengths, the split, the preference
        file's name and labels."""
        out: dict[str, Any] = {"human_path": self.path, "pref_labels": self.labels_text, "pref_name": self.preference_name}
        if self.records is None:
            return out
        lengths = [len(x.content) for r in self.records for x in r.responses]
        tags = [r.top_category for r in self.records]
        won, unequal = longer_wins(self.records)
        strict = sum(len(strict_pairs(r.rank or {})) for r in self.records)
        return out | {
            "n_prompts": len(self.records), "n_answers": len(lengths), "n_tags": len(set(tags)),
            "max_per_tag": max(tags.count(t) for t in set(tags)), "median_chars": int(np.median(lengths)),
            "n_pairs": strict, "n_train": len(self.train),
            "max_answers": max(len(r.responses) for r in self.records), "n_held": len(self.held_tagged),
            "table1_chosen": ", ".join(f"{v:.0f}" for v in table1_lengths()["chosen"]),
            "n_equal_length": strict - int(unequal.sum()),
            "share_longer_unequal": f"{won.sum() / unequal.sum():.4f}" if unequal.sum() else "–",
            "share_longer_all": f"{won.sum() / strict:.4f}" if strict else "–"}

    def split_table(self):
        """One row per genre tag: its prompts and how many the split dealt to each half (display only)."""
        import pandas as pd

        count = lambda recs: pd.Series([r.top_category for r in recs]).value_counts()  # noqa: E731
        tags = count(self.records)
        return pd.DataFrame({"genre tag": tags.index, "prompts": tags.to_numpy(),
                             "training half": tags.index.map(count(self.train)).fillna(0).astype(int),
                             "held-out half": tags.index.map(count(self.held_tagged)).fillna(0).astype(int)})


def preference_name(labels: str, content: str | None) -> str:
    """How tables name a preference file's training set: ``DPO-zh`` when ``content`` (what the manifest says the
    file holds) names it, else ``preference file``, then ``(model labels)`` when ``labels`` are a model's
    (:func:`cheems_lib.world_files.model_labels`), else the labels as stated.

    >>> preference_name("model-generated", "DPO-zh chosen/rejected pairs"), preference_name("unknown labels", None)
    ('DPO-zh (model labels)', 'preference file (unknown labels)')
    """
    return f"{'DPO-zh' if 'DPO-zh' in (content or '') else 'preference file'} " \
           f"({'model labels' if model_labels(labels) else labels})"


def open_data(world, path: str, *, prompts: int = 0, seed: int = 0) -> HumanData:
    """The human scores of ``path`` (its first ``prompts`` records; 0: all), read as every chapter reads a records
    file (:func:`cheems_lib.world_files.read_ranked`: a record without ``rank`` is ranked from its annotations with
    Algorithm 1) and checked once (:func:`check_scores`, a :class:`~cheems_lib.records.DataError` naming the file,
    line and fix), split into halves with ``seed``; and ``world``'s preference file
    (:class:`cheems_lib.analyses.experiments.World`) with its labels as the world states them."""
    reading = ReadReport()
    records = read_ranked(path, report=reading) if Path(path).is_file() else None
    if records is not None:
        check_scores(records, path)
        records = records[:prompts or None]
    train, held = split_halves(records, seed=seed) if records else ([], [])
    pref = world.preference
    paths = world.layout.paths if world.layout is not None and pref is not None else {}
    files = [paths[k] for k in ("preference", "preference_human", "preference_gpt") if k in paths]
    labels = world.file_labels("cheems_preference.jsonl") if pref is not None else ""
    content = world.layout.content("cheems_preference.jsonl") if files and hasattr(world.layout, "content") else None
    return HumanData(path, records, train, held, pref, files, labels, preference_name(labels, content), content,
                     reading)


# ---- length (appendix D.3, Fig. 15; Table 1) ----------------------------------------------------------------------

def longer_wins(records: Sequence[Record], low: float = 1, high: float = math.inf, *, ratio: bool = False
                ) -> tuple[np.ndarray, np.ndarray]:
    """Per record: strictly ordered answer pairs (by ``rank``) won by the longer answer, and such pairs, over the
    pairs whose length difference in characters (``ratio``: longer / shorter) lies in ``[low, high)``. Pairs of
    equal length never count.

    >>> from cheems_lib.records import Response
    >>> r = Record("q", [Response("a", "xx"), Response("b", "xxxxx"), Response("c", "x")], rank={"a": 0, "b": 1, "c": 1})
    >>> longer_wins([r])  # a beats the longer b and the shorter c
    (array([1.]), array([2.]))
    >>> longer_wins([r], 2, ratio=True)  # 2.5 and 2 times as long
    (array([1.]), array([2.]))
    """
    won, pairs = np.zeros(len(records)), np.zeros(len(records))
    for k, rec in enumerate(records):
        size = {x.id: len(x.content) for x in rec.responses}
        for better, worse in strict_pairs(rec.rank or {}):
            a, b = size[better], size[worse]
            gap = max(a, b) / max(min(a, b), 1) if ratio else abs(a - b)
            if a != b and low <= gap < high:
                pairs[k] += 1
                won[k] += a > b
    return won, pairs


def length_gap(records: Sequence[Record]) -> tuple[np.ndarray, np.ndarray]:
    """Per record: the summed length of the better answer minus the worse one's (characters) over its strictly
    ordered pairs, and those pairs: Table 1's average chosen minus average rejected length, pair by pair."""
    gap, pairs = np.zeros(len(records)), np.zeros(len(records))
    for k, rec in enumerate(records):
        size = {x.id: len(x.content) for x in rec.responses}
        for better, worse in strict_pairs(rec.rank or {}):
            gap[k] += size[better] - size[worse]
            pairs[k] += 1
    return gap, pairs



DIFFERENCE_BANDS = (1, claims.MODERATE_LENGTH_DIFFERENCE, claims.LARGE_LENGTH_DIFFERENCE, 500, 1000, 2000, math.inf)
"""Band edges of a pair's length difference (characters): the paper's moderate and large bands
(:data:`cheems_lib.analyses.claims.MODERATE_LENGTH_DIFFERENCE`, ``LARGE_LENGTH_DIFFERENCE``), then wider ones, since
these answers are longer than CheemsBench's."""
RATIO_BANDS = (1, 1.1, 1.25, 1.5, 2, 3, math.inf)
"""Band edges of a pair's length ratio (longer / shorter)."""


def _band(lo: float, hi: float, ratio: bool) -> str:
    unit, last = ("x", hi) if ratio else ("", hi - 1)  # whole characters: [1, 150) is 1 to 149
    return f"{lo:g}{unit} to {last:g}{unit}" if math.isfinite(hi) else f"{lo:g}{unit} or more"


def length_bands(records: Sequence[Record], *, n_boot: int = estimates.N_BOOT, seed: int = 0
                 ) -> dict[str, list[tuple[str, int, estimates.Estimate]]]:
    """Per kind of band (``length difference``: :data:`DIFFERENCE_BANDS`, ``length ratio``: :data:`RATIO_BANDS`),
    one ``(band, strict pairs, share won by the longer answer)`` per band. A band groups pairs by how far apart their
    lengths are, nothing else: its answers are not matched on quality, so a share that changes from band to band is
    an association of the human scores with length, not an effect of length."""
    out = {}
    for what, edges, ratio in (("length difference", DIFFERENCE_BANDS, False), ("length ratio", RATIO_BANDS, True)):
        out[what] = []
        for lo, hi in zip(edges, edges[1:]):
            won, pairs = longer_wins(records, lo, hi, ratio=ratio)
            out[what].append((_band(lo, hi, ratio), int(pairs.sum()),
                              estimates.ratio_estimate(won, pairs, n_boot=n_boot, seed=seed)))
    return out


def _interval(est: estimates.Estimate, seed: int, fmt: str = ".3f") -> str:
    lo, hi = est.interval(seed=seed)
    return f"{est.value:{fmt}} [{lo:{fmt}}, {hi:{fmt}}]"


def length_tables(records: Sequence[Record], bands: Mapping, *, n_boot: int = estimates.N_BOOT, seed: int = 0):
    """Two tables: the bands of :func:`length_bands` (pairs, prompts, share with its interval), and the
    higher-scored answer's length minus the lower-scored one's (:func:`length_gap`, with its interval) beside
    Table 1's average chosen minus average rejected length of the human-annotated sets (column ``paper``)."""
    import pandas as pd

    rows = [{"band": f"{what} {name}" + (" characters" if what == "length difference" else ""), "strict pairs": pairs,
             "prompts": est.n, "share won by the longer [95%]": _interval(est, seed) if pairs else "–"}
            for what, shown in bands.items() for name, pairs, est in shown]
    gap = estimates.ratio_estimate(*length_gap(records), n_boot=n_boot, seed=seed)
    gaps = [{"set": "ours: human scores, every strictly ordered pair", "chosen minus rejected (characters)":
             _interval(gap, seed, "+.1f"), "paper": "–"}]
    gaps += [{"set": f"paper, Table 1: {name}", "chosen minus rejected (characters)": "–",
              "paper": f"{r.chosen:.2f} - {r.rejected:.2f} = {r.difference:+.2f}"} for name, r in table1_lengths().iterrows()]
    return pd.DataFrame(rows), pd.DataFrame(gaps)

# ---- two scorings of the same answers (Table 5's nearest analogue) -------------------------------------------------

def weighted_kappa(table) -> float:
    """Cohen's kappa with quadratic weights of a ``K x K`` table of counts (rows: the first scoring's score,
    columns: the second's), for scores on an ordered scale 0 .. K-1:

        kappa_w = 1 - sum_ij w_ij O_ij / sum_ij w_ij E_ij,   w_ij = (i - j)^2 / (K - 1)^2,

    ``O`` the observed shares and ``E`` the shares expected from the two margins alone (``E_ij = row_i col_j``).
    1 is perfect agreement, 0 what independent scorings with these margins agree by chance (Cohen 1968).
    NaN when the margins leave no disagreement to expect (both scorings give one score only).

    >>> weighted_kappa([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]])  # 2 vs 3 and 3 vs 2: worked out in the tests
    0.8
    """
    obs = np.asarray(table, float)
    k = obs.shape[0]
    obs = obs / obs.sum()
    weight = (np.subtract.outer(np.arange(k), np.arange(k)) ** 2) / (k - 1) ** 2
    expected = np.outer(obs.sum(axis=1), obs.sum(axis=0))
    chance = float((weight * expected).sum())
    return 1.0 - float((weight * obs).sum()) / chance if chance > 0 else math.nan


@dataclass(frozen=True)
class Rescoring:
    """Per prompt with answers scored twice (rows in file order): ``table`` ``(prompts, K, K)`` counts of (first,
    second) scores; over the pairs of twice-scored answers, ``pairs`` all of them, ``strict`` those both scorings
    order strictly, ``reversed`` those of them ordered the other way, ``tie_changed`` those strict in one scoring and
    tied in the other; ``strict_conflicted`` 1 where Algorithm 1, given both scorings' strict pairwise calls, cannot
    reproduce them all (Table 5's statistic on these data: two scorings conflict where they order a pair opposite
    ways), ``conflicted`` the same with each scoring's ties as annotations too (then any tie-versus-strict change is a
    conflict: not comparable with Table 5, see :func:`add_agreement_claims`)."""

    table: np.ndarray
    pairs: np.ndarray
    strict: np.ndarray
    reversed: np.ndarray
    tie_changed: np.ndarray
    conflicted: np.ndarray
    strict_conflicted: np.ndarray

    def kappa(self, *, n_boot: int = estimates.N_BOOT, seed: int = 0) -> estimates.Estimate:
        """:func:`weighted_kappa` of the pooled table, its replicates from resampled prompts."""
        counts = prompt_resamples(len(self.table), n_boot, seed=seed, stream="weighted kappa")
        flat = self.table.reshape(len(self.table), -1)
        boot = [weighted_kappa(t.reshape(LEVELS, LEVELS)) for t in counts @ flat] if n_boot else ()
        return estimates.Estimate.single(weighted_kappa(self.table.sum(axis=0)), boot, n=len(self.table))

    def exact(self, *, n_boot: int = estimates.N_BOOT, seed: int = 0) -> estimates.Estimate:
        """Share of twice-scored answers given the same score both times."""
        same = np.trace(self.table, axis1=1, axis2=2)
        return estimates.ratio_estimate(same, self.table.sum(axis=(1, 2)), n_boot=n_boot, seed=seed)

    def shift(self, *, n_boot: int = estimates.N_BOOT, seed: int = 0) -> estimates.Estimate:
        """Mean score shift: the second score minus the first (score points, on 0-3) over the twice-scored answers;
        positive when the second scoring is the more generous. Its replicates resample prompts (a prompt's answers
        together). A shift away from zero says the two scorings differ in level (one annotator scores higher, or
        recalibrated), which kappa's disagreement mixes with disagreement about order."""
        step = np.subtract.outer(np.arange(LEVELS), np.arange(LEVELS)).T  # [first, second] -> second - first
        return estimates.ratio_estimate((self.table * step).sum(axis=(1, 2)), self.table.sum(axis=(1, 2)),
                                        n_boot=n_boot, seed=seed)

    @property
    def moves(self) -> tuple[int, int]:
        """Twice-scored answers scored higher the second time, and lower."""
        pooled = self.table.sum(axis=0)
        return int(np.triu(pooled, 1).sum()), int(np.tril(pooled, -1).sum())


def _calls(ids: Sequence[str], scores: Mapping[str, int], *, ties: bool) -> list[tuple[str, str, str]]:
    """The pairwise calls one scoring implies: "1" (first better), "2" or, with ``ties``, "0"."""
    calls = [(a, b, FIRST if scores[a] > scores[b] else SECOND if scores[a] < scores[b] else TIE)
             for a, b in combinations(ids, 2)]
    return [c for c in calls if ties or c[2] != TIE]


def _conflicts(ids: Sequence[str], first: Mapping[str, int], second: Mapping[str, int], *, ties: bool) -> float:
    calls = _calls(ids, first, ties=ties) + _calls(ids, second, ties=ties)
    return float(bool(calls) and not all(reproduced(calls, resolve(ids, calls))))


def rescoring(records: Sequence[Record]) -> Rescoring:
    """:class:`Rescoring` of the records whose answers have both ``human_scores`` and ``second_scores``
    (two or more such answers per prompt; the others are left out)."""
    rows = []
    for rec in records:
        first, second = scores_of(rec), scores_of(rec, "second_scores")
        ids = [x for x in rec.response_ids if x in first and x in second]
        if len(ids) < 2:
            continue
        table = np.zeros((LEVELS, LEVELS))
        for x in ids:
            table[first[x], second[x]] += 1
        pairs = strict = flipped = changed = 0
        for a, b in combinations(ids, 2):
            d1, d2 = np.sign(first[a] - first[b]), np.sign(second[a] - second[b])
            pairs += 1
            strict += bool(d1 and d2)
            flipped += bool(d1 and d2 and d1 != d2)
            changed += bool(d1) != bool(d2)
        rows.append((table, pairs, strict, flipped, changed, _conflicts(ids, first, second, ties=True),
                     _conflicts(ids, first, second, ties=False)))
    if not rows:
        zero = np.zeros(0)
        return Rescoring(np.zeros((0, LEVELS, LEVELS)), zero, zero, zero, zero, zero, zero)
    tables, *rest = zip(*rows)
    return Rescoring(np.array(tables), *(np.array(col, float) for col in rest))



def agreement_shares(rescored: Rescoring, found: Mapping[str, estimates.Estimate], *, n_boot: int = estimates.N_BOOT,
                     seed: int = 0) -> dict[str, estimates.Estimate]:
    """How often two scorings differ, by name: answers scored alike, pairs reversed or tie-changed, prompts in
    conflict with strict calls only (:data:`CONFLICTS_STRICT`, the one compared with Table 5) and with ties
    (:data:`CONFLICTS_TIES`, not comparable); ``found`` are :func:`add_agreement_claims`' estimates, reused."""
    share = lambda num, den=None: estimates.ratio_estimate(num, den, n_boot=n_boot, seed=seed)  # noqa: E731
    return {"same score both times": rescored.exact(n_boot=n_boot, seed=seed),
            "pairs strict in both, reversed": found["human-rescore-reversed"],
            "pairs strict in one, tied in the other": share(rescored.tie_changed, rescored.pairs),
            CONFLICTS_STRICT: found["human-rescore-conflicts"],
            CONFLICTS_TIES: share(rescored.conflicted)}


NO_SECOND_SCORES = ("*Skipped: the agreement of two scorings; no answer of the human file has a second score "
                    "(`second_scores`).*")
"""The page's sentence when the human file has no answer scored twice."""
CONFLICTS_STRICT = "prompts in conflict, strict calls only (Table 5's analogue)"
"""The share of prompts whose two scorings' strict calls Algorithm 1 cannot all reproduce: a pair one scoring orders
one way and the other the other way. Compared with Table 5 (claim ``human-rescore-conflicts``)."""
CONFLICTS_TIES = "prompts in conflict, ties included (not comparable with Table 5)"
"""The same with each scoring's ties as annotations: any pair tied in one scoring and strict in the other is then a
conflict by construction, and on a 0-3 scale ties are common, so this share is shown and never tested against
Table 5 (see :func:`add_agreement_claims`)."""


def agreement_table(shares: Mapping[str, estimates.Estimate], kappa: estimates.Estimate,
                    shift: estimates.Estimate | None = None, *, seed: int = 0):
    """The agreement statistics with their intervals and counts (kappa, then the mean score shift of
    :meth:`Rescoring.shift` when given, then ``shares``), then Table 5's human conflict ratios (``paper``)."""
    import pandas as pd

    over = lambda name: next((w for w in ("pairs", "prompts") if name.startswith(w)), "twice-scored answers")  # noqa: E731
    first = {"weighted kappa (quadratic)": kappa}
    if shift is not None:
        first["mean score shift, second minus first (score points)"] = shift
    rows = [{"statistic": name, "over": over(name), "ours [95%]": _interval(est, seed, "+.3f" if "shift" in name else ".3f"),
             "prompts": est.n, "paper": "–"} for name, est in {**first, **shares}.items()]
    rows += [{"statistic": f"Table 5 conflict ratio, human · {k.replace('_', ' ')}", "over": "prompts",
              "ours [95%]": "–", "prompts": None, "paper": f"{v:.4f}"} for k, v in table5_human().items()]
    return pd.DataFrame(rows)


def agreement_values(rescored: Rescoring, shift: estimates.Estimate | None = None, kappa: estimates.Estimate | None = None,
                     *, seed: int = 0) -> dict[str, int | str]:
    """The counts the prose quotes: answers, prompts and most answers per prompt scored twice, those scored higher
    and lower the second time, Table 1's responses per prompt of CheemsBench's Open Prompt subset; with ``shift``
    (:meth:`Rescoring.shift`) and ``kappa``, each with its 95% interval."""
    per_prompt = rescored.table.sum(axis=(1, 2))
    t1 = paper_table("table1_statistics").set_index("statistic")
    higher, lower = rescored.moves
    out = {"n_twice": int(per_prompt.sum()), "n_twice_prompts": len(per_prompt), "n_twice_models": int(per_prompt.max()),
           "n_second_higher": higher, "n_second_lower": lower,
           "table1_responses": f'{float(t1.loc["responses_per_prompt", "cheemsbench_open_prompt"]):g}'}
    if shift is not None:
        out["score_shift"] = _interval(shift, seed, "+.3f")
    if kappa is not None:
        out["kappa"] = _interval(kappa, seed)
    return out

# ---- the paper's numbers and the claims -------------------------------------------------------------------------

TABLE1_HUMAN = ("cheemsbench_open_prompt", "cheemsbench_human_instruction", "cheemspreference_human")
"""Table 1's human-annotated sets (the columns of ``data/paper/table1_statistics.csv``)."""


def table1_lengths():
    """Table 1's average characters of chosen and rejected responses in its human-annotated sets, and their
    difference, one row per set (read from ``data/paper/``)."""
    t1 = paper_table("table1_statistics").set_index("statistic")[list(TABLE1_HUMAN)].astype(float).T
    out = t1[["avg_chars_chosen", "avg_chars_rejected"]].rename(columns=lambda c: c.removeprefix("avg_chars_"))
    return out.assign(difference=out["chosen"] - out["rejected"])


def table5_human() -> dict[str, float]:
    """Table 5's conflict ratios of the human annotations, by subset."""
    t5 = paper_table("table5_conflict_ratio")
    return dict(zip(t5.loc[t5["annotator"] == "human", "subset"], t5.loc[t5["annotator"] == "human", "conflict_ratio"]))


def _untestable(ledger: claims.Ledger, cid: str, why: str, **fields) -> claims.Claim:
    fields.pop("reason", None)  # a question's reason where it can be tested; here what is missing says why
    return ledger.add(claims.Claim.untestable(cid, reason=why, **fields))


def _verdicts(opening: str, supported: str, contradicted: str, inconclusive: str) -> dict[str, str]:
    return {"supported": f"{opening}: {supported}", "contradicted": f"{opening}: {contradicted}",
            "inconclusive": f"{opening}: {inconclusive}"}


def add_length_claims(ledger: claims.Ledger, records: Sequence[Record] | None, *, n_boot: int = estimates.N_BOOT,
                      seed: int = 0, missing: str = "") -> dict[str, estimates.Estimate]:
    """The human length preference: overall (our question, beside Table 1's lengths), at a moderate and at a
    large length difference (Fig. 15's two sentences about human annotators); untestable with ``missing``
    (why) without ``records``. Returns the shares by claim id."""
    moderate, large = claims.MODERATE_LENGTH_DIFFERENCE, claims.LARGE_LENGTH_DIFFERENCE
    lengths = "; ".join(f"{name}: chosen {r.chosen:.2f}, rejected {r.rejected:.2f}" for name, r in table1_lengths().iterrows())
    base = dict(link="fig-human-labels-length")
    fig15 = dict(base, paper_ref="appendix D.3, Fig. 15", kind="finding")
    rows = [
        ("human-length-longer-wins", 1, math.inf, "greater", dict(
            base, paper_ref=claims.OURS, kind="question", claim="do human scorers of real Chinese writing favour the "
            "longer answer?", reason="the project's own question: the paper prints its human-annotated sets' average "
            "lengths of chosen and rejected responses (Table 1) and a plot (Fig. 15), no share of pairs; and these are "
            "other prompts (writing only), other answers and a 0-3 score instead of triple-wise comparisons",
            paper=f"Table 1, average characters in the human-annotated sets: {lengths}"), ""),
        ("human-length-moderate", 1, moderate, "greater", dict(
            fig15, claim="human annotators prefer the longer response when the length difference is moderate",
            paper='"when the response length difference is moderate, both human and GPT annotators tend to favor '
                  'longer responses" (plot only)'), f" of lengths differing by 1 to {moderate - 1} characters"),
        ("human-length-shorter-at-large", large, math.inf, "less", dict(
            fig15, claim="human annotators prefer the shorter response when the length difference is large",
            paper='"as the length difference becomes too large, humans tend to prefer shorter ones" (plot only)'),
         f" of lengths differing by at least {large} characters"),
    ]
    out = {}
    for cid, low, high, direction, fields, band in rows:
        fields["statistic"] = (f"share of the strictly ordered answer pairs (by human score){band or ' of unequal length'} "
                               "won by the longer answer, minus 0.5")
        if records is None:
            _untestable(ledger, cid, missing, **fields)
            continue
        est = out[cid] = estimates.ratio_estimate(*longer_wins(records, low, high), n_boot=n_boot, seed=seed)
        paper_side = "" if cid == "human-length-longer-wins" else ", as the paper says of its human annotators"
        other_side = "" if cid == "human-length-longer-wins" else ", unlike the paper's human annotators"
        longer, shorter = ("longer", "shorter") if direction == "greater" else ("shorter", "longer")
        says = _verdicts(f"The longer answer's share of the strictly ordered pairs{band} (equal-length pairs left out) "
                         "minus 0.5 is {estimate:+.3f} [{lo:+.3f}, {hi:+.3f}]",
                         f"the human scores favour the {longer} answer{paper_side}.",
                         f"the human scores favour the {shorter} answer{other_side}.", "no clear preference either way.")
        ledger.add(claims.Claim.test(cid, est - 0.5, direction, seed=seed, says=says, **fields))
    return out


def add_agreement_claims(ledger: claims.Ledger, rescored: Rescoring | None, *, n_boot: int = estimates.N_BOOT,
                         seed: int = 0, missing: str = "") -> dict[str, estimates.Estimate]:
    """Two scorings of the same answers (the second by another annotator, named in the manifest; upstream says
    neither which is final nor whether the second was blind to the first): agreement beyond chance (our question),
    opposite orders (the paper's reason for Algorithm 1) and Table 5's conflict ratio of the two merged (our
    question, beside Table 5); untestable with ``missing`` without twice-scored answers. Returns the estimates by
    claim id.

    Which conflict share is compared with Table 5: the strict calls only (:data:`CONFLICTS_STRICT`). Table 5 counts
    the prompts whose annotations Algorithm 1 cannot all reproduce, cycles in a graph of comparisons (§3.2, appendix
    C); CheemsBench's annotators rank the responses and break equal scores by further comparison (appendix D), so a
    tie there is an annotator's explicit "same" call. A tie of two 0-3 scores is not: counting ties as annotations
    (:data:`CONFLICTS_TIES`) makes every pair tied in one scoring and strict in the other a conflict by construction,
    so that share is shown but given no verdict against the paper's number."""
    t5 = table5_human()
    paper5 = "Table 5, conflict ratio of the human annotations: " + ", ".join(f"{v:.4f} ({k})" for k, v in t5.items())
    top = max(t5, key=t5.get)
    link = dict(link="fig-human-labels-agreement")
    second = "the second by another annotator, named in the manifest"
    kappa = dict(link, paper_ref=claims.OURS, kind="question",
                 claim=f"do two human scorings of the same answers ({second}) agree beyond chance?",
                 reason="the project's own question: the paper reports no agreement coefficient (in its protocol, "
                        "appendix D.1, two independent annotators must reach a set agreement before a prompt is kept); "
                        "upstream does not say whether the second scoring was blind to the first",
                 statistic="Cohen's kappa with quadratic weights between the first and the second human scoring "
                           "(0-3) of the re-scored models' answers; 0 is chance agreement",
                 paper="appendix D.1: double-blind annotation by two independent annotators who must reach a set "
                       "agreement (no coefficient reported)")
    flips = dict(link, paper_ref="§3.2, appendix C, Table 5", kind="finding",
                 claim="human annotations of the same responses conflict: a second annotator orders some pairs the "
                       "other way",
                 statistic="share of the answer pairs (of a prompt's re-scored answers) that both human scorings "
                           "order strictly and the second orders the other way",
                 paper='"conflicts may arise due to the human preferences ambiguity and potential annotation errors" '
                       f"(§3.2); {paper5}")
    merged = dict(link, paper_ref=claims.OURS, kind="question",
                  claim="merged by Algorithm 1, do two human scorings of real Chinese writing conflict on more prompts "
                        "than the paper's human annotations of CheemsBench?",
                  reason="the project's own question, and another protocol: Table 5 merges rounds of triple-wise "
                         "comparisons of five responses per prompt; here the strict pairwise calls of two 0-3 scorings "
                         "of a prompt's re-scored answers. Ties are left out: CheemsBench's annotators break equal "
                         "scores by further comparison (appendix D), so its ties are explicit calls, while a tie of two "
                         "0-3 scores is not, and with ties every pair tied in one scoring and strict in the other "
                         "would be a conflict by construction (that share is shown, not compared)",
                  statistic="share of prompts whose two scorings' strict pairwise calls (ties left out) Algorithm 1 "
                            f"cannot all reproduce, minus the larger of Table 5's human ratios ({top}, {t5[top]:.4f})",
                  paper=paper5)
    if rescored is None or not len(rescored.table):
        for cid, fields in (("human-rescore-kappa", kappa), ("human-rescore-reversed", flips),
                            ("human-rescore-conflicts", merged)):
            _untestable(ledger, cid, missing, **fields)
        return {}
    out = {"human-rescore-kappa": rescored.kappa(n_boot=n_boot, seed=seed),
           "human-rescore-reversed": estimates.ratio_estimate(rescored.reversed, rescored.strict, n_boot=n_boot, seed=seed),
           "human-rescore-conflicts": estimates.ratio_estimate(rescored.strict_conflicted, n_boot=n_boot, seed=seed)}
    ledger.add(claims.Claim.test("human-rescore-kappa", out["human-rescore-kappa"], "greater", seed=seed, **kappa,
                                 says=_verdicts("Weighted kappa {estimate:.3f} [{lo:.3f}, {hi:.3f}] (0: chance, 1: "
                                                "perfect)", "the two human scorings agree beyond chance.",
                                                "they agree less than chance would.", "not clearly above chance.")))
    ledger.add(claims.Claim.test("human-rescore-reversed", out["human-rescore-reversed"], "greater", seed=seed, **flips,
                                 says=_verdicts("The second scoring orders {estimate:.3f} [{lo:.3f}, {hi:.3f}] of the "
                                                "strictly ordered pairs the other way", "human scores of the same "
                                                "answers conflict, as the paper's Table 5 shows for its annotators.",
                                                "no conflict.", "not clearly above zero.")))
    ledger.add(claims.Claim.test("human-rescore-conflicts", out["human-rescore-conflicts"] - t5[top], "greater",
                                 seed=seed, **merged,
                                 says=_verdicts("Merged by Algorithm 1 with strict calls only, the share of prompts on "
                                                "which the two scorings conflict, minus Table 5's larger human ratio, is "
                                                "{estimate:+.3f} [{lo:+.3f}, {hi:+.3f}]",
                                                "they conflict more often than the paper's human annotations.",
                                                "they conflict less often than the paper's human annotations.",
                                                "not clearly different from the paper's.")))
    return out


# ---- figures ------------------------------------------------------------------------------------------------------

def _bands(ax, rows: Sequence[tuple[str, int, estimates.Estimate]], *, xlabel: str, seed: int) -> None:
    """One point per band with its 95% interval (a band without pairs is left out); the 0.5 line."""
    shown = [(name, est) for name, pairs, est in rows if pairs]
    for x, (name, est) in enumerate(shown):
        lo, hi = est.interval(seed=seed)
        ax.errorbar([x], [est.value], yerr=[[est.value - lo], [hi - est.value]], fmt="o", color="#4e79a7", capsize=3)
    ax.set_xticks(range(len(shown)), [name for name, _ in shown], rotation=20)
    ax.axhline(0.5, color="grey", lw=1, ls="--")
    ax.set(ylim=(0, 1), xlabel=xlabel, ylabel="share of strict pairs won by the longer answer")
    ax.grid(axis="y", alpha=0.3)


def plot_length(bands: Mapping[str, Sequence[tuple[str, int, estimates.Estimate]]], *, seed: int = 0):
    """Fig. 15's human length panel on real human scores: the longer answer's share of strictly ordered pairs per
    band of length difference (left, characters) and of length ratio (right), from :func:`length_bands`."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    _bands(left, bands["length difference"], xlabel="length difference of the pair (characters)", seed=seed)
    _bands(right, bands["length ratio"], xlabel="length ratio of the pair (longer / shorter)", seed=seed)
    left.set_title("by length difference (Fig. 15 bins it)")
    right.set_title("by length ratio")
    fig.suptitle("Human scores: does the higher-scored answer tend to be the longer one?", fontsize=10)
    fig.tight_layout()
    return fig


def plot_agreement(rescored: Rescoring, shares: Mapping[str, estimates.Estimate], *, seed: int = 0):
    """Left: the two scorings' table of counts (first scoring's score by row). Right: ``shares`` (name -> Estimate,
    :func:`agreement_shares`) with 95% intervals, and the paper's Table 5 human conflict ratios as plain points."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    paper = {f"paper, Table 5: human · {k.replace('_', ' ')}": v for k, v in table5_human().items()}

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [2, 3]})
    sns.heatmap(rescored.table.sum(axis=0).astype(int), annot=True, fmt="d", cmap="Blues", cbar=False, ax=left)
    left.set(xlabel="second scoring (human score)", ylabel="first scoring (human score)",
             title="the same answers scored twice")
    rows = list(shares.items()) + [(name, None) for name in paper]
    for y, (name, est) in enumerate(rows[::-1]):
        if est is None:
            right.plot([paper[name]], [y], "o", color="#f28e2b")
            continue
        lo, hi = est.interval(seed=seed)
        right.errorbar([est.value], [y], xerr=[[est.value - lo], [hi - est.value]], fmt="D", color="black", capsize=3)
    right.set_yticks(range(len(rows)), [name for name, _ in rows[::-1]])
    right.set(xlim=(0, 1), xlabel="share (ours: black, 95% interval; paper: orange)", title="how often they differ")
    right.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


