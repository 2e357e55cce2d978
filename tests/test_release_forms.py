"""Every form the official release files ship in (spec §6b), read by the one reader of every chapter and command.

The matrix of :func:`conftest.release_folder`: the preference file as flat pairs, as ranked records or as records with
raw annotations only; the benchmark files with ``rank`` or annotations only; with or without a ``data/`` level; any
subset of the files; categories outside the paper's eight, 2 to 20 responses per prompt, ties, a very long text. For
each: the layout is detected, every record comes back ranked (Algorithm 1 on read where it came without ``rank``, the
conflicts counted and shown under the data's name), the human/GPT split survives, and each chapter's data needs
(what :func:`cheems_lib.analyses.world_folder.open_world` gives) are met. Library level: seconds, no model is trained.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from cheems_lib.analyses.world_folder import open_world
from cheems_lib.conflicts import conflict_stats, resolve
from cheems_lib.records import md5, strict_pairs, to_pairs
from cheems_lib.world_files import detect_layout
from conftest import BENCH_FORMS, OTHER_LABELS, PREFERENCE_FORMS, release_folder

GPT = 40  # GPT-subset records taken from the smoke world: enough for every check, small enough to read at once
PAPER_CATEGORIES = {"理解", "知识", "推理", "数学", "代码", "创意写作", "复杂指令", "安全"}


def _source(smoke_dir, rel, n=None):
    lines = (smoke_dir / rel).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[:n]]


def _expected_preference(smoke_dir, form):
    """(human, gpt) record counts the release's preference file gives: one per record, or, for flat pairs, one per
    distinct prompt text of the subset (flat lines are grouped by subset and prompt text); the odd records add 3 each."""
    human, gpt = _source(smoke_dir, "cheems_preference/human.jsonl"), _source(smoke_dir, "cheems_preference/gpt.jsonl", GPT)
    if form == "flat":
        return len({r["input"] for r in human}) + 3, len({r["input"] for r in gpt}) + 3
    return len(human) + 3, len(gpt) + 3


@pytest.mark.parametrize("data_level", [False, True], ids=["top", "data"])
@pytest.mark.parametrize("bench", BENCH_FORMS)
@pytest.mark.parametrize("preference", PREFERENCE_FORMS)
def test_every_form_gives_every_chapter_ranked_records(smoke_dir, tmp_path, preference, bench, data_level):
    """The whole release in one form: detected, every record ranked (given ranks kept, missing ones Algorithm 1's),
    the human/GPT split and the odd records intact, the resolution and skipped labels reported, and each
    chapter's data needs met."""
    from cheems_lib.analyses import data_statistics, transfer
    from cheems_lib.analyses.experiments import data_ladder, leaderboard_family
    from cheems_lib.world.simulation import length_stats

    out = release_folder(smoke_dir, tmp_path / "r", preference=preference, bench=bench, data_level=data_level, odd=True,
                         gpt_prompts=GPT)
    lay = detect_layout(out)
    assert lay.kind == "release" and lay.found == ("open", "human", "preference")
    assert all((p.relative_to(out).parts[0] == "data") == data_level for p in lay.paths.values())
    world = open_world(str(out))
    assert set(world.bench) == {"open", "human"} and world.conditions["pref-split"]

    # every record ranked: a given rank is kept as it is, a missing one is Algorithm 1's on the record's annotations
    given = {r["id"]: r["rank"] for rel in ("cheems_bench/open.jsonl", "cheems_bench/human.jsonl")
             for r in _source(smoke_dir, rel)}
    for key, recs in world.files.items():
        for rec in recs:
            assert rec.rank is not None and set(rec.rank) <= set(rec.response_ids), (key, rec.id)
            strict_pairs(rec.rank, rec.response_ids)  # where the data chapter failed on flat pairs
            if (key.startswith("cheems_bench") and bench == "annotations") or (key.startswith("cheems_preference")
                                                                                 and preference != "ranked"):
                assert rec.rank == resolve(rec.response_ids, rec.annotations), (key, rec.id)
            elif rec.id in given:
                assert rec.rank == given[rec.id]

    # the human/GPT split survives every form, flat pairs included; prompt ids stay distinct across the subsets
    n_human, n_gpt = _expected_preference(smoke_dir, preference)
    assert (len(world.human), len(world.gpt())) == (n_human, n_gpt)
    assert {r.extra["subset"] for r in world.human} == {"human"} and {r.extra["subset"] for r in world.gpt()} == {"gpt"}
    ids = [r.id for r in world.preference]
    assert len(set(ids)) == len(ids)
    both = {r.prompt for r in world.human} & {r.prompt for r in world.gpt()}
    assert both, "the smoke world has prompt texts in both subsets"
    if preference == "flat":  # such a text is a record in each subset, its md5 id marked with the subset
        assert {r.id for r in world.preference if r.prompt in both} == {f"{md5(t)}-{s}" for t in both for s in ("human", "gpt")}

    # ties, 2 and 20 responses, categories outside the paper's eight, a 20,000-character response
    for recs in (world.bench["open"], world.bench["human"], world.human, world.gpt()):
        sizes = {len(r.responses) for r in recs}
        assert {2, 20} <= sizes and max(sizes) >= 20
        assert {"方言", "其他"} <= {r.top_category for r in recs} - PAPER_CATEGORIES
        assert max(len(x.content) for r in recs for x in r.responses) >= 20_000
        two = next(r for r in recs if len(r.responses) == 2 and r.top_category == "方言")
        assert len(set(two.rank.values())) == 1  # its one annotation is a tie
    assert any(p == "0" for r in world.human for *_, p in r.annotations)

    # what reading did is counted and shown under the data's name, on every page
    unranked = {rel for rel in ("cheems_bench/open.jsonl", "cheems_bench/human.jsonl") if bench == "annotations"}
    if preference != "ranked":
        unranked.add("cheems_preference.jsonl")
    prefix = "data/" if data_level else ""
    assert {k for k, v in world.reading.items() if v.resolved} == {prefix + rel for rel in unranked}
    report = world.read_report
    n_bench = len(world.bench["open"]) + len(world.bench["human"])
    assert report.resolved == (n_bench if bench == "annotations" else 0) + (n_human + n_gpt if preference != "ranked" else 0)
    if unranked:
        stats = conflict_stats([r for k, recs in world.files.items() if _release_file(k) in unranked for r in recs])
        assert report.conflicted == stats["conflicted_prompts"] > 0  # the odd 20-response record holds a cycle
        assert report.unreproduced == stats["unreproduced_annotations"] and report.annotations == stats["annotations"]
        assert "ranked on read from their annotations with Algorithm 1" in world.about
    else:
        assert not world.reading and "Algorithm 1" not in world.about
    if preference == "flat":
        assert report.other_labels == {json.dumps(label): 2 for label in OTHER_LABELS}  # one line each per subset
        assert "were skipped: `preference` is a label other than 1, 2" in world.about
    else:
        assert not report.other_labels

    # each chapter's data needs
    table = data_statistics.table1(world.files)  # data
    assert {"cheemsbench_open_prompt", "cheemsbench_human_instruction", "cheemspreference_human",
            "cheemspreference_gpt"} <= set(table.columns)
    assert all(length_stats(recs)["comparisons_excluding_ties"] > 0 for recs in world.files.values())
    cats = data_statistics.category_counts(world.files)  # a bar of its own for each category outside the eight
    assert {"其他 (other 1)", "方言 (other 2)"} <= set(cats["category"]) and {"other 1", "other 2"} <= set(cats["gloss"])
    assert conflict_stats(world.bench_records)["prompts"] == n_bench  # conflicts, biases
    assert set(leaderboard_family(world, seeds=(0,), epochs=1).sets) == {  # evaluation, downstream
        "tiny · human subset", "tiny · GPT subset", "tiny-xs · human subset"}
    sets = transfer.analogues(world.files, prompts=0)  # transfer
    assert all(d["records"] for d in sets.values())
    assert sum(len(v) for v in data_ladder(world.preference, points=3).values()) > 0  # scaling
    assert next(to_pairs(world.human), None) is not None  # preference, sensitivity: the human subset trains


def _release_file(key: str) -> str:
    """The release file whose records load under ``key`` (a :func:`cheems_lib.world_files.load_world` key)."""
    return "cheems_preference.jsonl" if key.startswith("cheems_preference") else key


@pytest.mark.parametrize("preference", PREFERENCE_FORMS)
@pytest.mark.parametrize("files", [("open",), ("human", "preference"), ("preference",), ("open", "preference")],
                         ids=lambda f: "+".join(f))
def test_any_subset_of_the_files_in_any_form(smoke_dir, tmp_path, preference, files):
    """Any subset of the release's files, the preference file without a subset field: what is present loads, ranked;
    the unsplit preference file stays whole and trains the one-file models; the rest is absent, never a KeyError."""
    from cheems_lib.analyses.experiments import leaderboard_family

    out = release_folder(smoke_dir, tmp_path / "r", files=files, subset=False, preference=preference, bench="annotations",
                         gpt_prompts=GPT)
    world = open_world(str(out))
    assert detect_layout(out).found == tuple(n for n in ("open", "human", "preference") if n in files)
    assert set(world.bench) == {n for n in ("open", "human") if n in files}
    assert all(r.rank is not None for recs in world.files.values() for r in recs)
    if "preference" not in files:
        assert world.preference is None and not world.conditions["preference"]
        return
    assert world.human is None and world.gpt() is None and world.conditions == {**world.conditions, "pref-split": False}
    assert "cheems_preference.jsonl" in world.files and world.missing("Table 4", "cheems_preference/human.jsonl")
    n = len(world.preference)
    if preference == "flat":  # no subset: lines group by prompt text alone, over both subsets
        texts = {r["input"] for sub, k in (("human", None), ("gpt", GPT))
                 for r in _source(smoke_dir, f"cheems_preference/{sub}.jsonl", k)}
        assert n == len(texts)
    else:
        assert n == 30 + GPT
    assert set(leaderboard_family(world, seeds=(0,), epochs=1).sets) == {"tiny · preference set", "tiny-xs · preference set"}


def test_flat_pairs_split_by_a_human_ids_file(smoke_dir, tmp_path):
    """Flat pairs without a subset field split by ``human_ids`` (md5 of the prompt text, the official prompt id)."""
    out = release_folder(smoke_dir, tmp_path / "r", subset=False, preference="flat", gpt_prompts=GPT)
    human = {md5(r["input"]) for r in _source(smoke_dir, "cheems_preference/human.jsonl")}
    (tmp_path / "ids.txt").write_text("\n".join(sorted(human)) + "\n", encoding="utf-8")
    world = open_world(str(out), human_ids=str(tmp_path / "ids.txt"))
    assert {r.id for r in world.human} == human and world.gpt() and not {r.id for r in world.gpt()} & human


def test_flat_pairs_group_by_subset_and_prompt_and_count_other_labels(tmp_path):
    """The grouping key is (subset, prompt text): the same text in two subsets is two records with distinct ids; the
    official labels (1, 2, 0 as numbers or strings, and their spellings) are read; another string or number label is
    skipped and counted; a preference that is no label (missing, null, true) or a subset that is no string is an
    error naming the line."""
    from cheems_lib.input_files import DataError
    from cheems_lib.records import read_records
    from cheems_lib.read_report import ReadReport

    def lines(*rows):
        path = tmp_path / "p.jsonl"
        path.write_text("".join(json.dumps({"input": "q", "answer1": "x", "answer2": "y", **r}, ensure_ascii=False)
                                + "\n" for r in rows), encoding="utf-8")
        return path

    report = ReadReport()
    recs = read_records(lines({"preference": 1, "subset": "human"}, {"answer2": "z", "preference": "0", "subset": "human"},
                              {"preference": "2", "subset": "gpt"}, {"preference": "a", "input": "q2"},
                              {"preference": 3, "subset": "gpt"}, {"preference": "both bad", "subset": "gpt"}),
                        report=report)
    assert [(r.id, r.extra.get("subset"), [p for *_, p in r.annotations]) for r in recs] == [
        (f"{md5('q')}-human", "human", ["1", "0"]), (f"{md5('q')}-gpt", "gpt", ["2"]), (md5("q2"), None, ["1"])]
    assert report.other_labels == {"3": 1, '"both bad"': 1} and report.label_files == [str(tmp_path / "p.jsonl")]
    for bad, message in [({}, "preference null not understood"), ({"preference": True}, "preference true not understood"),
                         ({"preference": 1, "subset": 1}, "'subset' must be a string, got 1")]:
        with pytest.raises(DataError, match=f"p\\.jsonl:2: {re.escape(message)}"):
            read_records(lines({"preference": 1}, bad), report=ReadReport())


def test_a_record_with_neither_rank_nor_annotations_is_an_error_naming_its_line(tmp_path):
    """Nothing ranks a record without rank and without annotations: one line with the file, the line and the fix."""
    from cheems_lib.input_files import DataError

    (tmp_path / "cheems_bench").mkdir()
    rows = [{"id": "p", "input": "q", "responses": ["x", "y"], "annotations": [[md5("x"), md5("y"), "1"]]},
            {"id": "q", "input": "q2", "responses": ["x", "y"]}]
    (tmp_path / "cheems_bench/open.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(DataError, match=r"open\.jsonl:2: prompt \"q\" has no 'rank' and no 'annotations' to rank it "
                                        r"from \(fix: give its responses a 'rank', or the annotations"):
        open_world(str(tmp_path))


def test_a_flat_file_of_unknown_labels_only_is_an_error_for_a_command(tmp_path):
    """Every pair skipped for its label leaves a command nothing: an error with the count, not an empty success."""
    from cheems_lib.input_files import DataError
    from cheems_lib.records import read_files
    from cheems_lib.read_report import ReadReport

    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"input": "q", "answer1": "x", "answer2": "y", "preference": 3}) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"no pair with a preference of 1, 2 or 0 \(1 skipped for their label\)"):
        read_files([path], need_rank=True, report=ReadReport())
    with pytest.raises(DataError, match=r"p\.jsonl:1: preference 3 not understood"):  # no report: nothing would show it
        read_files([path])


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "cheems_lib.cli", *map(str, args)], capture_output=True, text=True)


