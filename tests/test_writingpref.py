"""WritingPreferenceBench zh: records ranked by the human scores, the deterministic xz file, and bad inputs."""
from __future__ import annotations

import json
import lzma

import pytest

from cheems_lib import real_data, writingpref
from cheems_lib.records import read_records
from test_real_data import _fake_writingpref, _sign, _WP_SCORES, needs_shared, REAL, run, SHARED, WP


def test_writingpref_records_are_ranked_by_the_human_scores(tmp_path):
    """One record per prompt in the agreed shape: model names as response ids (sorted), dense ranks from the
    scores/ files (3, 1, 1 -> 0, 1, 1), the raw and second scores kept; the responses files' own score fields
    are ignored; the "/" prompt is dropped and the missing answer counted."""
    recs, report = writingpref.read_writingpref(_fake_writingpref(tmp_path / "wp"))
    assert [r.to_json() for r in recs] == [
        {"id": "q1", "input": "写一首诗", "category": ["诗歌"],
         "responses": [{"id": "a", "content": "长长的诗句"}, {"id": "b", "content": "短诗"}, {"id": "c", "content": "诗"}],
         "rank": {"a": 0, "b": 1, "c": 1}, "human_scores": {"a": 3, "b": 1, "c": 1}, "second_scores": {"b": 1},
         "source": "writingpref-zh"},
        {"id": "q2", "input": "写一封信", "category": ["书信"],
         "responses": [{"id": "a", "content": "很长很长的信件"}, {"id": "b", "content": "一封长信"}],
         "rank": {"a": 1, "b": 0}, "human_scores": {"a": 1, "b": 2}, "second_scores": {"b": 3},
         "source": "writingpref-zh"}]
    assert report["dropped_prompts"]["count"] == 1 and report["dropped_prompts"]["question_ids"] == ["q3"]
    assert report["missing_answers"] == {"c": ["q2"]} and (report["prompts"], report["responses"]) == (2, 5)
    assert report["second_annotators"] == {"b": {"annotator": "ann", "prompts": 2, "exact_agreement": 1}}
    assert report["strict_pairs"] == 3 and report["higher_score_longer"] == round(2 / 3, 4)


def test_writingpref_xz_file_is_deterministic_and_reads_back(tmp_path):
    """The xz file is the same bytes when written twice and read_records reads it like plain JSONL."""
    recs, _ = writingpref.read_writingpref(_fake_writingpref(tmp_path / "wp"))
    for name in ("one.jsonl.xz", "two.jsonl.xz"):
        real_data.write_xz_records(recs, tmp_path / name)
    assert (tmp_path / "one.jsonl.xz").read_bytes() == (tmp_path / "two.jsonl.xz").read_bytes()
    assert [r.to_json() for r in read_records(tmp_path / "one.jsonl.xz")] == [r.to_json() for r in recs]


def _break_writingpref(folder, what):
    if what == "scale":
        _fake_writingpref(folder, scores={**_WP_SCORES, "a": {"q1": 4, "q2": 1, "q3": 0}})
    elif what == "unknown":
        _fake_writingpref(folder, scores={**_WP_SCORES, "c": {"q1": 1, "q2": 1, "q3": 2}})
    elif what == "unscored":
        _fake_writingpref(folder, scores={**_WP_SCORES, "a": {"q1": 3, "q3": 0}})
    elif what == "second":
        _fake_writingpref(folder, second={"q1": 1, "q9": 2})
    else:
        _fake_writingpref(folder)
    if what == "prompt":
        rows = json.loads((folder / "responses" / "b.json").read_text("utf-8"))
        rows[0]["prompt"] = "别的"
        (folder / "responses" / "b.json").write_text(json.dumps(rows, ensure_ascii=False, indent=1), "utf-8")
    elif what == "name":
        (folder / "rescored" / "b.ann.json").rename(folder / "rescored" / "zz.ann.json")
    elif what == "missing":
        (folder / "scores" / "c.json").unlink()
    elif what == "tags":
        rows = json.loads((folder / "responses" / "a.json").read_text("utf-8"))
        rows[1]["__internal_tags__"] = 7
        (folder / "responses" / "a.json").write_text(json.dumps(rows, ensure_ascii=False, indent=1), "utf-8")
    return folder


def _element_line(path, k):
    """The line where element ``k`` of a JSON list written with indent=1 starts."""
    return [n for n, line in enumerate(path.read_text("utf-8").splitlines(), 1) if line == " {"][k]


