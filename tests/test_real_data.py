"""Importers of real Chinese preference data (cheems_lib/real_data.py), `cheems import`, and data/real itself.

Hand counts use plain json code, independent of the importer, on the upstream copies in
``<clone>/../shared/real`` (skipped with the reason when that folder is absent).
"""
from __future__ import annotations

import hashlib
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cheems_lib import real_data
from cheems_lib.conflicts import resolve
from cheems_lib.records import DataError, md5, read_records
from conftest import ROOT, digest

REAL = ROOT / "data" / "real"
CHEEMS = [sys.executable, "-m", "cheems_lib.cli"]


def _shared_real() -> Path | None:
    """The upstream copies: $CHEEMS_REAL_SRC, else ../shared/real beside the clone (or beside a git worktree's parent)."""
    env = os.environ.get("CHEEMS_REAL_SRC")
    for cand in ([Path(env)] if env else [ROOT.parent / "shared" / "real", ROOT.parents[1] / "shared" / "real"]):
        if all((cand / name).is_dir() for name in ("llmzoo-zh", "dpo-zh", "writingpref-zh")):
            return cand
    return None


SHARED = _shared_real()
needs_shared = pytest.mark.skipif(SHARED is None, reason="no upstream copies at <clone>/../shared/real "
                                  "(set CHEEMS_REAL_SRC to the folder holding llmzoo-zh/, dpo-zh/ and writingpref-zh/)")
WP = REAL / real_data.WRITINGPREF_FILE


def run(*args):
    return subprocess.run([*CHEEMS, *map(str, args)], capture_output=True, text=True)


def _jsonl(path):
    return [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]


def _sign(x):
    return (x > 0) - (x < 0)


# ---- synthetic sources (run everywhere) ------------------------------------------------------------

def _review(qid, question, answers, order, models=("m1", "m2", "m3"), category="generic"):
    return {"review_id": qid, "reviewer_id": "gpt-3.5-turbo", "lang": "zh", "question_id": qid,
            "answer_ids": [f"x{i}" for i in range(len(answers))], "category": category,
            "metadata": {"question": question, "answers": list(answers), "model_ids": list(models)},
            "text": "rationale", "order": list(order)}


def _write_jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


QUESTIONS = [(1, "问题一", "generic"), (2, "问题二", "roleplay")]


def _llmzoo_set(folder, *, upstream=False):
    """Two questions x 3 answers; general and coherence for both, immersion for question 2 only."""
    answers = {1: ["甲", "乙", "丙"], 2: ["丁", "戊", "己"]}
    orders = {"general": {1: [3, 1, 3], 2: [1, 2, 2]}, "coherence": {1: [1, 2, 3], 2: [1, 1, 1]},
              "immersion": {2: [2, 1, 3]}}
    for aspect, by_q in orders.items():
        rows = [_review(q, text, answers[q], by_q[q], category=cat) for q, text, cat in QUESTIONS if q in by_q]
        _write_jsonl(folder / "zh" / aspect / "review.jsonl" if upstream else folder / f"{aspect}.jsonl", rows)
    return folder


def _dpo_demo_row(prompt, chosen, rejected, system=None):
    conv = ([{"from": "system", "value": system}] if system else []) + [{"from": "human", "value": prompt}]
    return {"conversations": conv, "chosen": {"from": "gpt", "value": chosen},
            "rejected": {"from": "gpt", "value": rejected}}


def _fake_src(tmp_path) -> Path:
    """A source folder in the ../shared/real layout, small enough to read by eye."""
    src = tmp_path / "src"
    zoo = src / "llmzoo-zh"
    _write_jsonl(zoo / "questions-zh.jsonl", [{"question_id": q, "text": t, "category": c} for q, t, c in QUESTIONS])
    for name in real_data.LLMZOO_SETS:
        _llmzoo_set(zoo / name)
    (zoo / "DATA_LICENSE").write_text("CC BY-NC 4.0 text\n")
    demo = [_dpo_demo_row("你好", "你好！", "滚"), _dpo_demo_row("你好", "你好！", "滚"),
            _dpo_demo_row("写诗", "春眠不觉晓", "不会", system="你是诗人")]
    (src / "dpo-zh").mkdir(parents=True)
    (src / "dpo-zh" / "dpo_zh_demo.json").write_text(json.dumps(demo, ensure_ascii=False, indent=2), encoding="utf-8")
    _write_jsonl(src / "dpo-zh" / "dpo_zh_500.jsonl", [
        {"conversations": [{"from": "human", "value": "你好"}], "chosen": "你好！", "rejected": "滚"},
        {"conversations": [{"from": "human", "value": "算数"}], "chosen": "2", "rejected": "3"}])
    for name in ("LICENSE-LLaMA-Factory", "LICENSE-MedicalGPT"):
        (src / "dpo-zh" / name).write_text("Apache License 2.0\n")
    _fake_writingpref(src / "writingpref-zh")
    return src


