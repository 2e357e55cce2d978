"""Input files: every text input decoded one way, and what goes wrong a one-line error naming file and line."""
from __future__ import annotations

import doctest
import json

import pytest

from cheems_lib import input_files
from cheems_lib.input_files import DataError
from cheems_lib.records import read_records


def test_doctests():
    """The module's examples (check_not_input refusing a hard link to an input among them) still print what they say."""
    assert doctest.testmod(input_files).failed == 0


class TestTextDecoding:
    """Every text input is decoded one way: a UTF-8 byte order mark dropped, CRLF, LF and lone CR line endings alike;
    anything else is a one-line error naming the file and line."""

    ROW = {"id": "p", "input": "问", "responses": [{"id": "a", "content": "答"}, {"id": "b", "content": "长答案"}],
           "rank": {"a": 1, "b": 0}}

    def _rows(self, n=3):
        return [json.dumps({**self.ROW, "id": f"p{i}"}, ensure_ascii=False).encode() for i in range(n)]

    @pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"\r"])
    @pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
    def test_line_endings_and_bom_read_the_same(self, tmp_path, ending, bom):
        (tmp_path / "f.jsonl").write_bytes(bom + ending.join(self._rows()) + ending)
        recs = read_records(tmp_path / "f.jsonl")
        assert [r.id for r in recs] == ["p0", "p1", "p2"] and recs[2].origin.endswith(":3")

    def test_the_line_of_a_bad_row_counts_lone_carriage_returns(self, tmp_path):
        (tmp_path / "f.jsonl").write_bytes(b"\r".join([*self._rows(2), b"{broken"]))
        with pytest.raises(DataError, match=r"f\.jsonl:3: malformed JSON"):
            read_records(tmp_path / "f.jsonl")

    @pytest.mark.parametrize("content, match", [
        ("[" * 100_000 + "]" * 100_000, r":1: malformed JSON .*nested too deeply"),
        ('{"id": "p", "input": "q", "x": ' + "[" * 5_000 + "]" * 5_000 + "}", r":1: malformed JSON .*nested too deeply"),
        (b'{"id": "p", "input": "q\xff"}', r":1: not UTF-8 text \(byte 0xff"),
        ('{"id": "p"}'.encode("utf-16"), r":1: is UTF-16 text"),
        ('{"input": "' + "长" * 2_000_000 + '"', r":1: malformed JSON"),
    ], ids=["deep-array", "deep-field", "latin1", "utf16", "long-unclosed"])
    def test_malformed_input_is_one_line(self, tmp_path, content, match):
        (tmp_path / "f.jsonl").write_bytes(content if isinstance(content, bytes) else content.encode())
        with pytest.raises(DataError, match=match) as e:
            read_records(tmp_path / "f.jsonl")
        assert "\n" not in str(e.value)

    def test_other_text_inputs_decode_alike(self, tmp_path):
        """An id list, a manifest and a CSV table with a BOM and CRLF endings read as without them."""
        from cheems_lib.input_files import read_json
        from cheems_lib.records import read_pairwise_table
        from cheems_lib.world_files import read_ids

        (tmp_path / "ids.txt").write_bytes(b"\xef\xbb\xbfp1\r\np2\rp3\n")
        assert read_ids(tmp_path / "ids.txt") == {"p1", "p2", "p3"}
        (tmp_path / "m.json").write_bytes(b'\xef\xbb\xbf{"name": "x"}\r\n')
        assert read_json(tmp_path / "m.json") == {"name": "x"}
        (tmp_path / "t.csv").write_bytes(b"\xef\xbb\xbfprompt,response_a,response_b,preference\r\nq,x,yy,1\r\n")
        [rec] = read_pairwise_table(tmp_path / "t.csv")
        assert rec.prompt == "q" and rec.annotations[0][2] == "1"
        (tmp_path / "bad.json").write_text('{"name": \n', encoding="utf-8")
        with pytest.raises(DataError, match=r"bad\.json:2: malformed JSON"):
            read_json(tmp_path / "bad.json")
