"""Importers of public real Chinese preference data into the official record format (spec §1, §6b).

Two public, openly licensed sources can be fetched where the official CheemsBench and
CheemsPreference files cannot; ``data/real/`` ships them converted (``cheems import real``).
Their labels are **model labels, not human labels**.

**LLMZoo zh reviews** (:func:`read_llmzoo_set`). FreedomIntelligence/LLMZoo ranked 4 answers
to each of 70 Chinese questions with gpt-3.5-turbo, once per aspect (``general``,
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

**DPO-zh** (:func:`read_dpo_zh`): chosen/rejected pairs in ShareGPT form (LLaMA-Factory's
``dpo_zh_demo.json``, a JSON array, and MedicalGPT's ``dpo_zh_500.jsonl``). A conversation's
``system`` turn becomes ``sys_prompt``, its last human turn ``input``, any earlier turns
the extra field ``history`` (``[{"from", "value"}]``, kept, not rendered into the prompt).
Rows with the same dialogue become one record: identical rows are merged, other pairs add
responses and annotations ``[chosen, rejected, "1"]``; ``rank`` comes from Algorithm 1, so
the file trains directly. ``sources`` lists the files a record came from; there is no
``subset`` (no human/GPT split exists). The prompt id is md5 of ``input``, or md5 of the
whole dialogue for inputs that occur under two different system prompts or histories.

Inputs are checked against the SHA-256 of the copies the project was built from
(:data:`KNOWN_SHA256`) for information only: a newer upstream file imports too, and the
summary and manifest then say it is not the known copy (and give no commit).
"""
from __future__ import annotations

import ast
import hashlib
import json
from itertools import combinations
from pathlib import Path
from typing import Any, Iterable, Iterator

from .conflicts import resolve_records
from .outputs import atomic_open
from .records import DataError, FIRST, json_lines, md5, Record, Response, SECOND, TIE, write_records

__all__ = ["LLMZOO_SETS", "KNOWN_SHA256", "UPSTREAM", "read_llmzoo_set", "aspect_annotations", "merge_aspects",
           "read_dpo_zh", "input_info", "import_real", "RELEASE_FILES"]

LLMZOO_SETS = ("review_zh", "review_output")
#: SHA-256 of the copies the shipped files were converted from (``../shared/real/README.md``).
KNOWN_SHA256 = {
    "03d19b829de4e1b5ece9baf956b6b3e92ebd8341fe2d18ab5fce51cf9d7cda16": "dpo-zh/dpo_zh_500.jsonl",
    "9ea7206bc1a45df8b7811d1fc02d5555c65379d05905f343da88f221ff145376": "dpo-zh/dpo_zh_demo.json",
    "e603c00ea67e0ed6d1ac85a010b49d8a3e1a6da327c6f564da98aaf2c6a7ddec": "llmzoo-zh/questions-zh.jsonl",
    "5bb8c0d8ee46a6a467132b99152822a595f112253b301ea9f1a8bc4e3713cf61": "llmzoo-zh/review_output/coherence.jsonl",
    "ca3a19ab84e16b0e437ee83fd467c817fb1ad62474268ae00a8e7e8bc77290ea": "llmzoo-zh/review_output/diversity.jsonl",
    "173afb4797cde57f35d6562a7a2563d4d84cf110fdd2497353068f4566549dc1": "llmzoo-zh/review_output/general.jsonl",
    "88da6bdad09802cab5ee7bfc7b7df116a82e626a42c031762bce9075e4d3f536": "llmzoo-zh/review_output/immersion.jsonl",
    "fd9c90741f95575defcbe3db96897f8525c9c1d709a1cbfa9048e49a78e0d03a": "llmzoo-zh/review_output/relevance.jsonl",
    "c9a238cb0dd8cb528a519e1c2e1eda99bc2b11aa46a00317ead1b98eb8fdc21a": "llmzoo-zh/review_zh/coherence.jsonl",
    "e730157ebf6c293b8301dda99abe00cb86487d587c4a1afae3a8720705c17e47": "llmzoo-zh/review_zh/diversity.jsonl",
    "077a7d94e140746a117eb722ee37857099a9f0d2f575f4ea93d6b9dca917ecc8": "llmzoo-zh/review_zh/general.jsonl",
    "6abb3ee5403ce5e584cc3669f57650d9b6dc53d82a640ebf1d4fca96e23e2109": "llmzoo-zh/review_zh/immersion.jsonl",
    "0b5af63f87c724fe7994589d4b25bfe14ccc0ba96d39bed56818fa412d2c9763": "llmzoo-zh/review_zh/relevance.jsonl",
}
_LLMZOO = {"repo": "FreedomIntelligence/LLMZoo", "commit": "cf70d9cd7a34808681ebe58e652f697420d7b055",
           "licence": "CC BY-NC 4.0", "licence_file": "LICENSES/LLMZoo-DATA_LICENSE",
           "attribution": 'Chen et al., "Phoenix: Democratizing ChatGPT across Languages" (2023), LLM Zoo'}
