"""Score files (spec §4): written, read back and refused with a one-line error."""
from __future__ import annotations

import json

import pytest

from cheems_lib.input_files import DataError
from cheems_lib.score_file import check_scores_known, read_scores, write_scores
from conftest import make_record


def _write(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class TestScores:
    def test_round_trip(self, tmp_path):
        """Scores written by write_scores read back unchanged."""
        write_scores([("p", "a", 1.5), ("p", "b", -2)], tmp_path / "s.jsonl")
        assert read_scores(tmp_path / "s.jsonl") == {("p", "a"): 1.5, ("p", "b"): -2.0}

    @pytest.mark.parametrize("line, message", [
        ('{"prompt_id": "p", "response_id": "b", "score": NaN}', "not a finite number"),
        ('{"prompt_id": "p", "response_id": "b"}', "expected"),
        ('{"prompt_id": "p", "response_id": "a", "score": 2}', "duplicate"),
        ('{"prompt_id": "p", "response_id": "b", "score": "high"}', "not a finite number"),
    ])
    def test_bad_scores(self, tmp_path, line, message):
        """A bad scores line is a DataError naming its file and line."""
        path = _write(tmp_path / "s.jsonl", ['{"prompt_id": "p", "response_id": "a", "score": 1}', line])
        with pytest.raises(DataError, match=message) as e:
            read_scores(path)
        assert f"{path}:2:" in str(e.value)


def test_unknown_score_names_its_line(tmp_path):
    """A score for a response that no record holds is refused with the score file's line."""
    path = _write(tmp_path / "s.jsonl", [json.dumps({"prompt_id": "p", "response_id": r, "score": 1.0}) for r in "ax"])
    with pytest.raises(DataError, match='unknown prompt/response "p"/"x"') as e:
        check_scores_known(read_scores(path), [make_record("p", "abc")])
    assert f"{path}:2:" in str(e.value)
    check_scores_known(read_scores(_write(tmp_path / "t.jsonl", [json.dumps({"prompt_id": "p", "response_id": "a",
                                                                             "score": 0})])), [make_record("p", "abc")])
