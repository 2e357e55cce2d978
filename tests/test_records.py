"""Reading, validating and writing the official record formats (spec §1)."""
from __future__ import annotations

import json

import pytest

import doctest
from itertools import permutations

import numpy as np

from cheems_lib import records
from cheems_lib.input_files import DataError
from cheems_lib.records import md5, read_pairwise_table, read_records, strict_pairs, to_pairs, write_records
from cheems_lib.read_report import ReadReport
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
        ('{"input": "q", "responses": [{"id": "a", "content": "x"}], "rank": {"b": 0}}', 'unknown response id "b"'),
        ('{"input": "q", "responses": [{"id": "a", "content": "x"}, {"id": "b", "content": "y"}], "annotations": [["a", "z", "1"]]}', 'unknown response id "z"'),
        ('{"input": "q", "responses": [{"id": "a", "content": "x"}, {"id": "b", "content": "y"}], "annotations": [["a", "b", "3"]]}', "preference"),
        ('{"input": "q", "responses": [{"id": "a", "content": "x"}], "rank": {"a": 0.5}}', "integer"),
    ])
    def test_bad_input_names_file_and_line(self, tmp_path, line, message):
        """Every bad record raises one line naming file:line and the problem."""
        path = _write(tmp_path / "bad.jsonl", ['{"input": "ok", "responses": ["r"]}', "", line])
        with pytest.raises(DataError) as e:
            read_records(path)
        assert f"{path}:3:" in str(e.value) and message in str(e.value) and "\n" not in str(e.value)


def _rec(pid, content="x", rank=True):
    return {"id": pid, "input": f"q {pid}", "responses": [{"id": "a", "content": content}, {"id": "b", "content": "y"}],
            **({"rank": {"a": 0, "b": 1}} if rank else {})}


class TestReadFiles:
    """records.read_files, the one reader of every command: ids distinct within and across files."""

    def test_repeated_id_within_a_file_names_both_lines(self, tmp_path):
        """A prompt id twice in one file: one line naming the repeat's file:line, the first's, and a fix."""
        path = _write(tmp_path / "d.jsonl", [_rec("p"), _rec("q"), _rec("p", "other")])
        with pytest.raises(DataError) as e:
            records.read_files([path])
        msg = str(e.value)
        assert msg.startswith(f"{path}:3: prompt id \"p\" repeats the record at {path}:1") and "fix:" in msg

    def test_repeated_id_across_files_names_both_files(self, tmp_path):
        """The same id in two files of one command is refused the same way, naming both files."""
        a = _write(tmp_path / "a.jsonl", [_rec("p")])
        b = _write(tmp_path / "b.jsonl", [_rec("q"), _rec("p", "other")])
        with pytest.raises(DataError, match=f"^{b}:2: prompt id \"p\" repeats the record at {a}:1"):
            records.read_files([a, b])

    def test_identical_record_in_two_files_is_refused(self, tmp_path):
        """An identical repeated record is refused too (it would be trained on or evaluated twice), and said to be identical."""
        a = _write(tmp_path / "a.jsonl", [_rec("p")])
        b = _write(tmp_path / "b.jsonl", [_rec("p")])
        with pytest.raises(DataError, match="with the same content"):
            records.read_files([a, b])

    def test_the_same_file_twice_is_refused_even_when_skipping(self, tmp_path):
        """One file given twice, by one name or by two, is refused whatever skipped is: skipping cannot fix it."""
        a = _write(tmp_path / "a.jsonl", [_rec("p")])
        (tmp_path / "link.jsonl").symlink_to(a)
        for second in (a, tmp_path / "link.jsonl", tmp_path / "." / "a.jsonl"):
            with pytest.raises(DataError, match="the same file is given twice"):
                records.read_files([a, second], skipped=[])

    def test_skipping_keeps_the_first_and_counts_each_repeat(self, tmp_path):
        """With skipped, the later records of a repeated id are skipped and listed; the first is kept."""
        a = _write(tmp_path / "a.jsonl", [_rec("p"), _rec("q")])
        b = _write(tmp_path / "b.jsonl", [_rec("p"), _rec("r"), _rec("q", "z")])
        skipped = []
        out = records.read_files([a, b], skipped=skipped)
        assert [r.id for r in out[a]] == ["p", "q"] and [r.id for r in out[b]] == ["r"]
        assert [(str(e.path), e.line) for e in skipped] == [(str(b), 1), (str(b), 3)]

    def test_a_record_without_rank_is_invalid_when_rank_is_needed(self, tmp_path):
        """need_rank (evaluate, train): a record with neither rank nor annotations raises, or is skipped and counted;
        one with annotations is ranked on read with Algorithm 1 (world_files.read_ranked_files), counted in the report."""
        from cheems_lib.world_files import read_ranked_files

        with_annotations = {**_rec("r", rank=False), "annotations": [["a", "b", "2"]]}
        report = ReadReport()
        path = _write(tmp_path / "r.jsonl", [_rec("p"), with_annotations])
        assert [r.rank for r in read_ranked_files([path], report=report)[path]] == [{"a": 0, "b": 1}, {"a": 1, "b": 0}]
        assert (report.resolved, report.conflicted, report.resolved_files) == (1, 0, [str(path)])
        path = _write(tmp_path / "d.jsonl", [_rec("p"), _rec("q", rank=False)])
        assert len(records.read_files([path])[path]) == 2
        with pytest.raises(DataError, match=f"^{path}:2: prompt \"q\" has no 'rank'"):
            records.read_files([path], need_rank=True)
        skipped = []
        assert [r.id for r in records.read_files([path], skipped=skipped, need_rank=True)[path]] == ["p"]
        assert len(skipped) == 1 and skipped[0].line == 2

    @pytest.mark.parametrize("rows", [["not json", "{}"], [_rec("p", rank=False)]], ids=["bad rows", "no rank"])
    def test_a_file_with_no_valid_row_is_an_error_even_when_skipping(self, tmp_path, rows):
        """Skipping every row of a file leaves nothing to work on: an error with the count, not an empty success."""
        good = _write(tmp_path / "good.jsonl", [_rec("ok")])
        bad = _write(tmp_path / "bad.jsonl", rows)
        skipped = []
        with pytest.raises(DataError, match=f"^{bad}: no valid row \\({len(rows)} skipped as invalid\\)"):
            records.read_files([good, bad], skipped=skipped, need_rank=True)
        assert len(skipped) == len(rows)  # still listed, for the command line to print

    def test_a_file_of_repeats_only_is_an_error_when_skipping(self, tmp_path):
        """A second file whose every record repeats the first's is the kind too: no valid row."""
        a = _write(tmp_path / "a.jsonl", [_rec("p")])
        b = _write(tmp_path / "b.jsonl", [_rec("p")])
        with pytest.raises(DataError, match="no valid row \\(1 skipped"):
            records.read_files([a, b], skipped=[])

    def test_messages_show_json_values(self, tmp_path):
        """Values in messages are JSON as in the file (true, null, "a"), not Python reprs (True, None, 'a')."""
        path = _write(tmp_path / "d.jsonl", ['{"input": "q", "responses": ["x"], "rank": {"%s": true}}' % records.md5("x")])
        with pytest.raises(DataError, match="must be an integer, got true$"):
            read_records(path)
        path = _write(tmp_path / "d.jsonl", ['{"input": "q", "answer1": "x", "answer2": "y", "preference": null}'])
        with pytest.raises(DataError, match="preference null not understood"):
            read_records(path)


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