# a tiny writingpref-zh folder: 3 prompts (one just "/"), models a, b, c; c lacks prompt q2; b rescored by "ann"
_WP_PROMPTS = [("q1", "写一首诗", ["诗歌"]), ("q2", "写一封信", ["书信"]), ("q3", "/", ["学术论文摘要"])]
_WP_ANSWERS = {"a": {"q1": "长长的诗句", "q2": "很长很长的信件", "q3": "摘要"}, "b": {"q1": "短诗", "q2": "一封长信", "q3": "摘"},
               "c": {"q1": "诗", "q3": "要"}}
_WP_SCORES = {"a": {"q1": 3, "q2": 1, "q3": 0}, "b": {"q1": 1, "q2": 2, "q3": 1}, "c": {"q1": 1, "q3": 2}}


def _fake_writingpref(folder, *, scores=None, second=None):
    for sub in ("responses", "scores", "rescored"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    for model, answers in _WP_ANSWERS.items():
        rows = [{"question_id": q, "__internal_tags__": tags, "prompt": text, "predict0": answers[q],
                 "score": "0", "won": "0"} for q, text, tags in _WP_PROMPTS if q in answers]
        (folder / "responses" / f"{model}.json").write_text(json.dumps(rows, ensure_ascii=False, indent=1), "utf-8")
        rows = [{"original_item_index": k, "question_id": q, "score": s, "comment": ""}
                for k, (q, s) in enumerate((scores or _WP_SCORES)[model].items())]
        (folder / "scores" / f"{model}.json").write_text(json.dumps(rows, indent=1), "utf-8")
    rows = [{"question_id": q, "score": s, "comment": ""} for q, s in (second or {"q1": 1, "q2": 3, "q3": 0}).items()]
    (folder / "rescored" / "b.ann.json").write_text(json.dumps(rows, indent=1), "utf-8")
    (folder / "UPSTREAM_README.md").write_text("ODC-BY\n", "utf-8")
    return folder


def test_llmzoo_record_rank_is_the_general_order_dense_and_zero_based(tmp_path):
    """[3, 1, 3] becomes ranks 1, 0, 1 (ties equal, lower is better); ids are md5; aspects present only where reviewed."""
    recs = real_data.read_llmzoo_set(_llmzoo_set(tmp_path / "set"))
    assert [r.id for r in recs] == [md5("问题一"), md5("问题二")]
    first, second = recs
    assert first.response_ids == [md5(a) for a in ["甲", "乙", "丙"]]
    assert list(first.rank.values()) == [1, 0, 1] and list(second.rank.values()) == [0, 1, 1]
    assert set(first.extra["aspects"]) == {"general", "coherence"}
    assert set(second.extra["aspects"]) == {"general", "coherence", "immersion"}
    assert first.extra["models"] == ["m1", "m2", "m3"] and first.extra["labels"] == "gpt-3.5-turbo"
    assert first.category == ["generic"] and first.extra["question_id"] == 1
    assert resolve(first.response_ids, first.annotations) == first.rank  # the annotations give the rank back


def test_upstream_folder_layout_reads_the_same(tmp_path):
    """LLMZoo's own layout (SET/zh/<aspect>/review.jsonl) gives the same records as SET/<aspect>.jsonl."""
    flat = real_data.read_llmzoo_set(_llmzoo_set(tmp_path / "a" / "review_zh"))
    nested = real_data.read_llmzoo_set(_llmzoo_set(tmp_path / "b" / "review_zh", upstream=True))
    assert [r.to_json() for r in flat] == [r.to_json() for r in nested]


def test_aspect_annotations_in_position_order_with_ties_and_merged_conflicts(tmp_path):
    """Each aspect gives every pair once (a shown first), "0" for ties; merging disagreeing aspects conflicts."""
    rec = real_data.read_llmzoo_set(_llmzoo_set(tmp_path / "set"))[0]
    a, b, c = rec.response_ids
    assert real_data.aspect_annotations(rec, ["general"]) == [(a, b, "2"), (a, c, "0"), (b, c, "1")]
    assert real_data.aspect_annotations(rec, ["coherence", "immersion"]) == [(a, b, "1"), (a, c, "1"), (b, c, "1")]
    merged, stats = real_data.merge_aspects([rec])
    assert len(merged[0].annotations) == 6 and stats["conflict_ratio"] == 1.0
    assert rec.annotations == real_data.aspect_annotations(rec, ["general"])  # the original is untouched


def test_dpo_merges_identical_rows_and_groups_pairs_by_dialogue(tmp_path):
    """Repeated rows merge; another pair for the same prompt adds responses; system prompt and history are kept."""
    _write_jsonl(tmp_path / "a.jsonl", [
        {"conversations": [{"from": "human", "value": "问"}], "chosen": "好", "rejected": "坏"},
        {"conversations": [{"from": "human", "value": "问"}], "chosen": "好", "rejected": "坏"},
        {"conversations": [{"from": "human", "value": "问"}], "chosen": "好", "rejected": "差"},
        {"conversations": [{"from": "system", "value": "系统"}, {"from": "human", "value": "问"}],
         "chosen": "好", "rejected": "坏"},
        {"conversations": [{"from": "human", "value": "早"}, {"from": "gpt", "value": "早上好"},
                           {"from": "human", "value": "再见"}], "chosen": "再见！", "rejected": "嗯"}])
    recs, report = real_data.read_dpo_zh([tmp_path / "a.jsonl"])
    assert report["duplicate_rows"] == 1 and report["prompts"] == 3 and report["annotations"] == 4
    plain, system, multi = recs
    assert plain.response_ids == [md5("好"), md5("坏"), md5("差")]
    assert plain.annotations == [(md5("好"), md5("坏"), "1"), (md5("好"), md5("差"), "1")]
    assert plain.rank == {md5("好"): 0, md5("坏"): 1, md5("差"): 1}
    assert system.sys_prompt == "系统" and system.id != plain.id  # one input in two dialogues: ids of the dialogue
    assert multi.prompt == "再见" and multi.id == md5("再见")
    assert multi.extra["history"] == [{"from": "human", "value": "早"}, {"from": "gpt", "value": "早上好"}]
    assert "subset" not in plain.extra and plain.extra["sources"] == ["a.jsonl"]


def test_dpo_reversed_pair_in_another_file_is_kept_as_a_conflict(tmp_path):
    """A pair chosen one way in one file and the other way in another is not dropped: Algorithm 1 ties it."""
    _write_jsonl(tmp_path / "a.jsonl", [{"conversations": [{"from": "human", "value": "问"}], "chosen": "好", "rejected": "坏"}])
    _write_jsonl(tmp_path / "b.jsonl", [{"conversations": [{"from": "human", "value": "问"}], "chosen": "坏", "rejected": "好"}])
    recs, report = real_data.read_dpo_zh([tmp_path / "a.jsonl", tmp_path / "b.jsonl"])
    assert len(recs[0].annotations) == 2 and set(recs[0].rank.values()) == {0}
    assert report["conflict_ratio"] == 1.0 and recs[0].extra["sources"] == ["a.jsonl", "b.jsonl"]


def test_json_array_rows_carry_their_line_numbers(tmp_path):
    """In a JSON array file, an error names the line where the bad element starts."""
    rows = [_dpo_demo_row("一", "甲", "乙"), _dpo_demo_row("二", "同", "同")]
    path = tmp_path / "demo.json"
    path.write_text(json.dumps(rows, ensure_ascii=False, indent=2), encoding="utf-8")
    start = path.read_text(encoding="utf-8").splitlines().index("  {", 2) + 1
    with pytest.raises(DataError, match=rf"demo.json:{start}: 'chosen' and 'rejected' are the same text"):
        real_data.read_dpo_zh([path])


def _bad_llmzoo(tmp_path, what):
    folder = _llmzoo_set(tmp_path / "set")
    rows = _jsonl(folder / "coherence.jsonl")
    if what == "order":
        rows[1]["order"] = [1, 2]
    elif what == "answers":
        rows[1]["metadata"]["answers"][0] = "别的"
    elif what == "repeat":
        rows[1]["question_id"] = 1
    elif what == "unknown":
        rows[1]["question_id"] = 9
    _write_jsonl(folder / "coherence.jsonl", rows)
    return ["llmzoo", folder]


@pytest.mark.parametrize("what, message", [
    ("order", "coherence.jsonl:2: 'order' must hold one rank >= 1 per answer (3), got [1, 2]"),
    ("answers", "coherence.jsonl:2: question 2: question, answers or models differ"),
    ("repeat", "coherence.jsonl:2: question_id 1 repeats line 1"),
    ("unknown", "coherence.jsonl:2: question_id 9 has no general review"),
])
def test_bad_llmzoo_input_is_one_line_and_writes_nothing(tmp_path, what, message):
    """Malformed or misaligned review lines exit 2 with file:line and a fix; no output appears."""
    out = run("import", *_bad_llmzoo(tmp_path, what), "-o", tmp_path / "out.jsonl")
    assert out.returncode == 2 and message in out.stderr and "(fix:" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("row, message", [
    ('{"chosen": "a", "rejected": "b"}', "x.jsonl:2: 'conversations' must be a non-empty list"),
    ('{"conversations": [{"from": "gpt", "value": "q"}], "chosen": "a", "rejected": "b"}',
     "x.jsonl:2: the conversation does not end with a human turn"),
    ('{"conversations": [{"from": "human", "value": "q"}], "chosen": 3, "rejected": "b"}',
     "x.jsonl:2: 'chosen' must be a string"),
    ('{"conversations": [{"from": "human", "value": "q"}], "chosen": "a", "rejected": "a"}',
     "x.jsonl:2: 'chosen' and 'rejected' are the same text"),
    ('{"conversations": [', "x.jsonl:2: malformed JSON"),
])
def test_bad_dpo_input_is_one_line_and_writes_nothing(tmp_path, row, message):
    """Each kind of bad preference row exits 2 naming file and line; no output appears."""
    good = '{"conversations": [{"from": "human", "value": "p"}], "chosen": "a", "rejected": "b"}'
    (tmp_path / "x.jsonl").write_text(good + "\n" + row + "\n", encoding="utf-8")
    out = run("import", "dpo-zh", tmp_path / "x.jsonl", "-o", tmp_path / "out.jsonl")
    assert out.returncode == 2 and message in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and not (tmp_path / "out.jsonl").exists()


def test_import_real_missing_input_and_usage_errors(tmp_path):
    """A source folder without the expected files, or two folders for one set, exit 2 before writing."""
    src = _fake_src(tmp_path)
    (src / "dpo-zh" / "dpo_zh_500.jsonl").unlink()
    out = run("import", "real", src, "-o", tmp_path / "out")
    assert out.returncode == 2 and "dpo_zh_500.jsonl: missing" in out.stderr and not (tmp_path / "out").exists()
    out = run("import", "llmzoo", src, src, "-o", tmp_path / "x.jsonl")
    assert out.returncode == 2 and "takes one folder" in out.stderr


def test_import_real_on_an_unknown_copy_writes_the_layout_and_says_so(tmp_path):
    """Inputs that are not the known upstream copies import (SHA-256 is information): the manifest says
    known_copy false and gives no commit, stderr has a note; the layout loads as a world; no torch imported."""
    src, out = _fake_src(tmp_path), tmp_path / "out"
    probe = (f"import sys; from cheems_lib.cli import main; rc = main(['import', 'real', {str(src)!r}, '-o', "
             f"{str(out)!r}]); assert 'torch' not in sys.modules; sys.exit(rc)")
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert summary["inputs_known_copies"] is False and "is not the copy data/real was made from" in res.stderr
    assert summary["files"]["cheems_preference.jsonl"]["prompts"] == 3  # 5 rows, 2 of them repeats
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    entry = manifest["files"]["cheems_bench/open.jsonl"]
    assert entry["commit"] is None and entry["labels"] == "gpt-3.5-turbo" and entry["prompts"] == 2
    assert manifest["files"]["cheems_preference.jsonl"]["duplicate_rows"] == 2
    assert (out / "LICENSES" / "LLMZoo-DATA_LICENSE").read_text() == "CC BY-NC 4.0 text\n"
    wp = manifest["files"][real_data.WRITINGPREF_FILE]
    assert wp["labels"] == real_data.WRITINGPREF_LABELS and wp["prompts"] == 2 and wp["commit"] is None
    assert wp["dropped_prompts"]["count"] == 1 and wp["missing_answers"] == {"c": ["q2"]}
    assert (out / "LICENSES" / "WritingPreferenceBench-README.md").read_text() == "ODC-BY\n"
    from cheems_lib.world_files import load_world

    assert {k: len(v) for k, v in load_world(out).items()} == {"cheems_bench/open.jsonl": 2, "cheems_preference.jsonl": 3}


# ---- WritingPreferenceBench zh (synthetic, run everywhere) ---------------------------------------------

def test_writingpref_records_are_ranked_by_the_human_scores(tmp_path):
    """One record per prompt in the agreed shape: model names as response ids (sorted), dense ranks from the
    scores/ files (3, 1, 1 -> 0, 1, 1), the raw and second scores kept; the responses files' own score fields
    are ignored; the "/" prompt is dropped and the missing answer counted."""
    recs, report = real_data.read_writingpref(_fake_writingpref(tmp_path / "wp"))
    assert [r.to_json() for r in recs] == [
        {"id": "q1", "input": "写一首诗", "category": ["诗歌"],
         "responses": [{"id": "a", "content": "长长的诗句"}, {"id": "b", "content": "短诗"}, {"id": "c", "content": "诗"}],
         "rank": {"a": 0, "b": 1, "c": 1}, "human_scores": {"a": 3, "b": 1, "c": 1}, "second_scores": {"b": 1},
         "source": "writingpref-zh"},
        {"id": "q2", "input": "写一封信", "category": ["书信"],
         "responses": [{"id": "a", "content": "很长很长的信件"}, {"id": "b", "content": "一封长信"}],
         "rank": {"a": 1, "b": 0}, "human_scores": {"a": 1, "b": 2}, "second_scores": {"b": 3},
         "source": "writingpref-zh"}]
    assert report["dropped_prompts"]["count"] == 1 and report["dropped_prompts"]["question_ids"] == ["q3"]
    assert report["missing_answers"] == {"c": ["q2"]} and (report["prompts"], report["responses"]) == (2, 5)
    assert report["second_annotators"] == {"b": {"annotator": "ann", "prompts": 2, "exact_agreement": 1}}
    assert report["strict_pairs"] == 3 and report["higher_score_longer"] == round(2 / 3, 4)


def test_writingpref_xz_file_is_deterministic_and_reads_back(tmp_path):
    """The xz file is the same bytes when written twice and read_records reads it like plain JSONL."""
    recs, _ = real_data.read_writingpref(_fake_writingpref(tmp_path / "wp"))
    for name in ("one.jsonl.xz", "two.jsonl.xz"):
        real_data.write_xz_records(recs, tmp_path / name)
    assert (tmp_path / "one.jsonl.xz").read_bytes() == (tmp_path / "two.jsonl.xz").read_bytes()
    assert [r.to_json() for r in read_records(tmp_path / "one.jsonl.xz")] == [r.to_json() for r in recs]


def test_import_writingpref_alone_merges_into_the_folders_manifest(tmp_path):
    """`cheems import writingpref SRC -o DIR` rewrites its own entry and file, keeping the others (the result is
    the manifest `import real` wrote); without -o it is refused, writing nothing (a default folder would be relative
    to wherever the command runs)."""
    src, out = _fake_src(tmp_path), tmp_path / "out"
    assert run("import", "real", src, "-o", out).returncode == 0
    before = digest(out)
    (out / real_data.WRITINGPREF_FILE).unlink()
    res = run("import", "writingpref", src / "writingpref-zh", "-o", out)
    assert res.returncode == 0, res.stderr
    assert digest(out) == before and json.loads(res.stdout)["prompts"] == 2
    work = tmp_path / "work"
    work.mkdir()
    res = subprocess.run([*CHEEMS, "import", "writingpref", str(src / "writingpref-zh")], capture_output=True,
                         text=True, cwd=work, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert res.returncode == 2 and "needs -o" in res.stderr and not list(work.iterdir()), res.stderr


def _break_writingpref(folder, what):
    if what == "scale":
        _fake_writingpref(folder, scores={**_WP_SCORES, "a": {"q1": 4, "q2": 1, "q3": 0}})
    elif what == "unknown":
        _fake_writingpref(folder, scores={**_WP_SCORES, "c": {"q1": 1, "q2": 1, "q3": 2}})
    elif what == "unscored":
        _fake_writingpref(folder, scores={**_WP_SCORES, "a": {"q1": 3, "q3": 0}})
    elif what == "second":
        _fake_writingpref(folder, second={"q1": 1, "q9": 2})
    else:
        _fake_writingpref(folder)
    if what == "prompt":
        rows = json.loads((folder / "responses" / "b.json").read_text("utf-8"))
        rows[0]["prompt"] = "别的"
        (folder / "responses" / "b.json").write_text(json.dumps(rows, ensure_ascii=False, indent=1), "utf-8")
    elif what == "name":
        (folder / "rescored" / "b.ann.json").rename(folder / "rescored" / "zz.ann.json")
    elif what == "missing":
        (folder / "scores" / "c.json").unlink()
    elif what == "tags":
        rows = json.loads((folder / "responses" / "a.json").read_text("utf-8"))
        rows[1]["__internal_tags__"] = 7
        (folder / "responses" / "a.json").write_text(json.dumps(rows, ensure_ascii=False, indent=1), "utf-8")
    return folder


def _element_line(path, k):
    """The line where element ``k`` of a JSON list written with indent=1 starts."""
    return [n for n, line in enumerate(path.read_text("utf-8").splitlines(), 1) if line == " {"][k]


@pytest.mark.parametrize("what, file, element, message", [
    ("scale", "scores/a.json", 0, "score 4 is not on the 0-3 scale"),
    ("unknown", "scores/c.json", 1, "question_id q2 has no answer in the model's responses file"),
    ("unscored", "scores/a.json", None, "no human score for 1 answer(s), e.g. question_id q2"),
    ("second", "rescored/b.ann.json", 1, "question_id q9 has no answer in the model's responses file"),
    ("prompt", "responses/b.json", 0, "question q1's prompt or genre tag differs from"),
    ("name", "rescored/zz.ann.json", None, "not named rescored/<model>.<annotator>.json"),
    ("missing", "scores/c.json", None, "missing"),
    ("tags", "responses/a.json", 1, "'__internal_tags__' must be a list of genre tags, got 7"),
])
def test_bad_writingpref_input_is_one_line_and_writes_nothing(tmp_path, what, file, element, message):
    """Each kind of bad or misaligned writingpref file exits 2 naming the file (and the line of the bad element)
    with a fix; nothing is written."""
    folder = _break_writingpref(tmp_path / "writingpref-zh", what)
    where = file if element is None else f"{file}:{_element_line(folder / file, element)}"
    out = run("import", "writingpref", folder, "-o", tmp_path / "out")
    assert out.returncode == 2 and f"{where}: {message}" in out.stderr, out.stderr
    assert "(fix:" in out.stderr and len(out.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_model_labels_reads_human_scores_as_human_and_model_rankings_as_model():
    """The rule both ways: texts saying people labelled are human labels even when they name the models whose
    answers were scored; "not human" or a judge model's name is model labels; the shipped entries read so."""
    from cheems_lib.world_files import detect_layout, model_labels

    human = [real_data.WRITINGPREF_LABELS, "human scores of 19 models' answers", "human annotators",
             "answers of gpt-4.1 and Qwen, scored by people", "people", "unknown labels"]
    model = ["gpt-3.5-turbo", "model-generated", "model labels, not human labels", "Qwen2.5-72B judge",
             "non-human labels of human-written answers", "LLM annotators",
             # a human word beside a labelling model is still model labels (the safe direction)
             "human preferences judged by GPT-4", "GPT-4 judge trained to mimic human preferences",
             "human evaluation proxy: claude-3 ratings", "gpt-4 annotations checked by human annotators",
             "responses by GPT-4 ranked by GPT-4", "19 models' answers"]
    assert [model_labels(t) for t in human] == [False] * len(human)
    assert [model_labels(t) for t in model] == [True] * len(model)
    layout = detect_layout(REAL)
    assert not model_labels(layout.file_labels(real_data.WRITINGPREF_FILE))
    assert all(model_labels(layout.file_labels(rel)) for rel in real_data.RELEASE_FILES)


# ---- the shipped folder -----------------------------------------------------------------------------

def test_shipped_files_match_their_manifest_and_load():
    """Every converted file's SHA-256 and counts are the manifest's; records are valid, ranked and ids distinct.
    The labels say who labelled which file: model labels for LLMZoo and DPO-zh, human scores for writingpref."""
    from cheems_lib.world_files import model_labels

    manifest = json.loads((REAL / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["labels"].startswith("model labels, not human labels")
    assert f"{real_data.WRITINGPREF_LABELS}: {real_data.WRITINGPREF_FILE}" in manifest["labels"]
    assert list(manifest["files"]) == [*real_data.RELEASE_FILES, real_data.WRITINGPREF_FILE]
    assert [model_labels(e["labels"]) for e in manifest["files"].values()] == [True, True, True, False]
    assert manifest["files"][real_data.WRITINGPREF_FILE]["labels"] == "human scores (0-3, trained annotators)"
    for rel, entry in manifest["files"].items():
        assert hashlib.sha256((REAL / rel).read_bytes()).hexdigest() == entry["sha256"], rel
        recs = read_records(REAL / rel)
        assert len(recs) == entry["prompts"] == len({r.id for r in recs})
        assert sum(len(r.responses) for r in recs) == entry["responses"]
        assert all(r.rank is not None for r in recs)
        assert all(l in manifest["licences"] for l in entry["licence_files"])
    for name in manifest["licences"]:
        assert (REAL / name).stat().st_size > 1000


def test_shipped_ranks_are_what_algorithm_1_gives():
    """Both kinds of file train and evaluate directly: each rank is Algorithm 1 on the record's annotations."""
    for rel in real_data.RELEASE_FILES:
        for rec in read_records(REAL / rel):
            assert resolve(rec.response_ids, rec.annotations) == rec.rank, (rel, rec.id)


def _readme_sha256(shared: Path) -> dict[str, str]:
    text = (shared / "README.md").read_text(encoding="utf-8")
    return dict(re.findall(r"^([0-9a-f]{64})  (\S+)$", text, flags=re.M))


@needs_shared
def test_known_sha256_are_the_shared_readmes_and_the_copies():
    """The importer's table of known copies is the shared README's list, and the copies there still match it."""
    known = _readme_sha256(SHARED)
    assert known == real_data.KNOWN_SHA256 and len(known) == 13 + 43  # llmzoo and dpo; writingpref 19 + 19 + 5
    for digest_, rel in known.items():
        assert hashlib.sha256((SHARED / rel).read_bytes()).hexdigest() == digest_, rel


@needs_shared
def test_regenerated_folder_is_byte_identical_to_the_shipped_one(tmp_path):
    """`cheems import real ../shared/real -o TMP` writes exactly the shipped files (all but the hand-written README)."""
    out = run("import", "real", SHARED, "-o", tmp_path / "real")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["inputs_known_copies"] is True and out.stderr == ""
    shipped = {k: v for k, v in digest(REAL).items() if k != "README.md"}
    assert digest(tmp_path / "real") == shipped


@needs_shared
@pytest.mark.parametrize("answer_set", real_data.LLMZOO_SETS)
def test_llmzoo_hand_counts(answer_set):
    """Counted by hand from the review files: 70 questions x 4 answers, every aspect on the general's questions and
    answers, immersion on the 10 role-play questions; the shipped rank orders answers exactly as `order` of general."""
    folder = SHARED / "llmzoo-zh" / answer_set
    questions = {q["question_id"]: q for q in _jsonl(SHARED / "llmzoo-zh" / "questions-zh.jsonl")}
    aspects = {p.stem: {r["question_id"]: r for r in _jsonl(p)} for p in folder.glob("*.jsonl")}
    general = aspects["general"]
    assert len(general) == len(questions) == 70 and set(general) == set(questions)
    for name, rows in aspects.items():
        assert len(_jsonl(folder / f"{name}.jsonl")) == len(rows)  # one review per question
        for qid, row in rows.items():
            assert len(row["order"]) == len(row["metadata"]["answers"]) == 4
            assert row["metadata"]["answers"] == general[qid]["metadata"]["answers"]
            assert row["metadata"]["question"] == questions[qid]["text"]
    assert {q for q in aspects["immersion"]} == {q for q, v in questions.items() if v["category"] == "roleplay"}
    shipped = "cheems_bench/open.jsonl" if answer_set == "review_zh" else f"llmzoo/{answer_set}.jsonl"
    lines = _jsonl(REAL / shipped)
    assert len(lines) == 70 and all(len(line["responses"]) == 4 for line in lines)
    for line in lines:
        row = general[line["question_id"]]
        assert [r["content"] for r in line["responses"]] == row["metadata"]["answers"]
        assert line["models"] == row["metadata"]["model_ids"] and line["category"] == [row["category"]]
        ranks = [line["rank"][r["id"]] for r in line["responses"]]
        order = row["order"]
        assert sorted(set(ranks)) == list(range(len(set(order))))  # dense, 0 = best
        assert all(_sign(ranks[i] - ranks[j]) == _sign(order[i] - order[j]) for i in range(4) for j in range(4))
        for name, ranked in line["aspects"].items():
            theirs = aspects[name][line["question_id"]]["order"]
            mine = [ranked[r["id"]] for r in line["responses"]]
            assert all(_sign(mine[i] - mine[j]) == _sign(theirs[i] - theirs[j]) for i in range(4) for j in range(4))
    assert sum("immersion" in line["aspects"] for line in lines) == 10


@needs_shared
def test_dpo_hand_counts():
    """Counted by hand: demo 300 rows / 289 distinct, 500 distinct rows, 23 dialogues in both (same pair),
    766 distinct dialogues and pairs; the shipped file holds exactly those, chosen ranked above rejected."""
    def key(conv):
        return tuple((t["from"], t["value"]) for t in conv)

    demo = json.loads((SHARED / "dpo-zh" / "dpo_zh_demo.json").read_text(encoding="utf-8"))
    demo_rows = [(key(d["conversations"]), d["chosen"]["value"], d["rejected"]["value"]) for d in demo]
    other_rows = [(key(d["conversations"]), d["chosen"], d["rejected"]) for d in _jsonl(SHARED / "dpo-zh" / "dpo_zh_500.jsonl")]
    assert (len(demo_rows), len(set(demo_rows)), len(set(other_rows))) == (300, 289, 500)
    dialogues = {r[0] for r in demo_rows} | {r[0] for r in other_rows}
    assert len({r[0] for r in demo_rows} & {r[0] for r in other_rows}) == 23
    pairs = set(demo_rows) | set(other_rows)
    assert len(dialogues) == len(pairs) == 766
    lines = _jsonl(REAL / "cheems_preference.jsonl")
    assert len(lines) == 766 and sum(len(line["annotations"]) for line in lines) == 766
    text = lambda line, rid: next(r["content"] for r in line["responses"] if r["id"] == rid)  # noqa: E731
    shipped = set()
    for line in lines:
        conv = ([("system", line["sys_prompt"])] if "sys_prompt" in line else []) + [("human", line["input"])]
        for a, b, p in line["annotations"]:
            assert p == "1" and line["rank"][a] < line["rank"][b]
            shipped.add((tuple(conv), text(line, a), text(line, b)))
    assert shipped == pairs
    assert sum(len(line["sources"]) == 2 for line in lines) == 23 and not any("subset" in line for line in lines)


@needs_shared
def test_writingpref_hand_counts():
    """Counted by hand from the JSON files: 204 prompts, 3 of them just "/", 201 left with 3,818 answers (19 models,
    gemini-2.5-pro lacks one); 22,048 strictly ordered pairs by the scores/ files, the higher-scored answer the longer
    in 56.5%; the second scorings agree exactly on 98, 178, 129, 81, 103 of the 201. The shipped file holds exactly
    these answers and scores, with ranks ordering answers as the scores do."""
    folder = SHARED / "writingpref-zh"
    load = lambda sub, name: json.loads((folder / sub / name).read_text(encoding="utf-8"))  # noqa: E731
    models = sorted(p.stem for p in (folder / "responses").glob("*.json"))
    answers = {m: {str(r["question_id"]): r for r in load("responses", f"{m}.json")} for m in models}
    scores = {m: {str(r["question_id"]): r["score"] for r in load("scores", f"{m}.json")} for m in models}
    prompts = {q: r["prompt"] for m in models for q, r in answers[m].items()}
    kept = {q for q, text in prompts.items() if text != "/"}
    assert (len(models), len(prompts), len(kept)) == (19, 204, 201)
    assert sum(q in answers[m] for m in models for q in kept) == 3818
    assert [m for m in models if set(answers[m]) != set(prompts)] == ["gemini-2.5-pro"]
    pairs = longer = 0
    for q in kept:
        have = [m for m in models if q in answers[m]]
        for a in have:
            for b in have:
                if scores[a][q] > scores[b][q]:
                    pairs += 1
                    longer += len(answers[a][q]["predict0"]) > len(answers[b][q]["predict0"])
    assert pairs == 22048 and round(100 * longer / pairs, 1) == 56.5
    second = {p.name.split(".json")[0].rsplit(".", 1)[0]: {str(r["question_id"]): r["score"] for r in
              json.loads(p.read_text(encoding="utf-8"))} for p in (folder / "rescored").glob("*.json")}
    exact = {m: sum(second[m][q] == scores[m][q] for q in kept) for m in sorted(second)}
    assert exact == {"doubao-1.5-pro": 98, "gemini-2.0-flash": 178, "gemini-2.5-flash-nothinking": 129,
                     "gpt-4.1-mini": 81, "o4-mini": 103}
    entry = json.loads((REAL / "manifest.json").read_text(encoding="utf-8"))["files"][real_data.WRITINGPREF_FILE]
    assert {m: v["exact_agreement"] for m, v in entry["second_annotators"].items()} == exact
    assert (entry["strict_pairs"], entry["dropped_prompts"]["count"]) == (22048, 3)
    assert entry["missing_answers"] == {"gemini-2.5-pro": sorted(kept - set(answers["gemini-2.5-pro"]))}
    with lzma.open(WP, "rt", encoding="utf-8") as fh:
        lines = [json.loads(line) for line in fh]
    assert {line["id"] for line in lines} == kept and len(lines) == 201
    for line in lines:
        q, ids = line["id"], [r["id"] for r in line["responses"]]
        assert ids == sorted(m for m in models if q in answers[m]) and line["input"] == prompts[q]
        assert all(r["content"] == answers[r["id"]][q]["predict0"] for r in line["responses"])
        assert line["human_scores"] == {m: scores[m][q] for m in ids}
        assert line["second_scores"] == {m: second[m][q] for m in sorted(second) if m in ids}
        assert line["category"] == answers[ids[0]][q]["__internal_tags__"] and line["source"] == "writingpref-zh"
        ranks = sorted(set(line["rank"].values()))
        assert ranks == list(range(len(ranks)))  # dense, 0 = best
        assert all(_sign(line["rank"][a] - line["rank"][b]) == _sign(scores[b][q] - scores[a][q])
                   for a in ids for b in ids)


def test_shipped_files_are_marked_not_comparable_with_the_paper():
    """Every converted file's manifest entry says "comparable": false (not the paper's data), and the chapters'
    rule reads it so."""
    from cheems_lib.world_files import detect_layout

    manifest = json.loads((REAL / "manifest.json").read_text(encoding="utf-8"))
    assert all(entry["comparable"] is False for entry in manifest["files"].values())
    layout = detect_layout(REAL)
    assert not layout.comparable("cheems_bench/open.jsonl") and not layout.comparable("cheems_preference.jsonl")


def test_a_hand_written_manifest_removes_nothing_on_import(tmp_path):
    """import real removes the files an earlier import listed and this one does not write, never those of a
    manifest a person wrote (its entries have no recorded inputs)."""
    from cheems_lib.real_data import _remove_unlisted

    (tmp_path / "mine.jsonl").write_text("{}\n", encoding="utf-8")
    (tmp_path / "manifest.json").write_text(json.dumps({"files": {"mine.jsonl": {"labels": "human"}}}), encoding="utf-8")
    assert _remove_unlisted(tmp_path, []) == [] and (tmp_path / "mine.jsonl").exists()
    (tmp_path / "manifest.json").write_text(json.dumps({"files": {"mine.jsonl": {"inputs": {}}}}), encoding="utf-8")
    assert _remove_unlisted(tmp_path, []) == ["mine.jsonl"] and not (tmp_path / "mine.jsonl").exists()
