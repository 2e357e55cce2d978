"""A judge's verdicts of both orders, kept beside its scores (judging.verdicts_path): one line per pair, streamed,
resumed, rescored and merged as the score file is; read back by read_verdicts, summed up by flip_summary."""
from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
from dataclasses import replace
from itertools import combinations
from types import SimpleNamespace

import pytest

from cheems_lib import outputs
from cheems_lib.input_files import DataError
from cheems_lib.models import scoring
from cheems_lib.models.judging import (flip_summary, judge_records, judge_scores, load_judge, PairVerdict,
                                       read_verdicts, verdict_lines, verdicts_path)
from cheems_lib.models.score_output import model_fingerprint, score_settings, score_to_file, ScoreOutput
from cheems_lib.records import read_records, write_records
from cheems_lib.score_file import read_scores
from conftest import free_port, make_record, one_launch_at_a_time, ROOT

RUN = """
import json, sys

from cheems_lib.models import scoring
from cheems_lib.models.score_output import score_settings, score_to_file
from cheems_lib.records import read_records

judge, data, out = sys.argv[1:4]
scoring.JUDGE_CHUNK = 2
records = read_records(data)
report = score_to_file(records, out, score_settings(judge, judge=True),
                       lambda state: scoring.make_scorer(judge, state, judge=True, batch_size=1), inputs=[data])
if report is not None:
    print(json.dumps(report))
"""
"""``python RUN JUDGE DATA OUT``: ``cheems score --judge`` without the command line, two records a chunk."""


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Six records (one cut to three responses) and a tiny judge saved as a checkpoint, its weights drawn wide
    (initializer_range 0.3) so that some pairs keep their verdict when swapped and some flip; a tiny reward model."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from cheems_lib.models.judging import CRITERIA, JUDGE_TEMPLATE
    from cheems_lib.models.reward_model import build_tiny, train_tokenizer
    from cheems_lib.world.simulation import WorldConfig, build_world

    d = tmp_path_factory.mktemp("verdicts")
    recs = build_world(WorldConfig(size="smoke", seed=1)).files["cheems_bench/human.jsonl"][:7]
    short = recs[3]
    short.responses = short.responses[:3]
    short.rank = {x.id: short.rank[x.id] for x in short.responses}
    short.annotations = [x for x in short.annotations if x[0] in short.rank and x[1] in short.rank]
    texts = [JUDGE_TEMPLATE, *CRITERIA.values(),
             *(t for r in recs for t in [r.prompt, *(x.content for x in r.responses)])]
    tok = train_tokenizer(texts, vocab_size=800)
    torch.manual_seed(0)
    Qwen2ForCausalLM(Qwen2Config(vocab_size=len(tok), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                 num_key_value_heads=1, intermediate_size=64, pad_token_id=tok.pad_token_id,
                                 max_position_embeddings=4096, initializer_range=0.3)).save_pretrained(d / "judge")
    tok.save_pretrained(d / "judge")
    build_tiny("tiny-xs", tok).save_pretrained(d / "rm")
    tok.save_pretrained(d / "rm")
    return SimpleNamespace(records=recs[:6], spare=recs[6], judge=d / "judge", rm=d / "rm")


def _judge(world, records, out) -> dict:
    """``cheems score --judge`` of ``records`` into ``out`` (one prompt a forward: the same floats in any chunk)."""
    path = str(world.judge)
    return score_to_file(records, out, score_settings(path, judge=True),
                         lambda state: scoring.make_scorer(path, state, judge=True, batch_size=1))


def _pairs(records) -> list[tuple[str, str, str]]:
    return [(r.id, a, b) for r in records for a, b in combinations(r.response_ids, 2)]


def _files(out) -> dict[str, bytes]:
    """The files named after ``out`` beside it, by suffix."""
    return {p.name[len(out.name):]: p.read_bytes() for p in out.parent.iterdir() if p.name.startswith(out.name)}


class _Stopped(Exception):
    """Stands for a kill at an interrupt point, in this process."""


def _stop_at(monkeypatch, module, point: str, n: int) -> None:
    """Raise :class:`_Stopped` the ``n``-th time ``module`` reaches the interrupt point ``point``."""
    seen = []

    def stop(name):
        if name == point:
            seen.append(name)
            if len(seen) == n:
                raise _Stopped(f"{point}={n}")
    monkeypatch.setattr(module, "interrupt_point", stop)