#: Where each input of ``cheems import real`` comes from (its key is the path under the source folder ``SRC``).
UPSTREAM = {
    "llmzoo-zh": {**_LLMZOO, "paths": "llmzoo/eval/reviews/{set}/zh/<aspect>/review.jsonl, "
                                      "llmzoo/eval/questions/questions-zh.jsonl"},
    "dpo-zh/dpo_zh_demo.json": {"repo": "hiyouga/LLaMA-Factory", "commit": "ff6d4d12eeb035d6ce06805a5733dd7b29f2ac30",
                                "paths": "data/dpo_zh_demo.json", "licence": "Apache-2.0",
                                "licence_file": "LICENSES/LICENSE-LLaMA-Factory"},
    "dpo-zh/dpo_zh_500.jsonl": {"repo": "shibing624/MedicalGPT", "commit": "2f1008cfa49cbba69ff6f138c3b5e2fb0646bdc7",
                                "paths": "data/reward/dpo_zh_500.jsonl", "licence": "Apache-2.0",
                                "licence_file": "LICENSES/LICENSE-MedicalGPT"},
}
#: The release-shaped folder (spec §6b) that ``cheems import real`` writes: output path -> what it holds.
RELEASE_FILES = {
    "cheems_bench/open.jsonl": "review_zh",
    "llmzoo/review_output.jsonl": "review_output",
    "cheems_preference.jsonl": "dpo-zh",
}
_LICENCES = {"llmzoo-zh/DATA_LICENSE": "LICENSES/LLMZoo-DATA_LICENSE",
             "dpo-zh/LICENSE-LLaMA-Factory": "LICENSES/LICENSE-LLaMA-Factory",
             "dpo-zh/LICENSE-MedicalGPT": "LICENSES/LICENSE-MedicalGPT"}


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def input_info(path: str | Path) -> dict[str, Any]:
    """``{"sha256", "known_copy"}``: whether the file is the copy the shipped data was made from (information only)."""
    digest = sha256_file(path)
    return {"sha256": digest, "known_copy": KNOWN_SHA256.get(digest)}


# ---- LLMZoo ------------------------------------------------------------------------------------

def _aspect_files(set_dir: Path) -> dict[str, Path]:
    """``{aspect: review file}`` of one answer set: ``SET/<aspect>.jsonl`` or upstream ``SET/zh/<aspect>/review.jsonl``."""
    found = {p.stem: p for p in set_dir.glob("*.jsonl")}
    found.update({p.parent.name: p for p in set_dir.glob("zh/*/review.jsonl")})
    if "general" not in found:
        raise DataError(set_dir, None, "no general.jsonl (or zh/general/review.jsonl) in this answer set",
                        "pass the folder holding one LLMZoo answer set's aspect reviews")
    return {a: found[a] for a in ["general", *sorted(set(found) - {"general"})]}


def _text_list(value: Any) -> Any:
    """LLMZoo versions store ``answers``/``model_ids`` as a list or as the text of a Python list."""
    if isinstance(value, str) and value.startswith("["):
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return value
    return value


def _review_row(path: Path, line: int, obj: Any) -> dict[str, Any]:
    """One checked review line: question_id, question, category, answers, models, order, reviewer."""
    def fail(msg, fix=""):
        return DataError(path, line, msg, fix)

    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        raise fail("not an LLMZoo review line (no 'metadata' object)", "pass LLMZoo review.jsonl files")
    qid, question = obj.get("question_id"), meta.get("question")
    answers, models = _text_list(meta.get("answers")), _text_list(meta.get("model_ids"))
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


# ---- DPO-zh ------------------------------------------------------------------------------------

