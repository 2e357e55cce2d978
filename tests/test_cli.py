"""The `cheems` command line (spec §5): outputs, bad input, and lazy imports."""
from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from cheems_lib.cli import main
from cheems_lib.conflicts import resolve
from cheems_lib.records import read_records, write_records, write_scores
from conftest import ROOT, make_record

CHEEMS = [sys.executable, "-m", "cheems_lib.cli"]


def run(*args, cwd=None):
    return subprocess.run([*CHEEMS, *map(str, args)], capture_output=True, text=True, cwd=cwd)


def _random_world(tmp_path, seed=0, n=40):
    rng = random.Random(seed)
    recs = []
    for i in range(n):
        ids = [f"r{j}" for j in range(rng.randint(2, 6))]
        anns = [(a, b, rng.choice("0112")) for a in ids for b in ids if a < b and rng.random() < .7]
        recs.append(make_record(f"p{i}", ids, anns, category=[rng.choice(["数学", "代码", "安全"])]))
    write_records(recs, tmp_path / "raw.jsonl")
    return recs


def test_help_lists_every_subcommand_without_torch():
    """`cheems --help` lists the subcommands; parsing the CLI never imports torch."""
    out = run("--help")
    assert out.returncode == 0
    for cmd in ("resolve", "evaluate", "simulate", "book"):
        assert cmd in out.stdout
    probe = ("import sys; from cheems_lib.cli import _parser; _parser(); "
             "import cheems_lib.conflicts, cheems_lib.metrics, cheems_lib.records, cheems_lib.simulation; "
             "assert 'torch' not in sys.modules and 'transformers' not in sys.modules")
    assert subprocess.run([sys.executable, "-c", probe]).returncode == 0


def test_resolve_and_evaluate_match_the_library(tmp_path):
    """On random inputs, resolve writes Algorithm 1's ranks and evaluate reports spec §5's keys."""
    recs = _random_world(tmp_path)
    out = run("resolve", tmp_path / "raw.jsonl", "-o", tmp_path / "ranked.jsonl")
    assert out.returncode == 0, out.stderr
    stats = json.loads(out.stdout)
    assert {"prompts", "annotations", "conflict_ratio", "pair_conflict_ratio"} <= set(stats)
    ranked = read_records(tmp_path / "ranked.jsonl")
    assert [r.rank for r in ranked] == [resolve(r.response_ids, r.annotations) for r in recs]
    rng = random.Random(1)
    write_scores([(r.id, rid, rng.random()) for r in ranked for rid in r.response_ids], tmp_path / "s.jsonl")
    import shutil
    shutil.copy(tmp_path / "ranked.jsonl", tmp_path / "other.jsonl")
    ev = run("evaluate", "--data", tmp_path / "ranked.jsonl", "--data", tmp_path / "other.jsonl",
             "--scores", tmp_path / "s.jsonl", "--bootstrap", "50")
    assert ev.returncode == 0, ev.stderr
    res = json.loads(ev.stdout)
    assert set(res) >= {"ranked", "other", "overall"}
    sub = res["ranked"]
    assert {"accuracy", "exact_match", "by_category"} <= set(sub)
    for cat in sub["by_category"].values():
        assert set(cat) == {"accuracy", "exact_match", "prompts", "comparisons"}
    assert res["overall"] == pytest.approx((sub["accuracy"] + sub["exact_match"]) / 2)


def _ranked_file(tmp_path):
    recs = [make_record("p", "ab", [("a", "b", "1")], rank={"a": 0, "b": 1})]
    write_records(recs, tmp_path / "d.jsonl")
    return tmp_path / "d.jsonl"


BAD_DATA = {
    "malformed JSON": '{"input": "q", ',
    "unknown response id 'z'": '{"input": "q", "responses": [{"id": "a", "content": "x"}], "annotations": [["a", "z", "1"]]}',
    "unknown response id 'y'": '{"input": "q", "responses": [{"id": "a", "content": "x"}], "rank": {"y": 0}}',
    "duplicate response id": '{"input": "q", "responses": [{"id": "a", "content": "x"}, {"id": "a", "content": "y"}]}',
}


