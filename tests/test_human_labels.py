"""Real human scores (WritingPreferenceBench zh): reading and checking the file, the split, the preference file's labels."""
from __future__ import annotations

import json
import lzma

import pytest

from cheems_lib.analyses import human_labels as hl, human_length_preference

from human_scores import _scored, HUMAN_FILE


class TestSplitHalves:
    def test_each_prompt_once_and_each_tag_split_evenly(self):
        """Every prompt lands in exactly one half, in file order; every tag is split as evenly as its count allows; the
        halves differ by at most one prompt."""
        recs = [_scored(f"p{i}", {"a": 1}, {"a": 1}, tag=f"t{i % 7}") for i in range(33)]
        for seed in range(5):
            a, b = hl.split_halves(recs, seed=seed)
            assert sorted(r.id for r in a + b) == sorted(r.id for r in recs) and abs(len(a) - len(b)) <= 1
            assert [r.id for r in a] == [r.id for r in recs if r in a]
            for tag in {r.top_category for r in recs}:
                assert abs(sum(r.top_category == tag for r in a) - sum(r.top_category == tag for r in b)) <= 1

    def test_seeded(self):
        """The same seed gives the same halves, another seed other halves."""
        recs = [_scored(f"p{i}", {"a": 1}, {"a": 1}, tag=f"t{i % 3}") for i in range(30)]
        ids = lambda s: [r.id for r in hl.split_halves(recs, seed=s)[0]]  # noqa: E731
        assert ids(4) == ids(4) and ids(4) != ids(5)


class TestKeepAnswers:
    def test_cuts_answers_ranking_and_scores_together(self):
        """A prompt with more answers than asked keeps that many, its rank and both score fields cut to them; a prompt
        with fewer is kept whole; the draw is seeded."""
        big = _scored("p", {m: 10 * (k + 1) for k, m in enumerate("abcdef")}, dict(zip("abcdef", [3, 2, 2, 1, 0, 0])),
                      second={"a": 1, "f": 2})
        small = _scored("q", {"a": 1, "b": 2}, {"a": 1, "b": 0})
        out = hl.keep_answers([big, small], 3, seed=1)
        kept = out[0].response_ids
        assert len(kept) == 3 and set(out[0].rank) == set(out[0].extra["human_scores"]) == set(kept)
        assert set(out[0].extra["second_scores"]) <= set(kept) and out[1] is small
        assert [r.response_ids for r in hl.keep_answers([big], 3, seed=1)] == [kept]


def _write_human_file(path, records) -> None:
    """A compressed records file in the shipped shape (what data/real/writingpref holds)."""
    with lzma.open(path, "wt", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r.to_json(), ensure_ascii=False) + "\n")