class TestLabelsNamePositions:
    """A label names a position ("1": the first shown), never a response: one that could also be a response id of
    its record is refused unless both readings agree, so nobody gets reversed preferences silently."""

    @pytest.mark.parametrize("ids, annotation", [
        ("ab", ["b", "a", "a"]),  # "a": the first shown (b), or response a?
        ("ab", ["b", "a", "b"]),  # "b": the second shown (a), or response b?
        (["A", "B"], ["B", "A", "A"]),
        (["1", "2"], ["2", "1", "1"]),  # numbered responses, label 1 as a number too
        (["1", "2"], ["2", "1", 1]),
        (["tie", "x"], ["tie", "x", "tie"]),  # a tie label never names a response
        (["0", "1"], ["0", "1", "0"]),
    ])
    def test_an_ambiguous_label_is_refused(self, tmp_path, ids, annotation):
        rec = {"id": "p", "input": "q", "responses": [{"id": i, "content": f"text {i}"} for i in ids],
               "annotations": [annotation]}
        (tmp_path / "f.jsonl").write_text(json.dumps(rec) + "\n", encoding="utf-8")
        with pytest.raises(DataError, match=r"f\.jsonl:1: annotations\[0\] .*is also the id of response") as e:
            read_records(tmp_path / "f.jsonl")
        assert "\n" not in str(e.value) and 'write "1"' in str(e.value)

    @pytest.mark.parametrize("ids, annotation, better", [
        ("ab", ["a", "b", "a"], "a"),  # both readings: a
        ("ab", ["a", "b", "b"], "b"),  # both readings: b
        (["1", "2"], ["1", "2", "1"], "1"),
        ("xy", ["y", "x", "a"], "y"),  # no response is called "a": the alias of "1"
        ("xy", ["y", "x", "1"], "y"),
    ])
    def test_an_unambiguous_label_reads(self, tmp_path, ids, annotation, better):
        rec = {"id": "p", "input": "q", "responses": [{"id": i, "content": f"text {i}"} for i in ids],
               "annotations": [annotation]}
        (tmp_path / "f.jsonl").write_text(json.dumps(rec) + "\n", encoding="utf-8")
        [r] = read_records(tmp_path / "f.jsonl")
        a, b, p = r.annotations[0]
        assert (a if p == "1" else b) == better