@pytest.mark.parametrize("message", BAD_DATA)
@pytest.mark.parametrize("command", ["resolve", "evaluate"])
def test_bad_data_is_one_line_with_file_and_line(tmp_path, command, message):
    """Bad data files exit 2 with `cheems: file:line: ...` and no traceback."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"input": "fine", "responses": ["x"]}\n' + BAD_DATA[message] + "\n", encoding="utf-8")
    (tmp_path / "s.jsonl").write_text("", encoding="utf-8")
    args = (["resolve", bad, "-o", tmp_path / "o.jsonl"] if command == "resolve"
            else ["evaluate", "--data", bad, "--scores", tmp_path / "s.jsonl"])
    out = run(*args)
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "Traceback" not in out.stderr
    assert f"{bad}:2:" in out.stderr and message in out.stderr


BAD_SCORES = {
    "no score for prompt 'p' response 'b'": ['{"prompt_id": "p", "response_id": "a", "score": 1}'],
    "not a finite number": ['{"prompt_id": "p", "response_id": "a", "score": 1}', '{"prompt_id": "p", "response_id": "b", "score": NaN}'],
    "unknown prompt/response": ['{"prompt_id": "p", "response_id": "a", "score": 1}', '{"prompt_id": "p", "response_id": "b", "score": 0}',
                                '{"prompt_id": "p", "response_id": "zz", "score": 0}'],
}


@pytest.mark.parametrize("message", BAD_SCORES)
def test_bad_scores_are_one_line(tmp_path, message):
    data = _ranked_file(tmp_path)
    (tmp_path / "s.jsonl").write_text("\n".join(BAD_SCORES[message]) + "\n", encoding="utf-8")
    out = run("evaluate", "--data", data, "--scores", tmp_path / "s.jsonl")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and message in out.stderr
    assert str(tmp_path / "s.jsonl") in out.stderr


def test_missing_file(tmp_path, capsys):
    assert main(["resolve", str(tmp_path / "nope.jsonl"), "-o", str(tmp_path / "o.jsonl")]) == 2
    assert "nope.jsonl" in capsys.readouterr().err


def test_shipped_example_resolves(tmp_path):
    out = run("resolve", ROOT / "data/examples/annotations.jsonl", "-o", tmp_path / "o.jsonl")
    assert out.returncode == 0 and json.loads(out.stdout)["prompts"] == 4


def test_simulate_writes_the_layout_and_prints_a_summary(tmp_path):
    out = run("simulate", "-o", tmp_path / "w", "--size", "smoke", "--seed", "1")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["seed"] == 1 and "cheems_bench/open.jsonl" in summary["files"]
    assert (tmp_path / "w/cheems_preference/gpt.jsonl").exists() and (tmp_path / "w/truth.jsonl").exists()


@pytest.fixture(scope="module")
def scored_world(tmp_path_factory):
    """A smoke world, a tiny reward model and a tiny causal-LM judge saved as checkpoints."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from cheems_lib.judging import CRITERIA, JUDGE_TEMPLATE
    from cheems_lib.reward_model import build_tiny, train_tokenizer
    from cheems_lib.simulation import WorldConfig, build_world, write_world

    d = tmp_path_factory.mktemp("scored")
    world = build_world(WorldConfig(size="smoke", seed=5))
    world.files = {k: v[:6] for k, v in world.files.items()}
    write_world(world, d / "w")
    texts = [JUDGE_TEMPLATE, *CRITERIA.values()] + [t for recs in world.files.values() for r in recs
                                                    for t in [r.prompt, *(x.content for x in r.responses)]]
    tok = train_tokenizer(texts, vocab_size=800)
    build_tiny("tiny-xs", tok).save_pretrained(d / "rm")
    tok.save_pretrained(d / "rm")
    torch.manual_seed(0)
    Qwen2ForCausalLM(Qwen2Config(vocab_size=len(tok), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                 num_key_value_heads=1, intermediate_size=64, pad_token_id=tok.pad_token_id,
                                 max_position_embeddings=4096)).save_pretrained(d / "judge")
    tok.save_pretrained(d / "judge")
    return d


def test_score_resume_after_a_torn_line(scored_world, tmp_path):
    """A killed run leaves a half line; the rerun keeps the complete lines and scores the rest."""
    data = scored_world / "w/cheems_bench/open.jsonl"
    full = tmp_path / "full.jsonl"
    assert run("score", "--model", scored_world / "rm", "--data", data, "-o", full).returncode == 0
    lines = full.read_text().splitlines()
    torn = tmp_path / "torn.jsonl"
    torn.write_text("\n".join(lines[:7]) + "\n" + lines[7][:10])
    out = run("score", "--model", scored_world / "rm", "--data", data, "-o", torn)
    assert out.returncode == 0 and json.loads(out.stdout)["skipped"] == 7
    from cheems_lib.records import read_scores
    a, b = read_scores(full), read_scores(torn)
    assert a.keys() == b.keys() and all(abs(a[k] - b[k]) < 1e-5 for k in a)


def test_score_judge_and_baselines_then_leaderboard(scored_world, tmp_path):
    data = [scored_world / "w/cheems_bench/open.jsonl", scored_world / "w/cheems_bench/human.jsonl"]
    dargs = [x for d in data for x in ("--data", d)]
    out = run("score", "--model", scored_world / "judge", "--judge", *dargs, "-o", tmp_path / "judge.jsonl")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert 0 <= report["position_consistency"] <= 1 and report["pairs_judged"] == 12 * 10
    for b in ("longest", "random"):
        assert run("score", "--model", f"baseline:{b}", *dargs, "-o", tmp_path / f"{b}.jsonl").returncode == 0
    ev = run("evaluate", *dargs, "--scores", tmp_path / "judge.jsonl", "--scores", tmp_path / "longest.jsonl",
             "--scores", tmp_path / "random.jsonl", "--bootstrap", "20")
    assert ev.returncode == 0, ev.stderr
    board = json.loads(ev.stdout)
    assert set(board) == {"judge", "longest", "random"} and all("overall" in v for v in board.values())
    assert "overall" in ev.stderr.splitlines()[0]  # the table goes to stderr, JSON stays on stdout


def test_score_refuses_a_model_without_reward_head(scored_world):
    out = run("score", "--model", scored_world / "judge", "--data", scored_world / "w/cheems_bench/open.jsonl",
              "-o", scored_world / "x.jsonl")
    assert out.returncode == 2 and "not in the checkpoint" in out.stderr and "Traceback" not in out.stderr


def test_score_data_parallel_two_processes(scored_world, tmp_path):
    """accelerate launch with 2 CPU processes: shards merged, every response scored once, same scores."""
    data = scored_world / "w/cheems_bench/human.jsonl"
    one = tmp_path / "one.jsonl"
    assert run("score", "--model", scored_world / "rm", "--data", data, "-o", one).returncode == 0
    two = tmp_path / "two.jsonl"
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(ROOT / "configs/cpu_2proc.yaml"),
           "-m", "cheems_lib.cli", "score", "--model", str(scored_world / "rm"), "--data", str(data), "-o", str(two)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    from cheems_lib.records import read_scores
    a, b = read_scores(one), read_scores(two)
    assert a.keys() == b.keys() and all(abs(a[k] - b[k]) < 1e-5 for k in a)
    assert not list(tmp_path.glob("two.jsonl.part*"))