def test_evaluate_reads_flat_pairs_and_annotations_only_and_says_what_it_resolved(smoke_dir, tmp_path):
    """``cheems evaluate`` on a flat-pairs file and an annotations-only file: exit 0, the same results as on their
    resolved copies (``cheems resolve``), and one line on stderr with the records resolved and their conflicts."""
    out = release_folder(smoke_dir, tmp_path / "r", preference="flat", bench="annotations", odd=True, gpt_prompts=GPT)
    data = [out / "cheems_bench/open.jsonl", out / "cheems_preference.jsonl"]
    scores = tmp_path / "s.jsonl"
    res = _cli("score", "--model", "baseline:longest", *[a for d in data for a in ("--data", d)], "-o", scores)
    assert res.returncode == 0, res.stderr
    res = _cli("evaluate", *[a for d in data for a in ("--data", d)], "--scores", scores, "--bootstrap", "0")
    assert res.returncode == 0, res.stderr
    notes = [line for line in res.stderr.splitlines() if "ranked on read" in line]
    assert len(notes) == 1 and notes[0].startswith("cheems: ") and "with Algorithm 1;" in notes[0]
    assert f"{data[0]} and {data[1]}" in notes[0] and "have a conflict" in notes[0]
    assert "flat pairs of" in res.stderr and "were skipped" in res.stderr
    result = json.loads(res.stdout)
    assert result["resolved_on_read"]["records"] > 0 and result["skipped_labels"] == {"3": 2, '"both bad"': 2}
    for d in data:  # the same numbers as on the file resolved first
        assert _cli("resolve", d, "-o", tmp_path / f"{d.stem}.jsonl").returncode == 0
    resolved = [tmp_path / f"{d.stem}.jsonl" for d in data]
    again = _cli("evaluate", *[a for d in resolved for a in ("--data", d)], "--scores", scores, "--bootstrap", "0")
    assert again.returncode == 0 and "ranked on read" not in again.stderr
    assert {k: result[k] for k in ("open", "cheems_preference", "overall")} == {
        k: json.loads(again.stdout)[k] for k in ("open", "cheems_preference", "overall")}


def test_train_reads_flat_pairs_and_says_what_it_resolved(smoke_dir, tmp_path):
    """``cheems train`` on the release's flat-pairs preference file (subset fields and all): it trains, says on stderr
    how many records it ranked with Algorithm 1, and counts them in its output."""
    out = release_folder(smoke_dir, tmp_path / "r", files=("preference",), preference="flat", gpt_prompts=8)
    res = _cli("train", "--data", out / "cheems_preference.jsonl", "--model", "tiny-xs", "--epochs", "1",
               "--max-length", "48", "--output", tmp_path / "rm")
    assert res.returncode == 0, res.stderr[-2000:]
    assert sum("ranked on read from their annotations with Algorithm 1" in line for line in res.stderr.splitlines()) == 1
    summary = json.loads(res.stdout)
    assert summary["data"]["prompts"] + summary["data"]["prompts_without_pairs"] == summary["resolved_on_read"]["records"]