def test_a_judge_run_keeps_one_verdict_line_per_pair_beside_its_scores(world, tmp_path):
    """One line per pair of every record, in record order, whose letters are the likeliest of each order and whose
    flips are the pairs position_consistency counts as inconsistent; the scores are the verdicts' credit; the report
    names the file; flip_summary reads it back over the ranked pairs."""
    recs = copy.deepcopy(world.records)
    out = tmp_path / "s.jsonl"
    report = _judge(world, recs, out)
    path = verdicts_path(out)
    assert path == tmp_path / "s.jsonl.verdicts.jsonl" and report["verdicts"] == str(path)
    assert sorted(_files(out)) == ["", ".cheems.json", ".verdicts.jsonl"]  # no partial file left
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [(x["prompt_id"], x["a"], x["b"]) for x in rows] == _pairs(recs)
    assert report["pairs_judged"] == len(rows) == 53 and report["verdicts_missing"] == 0
    for x in rows:
        likeliest = ["ABC"[x[order].index(max(x[order]))] for order in ("ab", "ba")]
        assert [x["verdict_ab"], x["verdict_ba"]] == likeliest
        assert x["flips"] == ((x["verdict_ab"], x["verdict_ba"]) not in {("A", "B"), ("B", "A"), ("C", "C")})
    flips = sum(x["flips"] for x in rows)
    assert 0 < flips < len(rows) and report["position_consistency"] == pytest.approx(1 - flips / len(rows))
    model, tok = load_judge(world.judge)  # the library on the same records
    ref = judge_records(model, tok, recs, batch_size=1)
    assert [(v.prompt_id, v.a, v.b, v.ab, v.ba) for v in read_verdicts(path)] == [(v.prompt_id, v.a, v.b, v.ab, v.ba)
                                                                                 for v in ref]
    credit, scores = judge_scores(read_verdicts(path)), read_scores(out)
    assert list(scores) == [(r.id, x.id) for r in recs for x in r.responses]
    assert all(scores[k] == pytest.approx(credit[k], abs=1e-9) for k in scores)
    assert flip_summary(out, recs) == {"pairs": 53, "flips": flips, "flip_share": flips / 53,
                                       "consistency": 1 - flips / 53, "pairs_missing": 0}


def _line(pid, a, b, ab, ba, first, second, flips) -> str:
    return json.dumps({"prompt_id": pid, "a": a, "b": b, "ab": ab, "ba": ba, "verdict_ab": first, "verdict_ba": second,
                       "flips": flips})


def test_flip_summary_counts_a_hand_made_verdicts_file(tmp_path):
    """By hand, over every pair the judge saw (as position_consistency counts them): p1's (a, b) keeps its verdict
    (A then B), (a, c) flips (A twice), (b, c) is stored as (c, b) and keeps C, (a, d) flips, (b, d) and (c, d) have
    no line. p2's one pair flips (B twice), p3's too, p4's has no line, and "zz" is not in the records. 6 pairs, 4
    flips, 3 missing. No file beside the scores: None; through a link to the scores: the file beside the scores it
    points to."""
    recs = [make_record("p1", "abcd", rank={"a": 0, "b": 1, "c": 1}), make_record("p2", "xy", rank={"x": 0, "y": 1}),
            make_record("p3", "uv"), make_record("p4", "mn", rank={"m": 0, "n": 0})]
    out = tmp_path / "s.jsonl"
    out.write_text("")
    assert flip_summary(out, recs) is None
    lines = [_line("p1", "a", "b", [.7, .2, .1], [.1, .8, .1], "A", "B", False),
             _line("p1", "a", "c", [.6, .3, .1], [.5, .4, .1], "A", "A", True),
             _line("p1", "c", "b", [.1, .1, .8], [.2, .2, .6], "C", "C", False),
             _line("p1", "a", "d", [.6, .3, .1], [.5, .4, .1], "A", "A", True),
             _line("p2", "x", "y", [.2, .5, .3], [.2, .5, .3], "B", "B", True),
             _line("p3", "u", "v", [.2, .5, .3], [.2, .5, .3], "B", "B", True),
             _line("zz", "u", "v", [.2, .5, .3], [.2, .5, .3], "B", "B", True)]
    (tmp_path / "s.jsonl.verdicts.jsonl").write_text("\n".join(lines) + "\n")
    want = {"pairs": 6, "flips": 4, "flip_share": 4 / 6, "consistency": 1 - 4 / 6, "pairs_missing": 3}
    assert flip_summary(out, recs) == want
    link = tmp_path / "elsewhere" / "link.jsonl"
    link.parent.mkdir()
    link.symlink_to(out)
    assert flip_summary(link, recs) == want
    assert flip_summary(out, recs[2:]) == {"pairs": 1, "flips": 1, "flip_share": 1.0, "consistency": 0.0,
                                           "pairs_missing": 1}
    assert flip_summary(out, recs[3:]) == {"pairs": 0, "flips": 0, "flip_share": None, "consistency": None,
                                           "pairs_missing": 1}


