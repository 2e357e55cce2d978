"""Per-item results (cheems_lib.per_item, `cheems evaluate --per-item`): rows whose aggregates equal the summary's,
counts by hand, the protocol sidecar, and an output that may not be an input."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import numpy as np
import pytest

from cheems_lib.analyses import per_item
from cheems_lib.metrics import evaluate_subset
from cheems_lib.records import Record, Response, read_records
from cheems_lib.score_file import write_scores
from conftest import ROOT

CHEEMS = [sys.executable, "-m", "cheems_lib.cli"]
BENCH = ROOT / "data/examples/release/cheems_bench"


def _run(*args):
    return subprocess.run([*CHEEMS, *map(str, args)], capture_output=True, text=True)


def _scores(path, seed, ties=False):
    """Seeded scores of every response of the example benchmark (rounded to one decimal with ``ties``)."""
    rng = np.random.default_rng(seed)
    rows = [(r.id, x.id, float(rng.normal())) for f in ("open", "human")
            for r in read_records(BENCH / f"{f}.jsonl") for x in r.responses]
    write_scores([(p, q, round(s, 1) if ties else s) for p, q, s in rows], path)
    return path


def test_counts_by_hand():
    """Three responses a > b = c, scored a = b > c: two comparisons (a > b, a > c), one right (a > c), the tie a = b
    wrong; b = c is a tied gold pair; the unranked response is not listed."""
    r = Record(prompt="q", id="p", responses=[Response(i, "x") for i in "abcd"], rank={"a": 0, "b": 1, "c": 1},
               category=["数学", "代数"])
    row, = per_item.rows("m", "open", [r], {("p", "a"): 1.0, ("p", "b"): 1.0, ("p", "c"): 0.0, ("p", "d"): 9.0})
    assert list(row) == list(per_item.COLUMNS)
    assert (row["comparisons"], row["correct"], row["exact_match"]) == (2, 1, False)
    assert (row["tied_gold_pairs"], row["tied_score_pairs"], row["category"]) == (1, 1, "数学")
    assert row["responses"] == [{"id": "a", "rank": 0, "score": 1.0}, {"id": "b", "rank": 1, "score": 1.0},
                                {"id": "c", "rank": 1, "score": 0.0}]
    tie, = per_item.rows("m", "open", [Record(prompt="q", id="t", responses=[Response(i, "x") for i in "ab"],
                                              rank={"a": 0, "b": 0})], {("t", "a"): 1.0, ("t", "b"): 2.0})
    assert tie["comparisons"] == 0 and tie["exact_match"] is None


@pytest.mark.parametrize("view", ["layers", "implied"])
def test_the_rows_rebuild_the_summary(tmp_path, view):
    """`cheems evaluate --per-item`: one row per (model, prompt) of every data file, and the macro accuracy and exact
    match rebuilt from the rows equal the summary's, for two models; micro accuracy is the pooled share."""
    a, b = _scores(tmp_path / "a.jsonl", 0, ties=True), _scores(tmp_path / "b.jsonl", 1)
    out = tmp_path / "items.jsonl"
    res = _run("evaluate", "--data", BENCH / "open.jsonl", "--data", BENCH / "human.jsonl", "--scores", a,
               "--scores", b, "--view", view, "--bootstrap", "0", "--per-item", out)
    assert res.returncode == 0, res.stderr
    summary, items = json.loads(res.stdout), [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    n = {f: len(read_records(BENCH / f"{f}.jsonl")) for f in ("open", "human")}
    assert len(items) == 2 * sum(n.values()) and {(r["model"], r["subset"]) for r in items} == {
        (m, f) for m in ("a", "b") for f in n}
    rebuilt = per_item.summary(items)
    for (model, subset), got in rebuilt.items():
        assert got["accuracy"] == pytest.approx(summary[model][subset]["accuracy"], abs=1e-12)
        assert got["exact_match"] == pytest.approx(summary[model][subset]["exact_match"], abs=1e-12)
        rows = [r for r in items if (r["model"], r["subset"]) == (model, subset)]
        assert got["micro_accuracy"] == sum(r["correct"] for r in rows) / sum(r["comparisons"] for r in rows)
        assert got["micro_accuracy"] == pytest.approx(summary[model][subset]["micro_accuracy"], abs=1e-12)
        assert got["micro_exact_match"] == pytest.approx(summary[model][subset]["micro_exact_match"], abs=1e-12)
    assert any(r["tied_score_pairs"] for r in items if r["model"] == "a")  # rounded scores tie, and count as wrong


def test_the_sidecar_records_the_protocol_and_where_the_numbers_come_from(tmp_path):
    """FILE.cheems.json: the tie rule, the view, each data file's SHA-256, each model's fingerprint (unknown for a
    hand-made score file; the one `cheems score` recorded otherwise)."""
    a, b = _scores(tmp_path / "a.jsonl", 0), _scores(tmp_path / "b.jsonl", 1)
    (tmp_path / "b.jsonl.cheems.json").write_text(json.dumps({"model_fingerprint": "abc123"}), encoding="utf-8")
    out = tmp_path / "items.jsonl"
    data = [BENCH / "open.jsonl", BENCH / "human.jsonl"]
    assert _run("evaluate", "--data", data[0], "--data", data[1], "--scores", a, "--scores", b, "--per-item", out,
                "--bootstrap", "0").returncode == 0
    side = json.loads((tmp_path / "items.jsonl.cheems.json").read_text(encoding="utf-8"))
    assert side["protocol"] == per_item.PROTOCOL and side["view"] == "layers"
    assert side["data"] == {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in data}
    assert side["models"]["a"]["model_fingerprint"] == "unknown" and side["models"]["b"]["model_fingerprint"] == "abc123"
    assert side["models"]["a"]["scores_sha256"] == hashlib.sha256(a.read_bytes()).hexdigest()


def test_the_per_item_file_may_not_be_an_input(tmp_path):
    a = _scores(tmp_path / "a.jsonl", 0)
    before = a.read_bytes()
    res = _run("evaluate", "--data", BENCH / "open.jsonl", "--data", BENCH / "human.jsonl", "--scores", a,
               "--per-item", a)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "--per-item" in res.stderr
    assert a.read_bytes() == before


def test_macro_rows_match_evaluate_subset_on_categories():
    """The library path: rows of one subset rebuild :func:`evaluate_subset`'s macro numbers."""
    recs = read_records(BENCH / "human.jsonl")
    rng = np.random.default_rng(3)
    scores = {(r.id, x.id): float(rng.normal()) for r in recs for x in r.responses}
    got = per_item.summary(per_item.rows("m", "human", recs, scores))[("m", "human")]
    want = evaluate_subset(recs, scores, n_boot=0)
    assert got["accuracy"] == pytest.approx(want.accuracy, abs=1e-12)
    assert got["exact_match"] == pytest.approx(want.exact_match, abs=1e-12)


def test_leaderboard_rows_name_each_training_seed(tmp_path):
    """A chapter's per-item rows: a model with several training seeds gives one model per seed, each row equal to
    rows() of that seed's scores; its protocol names each data file's folder, name and SHA-256."""
    recs = {f: read_records(BENCH / f"{f}.jsonl") for f in ("open", "human")}
    rng = np.random.default_rng(0)
    seeds = [{(r.id, x.id): float(rng.normal()) for rs in recs.values() for r in rs for x in r.responses}
             for _ in range(2)]
    out = per_item.leaderboard_rows({"trained": seeds, "baseline": seeds[0]}, recs)
    assert [r["model"] for r in out].count("trained (seed 1)") == sum(map(len, recs.values()))
    assert {r["model"] for r in out} == {"trained (seed 0)", "trained (seed 1)", "baseline"}
    assert [r for r in out if r["model"] == "trained (seed 1)"] == \
        [row for f, rs in recs.items() for row in per_item.rows("trained (seed 1)", f, rs, seeds[1])]
    side = per_item.chapter_protocol({f: BENCH / f"{f}.jsonl" for f in recs}, {"trained": seeds, "baseline": seeds[0]})
    assert list(side["models"]) == ["trained (seed 0)", "trained (seed 1)", "baseline"]
    assert side["data"]["open"] == {"file": "cheems_bench/open.jsonl",
                                    "sha256": hashlib.sha256((BENCH / "open.jsonl").read_bytes()).hexdigest()}
    assert side["models"]["trained (seed 1)"]["model_fingerprint"] == "unknown"