@pytest.mark.parametrize("what, file, element, message", [
    ("scale", "scores/a.json", 0, "score 4 is not on the 0-3 scale"),
    ("unknown", "scores/c.json", 1, "question_id q2 has no answer in the model's responses file"),
    ("unscored", "scores/a.json", None, "no human score for 1 answer(s), e.g. question_id q2"),
    ("second", "rescored/b.ann.json", 1, "question_id q9 has no answer in the model's responses file"),
    ("prompt", "responses/b.json", 0, "question q1's prompt or genre tag differs from"),
    ("name", "rescored/zz.ann.json", None, "not named rescored/<model>.<annotator>.json"),
    ("missing", "scores/c.json", None, "missing"),
    ("tags", "responses/a.json", 1, "'__internal_tags__' must be a list of genre tags, got 7"),
])
def test_bad_writingpref_input_is_one_line_and_writes_nothing(tmp_path, what, file, element, message):
    """Each kind of bad or misaligned writingpref file exits 2 naming the file (and the line of the bad element)
    with a fix; nothing is written."""
    folder = _break_writingpref(tmp_path / "writingpref-zh", what)
    where = file if element is None else f"{file}:{_element_line(folder / file, element)}"
    out = run("import", "writingpref", folder, "-o", tmp_path / "out")
    assert out.returncode == 2 and f"{where}: {message}" in out.stderr, out.stderr
    assert "(fix:" in out.stderr and len(out.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


@needs_shared
def test_writingpref_hand_counts():
    """Counted by hand from the JSON files: 204 prompts, 3 of them just "/", 201 left with 3,818 answers (19 models,
    gemini-2.5-pro lacks one); 22,048 strictly ordered pairs by the scores/ files, the higher-scored answer the longer
    in 56.5%; the second scorings agree exactly on 98, 178, 129, 81, 103 of the 201. The shipped file holds exactly
    these answers and scores, with ranks ordering answers as the scores do."""
    folder = SHARED / "writingpref-zh"
    load = lambda sub, name: json.loads((folder / sub / name).read_text(encoding="utf-8"))  # noqa: E731
    models = sorted(p.stem for p in (folder / "responses").glob("*.json"))
    answers = {m: {str(r["question_id"]): r for r in load("responses", f"{m}.json")} for m in models}
    scores = {m: {str(r["question_id"]): r["score"] for r in load("scores", f"{m}.json")} for m in models}
    prompts = {q: r["prompt"] for m in models for q, r in answers[m].items()}
    kept = {q for q, text in prompts.items() if text != "/"}
    assert (len(models), len(prompts), len(kept)) == (19, 204, 201)
    assert sum(q in answers[m] for m in models for q in kept) == 3818
    assert [m for m in models if set(answers[m]) != set(prompts)] == ["gemini-2.5-pro"]
    pairs = longer = 0
    for q in kept:
        have = [m for m in models if q in answers[m]]
        for a in have:
            for b in have:
                if scores[a][q] > scores[b][q]:
                    pairs += 1
                    longer += len(answers[a][q]["predict0"]) > len(answers[b][q]["predict0"])
    assert pairs == 22048 and round(100 * longer / pairs, 1) == 56.5
    second = {p.name.split(".json")[0].rsplit(".", 1)[0]: {str(r["question_id"]): r["score"] for r in
              json.loads(p.read_text(encoding="utf-8"))} for p in (folder / "rescored").glob("*.json")}
    exact = {m: sum(second[m][q] == scores[m][q] for q in kept) for m in sorted(second)}
    assert exact == {"doubao-1.5-pro": 98, "gemini-2.0-flash": 178, "gemini-2.5-flash-nothinking": 129,
                     "gpt-4.1-mini": 81, "o4-mini": 103}
    entry = json.loads((REAL / "manifest.json").read_text(encoding="utf-8"))["files"][real_data.WRITINGPREF_FILE]
    assert {m: v["exact_agreement"] for m, v in entry["second_annotators"].items()} == exact
    assert (entry["strict_pairs"], entry["dropped_prompts"]["count"]) == (22048, 3)
    assert entry["missing_answers"] == {"gemini-2.5-pro": sorted(kept - set(answers["gemini-2.5-pro"]))}
    with lzma.open(WP, "rt", encoding="utf-8") as fh:
        lines = [json.loads(line) for line in fh]
    assert {line["id"] for line in lines} == kept and len(lines) == 201
    for line in lines:
        q, ids = line["id"], [r["id"] for r in line["responses"]]
        assert ids == sorted(m for m in models if q in answers[m]) and line["input"] == prompts[q]
        assert all(r["content"] == answers[r["id"]][q]["predict0"] for r in line["responses"])
        assert line["human_scores"] == {m: scores[m][q] for m in ids}
        assert line["second_scores"] == {m: second[m][q] for m in sorted(second) if m in ids}
        assert line["category"] == answers[ids[0]][q]["__internal_tags__"] and line["source"] == "writingpref-zh"
        ranks = sorted(set(line["rank"].values()))
        assert ranks == list(range(len(ranks)))  # dense, 0 = best
        assert all(_sign(line["rank"][a] - line["rank"][b]) == _sign(scores[b][q] - scores[a][q])
                   for a in ids for b in ids)
