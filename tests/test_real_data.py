"""Importing real Chinese preference data: `cheems import`, its manifest, and data/real itself (each source's
reader: test_llmzoo, test_dpo_zh, test_writingpref; their tests share the fake sources built here).

Hand counts use plain json code, independent of the importer, on the upstream copies in
``<clone>/../shared/real`` (skipped with the reason when that folder is absent).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cheems_lib import llmzoo, real_data, writingpref
from cheems_lib.conflicts import resolve
from cheems_lib.records import read_records
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
    for name in llmzoo.LLMZOO_SETS:
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
    assert wp["labels"] == writingpref.WRITINGPREF_LABELS and wp["prompts"] == 2 and wp["commit"] is None
    assert wp["dropped_prompts"]["count"] == 1 and wp["missing_answers"] == {"c": ["q2"]}
    assert (out / "LICENSES" / "WritingPreferenceBench-README.md").read_text() == "ODC-BY\n"
    from cheems_lib.world_files import load_world

    assert {k: len(v) for k, v in load_world(out).items()} == {"cheems_bench/open.jsonl": 2, "cheems_preference.jsonl": 3}


# ---- WritingPreferenceBench zh (synthetic, run everywhere) ---------------------------------------------


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


def test_model_labels_reads_human_scores_as_human_and_model_rankings_as_model():
    """The rule both ways: texts saying people labelled are human labels even when they name the models whose
    answers were scored; "not human" or a judge model's name is model labels; the shipped entries read so."""
    from cheems_lib.world_files import detect_layout, model_labels

    human = [writingpref.WRITINGPREF_LABELS, "human scores of 19 models' answers", "human annotators",
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
    assert f"{writingpref.WRITINGPREF_LABELS}: {real_data.WRITINGPREF_FILE}" in manifest["labels"]
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


def test_import_source_refuses_a_source_it_does_not_know(tmp_path):
    """The library function names its sources instead of reading any other name as DPO-zh; the command's choices
    are the same list."""
    from cheems_lib import cli
    from cheems_lib.real_data import IMPORT_SOURCES, import_source

    with pytest.raises(ValueError, match="unknown source 'zoo': use one of real, llmzoo, dpo-zh, writingpref"):
        import_source("zoo", [tmp_path / "x.json"], tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()
    sub = next(a for a in cli.build_parser()._actions if a.dest == "command").choices["import"]
    assert tuple(next(a for a in sub._actions if a.dest == "source").choices) == IMPORT_SOURCES
