"""DPO-zh's chosen/rejected rows merged by dialogue into records, and bad rows named by file and line."""
from __future__ import annotations

import json

import pytest

from cheems_lib import dpo_zh
from cheems_lib.input_files import DataError
from cheems_lib.records import md5
from test_real_data import _dpo_demo_row, _jsonl, _write_jsonl, needs_shared, REAL, run, SHARED


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
    recs, report = dpo_zh.read_dpo_zh([tmp_path / "a.jsonl"])
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
    recs, report = dpo_zh.read_dpo_zh([tmp_path / "a.jsonl", tmp_path / "b.jsonl"])
    assert len(recs[0].annotations) == 2 and set(recs[0].rank.values()) == {0}
    assert report["conflict_ratio"] == 1.0 and recs[0].extra["sources"] == ["a.jsonl", "b.jsonl"]


def test_json_array_rows_carry_their_line_numbers(tmp_path):
    """In a JSON array file, an error names the line where the bad element starts."""
    rows = [_dpo_demo_row("一", "甲", "乙"), _dpo_demo_row("二", "同", "同")]
    path = tmp_path / "demo.json"
    path.write_text(json.dumps(rows, ensure_ascii=False, indent=2), encoding="utf-8")
    start = path.read_text(encoding="utf-8").splitlines().index("  {", 2) + 1
    with pytest.raises(DataError, match=rf"demo.json:{start}: 'chosen' and 'rejected' are the same text"):
        dpo_zh.read_dpo_zh([path])


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
