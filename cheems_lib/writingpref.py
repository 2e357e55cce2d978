"""WritingPreferenceBench zh: human 0-3 scores of many models' answers to Chinese writing prompts, as records.

**WritingPreferenceBench zh** (:func:`read_writingpref`, ``cheems import writingpref``): 204
Chinese writing prompts (51 genre tags x 4), each answered by 19 models (one lacks a prompt),
every answer scored 0-3 by trained human annotators; a second annotator rescored 5 models.
One multi-response record per prompt (the 3 prompts that are just ``"/"`` are dropped and
counted): ``id`` = ``question_id``, responses = every model's answer with the model name as
id, ``rank`` = the human scores as dense ranks (highest = round 0, ties equal), extra fields
``human_scores``, ``second_scores`` and ``source``; no pairwise annotations. It ships as
xz-compressed JSONL (:data:`cheems_lib.real_data.WRITINGPREF_FILE`, written deterministically), outside the
release layout. The genre tag (``category``) is for display only: never stratify intervals on it.

Its labels are **human scores**. ``cheems import writingpref`` converts it alone, ``cheems import real``
with the other sources (:mod:`cheems_lib.real_data`).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .input_files import DataError, json_rows, text_list
from .records import Record, Response, strict_pairs

__all__ = ["read_writingpref", "WRITINGPREF_SECOND", "WRITINGPREF_LABELS"]

#: Second, independent human scorings upstream has for 5 models: model -> annotator (``rescored/<model>.<annotator>.json``).
WRITINGPREF_SECOND = {"doubao-1.5-pro": "shawn", "gemini-2.0-flash": "unnamed",
                      "gemini-2.5-flash-nothinking": "letian", "gpt-4.1-mini": "shawn", "o4-mini": "letian"}
WRITINGPREF_LABELS = "human scores (0-3, trained annotators)"
_NO_PROMPT = {"", "/"}  # prompt texts that hold no prompt (3 upstream prompts are just "/")


def _wp_rows(path: Path, need: dict[str, type]) -> list[tuple[int, dict]]:
    """(line, object) of a WritingPreferenceBench JSON list whose objects have the ``need`` fields and types."""
    if not path.is_file():
        raise DataError(path, None, "missing", "pass the writingpref-zh folder (responses/, scores/, rescored/) "
                        "as laid out in data/real/README.md")
    rows, seen = [], {}
    for n, obj in json_rows(path):
        if not isinstance(obj, dict):
            raise DataError(path, n, f"expected a JSON object, got {type(obj).__name__}")
        for key, kind in need.items():
            value = obj.get(key)
            if not isinstance(value, kind) or isinstance(value, bool):
                raise DataError(path, n, f"missing or non-{kind.__name__} {key!r}",
                                "pass the upstream file unchanged (see data/real/README.md)")
        qid = str(obj["question_id"])
        if qid in seen:
            raise DataError(path, n, f"question_id {qid} repeats line {seen[qid]}", "keep one row per prompt")
        seen[qid] = n
        rows.append((n, obj))
    return rows


def _wp_tags(path: Path, line: int, value: Any) -> list[str]:
    """``__internal_tags__`` (a list of genre tags, or the text of one) as a list of strings."""
    tags = text_list(value)
    if not (isinstance(tags, list) and tags and all(isinstance(t, str) for t in tags)):
        raise DataError(path, line, f"'__internal_tags__' must be a list of genre tags, got {json.dumps(value)}",
                        "pass the upstream file unchanged")
    return tags


def _wp_scores(path: Path, questions: dict[str, Any]) -> dict[str, int]:
    """``{question_id: score}`` of one scores file, every score an integer 0-3 of a known prompt."""
    out = {}
    for n, obj in _wp_rows(path, {"question_id": (str, int), "score": int}):
        qid, score = str(obj["question_id"]), obj["score"]
        if qid not in questions:
            raise DataError(path, n, f"question_id {qid} has no answer in the model's responses file",
                            "pass the scores file of the same model")
        if not 0 <= score <= 3:
            raise DataError(path, n, f"score {score} is not on the 0-3 scale", "pass the upstream human scores")
        out[qid] = score
    return out


def read_writingpref(folder: str | Path) -> tuple[list[Record], dict]:
    """WritingPreferenceBench's Chinese prompts as multi-response records ranked by the human scores.

    ``folder`` holds ``responses/<model>.json`` (answers: ``question_id``, ``prompt``,
    ``__internal_tags__``, ``predict0``; their ``score*``/``won`` fields are not the human
    scores and are ignored), ``scores/<model>.json`` (the human scores, ``{question_id,
    score}``) and ``rescored/<model>.<annotator>.json`` (a second human scoring). One record
    per prompt, in order of first appearance (models by name): ``id`` = ``question_id``,
    ``input`` = the prompt, ``category`` = the genre tag(s), ``responses`` = every model's
    answer, id = the model name, sorted by name; ``rank`` = the human scores as dense ranks
    (highest score = round 0, equal scores tie); extra fields ``human_scores`` and
    ``second_scores`` (``{model: 0-3}``; the second only for the rescored models, ``{}`` when
    none) and ``source``. Prompts whose text is empty or ``"/"`` are dropped and counted.

    Returns the records and a report (counts, dropped prompts, missing answers per model,
    second annotators and their exact agreement with ``scores/``, strict pairs and the share
    of them where the higher-scored answer is the longer).
    """
    folder = Path(folder)
    responses_dir = folder / "responses"
    models = sorted(p.name[:-len(".json")] for p in responses_dir.glob("*.json")) if responses_dir.is_dir() else []
    if not models:
        raise DataError(responses_dir, None, "no <model>.json answer files",
                        "pass the writingpref-zh folder (responses/, scores/, rescored/)")
    prompts: dict[str, tuple[str, list[str], str]] = {}  # qid -> (prompt, tags, where first seen)
    answers: dict[str, dict[str, str]] = {m: {} for m in models}
    for model in models:
        path = responses_dir / f"{model}.json"
        for n, obj in _wp_rows(path, {"question_id": (str, int), "prompt": str, "predict0": str}):
            qid, tags = str(obj["question_id"]), _wp_tags(path, n, obj.get("__internal_tags__"))
            first = prompts.setdefault(qid, (obj["prompt"], tags, f"{path}:{n}"))
            if first[:2] != (obj["prompt"], tags):
                raise DataError(path, n, f"question {qid}'s prompt or genre tag differs from {first[2]}",
                                "pass answer files of the same benchmark version")
            answers[model][qid] = obj["predict0"]
    scores = {}
    for model in models:
        scores[model] = _wp_scores(folder / "scores" / f"{model}.json", answers[model])
        unscored = [q for q in answers[model] if q not in scores[model]]
        if unscored:
            raise DataError(folder / "scores" / f"{model}.json", None,
                            f"no human score for {len(unscored)} answer(s), e.g. question_id {unscored[0]}",
                            "pass the complete scores file of the same model")
    extra_scores = sorted(p.name for p in (folder / "scores").glob("*.json") if p.name[:-5] not in answers)
    if extra_scores:
        raise DataError(folder / "scores" / extra_scores[0], None, "has no answer file in responses/",
                        "pass the responses file of that model too, or remove the scores file")
    second, annotators = {}, {}
    for path in sorted((folder / "rescored").glob("*.json")):
        model, _, annotator = path.name[:-len(".json")].rpartition(".")
        if model not in answers or not annotator:
            raise DataError(path, None, "not named rescored/<model>.<annotator>.json for a model in responses/",
                            "name it after the model's responses file and the annotator")
        if model in second:
            raise DataError(path, None, f"a second scoring of {model} already came from {annotators[model]}",
                            "keep one rescored file per model")
        second[model], annotators[model] = _wp_scores(path, answers[model]), annotator
    kept = [q for q in prompts if prompts[q][0].strip() not in _NO_PROMPT]
    records = []
    for qid in kept:
        text, tags, _ = prompts[qid]
        have = [m for m in models if qid in answers[m]]
        human = {m: scores[m][qid] for m in have}
        levels = sorted(set(human.values()), reverse=True)
        records.append(Record(prompt=text, responses=[Response(m, answers[m][qid]) for m in have], id=qid,
                              category=tags, rank={m: levels.index(s) for m, s in human.items()},
                              extra={"human_scores": human,
                                     "second_scores": {m: second[m][qid] for m in sorted(second) if qid in second[m]},
                                     "source": "writingpref-zh"}))
    return records, _writingpref_report(records, prompts, answers, kept, annotators)


def _writingpref_report(records: list[Record], prompts: dict, answers: dict, kept: list[str],
                        annotators: dict[str, str]) -> dict:
    from collections import Counter

    dropped = [q for q in prompts if q not in set(kept)]
    pairs = longer = 0
    for rec in records:
        text = {r.id: r.content for r in rec.responses}
        for a, b in strict_pairs(rec.rank):
            pairs += 1
            longer += len(text[a]) > len(text[b])
    tags = Counter(rec.category[0] for rec in records)
    agree = {m: {"annotator": a, "prompts": sum(m in r.extra["second_scores"] for r in records),
                 "exact_agreement": sum(r.extra["second_scores"].get(m) == r.extra["human_scores"].get(m)
                                        for r in records if m in r.extra["second_scores"])}
             for m, a in sorted(annotators.items())}
    return {"models": len(answers), "prompts": len(records), "responses": sum(len(r.responses) for r in records),
            "dropped_prompts": {"count": len(dropped), "question_ids": dropped,
                                "reason": 'the prompt text is just "/" (no prompt upstream)'},
            "missing_answers": {m: sorted(q for q in kept if q not in a) for m, a in answers.items()
                                if any(q not in a for q in kept)},
            "second_annotators": agree, "strict_pairs": pairs,
            "higher_score_longer": round(longer / pairs, 4) if pairs else None,
            "scores": dict(sorted(Counter(s for r in records for s in r.extra["human_scores"].values()).items())),
            "genre_tags": len(tags), "max_prompts_per_tag": max(tags.values(), default=0)}
