"""What reading did besides parsing: counted per file, added up over files, shown as sentences and JSON."""
from __future__ import annotations

from cheems_lib.read_report import ReadReport


class TestReadReport:
    def test_an_empty_report_is_false_and_says_nothing(self):
        """A report of files that were only parsed is falsy, with no sentence and no JSON."""
        report = ReadReport()
        assert not report and report.sentences() == [] and report.to_json() == {}

    def test_add_sums_counts_and_keeps_each_file_once(self):
        """Adding reports sums the counts by label and by file, and names each file once."""
        a, b = ReadReport(), ReadReport()
        a.count_resolved("x.jsonl", 2, {"conflicted_prompts": 1, "annotations": 5, "unreproduced_annotations": 1})
        a.count_label("x.jsonl", 3)
        b.count_label("x.jsonl", 3)
        b.count_unranked("y.jsonl", 4)
        b.count_unranked("y.jsonl", 0)
        total = ReadReport().add(a).add(b)
        assert total.to_json() == {
            "resolved_on_read": {"records": 2, "conflicted": 1, "annotations": 5, "unreproduced": 1},
            "skipped_labels": {"3": 2}, "unranked_responses": {"y.jsonl": 4}}
        assert total.label_files == ["x.jsonl"] and total.skipped_labels == 2 and total.unranked == 4

    def test_sentences_name_the_files_and_counts(self):
        """One sentence per kind of thing done, naming its files through ``name``."""
        report = ReadReport()
        report.count_resolved("a.jsonl", 1, {"conflicted_prompts": 0, "annotations": 1, "unreproduced_annotations": 0})
        report.count_label("b.jsonl", "both bad")
        first, second = report.sentences(name=lambda p: f"<{p}>")
        assert first.startswith("1 record of <a.jsonl> had no 'rank' and was ranked on read")
        assert second.startswith("1 flat pair of <b.jsonl> was skipped") and '("both bad": 1)' in second