def test_verdicts_that_do_not_give_the_scores_beside_them_are_refused(tmp_path):
    """p2's verdicts give x and y one half each (P(A) .2 + half of P(C) .3 in the first order, P(B) .5 + .15 in the
    second): with those scores the file is read; with a score file it did not produce (x 0.9), one line names it."""
    recs = [make_record("p2", "xy", rank={"x": 0, "y": 1})]
    out = tmp_path / "s.jsonl"
    out.write_text("")
    (tmp_path / "s.jsonl.verdicts.jsonl").write_text(_line("p2", "x", "y", [.2, .5, .3], [.2, .5, .3], "B", "B", True)
                                                     + "\n")
    assert flip_summary(out, recs, {("p2", "x"): 0.5, ("p2", "y"): 0.5})["flips"] == 1
    with pytest.raises(DataError) as e:
        flip_summary(out, recs, {("p2", "x"): 0.9, ("p2", "y"): 0.1})
    assert str(e.value).startswith(f"{tmp_path / 's.jsonl.verdicts.jsonl'}: its verdicts of prompt \"p2\"")
    assert "\n" not in str(e.value)


GOOD = _line("p", "a", "b", [.7, .2, .1], [.1, .8, .1], "A", "B", False)


@pytest.mark.parametrize("bad, problem", [
    ('{"prompt_id": "p", "a": "a"', "malformed JSON"),
    ('{"prompt_id": "p", "a": "a", "b": "c", "ab": [0.7, 0.2, 0.1]}', 'expected {"prompt_id", "a", "b", "ab"'),
    ('["p", "a", "c"]', 'expected {"prompt_id"'),
    (_line("p", "a", "c", [.5, .5], [.1, .8, .1], "A", "B", False), "ab [0.5, 0.5] is not three finite numbers"),
    (_line("p", "a", "c", [.7, .2, .1], [.1, "x", .1], "A", "B", False), 'ba [0.1, "x", 0.1] is not three finite'),
    (_line("p", "a", "c", [.7, .2, .1], [.1, .8, .1], "B", "B", False), "are not what ab and ba say"),
    (_line("p", "a", "c", [.7, .2, .1], [.1, .8, .1], "A", "B", True), "are not what ab and ba say"),
    (_line("p", "a", "c", [.7, .2, .1], [.1, .8, .1], "A", "B", 0), "are not what ab and ba say"),
    (GOOD, 'second verdict for prompt "p" pair "a"/"b" (fix: keep one line per pair (first at line 1))'),
])
def test_a_malformed_verdict_line_is_one_error_naming_the_file_and_line(tmp_path, bad, problem):
    """read_verdicts (and flip_summary through it) stops at the first bad line with one line: file:line: what."""
    out = tmp_path / "s.jsonl"
    path = verdicts_path(out)
    path.write_text(GOOD + "\n" + bad + "\n")
    recs = [make_record("p", "ab", rank={"a": 0, "b": 1})]
    for read in (lambda: read_verdicts(path), lambda: flip_summary(out, recs)):
        with pytest.raises(DataError) as e:
            read()
        assert str(e.value).startswith(f"{path}:2: ") and problem in str(e.value) and "\n" not in str(e.value)


