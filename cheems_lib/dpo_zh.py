"""DPO-zh: model-generated chosen/rejected pairs in ShareGPT form, merged by dialogue into ranked records.

**DPO-zh** (:func:`read_dpo_zh`): chosen/rejected pairs in ShareGPT form (LLaMA-Factory's
``dpo_zh_demo.json``, a JSON array, and MedicalGPT's ``dpo_zh_500.jsonl``). A conversation's
``system`` turn becomes ``sys_prompt``, its last human turn ``input``, any earlier turns
the extra field ``history`` (``[{"from", "value"}]``, kept, not rendered into the prompt).
Rows with the same dialogue become one record: identical rows are merged, other pairs add
responses and annotations ``[chosen, rejected, "1"]``; ``rank`` comes from Algorithm 1, so
the file trains directly. ``sources`` lists the files a record came from; there is no
``subset`` (no human/GPT split exists). The prompt id is md5 of ``input``, or md5 of the
whole dialogue for inputs that occur under two different system prompts or histories.

Its labels are **model labels, not human labels**. ``cheems import real`` ships the two files merged
(:mod:`cheems_lib.real_data`).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from .conflicts import resolve_records
from .input_files import DataError, json_rows
from .records import FIRST, md5, Record, Response

__all__ = ["read_dpo_zh"]

_HUMAN, _MODEL = {"human", "user"}, {"gpt", "assistant"}


def _turn(t: Any) -> tuple[str, str] | None:
    if isinstance(t, dict):
        role, value = t.get("from", t.get("role")), t.get("value", t.get("content"))
        if isinstance(role, str) and isinstance(value, str):
            return role, value
    return None


def _dpo_row(path: Path, line: int, obj: Any) -> tuple[tuple, str, str]:
    """((sys_prompt, history, input), chosen, rejected) of one ShareGPT-form preference row."""
    def fail(msg, fix=""):
        return DataError(path, line, msg, fix)

    if not isinstance(obj, dict):
        raise fail(f"expected a JSON object, got {type(obj).__name__}")
    conv = obj.get("conversations")
    turns = [_turn(t) for t in conv] if isinstance(conv, list) else []
    if not turns or None in turns:
        raise fail("'conversations' must be a non-empty list of {\"from\", \"value\"} turns")
    sys_prompt = turns.pop(0)[1] if turns[0][0] == "system" else None
    if not turns or turns[-1][0] not in _HUMAN:
        raise fail("the conversation does not end with a human turn", "the last turn is the prompt to answer")
    if any(role not in _HUMAN | _MODEL for role, _ in turns):
        raise fail(f"unknown turn roles {sorted({r for r, _ in turns} - _HUMAN - _MODEL)}",
                   "use human/gpt (or user/assistant); a system turn only first")
    pair = []
    for key in ("chosen", "rejected"):
        value = obj.get(key)
        value = _turn(value)[1] if _turn(value) else value
        if not isinstance(value, str):
            raise fail(f"'{key}' must be a string or a {{\"from\", \"value\"}} turn")
        pair.append(value)
    if pair[0] == pair[1]:
        raise fail("'chosen' and 'rejected' are the same text", "drop the row: it compares nothing")
    history = tuple(turns[:-1])
    return (sys_prompt, history, turns[-1][1]), pair[0], pair[1]


def read_dpo_zh(paths: Iterable[str | Path]) -> tuple[list[Record], dict]:
    """Chosen/rejected rows of one or more files merged into records, ranked by Algorithm 1.

    Returns the records (first-appearance order) and a report: rows per file,
    ``duplicate_rows`` (a dialogue and pair seen before, merged), ``prompts``,
    ``annotations``, ``responses``, ``system_prompts``, ``multi_turn`` and the conflict
    statistics of the resolution (non-zero only when two rows disagree on a pair).
    """
    groups: dict[tuple, Record] = {}
    rows, duplicates = {}, 0
    for path in map(Path, paths):
        rows[path.name] = 0
        for n, obj in json_rows(path):
            context, chosen, rejected = _dpo_row(path, n, obj)
            rows[path.name] += 1
            rec = groups.get(context)
            if rec is None:
                rec = groups[context] = Record(prompt=context[2], responses=[], id="-", sys_prompt=context[0],
                                               origin=f"{path}:{n}")
                if context[1]:
                    rec.extra["history"] = [{"from": r, "value": v} for r, v in context[1]]
                rec.extra["sources"] = []
            if path.name not in rec.extra["sources"]:
                rec.extra["sources"].append(path.name)
            ann = (md5(chosen), md5(rejected), FIRST)
            if ann in rec.annotations:
                duplicates += 1
                continue
            known = set(rec.response_ids)
            rec.responses += [Response(md5(t), t) for t in (chosen, rejected) if md5(t) not in known]
            rec.annotations.append(ann)
        if not rows[path.name]:  # an empty input must not import as an empty data set with exit 0
            raise DataError(path, None, "holds no preference row (the file is empty)", "check that this is the right file")
    records = list(groups.values())
    _dpo_ids(groups)
    stats = resolve_records(records)
    report = {"rows": rows, "duplicate_rows": duplicates, "prompts": len(records),
              "annotations": sum(len(r.annotations) for r in records),
              "responses": sum(len(r.responses) for r in records),
              "system_prompts": sum(r.sys_prompt is not None for r in records),
              "multi_turn": sum("history" in r.extra for r in records),
              "conflict_ratio": stats["conflict_ratio"], "pair_conflict_ratio": stats["pair_conflict_ratio"]}
    return records, report


def _dpo_ids(groups: dict[tuple, Record]) -> None:
    """md5 of the input; md5 of the whole dialogue where one input occurs in several dialogues."""
    from collections import Counter

    shared = Counter(context[2] for context in groups)
    for (sys_prompt, history, text), rec in groups.items():
        rec.id = md5(text) if shared[text] == 1 else md5(json.dumps([sys_prompt, history, text], ensure_ascii=False))
