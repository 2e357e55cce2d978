"""LLMZoo's zh reviews as records: dense ranks from the general order, aspect annotations, and bad review lines."""
from __future__ import annotations

import pytest

from cheems_lib import llmzoo
from cheems_lib.conflicts import resolve
from cheems_lib.records import md5
from test_real_data import _jsonl, _llmzoo_set, _sign, _write_jsonl, needs_shared, REAL, run, SHARED


def test_llmzoo_record_rank_is_the_general_order_dense_and_zero_based(tmp_path):
    """[3, 1, 3] becomes ranks 1, 0, 1 (ties equal, lower is better); ids are md5; aspects present only where reviewed."""
    recs = llmzoo.read_llmzoo_set(_llmzoo_set(tmp_path / "set"))
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
    flat = llmzoo.read_llmzoo_set(_llmzoo_set(tmp_path / "a" / "review_zh"))
    nested = llmzoo.read_llmzoo_set(_llmzoo_set(tmp_path / "b" / "review_zh", upstream=True))
    assert [r.to_json() for r in flat] == [r.to_json() for r in nested]


def test_aspect_annotations_in_position_order_with_ties_and_merged_conflicts(tmp_path):
    """Each aspect gives every pair once (a shown first), "0" for ties; merging disagreeing aspects conflicts."""
    rec = llmzoo.read_llmzoo_set(_llmzoo_set(tmp_path / "set"))[0]
    a, b, c = rec.response_ids
    assert llmzoo.aspect_annotations(rec, ["general"]) == [(a, b, "2"), (a, c, "0"), (b, c, "1")]
    assert llmzoo.aspect_annotations(rec, ["coherence", "immersion"]) == [(a, b, "1"), (a, c, "1"), (b, c, "1")]
    merged, stats = llmzoo.merge_aspects([rec])
    assert len(merged[0].annotations) == 6 and stats["conflict_ratio"] == 1.0
    assert rec.annotations == llmzoo.aspect_annotations(rec, ["general"])  # the original is untouched


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


@needs_shared
@pytest.mark.parametrize("answer_set", llmzoo.LLMZOO_SETS)
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
