"""Real human scores of Chinese writing (WritingPreferenceBench zh): the data of the human-labels chapter.

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
genre tag; :func:`split_table` shows how).

What the scores say about length (appendix D.3, Fig. 15; Table 1) is
:mod:`cheems_lib.analyses.human_length_preference`'s; the agreement of two scorings of the same answers (Table 5's
nearest analogue) is :mod:`cheems_lib.analyses.human_agreement`'s. Reward models trained on these scores, and a
real Best-of-N, are :mod:`cheems_lib.analyses.human_best_of_n`'s. The genre tags (many, a few prompts each) only
deal the split: no interval is stratified on them, since a stratified bootstrap over one-prompt strata has no width
(:func:`pooled` drops them before evaluation).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import combinations
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..input_files import DataError, show
from ..publishing.provenance import file_source
from ..publishing.publish import md_code, md_text
from ..read_report import ReadReport
from ..records import file_and_line, Record, strict_pairs
from ..world_files import UNKNOWN_LABELS, model_labels, read_ranked
from .world_folder import seeds_text
from .human_length_preference import longer_wins, table1_lengths


__all__ = ["open_data", "HumanData", "split_table", "CITATION", "ATTRIBUTION", "LEVELS", "scores_of", "check_scores",
           "preference_name", "split_halves", "pooled", "keep_answers"]


def open_data(world, path: str, *, prompts: int = 0, seed: int = 0) -> HumanData:
    """The human scores of ``path`` (its first ``prompts`` records; 0: all), read as every chapter reads a records
    file (:func:`cheems_lib.world_files.read_ranked`: a record without ``rank`` is ranked from its annotations with
    Algorithm 1) and checked once (:func:`check_scores`, a :class:`~cheems_lib.input_files.DataError` naming the file,
    line and fix), split into halves with ``seed``; and ``world``'s preference file
    (:class:`cheems_lib.analyses.world_folder.World`) with its labels as the world states them."""
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
    """Who labelled the preference file, as the world says (:meth:`cheems_lib.analyses.world_folder.World.file_labels`:
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
        return f"data: {', '.join(used)}; training seeds {seeds_text(seeds)}" if used else fallback

    def notes(self) -> list[str]:
        """The Markdown sentences at the top of the page, beside the world's
        (:attr:`cheems_lib.analyses.world_folder.World.about`): each file with its SHA-256 and who labelled it, or
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
        out: dict[str, Any] = {"human_path": self.path, "pref_labels": self.labels_text, "pref_name": self.preference_name,
                               "citation": CITATION}
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


CITATION = ("WritingPreferenceBench zh (Ying et al., \"Beyond Correctness: Evaluating Subjective Writing Preferences "
            "Across Cultures\", arXiv 2510.14616, 2025; upstream WritingPreferenceBench/Writing-Preference-Bench; "
            "licence ODC-BY)")
"""How every page that uses these human scores cites them (ODC-BY asks for the attribution)."""


ATTRIBUTION = "WritingPreferenceBench zh, Ying et al. 2025, arXiv 2510.14616, ODC-BY"
"""The short attribution every download's source carries (:meth:`HumanData.source`)."""


LEVELS = 4
"""The human score is one of 0, 1, 2, 3."""


def split_table(data: HumanData):
    """One row per genre tag of ``data``'s human scores: its prompts and how many the split dealt to each half
    (display only); None without the human file."""
    import pandas as pd

    if data.records is None:
        return None
    count = lambda recs: pd.Series([r.top_category for r in recs]).value_counts()  # noqa: E731
    tags = count(data.records)
    return pd.DataFrame({"genre tag": tags.index, "prompts": tags.to_numpy(),
                         "training half": tags.index.map(count(data.train)).fillna(0).astype(int),
                         "held-out half": tags.index.map(count(data.held_tagged)).fillna(0).astype(int)})


def scores_of(record: Record, field: str = "human_scores") -> dict[str, int]:
    """``record``'s scores ``{answer id: 0..3}`` from ``extra[field]`` (``human_scores`` or ``second_scores``),
    only for answers the record holds; ``{}`` when it has none."""
    ids = set(record.response_ids)
    return {k: int(v) for k, v in (record.extra.get(field) or {}).items() if k in ids}


def check_scores(records: Sequence[Record], path: str | Path) -> None:
    """Refuse a human-score file this chapter would misread, once, before anything is computed: every response of a
    record has an integer score 0-3 in ``extra["human_scores"]``; ``second_scores``, where a record has it, names only
    its responses, each with an integer 0-3; and ``rank`` orders the responses as ``human_scores`` do (a higher score
    in an earlier round, equal scores tied), since the length and agreement statistics read ``rank`` and the
    Best-of-N reads the scores. The first problem raises :class:`~cheems_lib.input_files.DataError`, one line naming the
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
        line = file_and_line(rec)[1]
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


def preference_name(labels: str, content: str | None) -> str:
    """How tables name a preference file's training set: ``DPO-zh`` when ``content`` (what the manifest says the
    file holds) names it, else ``preference file``, then ``(model labels)`` when ``labels`` are a model's
    (:func:`cheems_lib.world_files.model_labels`), else the labels as stated.

    >>> preference_name("model-generated", "DPO-zh chosen/rejected pairs"), preference_name("unknown labels", None)
    ('DPO-zh (model labels)', 'preference file (unknown labels)')
    """
    return f"{'DPO-zh' if 'DPO-zh' in (content or '') else 'preference file'} " \
           f"({'model labels' if model_labels(labels) else labels})"


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
