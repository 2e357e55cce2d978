"""LLMZoo's Chinese reviews: one judge's rankings of 4 answers per question, per aspect, as records.

Its labels are **model labels, not human labels** (:func:`read_llmzoo_set`). FreedomIntelligence/LLMZoo
ranked 4 answers to each of 70 Chinese questions with gpt-3.5-turbo, once per aspect (``general``,
``coherence``, ``diversity``, ``relevance``; ``immersion`` for the 10 role-play questions),
in two answer sets (``review_zh``, ``review_output``). One review line per question and
aspect: ``question_id``, ``metadata.question``, ``metadata.answers``, ``metadata.model_ids``,
``order`` (1 = best, ties share a value, e.g. ``[3, 1, 3, 2]``). Each set becomes one record
per question:

- ``id`` = md5 of the question text, so both sets share prompt ids (one question, one id);
- ``responses`` in the judge's position order (Assistant 1..4), ids = md5 of content;
- ``rank`` = the ``general`` order made dense and 0-based (``[3, 1, 3, 2]`` -> ``2, 0, 2, 1``);
- ``annotations`` = the ``general`` ranking as its 6 pairwise comparisons in position order
  (``"0"`` for ties), so Algorithm 1 gives back ``rank`` and position bias can be measured;
- ``category`` = ``[LLMZoo category]``; extra fields ``question_id`` (upstream),
  ``models`` (the answering models, position order), ``labels`` (the judge),
  ``aspects`` (``{aspect: {response_id: rank}}`` for every aspect present, ``general``
  included) and ``sources``. The judge's rationale text is not carried.

:func:`aspect_annotations` turns chosen aspects' rankings into pairwise annotations, and
:func:`merge_aspects` resolves them together: the conflict ratio of one judge's aspects.

``cheems import real`` ships both answer sets converted (:mod:`cheems_lib.real_data`).
"""
from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path
from typing import Any, Iterable

from .conflicts import resolve_records
from .input_files import DataError, json_lines, text_list
from .records import FIRST, md5, Record, Response, SECOND, TIE

__all__ = ["LLMZOO_SETS", "read_llmzoo_set", "aspect_annotations", "merge_aspects"]

LLMZOO_SETS = ("review_zh", "review_output")


def _aspect_files(set_dir: Path) -> dict[str, Path]:
    """``{aspect: review file}`` of one answer set: ``SET/<aspect>.jsonl`` or upstream ``SET/zh/<aspect>/review.jsonl``."""
    found = {p.stem: p for p in set_dir.glob("*.jsonl")}
    found.update({p.parent.name: p for p in set_dir.glob("zh/*/review.jsonl")})
    if "general" not in found:
        raise DataError(set_dir, None, "no general.jsonl (or zh/general/review.jsonl) in this answer set",
                        "pass the folder holding one LLMZoo answer set's aspect reviews")
    return {a: found[a] for a in ["general", *sorted(set(found) - {"general"})]}


def _review_row(path: Path, line: int, obj: Any) -> dict[str, Any]:
    """One checked review line: question_id, question, category, answers, models, order, reviewer."""
    def fail(msg, fix=""):
        return DataError(path, line, msg, fix)

    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        raise fail("not an LLMZoo review line (no 'metadata' object)", "pass LLMZoo review.jsonl files")
    qid, question = obj.get("question_id"), meta.get("question")
    answers, models = text_list(meta.get("answers")), text_list(meta.get("model_ids"))
    order = obj.get("order")
    if not isinstance(qid, int) or isinstance(qid, bool) or not isinstance(question, str):
        raise fail("missing integer 'question_id' or string 'metadata.question'")
    if not (isinstance(answers, list) and answers and all(isinstance(a, str) for a in answers)):
        raise fail("'metadata.answers' must be a list of answer texts")
    if len(set(answers)) != len(answers):
        raise fail("two answers have the same text, so their md5 ids would collide", "drop the repeated answer")
    if not (isinstance(models, list) and len(models) == len(answers) and all(isinstance(m, str) for m in models)):
        raise fail(f"'metadata.model_ids' must name one model per answer ({len(answers)})")
    if not (isinstance(order, list) and len(order) == len(answers)
            and all(isinstance(o, int) and not isinstance(o, bool) and o >= 1 for o in order)):
        raise fail(f"'order' must hold one rank >= 1 per answer ({len(answers)}), got {json.dumps(order)}",
                   "the judge's reply could not be parsed: fix or drop this line")
    return {"question_id": qid, "question": question, "category": obj.get("category"), "answers": answers,
            "models": models, "order": order, "reviewer": obj.get("reviewer_id")}


def _dense(order: list[int]) -> list[int]:
    """LLMZoo's order (1 = best, ties equal, gaps after ties) as dense 0-based ranks: ``[1, 2, 2, 4]`` -> ``[0, 1, 1, 2]``."""
    levels = sorted(set(order))
    return [levels.index(o) for o in order]


