"""Reading, validating and writing the official record formats (spec §1)."""
from __future__ import annotations

import json

import pytest

import doctest
from itertools import permutations

import numpy as np

from cheems_lib import records
from cheems_lib.records import DataError, md5, read_pairwise_table, read_records, strict_pairs, to_pairs, write_records
from conftest import ROOT, make_record


def _write(path, lines):
    path.write_text("\n".join(l if isinstance(l, str) else json.dumps(l, ensure_ascii=False) for l in lines) + "\n",
                    encoding="utf-8")
    return path


class TestReadRecords:
    def test_round_trip_keeps_every_field(self, tmp_path):
        """What we write, our loader reads back identically, unknown fields included."""
        rec = make_record("p", "abc", [("a", "b", "1"), ("b", "c", "0")], rank={"a": 0, "b": 1, "c": 1})
        rec.extra["source"] = "x"
        rec.sys_prompt = "你是助手"
        write_records([rec], tmp_path / "r.jsonl")
        (back,) = read_records(tmp_path / "r.jsonl")
        assert back == rec and back.extra == {"source": "x"}

    def test_prompt_alias_and_md5_ids(self, tmp_path):
        """`prompt` is accepted for `input`; missing ids are md5 of the text, as in the official files."""
        _write(tmp_path / "r.jsonl", [{"prompt": "你好", "responses": [{"content": "嗨"}, "您好"]}])
        (rec,) = read_records(tmp_path / "r.jsonl")
        assert rec.id == md5("你好") and rec.response_ids == [md5("嗨"), md5("您好")]
        assert write_records([rec], tmp_path / "o.jsonl") == 1
        assert '"input"' in (tmp_path / "o.jsonl").read_text(encoding="utf-8")

    def test_official_pairwise_form_is_grouped(self, tmp_path):
        """Pairwise lines are grouped by prompt text; ids are md5 of content; ties load."""
        _write(tmp_path / "p.jsonl", [
            {"input": "q1", "answer1": "x", "answer2": "y", "preference": 1},
            {"input": "q2", "answer1": "u", "answer2": "v", "preference": 2},
            {"input": "q1", "answer1": "y", "answer2": "z", "preference": 0},
        ])
        recs = read_records(tmp_path / "p.jsonl")
        assert [r.prompt for r in recs] == ["q1", "q2"]
        assert recs[0].response_ids == [md5("x"), md5("y"), md5("z")]
        assert recs[0].annotations == [(md5("x"), md5("y"), "1"), (md5("y"), md5("z"), "0")]

    @pytest.mark.parametrize("line, message", [
        ('{"input": "q", "responses": [', "malformed JSON"),
        ('{"responses": [{"id": "a", "content": "x"}]}', "'input'"),
        ('{"input": "q", "responses": [{"id": "a", "content": "x"}, {"id": "a", "content": "y"}]}', "duplicate response id"),
        ('{"input": "q", "responses": [{"id": "a", "content": "x"}], "rank": {"b": 0}}', "unknown response id 'b'"),
        ('{"input": "q", "responses": [{"id": "a", "content": "x"}, {"id": "b", "content": "y"}], "annotations": [["a", "z", "1"]]}', "unknown response id 'z'"),
        ('{"input": "q", "responses": [{"id": "a", "content": "x"}, {"id": "b", "content": "y"}], "annotations": [["a", "b", "3"]]}', "preference"),
        ('{"input": "q", "responses": [{"id": "a", "content": "x"}], "rank": {"a": 0.5}}', "integer"),
    ])
    def test_bad_input_names_file_and_line(self, tmp_path, line, message):
        """Every bad record raises one line naming file:line and the problem."""
        path = _write(tmp_path / "bad.jsonl", ['{"input": "ok", "responses": ["r"]}', "", line])
        with pytest.raises(DataError) as e:
            read_records(path)
        assert f"{path}:3:" in str(e.value) and message in str(e.value) and "\n" not in str(e.value)


class TestPairwiseTable:
    def test_csv_with_ties_and_categories(self, tmp_path):
        """A CSV pairwise table becomes grouped records; a/b/tie spellings are accepted."""
        (tmp_path / "t.csv").write_text("prompt,response_a,response_b,preference,category\n"
                                        "q,x,y,a,数学\nq,y,z,tie,数学\nq2,u,v,2,代码\n", encoding="utf-8")
        recs = read_pairwise_table(tmp_path / "t.csv")
        assert [r.category for r in recs] == [["数学"], ["代码"]]
        assert [p for *_, p in recs[0].annotations] == ["1", "0"]

    def test_missing_column(self, tmp_path):
        """A pairwise table without its columns is a DataError."""
        (tmp_path / "t.csv").write_text("question,a,b,preference\n", encoding="utf-8")
        with pytest.raises(DataError, match="missing columns"):
            read_pairwise_table(tmp_path / "t.csv")


class TestStrictPairs:
    def test_doctests(self):
        """The module's examples (strict_pairs' two orders among them) still print what they say."""
        assert doctest.testmod(records).failed == 0

    @pytest.mark.parametrize("seed", range(5))
    def test_matches_brute_force(self, seed):
        """Every pair with a lower rank first, each once, in (better over ids, worse over ids) order."""
        rng = np.random.default_rng(seed)
        rank = {f"r{i}": int(x) for i, x in enumerate(rng.integers(0, 3, size=6))}
        order = list(rng.permutation(list(rank) + ["unranked"]))
        expected = [(a, b) for a in order for b in order if a in rank and b in rank and rank[a] < rank[b]]
        assert strict_pairs(rank, order) == expected
        assert sorted(strict_pairs(rank)) == sorted(expected)
        ties = sum(rank[a] == rank[b] for a, b in permutations(rank, 2)) // 2
        assert len(expected) == len(rank) * (len(rank) - 1) // 2 - ties

    def test_default_order_is_the_rank_keys(self):
        """Without ids the rank's own key order decides (transfer's seeded draw depends on it)."""
        assert strict_pairs({"b": 1, "a": 0, "c": 2}) == [("b", "c"), ("a", "b"), ("a", "c")]
        assert strict_pairs({"c": 2, "a": 0, "b": 1}) == [("a", "c"), ("a", "b"), ("b", "c")]


class TestToPairs:
    def test_pairs_follow_rank_and_skip_ties(self):
        """Chosen/rejected pairs: every pair with different ranks, none for ties."""
        rec = make_record("p", "abc", rank={"a": 0, "b": 1, "c": 1})
        pairs = list(to_pairs([rec]))
        assert [(p["chosen"], p["rejected"]) for p in pairs] == [("response a", "response b"), ("response a", "response c")]
        assert all(p["prompt"] == "prompt p" for p in pairs)

    def test_pairs_option_replaces_the_choice(self):
        """`pairs=` exports exactly the pairs it returns (e.g. conflicts' implied view), no rank needed."""
        rec = make_record("p", "abc")
        pairs = list(to_pairs([rec], pairs=lambda r: [("c", "a")]))
        assert [(p["chosen"], p["rejected"]) for p in pairs] == [("response c", "response a")]
        with pytest.raises(ValueError, match="no rank"):
            list(to_pairs([rec]))


def test_shipped_example_loads():
    """The example file of the first chapter loads through the project's own loader."""
    recs = read_records(ROOT / "data/examples/annotations.jsonl")
    assert len(recs) == 4 and all(len(r.responses) == 5 for r in recs)