def test_a_judge_run_killed_mid_way_resumes_to_the_uninterrupted_verdicts(world, tmp_path, monkeypatch):
    """SIGKILL after the second chunk's scores (score.batch=2, two records a chunk): the verdicts of the two chunks
    are in OUT.verdicts.jsonl.partial and nothing is finished; the rerun judges only the rest and leaves the files
    of an uninterrupted run, byte for byte, and no partial file."""
    data = tmp_path / "d.jsonl"
    write_records(world.records, data)
    recs = read_records(data)
    monkeypatch.setattr(scoring, "JUDGE_CHUNK", 2)
    full = tmp_path / "full" / "s.jsonl"
    _judge(world, recs, full)
    (tmp_path / "run.py").write_text(RUN)
    out = tmp_path / "cut" / "s.jsonl"
    env = {**os.environ, "CHEEMS_TEST_INTERRUPT": "score.batch=2:SIGKILL"}
    proc = subprocess.run([sys.executable, str(tmp_path / "run.py"), str(world.judge), str(data), str(out)], env=env,
                          capture_output=True, text=True, start_new_session=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    partial = out.with_name("s.jsonl.verdicts.jsonl.partial")
    assert not out.exists() and not verdicts_path(out).exists()
    assert partial.read_text().splitlines() == verdicts_path(full).read_text().splitlines()[:10 + 10 + 10 + 3]
    report = _judge(world, recs, out)
    assert report["skipped"] == 18 and report["pairs_judged"] == 20 and report["verdicts_missing"] == 0
    assert _files(out) == _files(full) and not partial.exists()


def test_verdicts_left_without_their_scores_are_judged_again_and_written_once(world, tmp_path):
    """A kill between a chunk's verdicts and its scores leaves verdict lines of unscored records: the rerun judges
    those records again, and the file keeps one line per pair (the later), as a run from scratch does."""
    recs = copy.deepcopy(world.records)
    fresh = tmp_path / "fresh" / "s.jsonl"
    _judge(world, recs, fresh)
    out = ScoreOutput(tmp_path / "s.jsonl", score_settings(str(world.judge), judge=True))
    out.check()
    out.start(recs, model_fingerprint(world.judge))
    model, tok = load_judge(world.judge)
    out.append({}, judge_records(model, tok, recs[:2], batch_size=4))  # no scores: the kill came in between
    report = _judge(world, recs, tmp_path / "s.jsonl")
    assert report["pairs_judged"] == 53 and report["skipped"] == 0
    assert _files(tmp_path / "s.jsonl") == _files(fresh)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_a_rerun_stopped_at_any_replace_ends_as_a_fresh_run(world, tmp_path, monkeypatch, n):
    """A rerun with one record's text changed and one record gone, stopped after its n-th file replace (1: the
    sidecar marking what is stale; 2: OUT; 3: the verdicts file; 4: the sidecar clearing the stale lists), then
    run again: the score file, the verdicts file and the sidecar are a fresh run's on the new data."""
    recs = copy.deepcopy(world.records)
    out = tmp_path / "s.jsonl"
    _judge(world, recs, out)
    recs[1].responses[0] = replace(recs[1].responses[0], content=recs[1].responses[0].content + " 再补充一句")
    del recs[4]
    _stop_at(monkeypatch, outputs, "atomic.replaced", n)
    with pytest.raises(_Stopped):
        _judge(world, recs, out)
    monkeypatch.setattr(outputs, "interrupt_point", lambda name: None)
    again = _judge(world, recs, out)
    assert again["verdicts_missing"] == 0
    fresh = tmp_path / "fresh" / "s.jsonl"
    _judge(world, recs, fresh)
    assert _files(out) == _files(fresh)


def test_a_rerun_with_changed_data_rejudges_changed_records_and_drops_removed_ones(world, tmp_path):
    """One record's text edited, one record removed, one added: the rerun judges the pairs of the edited and the
    added records only, drops the removed record's, and leaves a fresh run's verdicts file."""
    recs = copy.deepcopy(world.records)
    out = tmp_path / "s.jsonl"
    _judge(world, recs, out)
    before = {(v.prompt_id, v.a, v.b): v for v in read_verdicts(verdicts_path(out))}
    recs[2].responses[1] = replace(recs[2].responses[1], content=recs[2].responses[1].content + " 还有一点")
    removed = recs.pop(5)
    recs.append(copy.deepcopy(world.spare))
    report = _judge(world, recs, out)
    assert report["pairs_judged"] == 20 and report["rescored_stale"] == 5 and report["verdicts_missing"] == 0
    after = {(v.prompt_id, v.a, v.b): v for v in read_verdicts(verdicts_path(out))}
    assert list(after) == _pairs(recs) and not any(k[0] == removed.id for k in after)
    edited = recs[2].responses[1].id  # its pairs judge another text now; the record's other pairs, the same prompts
    assert [k for k in after if k in before and after[k] != before[k]] == [k for k in _pairs(recs[2:3]) if edited in k]
    fresh = tmp_path / "fresh" / "s.jsonl"
    _judge(world, recs, fresh)
    assert verdicts_path(out).read_bytes() == verdicts_path(fresh).read_bytes()


def test_scores_of_an_older_judge_run_without_verdicts_leave_an_incomplete_file_that_says_so(world, tmp_path):
    """A judge's score file from before verdicts were kept (its verdicts file deleted here): a rerun reuses every
    score, judges nothing, and writes a verdicts file without those pairs; the report's verdicts_missing and
    flip_summary's pairs_missing count them. A record rescored later gets its verdicts."""
    recs = copy.deepcopy(world.records)
    out = tmp_path / "s.jsonl"
    _judge(world, recs, out)
    verdicts_path(out).unlink()
    report = _judge(world, recs, out)
    assert report["pairs_judged"] == 0 and report["verdicts_missing"] == 53 and verdicts_path(out).read_bytes() == b""
    assert flip_summary(out, recs) == {"pairs": 0, "flips": 0, "flip_share": None, "consistency": None,
                                       "pairs_missing": 53}
    recs[0].responses[0] = replace(recs[0].responses[0], content="改过的回答")
    report = _judge(world, recs, out)
    assert report["pairs_judged"] == 10 and report["verdicts_missing"] == 43
    summary = flip_summary(out, recs)
    assert [(v.prompt_id, v.a, v.b) for v in read_verdicts(verdicts_path(out))] == _pairs(recs[:1])
    assert summary["pairs"] == 10 and summary["pairs_missing"] == 43


@pytest.mark.parametrize("model", ["baseline:longest", "rm"])
def test_a_reward_model_or_baseline_run_writes_no_verdicts_file(world, tmp_path, model):
    """No verdicts file and no verdicts in the report; one left beside its score file (same setup) is removed, as it
    would be read as this model's; one beside an output cheems has no record of is refused like the score file."""
    name = str(world.rm) if model == "rm" else model
    make = lambda state: scoring.make_scorer(name, state, trust_head=True)  # noqa: E731
    recs = copy.deepcopy(world.records)
    out = tmp_path / "s.jsonl"
    report = score_to_file(recs, out, score_settings(name), make)
    assert report["lines"] == 28 and "verdicts" not in report and sorted(_files(out)) == ["", ".cheems.json"]
    verdicts_path(out).write_text(GOOD + "\n")
    score_to_file(recs, out, score_settings(name), make)
    assert sorted(_files(out)) == ["", ".cheems.json"]
    other = tmp_path / "other.jsonl"
    verdicts_path(other).write_text(GOOD + "\n")
    with pytest.raises(DataError, match="has no .cheems.json record"):
        score_to_file(recs, other, score_settings(name), make)


def test_two_processes_write_their_own_verdict_parts_and_merge_them(world, tmp_path):
    """accelerate launch of two CPU processes: each judges its shard into OUT.verdicts.jsonl.partial.K and the
    main one merges them: the verdicts file (and the scores) of one process, no partial file left."""
    data = tmp_path / "d.jsonl"
    write_records(world.records, data)
    (tmp_path / "run.py").write_text(RUN)
    one, two = tmp_path / "one" / "s.jsonl", tmp_path / "two" / "s.jsonl"
    cmd = [str(tmp_path / "run.py"), str(world.judge), str(data)]
    assert subprocess.run([sys.executable, *cmd, str(one)], capture_output=True, timeout=300).returncode == 0
    with one_launch_at_a_time():
        launch = [sys.executable, "-m", "accelerate.commands.launch", "--config_file",
                  str(ROOT / "configs/cpu_2proc.yaml"), "--main_process_port", str(free_port()), *cmd, str(two)]
        done = subprocess.run(launch, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["processes"] == 2
    files = _files(two)
    assert sorted(files) == ["", ".cheems.json", ".verdicts.jsonl"]
    assert files[".verdicts.jsonl"] == _files(one)[".verdicts.jsonl"] and files[""] == _files(one)[""]


def test_a_judge_written_through_to_a_device_keeps_no_verdicts_file(world, tmp_path):
    """-o a link to /dev/null: the scores go through it and no verdicts file appears, beside the link or the
    device (there is nothing to resume into)."""
    link = tmp_path / "null.jsonl"
    link.symlink_to(os.devnull)
    report = _judge(world, copy.deepcopy(world.records), link)
    assert report["lines"] == 28 and "verdicts" not in report and report["pairs_judged"] == 53
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null.jsonl"]
    assert not verdicts_path(os.devnull).exists()


def test_a_non_finite_probability_is_refused_before_it_is_written(tmp_path):
    """JSON has no NaN: verdict_lines refuses one (a line that could not be read back would stop every resume),
    and the lines it writes read back as the same verdicts."""
    good = PairVerdict("p", "a", "b", (0.7, 0.2, 0.1), (0.1, 0.8, 0.1))
    path = tmp_path / "v.jsonl"
    path.write_bytes(verdict_lines([good]))
    assert read_verdicts(path) == [good] and path.read_text() == GOOD.replace(" ", "") + "\n"
    with pytest.raises(DataError, match="non-finite letter probabilities for p a/b"):
        verdict_lines([good, PairVerdict("p", "a", "b", (float("nan"), 0.5, 0.5), (0.1, 0.8, 0.1))], path)