def _read_reviews(path: Path) -> dict[int, tuple[int, dict]]:
    rows: dict[int, tuple[int, dict]] = {}
    for n, obj in json_lines(path):
        row = _review_row(path, n, obj)
        if row["question_id"] in rows:
            raise DataError(path, n, f"question_id {row['question_id']} repeats line {rows[row['question_id']][0]}",
                            "keep one review per question and aspect")
        rows[row["question_id"]] = (n, row)
    return rows


def _check_questions(questions: Path, general: dict[int, tuple[int, dict]]) -> list[int]:
    """The question ids in the question file's order, each checked against the general reviews."""
    ids = []
    for n, obj in json_lines(questions):
        qid = obj.get("question_id") if isinstance(obj, dict) else None
        if qid not in general:
            raise DataError(questions, n, f"question_id {json.dumps(qid)} has no general review",
                            "pass the question file of the same LLMZoo version")
        if qid in ids:
            raise DataError(questions, n, f"question_id {qid} is listed twice", "list each question once")
        row = general[qid][1]
        if (obj.get("text"), obj.get("category")) != (row["question"], row["category"]):
            raise DataError(questions, n, f"question {qid}'s text or category differs from its general review "
                            f"(line {general[qid][0]})", "pass the question file of the same LLMZoo version")
        ids.append(qid)
    missing = sorted(set(general) - set(ids))
    if missing:
        raise DataError(questions, None, f"lacks the reviewed question ids {missing[:5]}",
                        "pass the question file of the same LLMZoo version")
    return ids


def read_llmzoo_set(set_dir: str | Path, *, questions: str | Path | None = None,
                    source: str | None = None) -> list[Record]:
    """One LLMZoo answer set (a folder of aspect reviews) as ranked records, one per question.

    Records follow ``questions`` (``questions-zh.jsonl``, whose texts and categories are
    checked) when given, else the general file's order. Every aspect review must rank the
    same answers as the general one; an aspect may lack questions (``immersion``).
    """
    set_dir = Path(set_dir)
    files = _aspect_files(set_dir)
    reviews = {aspect: _read_reviews(path) for aspect, path in files.items()}
    general = reviews["general"]
    for aspect, rows in reviews.items():
        for qid, (n, row) in rows.items():
            ref = general.get(qid)
            if ref is None:
                raise DataError(files[aspect], n, f"question_id {qid} has no general review",
                                "every aspect reviews questions of the general file")
            if (row["question"], row["answers"], row["models"]) != (ref[1]["question"], ref[1]["answers"],
                                                                   ref[1]["models"]):
                raise DataError(files[aspect], n, f"question {qid}: question, answers or models differ from "
                                f"{files['general']}:{ref[0]}", "pass aspect files of the same answer set")
    order = _check_questions(Path(questions), general) if questions else list(general)
    return [_llmzoo_record(general[qid][1], {a: rows[qid][1]["order"] for a, rows in reviews.items() if qid in rows},
                           source or f"llmzoo/{set_dir.name}") for qid in order]


def _llmzoo_record(row: dict, orders: dict[str, list[int]], source: str) -> Record:
    ids = [md5(a) for a in row["answers"]]
    aspects = {a: dict(zip(ids, _dense(o))) for a, o in orders.items()}
    rank = aspects["general"]
    rec = Record(prompt=row["question"], responses=[Response(i, a) for i, a in zip(ids, row["answers"])],
                 category=[row["category"]] if isinstance(row["category"], str) else None, rank=rank,
                 extra={"question_id": row["question_id"], "models": row["models"], "labels": row["reviewer"],
                        "aspects": aspects, "sources": [source]})
    rec.annotations = aspect_annotations(rec, ["general"])
    return rec


def aspect_annotations(record: Record, aspects: Iterable[str] | None = None) -> list[tuple[str, str, str]]:
    """Pairwise annotations ``(a, b, "1"|"2"|"0")`` of the given aspects' rankings (default: every aspect present).

    Each aspect gives every pair of responses once, in position order (``a`` shown before
    ``b``): ``"1"`` when ``a`` ranks better, ``"2"`` when ``b`` does, ``"0"`` for a tie.
    Aspects the record lacks (``immersion`` outside role-play) give nothing.
    """
    ranked = record.extra.get("aspects") or {}
    chosen = list(ranked) if aspects is None else [a for a in aspects if a in ranked]
    out = []
    for aspect in chosen:
        rank = ranked[aspect]
        for a, b in combinations([i for i in record.response_ids if i in rank], 2):
            out.append((a, b, FIRST if rank[a] < rank[b] else SECOND if rank[a] > rank[b] else TIE))
    return out


def merge_aspects(records: Iterable[Record], aspects: Iterable[str] | None = None) -> tuple[list[Record], dict]:
    """Copies of LLMZoo records annotated with several aspects' rankings, resolved by Algorithm 1.

    Returns the copies and :func:`cheems_lib.conflicts.resolve_records`' statistics: the
    conflict ratio of one judge whose aspect rankings are read as separate annotators.
    """
    from dataclasses import replace

    aspects = list(aspects) if aspects is not None else None
    copies = [replace(r, annotations=aspect_annotations(r, aspects), rank=None) for r in records]
    return copies, resolve_records(copies)
