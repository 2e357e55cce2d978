"""Score evaluation: a score file on ranked data files, keyed by data name, with scores matched to the data."""
from __future__ import annotations

from pathlib import Path

import pytest

from cheems_lib.analyses.score_evaluation import data_name, evaluate_scores, matched_scores
from cheems_lib.input_files import DataError
from cheems_lib.score_file import write_scores
from conftest import make_record


def _data():
    """Two data files: a agrees with the scores on one of its two prompts, b on its only prompt."""
    a = [make_record("p1", "xy", rank={"x": 0, "y": 1}), make_record("p2", "xy", rank={"x": 1, "y": 0})]
    b = [make_record("p3", "xyz", rank={"x": 0, "y": 1, "z": 2})]
    return {Path("a.jsonl"): a, Path("b.jsonl.xz"): b}


SCORES = [("p1", "x", 1.0), ("p1", "y", 0.0), ("p2", "x", 1.0), ("p2", "y", 0.0),
          ("p3", "x", 3.0), ("p3", "y", 2.0), ("p3", "z", 1.0)]


class TestDataName:
    def test_the_name_drops_jsonl_and_a_compression_suffix(self):
        """``open.jsonl.xz`` and ``open.jsonl`` both key the output as ``open``."""
        assert data_name(Path("d/open.jsonl.xz")) == data_name(Path("open.jsonl")) == "open"


class TestEvaluateScores:
    def test_each_file_is_a_subset_and_two_give_overall(self, tmp_path):
        """Accuracy per data file by hand (1/2 and 3/3), and an overall entry once there are two files."""
        write_scores(SCORES, tmp_path / "s.jsonl")
        files = _data()
        scores, subsets = matched_scores(files, tmp_path / "s.jsonl")
        out = evaluate_scores(files, subsets, scores, tmp_path / "s.jsonl", view="layers", n_boot=0, seed=0)
        assert out["a"]["accuracy"] == pytest.approx(0.5) and out["b"]["accuracy"] == pytest.approx(1.0)
        assert "overall" in out

    def test_with_skipped_unknown_scores_and_unscored_prompts_are_left_out(self, tmp_path):
        """A score of a prompt not in the data is dropped and a prompt missing a score is left out: each counted."""
        write_scores([s for s in SCORES if s[0] != "p2"] + [("p9", "x", 0.0)], tmp_path / "s.jsonl")
        skipped: list = []
        scores, subsets = matched_scores(_data(), tmp_path / "s.jsonl", skipped=skipped)
        assert ("p9", "x") not in scores and [r.id for r in subsets["a"]] == ["p1"]
        assert len(skipped) == 2 and all(isinstance(e, DataError) for e in skipped)

    def test_a_file_left_without_a_scored_comparison_is_an_error(self, tmp_path):
        """Nothing left to evaluate in a data file: one line naming the score file, not an accuracy of NaN."""
        write_scores([s for s in SCORES if s[0] != "p3"], tmp_path / "s.jsonl")
        files = _data()
        scores, subsets = matched_scores(files, tmp_path / "s.jsonl", skipped=[])
        with pytest.raises(DataError, match="no prompt of b.jsonl.xz with a comparison has a valid score"):
            evaluate_scores(files, subsets, scores, tmp_path / "s.jsonl", view="layers", n_boot=0, seed=0)