class TestOpenData:
    def test_reads_splits_and_names_its_sources(self, tmp_path):
        """A synthetic .jsonl.xz in the shipped shape is read (first N prompts), split into halves, and the source
        names it with its SHA-256 and attribution, and the preference file with its labels; prose values are counts."""
        from types import SimpleNamespace

        from cheems_lib.publishing.provenance import sha256

        recs = [_scored(f"p{i}", {"a": 10 + i, "b": 20, "c": 5}, {"a": i % 4, "b": 2, "c": 0}, tag=f"t{i % 3}")
                for i in range(14)]
        path = tmp_path / "human.jsonl.xz"
        _write_human_file(path, recs)
        pref = tmp_path / "cheems_preference.jsonl"
        pref.write_text("", encoding="utf-8")
        world = SimpleNamespace(preference=[recs[0]], layout=SimpleNamespace(paths={"preference": pref}),
                                file_labels=lambda key: "model-generated")
        data = hl.open_data(world, str(path), prompts=12, seed=0)
        assert len(data.records) == 12 and len(data.train) + len(data.held_tagged) == 12
        assert all(r.category is None for r in data.held) and data.held_tagged[0].category is not None
        source = data.source(range(3), "fallback")
        assert f"sha256 {sha256(path)[:12]} (human scores: {hl.ATTRIBUTION})" in source
        assert source.startswith("data: ") and "(labels: model-generated); training seeds 0-2" in source
        values = data.prose_values()
        assert (values["n_prompts"], values["n_answers"], values["n_tags"], values["max_per_tag"]) == (12, 36, 3, 4)
        won, unequal = human_length_preference.longer_wins(data.records)
        assert values["n_equal_length"] == values["n_pairs"] - unequal.sum()
        assert values["share_longer_unequal"] == f"{won.sum() / unequal.sum():.4f}"
        assert values["share_longer_all"] == f"{won.sum() / values['n_pairs']:.4f}"
        split = hl.split_table(data)
        assert split["prompts"].sum() == 12 and (split["training half"] + split["held-out half"]).sum() == 12

    def test_missing_file(self, tmp_path):
        """A missing human file reads as None: its claims' reason names it, the page says what was skipped."""
        from types import SimpleNamespace

        world = SimpleNamespace(preference=None, layout=None, file_labels=lambda key: "")
        data = hl.open_data(world, str(tmp_path / "none.jsonl.xz"))
        assert data.records is None and data.source([0], "fallback") == "fallback"
        assert "none.jsonl.xz" in data.needs and data.notes()[0].startswith("*Skipped:")
        assert hl.split_table(data) is None


class TestCheckScores:
    """A bad human file stops the chapter with one line naming the file, the line and the fix, never silent numbers."""

    def _write(self, path, rows) -> str:
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        return str(path)

    def _row(self, pid="p1", **fields):
        row = {"id": pid, "input": "写一首诗", "responses": [{"id": "a", "content": "长" * 9}, {"id": "b", "content": "短"}]}
        return row | fields

    def _error(self, tmp_path, rows, name="human.jsonl"):
        from types import SimpleNamespace

        from cheems_lib.input_files import DataError

        world = SimpleNamespace(preference=None, layout=None, file_labels=lambda key: "")
        path = self._write(tmp_path / name, rows)
        with pytest.raises(DataError) as err:
            hl.open_data(world, path)
        return path, str(err.value)

    def test_annotations_only_file_without_scores(self, tmp_path):
        """A file of annotations only (ranked on read with Algorithm 1) but no human scores: an error on its first
        record's line, not zero pairs and zero statistics."""
        rows = [self._row("p1", annotations=[["a", "b", "1"]]), self._row("p2", annotations=[["a", "b", "2"]])]
        path, msg = self._error(tmp_path, rows)
        assert msg.startswith(f"{path}:1: prompt \"p1\" has no \"human_scores\" object") and "(fix: " in msg
        assert "\n" not in msg

    def test_ranked_file_without_scores_and_bad_values(self, tmp_path):
        """A ranked file without human_scores (the Best-of-N would KeyError), a score that is not an integer 0-3, a
        response left unscored, and second_scores naming an unknown response: each names its line."""
        good = self._row("p1", rank={"a": 0, "b": 1}, human_scores={"a": 3, "b": 1})
        cases = [({"rank": {"a": 0, "b": 1}}, 'has no "human_scores" object'),
                 ({"rank": {"a": 0, "b": 1}, "human_scores": {"a": 3, "b": 1.5}}, '"human_scores" 1.5 for response "b", '
                                                                                 "not an integer 0-3"),
                 ({"rank": {"a": 0, "b": 1}, "human_scores": {"a": 4, "b": 1}}, "not an integer 0-3"),
                 ({"rank": {"a": 0, "b": 1}, "human_scores": {"a": True, "b": 1}}, "not an integer 0-3"),
                 ({"rank": {"a": 0, "b": 1}, "human_scores": {"a": 3}}, 'has no "human_scores" for response "b"'),
                 ({"rank": {"a": 0, "b": 1}, "human_scores": {"a": 3, "b": 1, "c": 0}}, '"c", which is not one of'),
                 ({"rank": {"a": 0, "b": 1}, "human_scores": {"a": 3, "b": 1}, "second_scores": {"z": 2}},
                  '"second_scores" for "z", which is not one of'),
                 ({"rank": {"a": 0, "b": 1}, "human_scores": {"a": 3, "b": 1}, "second_scores": {"a": "2"}},
                  '"second_scores" "2" for response "a"'),
                 ({"rank": {"a": 1, "b": 0}, "human_scores": {"a": 3, "b": 1}}, "otherwise than their human scores"),
                 ({"rank": {"a": 0, "b": 0}, "human_scores": {"a": 3, "b": 1}}, "otherwise than their human scores")]
        for k, (fields, says) in enumerate(cases):
            path, msg = self._error(tmp_path, [good, self._row("p2", **fields)], name=f"h{k}.jsonl")
            assert msg.startswith(f"{path}:2: prompt \"p2\" ") and says in msg and "(fix: " in msg, (fields, msg)

    def test_a_good_file_passes_and_second_scores_may_be_partial(self, tmp_path):
        """Scores for every response, rank in their order (ties tied), second scores for some responses only: read."""
        from types import SimpleNamespace

        world = SimpleNamespace(preference=None, layout=None, file_labels=lambda key: "")
        rows = [self._row("p1", rank={"a": 0, "b": 0}, human_scores={"a": 2, "b": 2}, second_scores={"b": 0}),
                self._row("p2", rank={"a": 0, "b": 1}, human_scores={"a": 3, "b": 0})]
        data = hl.open_data(world, self._write(tmp_path / "ok.jsonl", rows))
        assert len(data.records) == 2 and not data.reading

    @pytest.mark.skipif(not HUMAN_FILE.exists(), reason="data/real/writingpref is not in this checkout")
    def test_the_shipped_file_passes(self):
        from cheems_lib.world_files import read_ranked

        hl.check_scores(read_ranked(HUMAN_FILE), HUMAN_FILE)


