"""Importers of public real Chinese preference data into the official record format (spec §1, §6b).

Three public, openly licensed sources can be fetched where the official CheemsBench and
CheemsPreference files cannot; ``data/real/`` ships them converted (``cheems import real``).
LLMZoo's and DPO-zh's labels are **model labels, not human labels**; WritingPreferenceBench's
are **human scores**.

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

**WritingPreferenceBench zh** (:func:`read_writingpref`, ``cheems import writingpref``): 204
Chinese writing prompts (51 genre tags x 4), each answered by 19 models (one lacks a prompt),
every answer scored 0-3 by trained human annotators; a second annotator rescored 5 models.
One multi-response record per prompt (the 3 prompts that are just ``"/"`` are dropped and
counted): ``id`` = ``question_id``, responses = every model's answer with the model name as
id, ``rank`` = the human scores as dense ranks (highest = round 0, ties equal), extra fields
``human_scores``, ``second_scores`` and ``source``; no pairwise annotations. It ships as
xz-compressed JSONL (:data:`WRITINGPREF_FILE`, written deterministically), outside the
release layout. The genre tag (``category``) is for display only: never stratify intervals on it.

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
from .records import (DataError, FIRST, json_lines, md5, read_text, Record, Response, SECOND, strict_pairs, TIE,
                      write_records)

__all__ = ["LLMZOO_SETS", "KNOWN_SHA256", "UPSTREAM", "read_llmzoo_set", "aspect_annotations", "merge_aspects",
           "read_dpo_zh", "read_writingpref", "write_xz_records", "input_info", "import_real", "import_writingpref",
           "RELEASE_FILES", "WRITINGPREF_FILE", "WRITINGPREF_SECOND", "WRITINGPREF_LABELS", "output_files"]

LLMZOO_SETS = ("review_zh", "review_output")
#: SHA-256 of the copies the shipped files were converted from (named in ``data/real/README.md``).
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
    "0c762fad3a54c0980742b0d40e19f823c1f25328cd1da28b4133f6d8b6b0ac43": "writingpref-zh/responses/claude-4-opus-nothinking.json",
    "43167896799da9d0eef0d4a2434abfa0522aeb48df48ebadc33f198ef68a9aaa": "writingpref-zh/scores/claude-4-opus-nothinking.json",
    "1a377c5b31fb0ebba69a6554f99a8ccbcee970ce93f8cdf8f2c2cf9ada4d2b34": "writingpref-zh/responses/claude-4-opus-thinking.json",
    "e732c1da59f976c4443bd205e88756d9348e398b54cf0130f6e5373277d88129": "writingpref-zh/scores/claude-4-opus-thinking.json",
    "697e62adf4337741dff7b60f97a343ddbd2945c17849e6a515ba953834a58add": "writingpref-zh/responses/claude-4-sonnet-nothinking.json",
    "db91cf8159429fab51b230e090f1489ccf959347668ff8fd9c11c4a7b8dca31c": "writingpref-zh/scores/claude-4-sonnet-nothinking.json",
    "5e5b168e2c7700da1f5661946d6c3165b62d45d44e75ee793e6b7f1940c662c1": "writingpref-zh/responses/claude-4-sonnet-thinking.json",
    "a2749b323de0fd66f568fe2bdcbb483e01b3674c215640b45ac753bb8c79a8c0": "writingpref-zh/scores/claude-4-sonnet-thinking.json",
    "cfff238fbbc655a07dbdd6e69835401bb8080f5524e0b05bf8cb1ecab53be288": "writingpref-zh/responses/deepseek-r1-0528.json",
    "f08c1526beebd09c7376cf5f56601d2809fd4595dd2747514cf499cbbf1cb5cb": "writingpref-zh/scores/deepseek-r1-0528.json",
    "7886cafcc97de8e89e2de5baf243fcfe83dc6ff91eaa13f1585d4a39917735d6": "writingpref-zh/responses/doubao-1.5-lite.json",
    "88dd8e1d76333ab3ffa5208fac2442a7741959c9764badcaf7086c6f77644515": "writingpref-zh/scores/doubao-1.5-lite.json",
    "21725d7d2f1d01414b89c886b10cfae4912e584fc92473f2a389aeff6a46c015": "writingpref-zh/responses/doubao-1.5-pro.json",
    "05bd8527aad72ab0a968f181835917f34f52db9fbae4466cc83eae638d968f00": "writingpref-zh/scores/doubao-1.5-pro.json",
    "223eff4935dabc9901fef5fcf3262d59fd04f2c7be7b184f49dc437179fd6081": "writingpref-zh/rescored/doubao-1.5-pro.shawn.json",
    "25d6986a6cab589df25d0b232eb475e25d72601724bc867b672d1bdc828e1a88": "writingpref-zh/responses/doubao-1.5-pro-thinking.json",
    "1e44f53437a749d5c826cb3528e009fb192645ea4e38f49444af8b7c9a6db626": "writingpref-zh/scores/doubao-1.5-pro-thinking.json",
    "4c6b1f07883a559b08b17e50b6089be02f9f7cd541509ba272d6ae78531cd022": "writingpref-zh/responses/gemini-2.0-flash.json",
    "59c5e5fa845472baa3001ae501d67bc7146f3b018e165c40c6a8332f5bec909b": "writingpref-zh/scores/gemini-2.0-flash.json",
    "7f274a066d71ae5c7750c181bb7d93101f900abb0c32b8e736d9ee92d1116ae6": "writingpref-zh/rescored/gemini-2.0-flash.unnamed.json",
    "8da9f58d16148edc09ca274a3197196b1488558789c66abaec49af702a5238f0": "writingpref-zh/responses/gemini-2.5-flash-nothinking.json",
    "89ad01b48329d433675f0d8ebba857cddfcad7836d73edb067a9fb6e58cead7b": "writingpref-zh/scores/gemini-2.5-flash-nothinking.json",
    "f271defc4be8da1f5b46f5653e67453af80d20d9a1a19d38a1a016f8a00650ec": "writingpref-zh/rescored/gemini-2.5-flash-nothinking.letian.json",
    "30b42960d68d839dd21693c04f1524227be7ceb52161830fca11b86d7eda9f09": "writingpref-zh/responses/gemini-2.5-pro.json",
    "9f5fc7c59af1cb9c2d722d611cdea7b9b872ebac12f5ba2a7a03ae2abd94344c": "writingpref-zh/scores/gemini-2.5-pro.json",
    "6d86092062ff5ce840e4e18813f24437b42822bcd6b84bd2d7432b0cfb826062": "writingpref-zh/responses/huggingface-model.json",
    "c32ab7d7efd64370146b228a2b3191eed1673ceb86fba964fc479f643d5a52da": "writingpref-zh/scores/huggingface-model.json",
    "dcf886c9d43874a1ad0366e82ab61d0f09356f4927b276535eba3f5221b85cc6": "writingpref-zh/responses/gpt-4.1.json",
    "75cc8d73cadbc6767868c1152e5d1f7f14f5fe7ee9d0980c98a5bd3e71a64dd3": "writingpref-zh/scores/gpt-4.1.json",
    "f4f9f4e0bd57f0a4cf33edbfe405dd18c5fb86cb36005cf0a6e3b95e590c6e01": "writingpref-zh/responses/gpt-4.1-mini.json",
    "6130bd3dbdcb80918b0ffb8ccc11892798ec028a93ae8f2155682c6dfc2e8a84": "writingpref-zh/scores/gpt-4.1-mini.json",
    "9402fca5e5adfc48d8aacd4e1ec1f79d4a91c27af82596a675740ded6e89a9e1": "writingpref-zh/rescored/gpt-4.1-mini.shawn.json",
    "5d5dbb2fbae7b16e70abf2bc61622a048010b6913993aa27ad4a02011a4a235b": "writingpref-zh/responses/o1.json",
    "1aae30c4376003a4dc743b1035c143bf91d6d88e230b8d69f4d370469005b062": "writingpref-zh/scores/o1.json",
    "492df069b94b3ff2c6601f4e9eb2c34d77efe5eeb87b42ec54a1eab3d87378ee": "writingpref-zh/responses/o3.json",
    "3e4cc67a1d04f830f9617ace976284f837b89ee05d4610e9f3e00729db927368": "writingpref-zh/scores/o3.json",
    "8040f3af175ed9140c28ee094d31edc19cfa9f1f369c8e7c8e0f52e9a209811c": "writingpref-zh/responses/o3-mini.json",
    "d41f9dcbc4946fe2cb88dbff478e3771ce0e29d710cf2db1597c6a55b4743c34": "writingpref-zh/scores/o3-mini.json",
    "a3299b7c5bdaef60360b550a0b4f8eee947136c92cc53ce91aaa563e86a166e8": "writingpref-zh/responses/o4-mini.json",
    "d039668da1ba51bce5dfe5a5a8abed48a65026d57be85bfb4aab357cf086f137": "writingpref-zh/scores/o4-mini.json",
    "42048682cef339682ade2c41f5cfbcb9d8b53e5a27fa3b33bf5f33a845c169cb": "writingpref-zh/rescored/o4-mini.letian.json",
    "168a09de955a7600ea64bfcfebb21113f091014d03e4d7cb23eb495c5f8a40c8": "writingpref-zh/responses/qwen-plus-latest.json",
    "ad577c434f5f1b96b9e93a9ab3b67e3a80f6996699380ceeb587ac71548abb1e": "writingpref-zh/scores/qwen-plus-latest.json",
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
    "writingpref-zh": {"repo": "WritingPreferenceBench/Writing-Preference-Bench",
                       "commit": "c6ac5821582e77fb34d27f6b54aac937904ee112",
                       "paths": "model results/<model run>/writer#v1.json (answers), model results/score/*.json "
                                "(human scores), model results/<model run>/*annotated_by_<annotator>*.json "
                                "(second scorings); README.md (licence)",
                       "licence": "ODC-BY", "licence_file": "LICENSES/WritingPreferenceBench-README.md",
                       "attribution": 'Ying et al., "Beyond Correctness: Evaluating Subjective Writing Preferences '
                                      'Across Cultures", arXiv 2510.14616 (2025)'},
}
#: The release-shaped folder (spec §6b) that ``cheems import real`` writes: output path -> what it holds.
RELEASE_FILES = {
    "cheems_bench/open.jsonl": "review_zh",
    "llmzoo/review_output.jsonl": "review_output",
    "cheems_preference.jsonl": "dpo-zh",
}
_LICENCES = {"llmzoo-zh/DATA_LICENSE": "LICENSES/LLMZoo-DATA_LICENSE",
             "dpo-zh/LICENSE-LLaMA-Factory": "LICENSES/LICENSE-LLaMA-Factory",
             "dpo-zh/LICENSE-MedicalGPT": "LICENSES/LICENSE-MedicalGPT",
             "writingpref-zh/UPSTREAM_README.md": "LICENSES/WritingPreferenceBench-README.md"}


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
    text = read_text(path)
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
        except RecursionError:
            raise DataError(path, line, "malformed JSON: nested too deeply", "one JSON array of flat objects") from None
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


# ---- WritingPreferenceBench zh (human scores) ---------------------------------------------------

WRITINGPREF_FILE = "writingpref/writingpref_zh.jsonl.xz"
#: Second, independent human scorings upstream has for 5 models: model -> annotator (``rescored/<model>.<annotator>.json``).
WRITINGPREF_SECOND = {"doubao-1.5-pro": "shawn", "gemini-2.0-flash": "unnamed",
                      "gemini-2.5-flash-nothinking": "letian", "gpt-4.1-mini": "shawn", "o4-mini": "letian"}
WRITINGPREF_LABELS = "human scores (0-3, trained annotators)"
_XZ_PRESET = 9  # fixed, so the same records give the same bytes (the xz format stores no timestamp)
_NO_PROMPT = {"", "/"}  # prompt texts that hold no prompt (3 upstream prompts are just "/")


def _wp_rows(path: Path, need: dict[str, type]) -> list[tuple[int, dict]]:
    """(line, object) of a WritingPreferenceBench JSON list whose objects have the ``need`` fields and types."""
    if not path.is_file():
        raise DataError(path, None, "missing", "pass the writingpref-zh folder (responses/, scores/, rescored/) "
                        "as laid out in data/real/README.md")
    rows, seen = [], {}
    for n, obj in _json_rows(path):
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
    tags = _text_list(value)
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


def write_xz_records(records: Iterable[Record], path: str | Path) -> int:
    """Records as xz-compressed JSONL (``records.read_records`` reads it), atomically and deterministically."""
    import lzma

    import orjson

    lines = [orjson.dumps(r.to_json()) + b"\n" for r in records]
    data = lzma.compress(b"".join(lines), format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, preset=_XZ_PRESET)
    with atomic_open(path, "wb") as fh:
        fh.write(data)
    return len(lines)


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
           content: str, under: str = "") -> dict:
    """A manifest entry: provenance from UPSTREAM (per input file for DPO), counts, each input's sha256 (named
    by its path below ``src``, after ``under``), and ``"comparable": false`` (not the paper's data:
    :meth:`cheems_lib.world_files.Layout.comparable`)."""
    info = {under + p.relative_to(src).as_posix(): input_info(p) for p in inputs}
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


def _writingpref_entry(folder: Path, records: list[Record], report: dict) -> dict:
    """The manifest entry of the writingpref file (without its own sha256); inputs named writingpref-zh/..."""
    inputs = sorted(p for sub in ("responses", "scores", "rescored") for p in (folder / sub).glob("*.json"))
    up = UPSTREAM["writingpref-zh"]
    entry = _entry(folder, inputs, up, records, labels=WRITINGPREF_LABELS, under="writingpref-zh/",
                   content=f"WritingPreferenceBench, Chinese writing prompts: {report['prompts']} prompts, each "
                           f"answered by up to {report['models']} models (response id = model name), every answer "
                           "scored 0-3 by trained human annotators (rank = those scores as dense ranks, highest = "
                           "round 0, ties equal; raw scores in 'human_scores', a second annotator's for 5 models in "
                           "'second_scores'); not CheemsBench")
    entry.update({
        "dropped_prompts": report["dropped_prompts"], "missing_answers": report["missing_answers"],
        "second_annotators": report["second_annotators"], "strict_pairs": report["strict_pairs"],
        "higher_score_longer": report["higher_score_longer"], "scores": report["scores"], "score_scale": "0-3",
        "genre_tags": report["genre_tags"],
        "category_note": f"category is the upstream genre tag ({report['genre_tags']} tags, at most "
                         f"{report['max_prompts_per_tag']} prompts each): for display only; intervals must never be "
                         "stratified on it (resample prompts)",
        "changes": "converted to the record format; the score comments and the responses files' other fields "
                   "(their score/won fields are not the human scores) are not carried"})
    return entry


def _manifest(files: dict[str, dict], licences: list[str]) -> dict:
    """The whole manifest: ``name`` and ``labels`` say who labelled which of ``files``."""
    model = [rel for rel, e in files.items() if e.get("labels") != WRITINGPREF_LABELS]
    human = [rel for rel in files if rel not in model]
    names, labels = [], []
    if any(rel in files for rel in RELEASE_FILES):
        names.append("LLMZoo zh reviews (benchmark) and DPO-zh (preference)")
        labels.append("model labels, not human labels: gpt-3.5-turbo rankings (cheems_bench/open.jsonl, "
                      "llmzoo/review_output.jsonl); model-generated chosen/rejected (cheems_preference.jsonl)")
    if human:
        names.append("WritingPreferenceBench zh (human scores)")
        labels.append(f"{WRITINGPREF_LABELS}: {', '.join(human)}")
    regenerate = ("cheems import real SRC -o DIR (SRC: the folder holding llmzoo-zh/, dpo-zh/ and writingpref-zh/); "
                  "cheems import writingpref SRC/writingpref-zh -o DIR (that file alone)")
    return {"name": "Real Chinese preference data: " + "; ".join(names), "labels": "; ".join(labels),
            "regenerate": regenerate, "files": {rel: dict(sorted(e.items())) for rel, e in files.items()},
            "licences": sorted(licences)}


def _write_all(out: Path, files: dict[str, list[Record]], entries: dict[str, dict], licences: dict[str, bytes],
               manifest_files: dict[str, dict], licence_names: list[str]) -> dict:
    """Write the records files, licences and, last, the manifest; returns the manifest."""
    for rel, records in files.items():
        (write_xz_records if rel.endswith(".xz") else write_records)(records, out / rel)
        entries[rel]["sha256"] = sha256_file(out / rel)
    for dst, data in licences.items():
        with atomic_open(out / dst, "wb") as fh:
            fh.write(data)
    manifest = _manifest({**manifest_files, **entries}, licence_names)
    with atomic_open(out / "manifest.json", "w", encoding="utf-8") as fh:
        fh.write(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n")
    return manifest


def import_real(src: str | Path, out: str | Path) -> dict:
    """Convert the source folder (``llmzoo-zh/``, ``dpo-zh/``, ``writingpref-zh/``) into the folder ``out``:
    the release-shaped files (spec §6b), ``llmzoo/review_output.jsonl``, :data:`WRITINGPREF_FILE`, the
    licences and ``manifest.json``.

    Everything is read and checked before anything is written; each file is then written
    atomically, ``manifest.json`` last (its sha256 values tell whether the files beside it
    are the ones it describes). Files that the folder's earlier manifest lists and this import
    does not write (an older layout's) are removed first, so the folder ends as an import into a
    new one would; other files in ``out`` (its README) are left alone. Returns the manifest.
    """
    src, out = Path(src), Path(out)
    files, entries, _ = _convert_all(src)
    folder = src / "writingpref-zh"
    _required(src, "writingpref-zh/UPSTREAM_README.md")
    records, report = read_writingpref(folder)
    files[WRITINGPREF_FILE] = records
    entries[WRITINGPREF_FILE] = _writingpref_entry(folder, records, report)
    licences = {dst: _required(src, rel).read_bytes() for rel, dst in _LICENCES.items()}
    _remove_unlisted(out, output_files("real"))
    return _write_all(out, files, entries, licences, {}, list(licences))


def output_files(source: str) -> list[str]:
    """The files ``cheems import SOURCE -o DIR`` writes in ``DIR`` (relative paths, ``manifest.json`` last);
    none for the imports whose output is one file (llmzoo, dpo-zh)."""
    if source == "real":
        return [*RELEASE_FILES, WRITINGPREF_FILE, *_LICENCES.values(), "manifest.json"]
    if source == "writingpref":
        return [WRITINGPREF_FILE, _LICENCES["writingpref-zh/UPSTREAM_README.md"], "manifest.json"]
    return []


def _remove_unlisted(out: Path, written: list[str]) -> list[str]:
    """Remove the regular files that ``out/manifest.json`` (an earlier import's) lists, as a file or a licence,
    and that are not in ``written``, with the folders that leaves empty; returns them. Nothing outside
    ``out`` is touched, and nothing the manifest does not list; a manifest that an import did not write (an
    entry without the ``inputs`` an import records, e.g. one written by hand) removes nothing."""
    try:
        old = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return []
    if not isinstance(old, dict) or not isinstance(old.get("files"), dict) or not all(
            isinstance(e, dict) and isinstance(e.get("inputs"), dict) for e in old["files"].values()):
        return []
    listed = [*(old.get("files") if isinstance(old.get("files"), dict) else {}),
              *(old.get("licences") if isinstance(old.get("licences"), list) else [])]
    root, removed = out.resolve(), []
    for rel in listed:
        path = out / rel if isinstance(rel, str) and rel not in written else None
        if path is None or path.is_symlink() or not path.is_file() or not path.resolve().is_relative_to(root):
            continue
        path.unlink()
        removed.append(rel)
        for folder in path.parents:
            if folder.resolve() == root or not folder.resolve().is_relative_to(root):
                break
            try:
                folder.rmdir()
            except OSError:  # not empty
                break
    return removed


def import_writingpref(folder: str | Path, out: str | Path) -> tuple[dict, dict]:
    """Convert the writingpref-zh ``folder`` into ``out`` (:data:`WRITINGPREF_FILE` and its licence) and
    add or replace its entry in ``out/manifest.json``, keeping the other entries. Returns the manifest
    and the report of :func:`read_writingpref`."""
    folder, out = Path(folder), Path(out)
    licence_src = folder / "UPSTREAM_README.md"
    if not licence_src.is_file():
        raise DataError(licence_src, None, "missing (the upstream README is the licence statement)",
                        "pass the writingpref-zh folder as laid out in data/real/README.md")
    records, report = read_writingpref(folder)
    entry = _writingpref_entry(folder, records, report)
    old = {}
    if (out / "manifest.json").is_file():
        try:
            old = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise DataError(out / "manifest.json", None, f"not a JSON manifest ({e})",
                            "regenerate the folder with cheems import real, or pass another -o") from None
        if not isinstance(old, dict) or not isinstance(old.get("files", {}), dict):
            raise DataError(out / "manifest.json", None, "not a manifest (no 'files' object)",
                            "regenerate the folder with cheems import real, or pass another -o")
    dst = _LICENCES["writingpref-zh/UPSTREAM_README.md"]
    names = sorted(set(old.get("licences") or []) | {dst})
    manifest = _write_all(out, {WRITINGPREF_FILE: records}, {WRITINGPREF_FILE: entry},
                          {dst: licence_src.read_bytes()}, old.get("files") or {}, names)
    return manifest, report