def _json_rows(path: Path) -> Iterator[tuple[int, Any]]:
    """(line, object) of a JSON array file (line where each element starts) or of a JSON Lines file."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise DataError(path, None, f"not UTF-8 text ({e.reason})", "save the file as UTF-8") from None
    if not text.lstrip().startswith("["):
        yield from json_lines(path)
        return
    decoder, pos = json.JSONDecoder(), text.index("[") + 1
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos < len(text) and text[pos] == "]":
            return
        line = text.count("\n", 0, pos) + 1
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            raise DataError(path, e.lineno, f"malformed JSON ({e.msg})", "one JSON array of objects") from None
        yield line, obj


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
        for n, obj in _json_rows(path):
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


# ---- the shipped folder ------------------------------------------------------------------------

def _required(src: Path, rel: str) -> Path:
    path = src / rel
    if not path.is_file():
        raise DataError(path, None, "missing", f"pass the folder holding {rel.split('/')[0]}/ as laid out in "
                        "data/real/README.md")
    return path


def _convert_all(src: Path) -> tuple[dict[str, list[Record]], dict[str, dict], dict]:
    """Every output's records and its manifest entry (without the output's own sha256); the DPO report."""
    zoo, questions = src / "llmzoo-zh", _required(src, "llmzoo-zh/questions-zh.jsonl")
    out, entries = {}, {}
    for rel, what in RELEASE_FILES.items():
        if what in LLMZOO_SETS:
            _required(src, f"llmzoo-zh/{what}/general.jsonl")
            out[rel] = read_llmzoo_set(zoo / what, questions=questions, source=f"llmzoo/{what}")
            inputs = [questions, *sorted((zoo / what).glob("*.jsonl"))]
            entries[rel] = _entry(src, inputs, UPSTREAM["llmzoo-zh"], out[rel], labels="gpt-3.5-turbo",
                                  content=_llmzoo_content(what, out[rel]))
            entries[rel]["source"] = entries[rel]["source"].replace("{set}", what)
    dpo_inputs = [_required(src, p) for p in ("dpo-zh/dpo_zh_demo.json", "dpo-zh/dpo_zh_500.jsonl")]
    records, report = read_dpo_zh(dpo_inputs)
    out["cheems_preference.jsonl"] = records
    entry = _entry(src, dpo_inputs, None, records, labels="model-generated",
                   content="DPO-zh chosen/rejected pairs (DPO-En-Zh-20k lineage) from two files, merged by dialogue; "
                           "not CheemsPreference; no human/GPT subset field")
    entry.update({k: report[k] for k in ("duplicate_rows", "system_prompts", "multi_turn")})
    entries["cheems_preference.jsonl"] = entry
    return out, entries, report


def _llmzoo_content(what: str, records: list[Record]) -> str:
    models = ", ".join(records[0].extra["models"]) if records else ""
    return (f"LLMZoo zh answer set {what}: {len(records)} Chinese questions x 4 answers ({models}, position order) "
            "ranked by gpt-3.5-turbo (general aspect = rank; other aspects under 'aspects'); "
            "not CheemsBench's Open Prompt subset")


def _entry(src: Path, inputs: list[Path], upstream: dict | None, records: list[Record], *, labels: str,
           content: str) -> dict:
    """A manifest entry: provenance from UPSTREAM (per input file for DPO), counts, each input's sha256, and
    ``"comparable": false`` (not the paper's data: :meth:`cheems_lib.world_files.Layout.comparable`)."""
    info = {p.relative_to(src).as_posix(): input_info(p) for p in inputs}
    known = all(v["known_copy"] == k for k, v in info.items())
    ups = [upstream] if upstream else [UPSTREAM[p.relative_to(src).as_posix()] for p in inputs]
    # other data than the paper's: the chapters show these files' numbers without the paper's beside them
    return {"content": content, "labels": labels, "comparable": False,
            "source": "; ".join(f"{u['repo']}: {u['paths']}" for u in ups),
            "commit": "; ".join(u["commit"] for u in ups) if known else None,
            "licence": "; ".join(dict.fromkeys(u["licence"] for u in ups)),
            "licence_files": list(dict.fromkeys(u["licence_file"] for u in ups)),
            **({"attribution": upstream["attribution"]} if upstream and "attribution" in upstream else {}),
            "prompts": len(records), "responses": sum(len(r.responses) for r in records),
            "annotations": sum(len(r.annotations) for r in records),
            "inputs": {k: {"sha256": v["sha256"], "known_copy": v["known_copy"] == k} for k, v in info.items()}}


def import_real(src: str | Path, out: str | Path) -> dict:
    """Convert the source folder (``llmzoo-zh/``, ``dpo-zh/``) into the release-shaped folder ``out`` (spec §6b).

    Everything is read and checked before anything is written; each file is then written
    atomically, ``manifest.json`` last (its sha256 values tell whether the files beside it
    are the ones it describes). Other files in ``out`` (its README) are left alone.
    Returns the manifest.
    """
    src, out = Path(src), Path(out)
    files, entries, _ = _convert_all(src)
    licences = {dst: _required(src, rel).read_bytes() for rel, dst in _LICENCES.items()}
    for rel, records in files.items():
        write_records(records, out / rel)
        entries[rel]["sha256"] = sha256_file(out / rel)
    for dst, data in licences.items():
        with atomic_open(out / dst, "wb") as fh:
            fh.write(data)
    manifest = {"name": "Real Chinese preference data: LLMZoo zh reviews (benchmark) and DPO-zh (preference)",
                "labels": "model labels, not human labels: gpt-3.5-turbo rankings (cheems_bench/open.jsonl, "
                          "llmzoo/review_output.jsonl); model-generated chosen/rejected (cheems_preference.jsonl)",
                "regenerate": "cheems import real SRC -o DIR (SRC: the folder holding llmzoo-zh/ and dpo-zh/)",
                "files": {rel: dict(sorted(e.items())) for rel, e in entries.items()},
                "licences": sorted(licences)}
    with atomic_open(out / "manifest.json", "w", encoding="utf-8") as fh:
        fh.write(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n")
    return manifest