class TestPreferenceLabels:
    """The preference file's labels are named as the world states them: model labels only when the world says so."""

    def _data(self, tmp_path, labels, content):
        pref = tmp_path / "cheems_preference.jsonl"
        pref.write_text("", encoding="utf-8")
        rec = _scored("d", {"x": 1, "y": 2}, {"x": 1, "y": 0})
        return hl.HumanData("x", None, [], [], [rec], [pref], labels, hl.preference_name(labels, content), content)

    def test_data_real_manifest_says_model_labels(self, tmp_path):
        data = self._data(tmp_path, "model-generated", "DPO-zh chosen/rejected pairs (DPO-En-Zh-20k lineage)")
        assert data.preference_name == "DPO-zh (model labels)" and data.model_labelled and data.dpo
        assert data.labels_text == "model labels, not human labels: model-generated"
        assert data.conditions() == {"human": False, "preference": True, "pref-model": True, "dpo": True}
        assert data.notes()[1].startswith("Model labels, not human labels: ")
        assert data.transfer_words()["their_prompts"] == "DPO-zh's general and medical questions"

    @pytest.mark.parametrize("labels", ["labellers of the test", "the simulator's annotators", "unknown labels",
                                        "trained annotators"])
    def test_other_worlds_are_never_called_model_or_dpo(self, tmp_path, labels):
        """A release folder, a simulated world, a folder without manifest: neither DPO-zh nor 'model labels'."""
        data = self._data(tmp_path, labels, None)
        words = " ".join([data.preference_name, data.labels_text, *data.transfer_words().values(), data.notes()[1]])
        assert not data.model_labelled and not data.dpo and "DPO-zh" not in words and "model labels" not in words
        assert data.conditions()["pref-model"] is False and data.conditions()["dpo"] is False

    def test_no_preference_file(self):
        data = hl.HumanData("x", None, [], [], None, [], "")
        assert data.labels_text == "no preference file" and data.notes()[1].startswith("*Skipped:")
        assert data.conditions()["preference"] is False
