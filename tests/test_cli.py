"""The `cheems` command line (spec §5): outputs, bad input, and lazy imports."""
from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from cheems_lib.cli import main
from cheems_lib.conflicts import resolve
from cheems_lib.records import read_records, write_records
from cheems_lib.score_file import write_scores
from conftest import ROOT, launch_two, make_record

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
    """`cheems --help` lists the subcommands; parsing the CLI never imports torch, nor itables (the book's tables)."""
    out = run("--help")
    assert out.returncode == 0
    for cmd in ("resolve", "evaluate", "simulate", "book"):
        assert cmd in out.stdout
    probe = ("import sys; from cheems_lib.cli import build_parser; build_parser(); "
             "import cheems_lib.conflicts, cheems_lib.metrics, cheems_lib.records, cheems_lib.world.simulation; "
             "import cheems_lib.publishing.publish, cheems_lib.publishing.sphinx_hook; "
             "assert 'torch' not in sys.modules and 'transformers' not in sys.modules and 'itables' not in sys.modules")
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
    other = read_records(tmp_path / "ranked.jsonl")
    for r in other:  # a second subset: the same records under their own prompt ids (ids may not repeat)
        r.id = "other-" + r.id
    write_records(other, tmp_path / "other.jsonl")
    rng = random.Random(1)
    write_scores([(r.id, rid, rng.random()) for r in ranked + other for rid in r.response_ids], tmp_path / "s.jsonl")
    ev = run("evaluate", "--data", tmp_path / "ranked.jsonl", "--data", tmp_path / "other.jsonl",
             "--scores", tmp_path / "s.jsonl", "--bootstrap", "50")
    assert ev.returncode == 0, ev.stderr
    res = json.loads(ev.stdout)
    assert set(res) >= {"ranked", "other", "overall"}
    sub = res["ranked"]
    assert {"accuracy", "exact_match", "by_category"} <= set(sub)
    for cat in sub["by_category"].values():
        assert set(cat) == {"accuracy", "exact_match", "prompts", "comparisons"}
    both = [res[k][m] for k in ("ranked", "other") for m in ("accuracy", "exact_match")]
    assert res["overall"] == pytest.approx(sum(both) / 4)


def _ranked_file(tmp_path):
    recs = [make_record("p", "ab", [("a", "b", "1")], rank={"a": 0, "b": 1})]
    write_records(recs, tmp_path / "d.jsonl")
    return tmp_path / "d.jsonl"


BAD_DATA = {
    "malformed JSON": '{"input": "q", ',
    "unknown response id \"z\"": '{"input": "q", "responses": [{"id": "a", "content": "x"}], "annotations": [["a", "z", "1"]]}',
    "unknown response id \"y\"": '{"input": "q", "responses": [{"id": "a", "content": "x"}], "rank": {"y": 0}}',
    "duplicate response id": '{"input": "q", "responses": [{"id": "a", "content": "x"}, {"id": "a", "content": "y"}]}',
}


@pytest.mark.parametrize("message", BAD_DATA)
@pytest.mark.parametrize("command", ["resolve", "evaluate"])
def test_bad_data_is_one_line_with_file_and_line(tmp_path, command, message):
    """Bad data files exit 2 with `cheems: file:line: ...` and no traceback."""
    bad = tmp_path / "bad.jsonl"
    fine = '{"input": "fine", "responses": [{"id": "a", "content": "x"}], "rank": {"a": 0}}'
    bad.write_text(fine + "\n" + BAD_DATA[message] + "\n", encoding="utf-8")
    (tmp_path / "s.jsonl").write_text("", encoding="utf-8")
    args = (["resolve", bad, "-o", tmp_path / "o.jsonl"] if command == "resolve"
            else ["evaluate", "--data", bad, "--scores", tmp_path / "s.jsonl"])
    out = run(*args)
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "Traceback" not in out.stderr
    assert f"{bad}:2:" in out.stderr and message in out.stderr


BAD_SCORES = {
    'no score for prompt "p" response "b"': ['{"prompt_id": "p", "response_id": "a", "score": 1}'],
    "not a finite number": ['{"prompt_id": "p", "response_id": "a", "score": 1}', '{"prompt_id": "p", "response_id": "b", "score": NaN}'],
    "unknown prompt/response": ['{"prompt_id": "p", "response_id": "a", "score": 1}', '{"prompt_id": "p", "response_id": "b", "score": 0}',
                                '{"prompt_id": "p", "response_id": "zz", "score": 0}'],
}


@pytest.mark.parametrize("message", BAD_SCORES)
def test_bad_scores_are_one_line(tmp_path, message):
    """cheems evaluate reports a bad scores file in one line naming the file."""
    data = _ranked_file(tmp_path)
    (tmp_path / "s.jsonl").write_text("\n".join(BAD_SCORES[message]) + "\n", encoding="utf-8")
    out = run("evaluate", "--data", data, "--scores", tmp_path / "s.jsonl")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and message in out.stderr
    assert str(tmp_path / "s.jsonl") in out.stderr


def test_missing_file(tmp_path, capsys):
    """A missing input file is exit code 2 with its name on stderr."""
    assert main(["resolve", str(tmp_path / "nope.jsonl"), "-o", str(tmp_path / "o.jsonl")]) == 2
    assert "nope.jsonl" in capsys.readouterr().err


def test_shipped_example_resolves(tmp_path):
    """The shipped example annotations resolve through cheems resolve."""
    out = run("resolve", ROOT / "data/examples/annotations.jsonl", "-o", tmp_path / "o.jsonl")
    assert out.returncode == 0 and json.loads(out.stdout)["prompts"] == 4


def test_simulate_writes_the_layout_and_prints_a_summary(tmp_path):
    """cheems simulate writes the world's layout and prints its summary."""
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

    from cheems_lib.models.judging import CRITERIA, JUDGE_TEMPLATE
    from cheems_lib.models.reward_model import build_tiny, train_tokenizer
    from cheems_lib.world.simulation import WorldConfig, build_world
    from cheems_lib.world_files import write_world

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
    """A killed run's partial file ends in a half line; the rerun keeps the whole lines and ends identical."""
    data = scored_world / "w/cheems_bench/open.jsonl"
    rm = ["--model", scored_world / "rm", "--trust-head"]
    full = tmp_path / "full.jsonl"
    assert run("score", *rm, "--data", data, "-o", full).returncode == 0
    lines = full.read_text().splitlines()
    torn = tmp_path / "torn.jsonl"
    (tmp_path / "torn.jsonl.cheems.json").write_text((tmp_path / "full.jsonl.cheems.json").read_text())
    (tmp_path / "torn.jsonl.partial").write_text("\n".join(lines[:7]) + "\n" + lines[7][:10])
    out = run("score", *rm, "--data", data, "-o", torn)
    assert out.returncode == 0 and json.loads(out.stdout)["skipped"] == 7, out.stderr
    from cheems_lib.score_file import read_scores
    a, b = read_scores(full), read_scores(torn)
    assert list(a) == list(b) and all(abs(a[k] - b[k]) < 1e-5 for k in a)  # other batches: rounding only
    assert not (tmp_path / "torn.jsonl.partial").exists()


def test_score_judge_and_baselines_then_leaderboard(scored_world, tmp_path):
    """Judge and baseline scores flow through cheems evaluate into a leaderboard."""
    data = [scored_world / "w/cheems_bench/open.jsonl", scored_world / "w/cheems_bench/human.jsonl"]
    dargs = [x for d in data for x in ("--data", d)]
    out = run("score", "--model", scored_world / "judge", "--judge", *dargs, "-o", tmp_path / "judge.jsonl")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["pairs_judged"] == 12 * 10
    from cheems_lib.models.judging import judge_records, load_judge, position_consistency
    model, tok = load_judge(scored_world / "judge")  # the reference: the library on the same records
    verdicts = judge_records(model, tok, [r for d in data for r in read_records(d)])
    assert report["position_consistency"] == pytest.approx(position_consistency(verdicts))
    for b in ("longest", "random"):
        assert run("score", "--model", f"baseline:{b}", *dargs, "-o", tmp_path / f"{b}.jsonl").returncode == 0
    ev = run("evaluate", *dargs, "--scores", tmp_path / "judge.jsonl", "--scores", tmp_path / "longest.jsonl",
             "--scores", tmp_path / "random.jsonl", "--bootstrap", "20")
    assert ev.returncode == 0, ev.stderr
    board = json.loads(ev.stdout)
    assert set(board) == {"judge", "longest", "random"} and all("overall" in v for v in board.values())
    assert "overall" in ev.stderr.splitlines()[0]  # the table goes to stderr, JSON stays on stdout
    # the judge's verdicts in both orders were kept beside its scores: the flip share per data file, and a column
    flips = {d.name.split(".")[0]: board["judge"][d.name.split(".")[0]]["position_flips"] for d in data}
    assert sum(f["pairs"] for f in flips.values()) == 12 * 10 and all(f["pairs_missing"] == 0 for f in flips.values())
    assert sum(f["flips"] for f in flips.values()) == sum(not v.consistent() for v in verdicts)
    assert "position_flips" not in board["longest"]["open"]
    assert " flips " in ev.stderr.splitlines()[0]


def test_score_refuses_a_model_without_reward_head(scored_world, tmp_path):
    """A causal LM has no reward head; a saved but untrained head is refused too (--trust-head overrides)."""
    data = scored_world / "w/cheems_bench/open.jsonl"
    out = run("score", "--model", scored_world / "judge", "--data", data, "-o", tmp_path / "x.jsonl")
    assert out.returncode == 2 and "not in the checkpoint" in out.stderr and "Traceback" not in out.stderr
    out = run("score", "--model", scored_world / "rm", "--data", data, "-o", tmp_path / "x.jsonl")
    assert out.returncode == 2 and "random initialisation" in out.stderr and "--trust-head" in out.stderr
    assert not (tmp_path / "x.jsonl").exists()


def test_score_data_parallel_two_processes(scored_world, tmp_path):
    """accelerate launch with 2 CPU processes: shards merged, every response scored once, same scores."""
    data = scored_world / "w/cheems_bench/human.jsonl"
    one = tmp_path / "one.jsonl"
    assert run("score", "--model", scored_world / "rm", "--trust-head", "--data", data, "-o", one).returncode == 0
    two = tmp_path / "two.jsonl"
    done = launch_two("score", "--model", scored_world / "rm", "--trust-head", "--data", data, "-o", two)
    assert done.returncode == 0, done.stderr[-2000:]
    from cheems_lib.score_file import read_scores
    a, b = read_scores(one), read_scores(two)
    assert a.keys() == b.keys(), (sorted(set(a) - set(b))[:5], sorted(set(b) - set(a))[:5])
    worst = max(a, key=lambda k: abs(a[k] - b[k]))
    assert abs(a[worst] - b[worst]) < 1e-5, (worst, a[worst], b[worst])
    assert not list(tmp_path.glob("two.jsonl.part*"))
    assert list(a) == list(b)  # shards merged in record order


# --- nothing lost: interrupts, locks, strict arguments, messy data ---

def _big_raw_file(path, n=20000):
    """A pairwise file large enough that resolving and writing it takes a moment."""
    import orjson
    with open(path, "wb") as fh:
        for i in range(n):
            fh.write(orjson.dumps({"input": f"问题 {i // 3}", "answer1": f"回答 {i} 甲", "answer2": f"回答 {i} 乙",
                                   "preference": 1 + i % 2}) + b"\n")


def _interrupted(cmd, point, sig_name, *, ok=False):
    """Run ``cmd`` in its own session; it sends itself ``sig_name`` at ``point`` (``NAME=N``, see
    cheems_lib.outputs.interrupt_point). Asserts the signal ended it: -9, 130 (SIGINT), 143 (SIGTERM)."""
    import os
    import signal
    env = {**os.environ, "CHEEMS_TEST_INTERRUPT": f"{point}:{sig_name}"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, start_new_session=True, timeout=300)
    want = {"SIGKILL": -signal.SIGKILL, "SIGINT": 130, "SIGTERM": 143}[sig_name]
    assert proc.returncode == want, (point, sig_name, proc.returncode, proc.stderr[-1000:])
    if sig_name != "SIGKILL":
        assert "Traceback" not in proc.stderr, proc.stderr[-1000:]
    return proc


@pytest.mark.parametrize("sig_name", ["SIGINT", "SIGTERM", "SIGKILL"])
def test_resolve_interrupted_keeps_the_old_output_or_writes_it_whole(tmp_path, sig_name):
    """`resolve big -o out` over an older `out`, interrupted with its temporary file complete but not renamed,
    keeps the whole old output; interrupted just after the rename it holds the whole new one; the input is never
    touched; SIGINT/SIGTERM leave no temporary. (`-o big` itself is refused: test_an_output_that_is_an_input...)"""
    big = tmp_path / "big.jsonl"
    _big_raw_file(big)
    before = big.read_bytes()
    ref = tmp_path / "ref.jsonl"
    assert run("resolve", big, "-o", ref).returncode == 0
    after = ref.read_bytes()
    old = b'{"id": "old"}\n'
    out = tmp_path / "out.jsonl"
    for point, want in (("atomic.written=1", old), ("atomic.replaced=1", after)):
        out.write_bytes(old)
        _interrupted([*CHEEMS, "resolve", str(big), "-o", str(out)], point, sig_name)
        assert out.read_bytes() == want and big.read_bytes() == before, point
        leftovers = list(tmp_path.glob(".out.jsonl.tmp-*"))
        assert len(leftovers) == (sig_name == "SIGKILL" and point == "atomic.written=1"), leftovers
        for p in leftovers:
            p.unlink()


def test_resolve_to_a_full_disk_is_one_line(tmp_path):
    """/dev/full: exit 1 with one line, no traceback."""
    out = run("resolve", ROOT / "data/examples/annotations.jsonl", "-o", "/dev/full")
    assert out.returncode == 1 and out.stderr.count("\n") == 1 and "No space left" in out.stderr
    assert "(fix: free space or write elsewhere; the previous output is unchanged)" in out.stderr
    out = run("score", "--model", "baseline:longest", "--data", _ranked_file(tmp_path), "-o", "/dev/full")
    assert out.returncode == 1 and out.stderr.count("\n") == 1 and "No space left" in out.stderr
    assert not any(__import__("pathlib").Path(f"/dev/full{x}").exists() for x in (".partial", ".cheems.json", ".lock"))


def _score_cmd(scored_world, data, out, *extra):
    return [*CHEEMS, "score", "--model", str(scored_world / "rm"), "--trust-head", "--batch-size", "1",
            *[x for d in data for x in ("--data", str(d))], "-o", str(out), *map(str, extra)]


@pytest.fixture(scope="module")
def many_records(scored_world):
    """48 prompts (about 340 responses): long enough to interrupt a batch-size-1 scoring run."""
    from cheems_lib.world.simulation import WorldConfig, build_world
    world = build_world(WorldConfig(size="smoke", seed=5))
    path = scored_world / "many.jsonl"
    write_records(world.files["cheems_preference/gpt.jsonl"][:48], path)
    return path


def test_score_streams_and_resumes_after_kill_identically(scored_world, many_records, tmp_path):
    """SIGKILL after batch 20, then SIGINT 100 batches into the resumed run: every finished batch is on disk
    (streamed, not kept in memory); the resumed file equals an uninterrupted run's."""
    full = tmp_path / "full.jsonl"
    assert subprocess.run(_score_cmd(scored_world, [many_records], full), capture_output=True).returncode == 0
    total = full.read_bytes().count(b"\n")
    cut = tmp_path / "cut.jsonl"
    partial = tmp_path / "cut.jsonl.partial"
    for sig_name, batches, want in (("SIGKILL", 20, 20), ("SIGINT", 100, 120)):  # batch size 1: a line a batch
        _interrupted(_score_cmd(scored_world, [many_records], cut), f"score.batch={batches}", sig_name)
        assert not cut.exists() and partial.read_bytes().count(b"\n") == want < total
    out = subprocess.run(_score_cmd(scored_world, [many_records], cut), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["skipped"] == 120
    assert cut.read_bytes() == full.read_bytes()
    again = subprocess.run(_score_cmd(scored_world, [many_records], cut), capture_output=True, text=True)
    assert json.loads(again.stdout)["scored"] == 0 and cut.read_bytes() == full.read_bytes()


def test_score_refuses_a_second_writer_and_another_models_file(scored_world, tmp_path):
    """A held lock and a file of another model's scores are refused with one line; nothing is written."""
    from cheems_lib.outputs import OutputLock
    data = scored_world / "w/cheems_bench/open.jsonl"
    out = tmp_path / "s.jsonl"
    with OutputLock(out):
        res = run("score", "--model", "baseline:longest", "--data", data, "-o", out)
    assert res.returncode == 2 and "another process" in res.stderr and not out.exists()
    assert run("score", "--model", "baseline:longest", "--data", data, "-o", out).returncode == 0
    before = out.read_bytes()
    res = run("score", "--model", "baseline:shortest", "--data", data, "-o", out)
    assert res.returncode == 2 and "baseline:longest" in res.stderr and out.read_bytes() == before
    (tmp_path / "foreign.jsonl").write_text('{"prompt_id": "x", "response_id": "y", "score": 1}\n')
    res = run("score", "--model", "baseline:longest", "--data", data, "-o", tmp_path / "foreign.jsonl")
    assert res.returncode == 2 and "no .cheems.json" in res.stderr


def test_score_output_equal_to_data_is_refused_and_the_data_kept(scored_world, tmp_path):
    """`score --data x -o x` with no final newline: refused before anything touches x."""
    x = tmp_path / "x.jsonl"
    x.write_bytes((scored_world / "w/cheems_bench/open.jsonl").read_bytes().rstrip(b"\n"))
    before = x.read_bytes()
    res = run("score", "--model", "baseline:longest", "--data", x, "-o", x)
    assert res.returncode == 2 and "also a --data input" in res.stderr and x.read_bytes() == before


def _two_labels(tmp_path):
    from transformers import Qwen2Config, Qwen2ForSequenceClassification
    cfg = Qwen2Config(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                      intermediate_size=32, num_labels=2)
    Qwen2ForSequenceClassification(cfg).save_pretrained(tmp_path / "two")
    (tmp_path / "cfg").mkdir()
    cfg.save_pretrained(tmp_path / "cfg")
    (tmp_path / "empty").mkdir()


@pytest.mark.parametrize("args, message", [
    (["--model", "/nonexistent"], "no such checkpoint folder"),
    (["--model", "{tmp}/empty"], "no config.json"),
    (["--model", "{tmp}/cfg"], "no weights"),
    (["--model", "{tmp}/two"], "num_labels=2"),
    (["--model", "baseline:longest", "--batch-size", "0"], "--batch-size: must be >= 1"),
    (["--model", "baseline:longest", "--batch-size", "-3"], "--batch-size: must be >= 1"),
    (["--model", "baseline:longest", "--max-length", "-2"], "--max-length: must be >= 1"),
    (["--model", "baseline:best"], "not a baseline"),
])
def test_score_bad_arguments_are_one_line_and_write_nothing(scored_world, tmp_path, args, message):
    """Every bad model or number: exit 2, one line naming it and the fix, no output file."""
    _two_labels(tmp_path)
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    res = run("score", *args, "--data", scored_world / "w/cheems_bench/open.jsonl", "-o", tmp_path / "s.jsonl")
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    assert message in res.stderr and "fix" in res.stderr
    assert not list(tmp_path.glob("s.jsonl*"))


def test_evaluate_bad_bootstrap_and_same_stem_scores(tmp_path):
    """--bootstrap -5 is refused; two score files with one stem are both kept, named by their paths."""
    data = _ranked_file(tmp_path)
    res = run("evaluate", "--data", data, "--scores", tmp_path / "s.jsonl", "--bootstrap", "-5")
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "--bootstrap" in res.stderr
    for sub, good in (("a", 1.0), ("b", -1.0)):
        (tmp_path / sub).mkdir()
        write_scores([("p", "a", good), ("p", "b", 0.0)], tmp_path / sub / "s.jsonl")
    res = run("evaluate", "--data", data, "--scores", tmp_path / "a/s.jsonl", "--scores", tmp_path / "b/s.jsonl",
              "--bootstrap", "0")
    assert res.returncode == 0, res.stderr
    board = json.loads(res.stdout)
    assert {board[k]["d"]["accuracy"] for k in board} == {0.0, 1.0} and len(board) == 2


@pytest.mark.parametrize("line, message", [
    ('{"input": "q\\ud800", "responses": ["x"]}', "lone UTF-16 surrogate"),
    ('{"input": "q", "answer1": "x", "answer2": "y", "preference": false}', "preference false"),
])
def test_unwritable_text_and_boolean_preferences_are_refused(tmp_path, line, message):
    """A lone surrogate and a `false` preference (not a tie) are bad input: one line, exit 2."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text(line + "\n", encoding="utf-8")
    res = run("resolve", bad, "-o", tmp_path / "o.jsonl")
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and message in res.stderr and f"{bad}:1:" in res.stderr
    assert not (tmp_path / "o.jsonl").exists()


def test_skip_invalid_keeps_every_valid_row_and_reports_each_skipped_one(tmp_path):
    """Identical responses in one row of a real-looking pairwise file: strict refuses, --skip-invalid keeps the rest."""
    rows = [{"input": "q1", "answer1": "a", "answer2": "b", "preference": 1},
            {"input": "q1", "answer1": "a", "answer2": "a", "preference": 1},
            {"input": "q2", "answer1": "c", "answer2": "d", "preference": 2},
            "not json"]
    raw = tmp_path / "raw.jsonl"
    raw.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    strict = run("resolve", raw, "-o", tmp_path / "o.jsonl")
    assert strict.returncode == 2 and "--skip-invalid" in strict.stderr and f"{raw}:2:" in strict.stderr  # first bad line
    res = run("resolve", raw, "-o", tmp_path / "o.jsonl", "--skip-invalid")
    assert res.returncode == 0, res.stderr
    assert f"{raw}:2: the two responses are identical" in res.stderr and f"{raw}:4: malformed JSON" in res.stderr
    assert "skipped 2 invalid row(s)" in res.stderr and json.loads(res.stdout)["skipped_invalid"] == 2
    kept = read_records(tmp_path / "o.jsonl")
    assert sum(len(r.annotations) for r in kept) == 2  # rows 1 and 3, nothing else dropped


def test_score_refuses_repeated_prompt_ids_unless_skipping(tmp_path):
    """Two records with one id and different responses would share scores: refused, or skipped and reported."""
    recs = [make_record("p", "ab"), make_record("q", "ab"), make_record("p", "cd")]
    write_records(recs, tmp_path / "d.jsonl")
    res = run("score", "--model", "baseline:longest", "--data", tmp_path / "d.jsonl", "-o", tmp_path / "s.jsonl")
    assert res.returncode == 2 and "repeats the record" in res.stderr and f"{tmp_path / 'd.jsonl'}:3:" in res.stderr
    res = run("score", "--model", "baseline:longest", "--data", tmp_path / "d.jsonl", "-o", tmp_path / "s.jsonl",
              "--skip-invalid")
    assert res.returncode == 0 and json.loads(res.stdout)["lines"] == 4 and json.loads(res.stdout)["skipped_invalid"] == 1


@pytest.mark.parametrize("sig_name", ["SIGINT", "SIGKILL"])
def test_preference_interrupted_leaves_no_partial_output(tmp_path, sig_name):
    """`cheems preference` interrupted before its output's rename leaves no output (and, but for SIGKILL, no
    temporary file); interrupted just after the rename, the output equals an uninterrupted run's."""
    from cheems_lib.baselines import length_scores
    from cheems_lib.world.simulation import WorldConfig, build_world
    from cheems_lib.world_files import write_world
    world = build_world(WorldConfig(size="smoke", seed=3))
    write_world(world, tmp_path / "w")
    gpt = tmp_path / "w/cheems_preference/gpt.jsonl"
    write_scores([(p, r, s) for (p, r), s in length_scores(read_records(gpt), prefer="longer").items()],
                 tmp_path / "s.jsonl")
    cmd = [*CHEEMS, "preference", "--human", str(tmp_path / "w/cheems_preference/human.jsonl"), "--gpt", str(gpt),
           "--scores", str(tmp_path / "s.jsonl"), "-o"]
    assert subprocess.run([*cmd, str(tmp_path / "ref.jsonl")], capture_output=True).returncode == 0
    ref = (tmp_path / "ref.jsonl").read_bytes()
    for k, (point, done) in enumerate((("atomic.written=1", False), ("atomic.replaced=1", True))):
        out = tmp_path / f"o{k}.jsonl"
        _interrupted([*cmd, str(out)], point, sig_name)
        assert out.exists() == done and (not done or out.read_bytes() == ref)
        assert len(list(tmp_path.glob(f".o{k}.jsonl.tmp-*"))) == (sig_name == "SIGKILL" and not done)


def test_judge_refuses_a_checkpoint_without_a_language_model_head(scored_world, tmp_path):
    """A reward model passed to --judge would judge with a random LM head: refused with one line."""
    res = run("score", "--judge", "--model", scored_world / "rm", "--data", scored_world / "w/cheems_bench/open.jsonl",
              "-o", tmp_path / "j.jsonl")
    assert res.returncode == 2 and "no language-model head" in res.stderr.splitlines()[-1]
    assert not (tmp_path / "j.jsonl").exists()


def test_a_corrupt_partial_file_says_to_delete_it(scored_world, tmp_path):
    """Garbage in OUT.partial is not the user's data: the message says to delete it, not to skip rows."""
    data = scored_world / "w/cheems_bench/open.jsonl"
    out = tmp_path / "s.jsonl"
    assert run("score", "--model", "baseline:longest", "--data", data, "-o", out).returncode == 0
    out.rename(tmp_path / "s.jsonl.partial")
    with open(tmp_path / "s.jsonl.partial", "a") as fh:
        fh.write("garbage\n")
    res = run("score", "--model", "baseline:longest", "--data", data, "-o", out)
    assert res.returncode == 2 and "delete s.jsonl.partial" in res.stderr and "--skip-invalid" not in res.stderr


def test_evaluate_skip_invalid_ignores_and_counts_scores_of_skipped_records(tmp_path):
    """Scores of a record skipped as invalid are counted and ignored, not an error."""
    good = make_record("p", "ab", [("a", "b", "1")], rank={"a": 0, "b": 1})
    write_records([good], tmp_path / "d.jsonl")
    with open(tmp_path / "d.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"id": "q", "input": "x", "responses": [{"id": "a", "content": "y"}], "rank": {"zz": 0}}\n')
    write_scores([("p", "a", 1.0), ("p", "b", 0.0), ("q", "a", 0.5)], tmp_path / "s.jsonl")
    res = run("evaluate", "--data", tmp_path / "d.jsonl", "--scores", tmp_path / "s.jsonl", "--bootstrap", "0",
              "--skip-invalid")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["skipped_invalid"] == 2 and out["d"]["accuracy"] == 1.0
    assert str(tmp_path / "s.jsonl") + ':3: score for prompt/response "q"/"a"' in res.stderr


# --- stale scores: the sidecar's model and record fingerprints ---

def _retrain_in_place(model_dir, seed):
    """Replace the tiny reward model's weights, as `cheems train --overwrite` does (new files, same path)."""
    from transformers import AutoTokenizer

    from cheems_lib.models.reward_model import build_tiny
    tok = AutoTokenizer.from_pretrained(model_dir)
    build_tiny("tiny-xs", tok, seed=seed).save_pretrained(model_dir)


def test_score_after_retraining_in_place_rescores_everything(scored_world, tmp_path):
    """New weights under the same path: every score is recomputed and reported, none kept stale."""
    import shutil
    from cheems_lib.score_file import read_scores
    rm = tmp_path / "rm"
    shutil.copytree(scored_world / "rm", rm)
    data = scored_world / "w/cheems_bench/open.jsonl"
    out = tmp_path / "s.jsonl"
    assert run("score", "--model", rm, "--trust-head", "--data", data, "-o", out).returncode == 0
    before = read_scores(out)
    _retrain_in_place(rm, seed=7)
    res = run("score", "--model", rm, "--trust-head", "--data", data, "-o", out)
    report = json.loads(res.stdout)
    assert res.returncode == 0 and report["scored"] == len(before) and report["skipped"] == 0, res.stderr
    assert report["rescored_stale"] == len(before) and report["dropped_stale"] == 0
    fresh = tmp_path / "fresh.jsonl"
    assert run("score", "--model", rm, "--trust-head", "--data", data, "-o", fresh).returncode == 0
    assert out.read_bytes() == fresh.read_bytes() and read_scores(out) != before
    again = json.loads(run("score", "--model", rm, "--trust-head", "--data", data, "-o", out).stdout)
    assert again["scored"] == 0 and again["rescored_stale"] == 0  # unchanged model and data: reused


@pytest.mark.parametrize("model", ["rm", "baseline:longest", "judge"])
def test_score_rescores_exactly_the_record_whose_text_changed(scored_world, tmp_path, model):
    """Editing one response's text (same ids) rescores that record only, for every kind of scorer."""
    data = tmp_path / "d.jsonl"
    recs = read_records(scored_world / "w/cheems_bench/open.jsonl")
    write_records(recs, data)
    args = {"rm": ["--model", scored_world / "rm", "--trust-head"], "judge": ["--model", scored_world / "judge", "--judge"],
            "baseline:longest": ["--model", "baseline:longest"]}[model]
    out = tmp_path / "s.jsonl"
    assert run("score", *args, "--data", data, "-o", out).returncode == 0
    recs[2].responses[0].content += " 再补充很长的一段话" * 5
    write_records(recs, data)
    res = run("score", *args, "--data", data, "-o", out)
    report = json.loads(res.stdout)
    n = len(recs[2].responses)
    assert res.returncode == 0 and report["scored"] == n and report["rescored_stale"] == n, res.stderr
    assert report["skipped"] == sum(len(r.responses) for r in recs) - n
    fresh = tmp_path / "fresh.jsonl"
    assert run("score", *args, "--data", data, "-o", fresh).returncode == 0
    from cheems_lib.score_file import read_scores
    a, b = read_scores(out), read_scores(fresh)
    assert list(a) == list(b) and all(abs(a[k] - b[k]) < 1e-5 for k in a)


def test_an_interrupted_rescore_never_reuses_the_stale_scores(tmp_path):
    """A rerun stopped after marking OUT's scores stale (before OUT is rewritten) still rescores them."""
    from cheems_lib.baselines import named_scores
    from cheems_lib.score_file import read_scores
    from cheems_lib.models.score_output import ScoreOutput
    recs = [make_record(f"p{i}", "ab", [("a", "b", "1")]) for i in range(3)]
    settings = {"model": "baseline:longest"}
    out = ScoreOutput(tmp_path / "s.jsonl", settings)
    out.start(recs, "baseline:longest")
    out.append(named_scores("baseline:longest", recs))
    out.finish(recs)
    recs[1].responses[0].content = "更长的回答" * 4
    assert ScoreOutput(tmp_path / "s.jsonl", settings).start(recs, "baseline:longest") == {"rescored_stale": 2,
                                                                                         "dropped_stale": 0}
    again = ScoreOutput(tmp_path / "s.jsonl", settings)  # the stopped run's rerun
    assert again.start(recs, "baseline:longest")["rescored_stale"] == 2
    assert again.done() == {("p0", "a"), ("p0", "b"), ("p2", "a"), ("p2", "b")}
    again.append({k: v for k, v in named_scores("baseline:longest", recs).items() if k[0] == "p1"})
    again.finish(recs)
    assert read_scores(tmp_path / "s.jsonl") == named_scores("baseline:longest", recs)
    assert json.loads((tmp_path / "s.jsonl.cheems.json").read_text())["stale"] == []


@pytest.fixture(scope="module")
def writers(tmp_path_factory):
    """The arguments, but the output, of each command with -o (preference from --scores: no training)."""
    from cheems_lib.baselines import length_scores
    from cheems_lib.world.simulation import WorldConfig, build_world
    from cheems_lib.world_files import write_world

    d = tmp_path_factory.mktemp("writers")
    write_world(build_world(WorldConfig(size="smoke", seed=3)), d / "w")
    gpt, human = d / "w/cheems_preference/gpt.jsonl", d / "w/cheems_preference/human.jsonl"
    write_scores([(p, r, s) for (p, r), s in length_scores(read_records(gpt), prefer="longer").items()], d / "s.jsonl")
    return {"resolve": ["resolve", ROOT / "data/examples/annotations.jsonl", "-o"],
            "preference": ["preference", "--human", human, "--gpt", gpt, "--scores", d / "s.jsonl", "-o"],
            "score": ["score", "--model", "baseline:longest", "--data", human, "-o"],
            "simulate": ["simulate", "--size", "smoke", "-o"],
            "train": ["train", "--data", human, "--model", "tiny-xs", "--epochs", "1", "--output"]}


@pytest.mark.parametrize("sink", ["file", "pipe"])
@pytest.mark.parametrize("cmd", ["resolve", "preference", "score"])
def test_an_output_linked_to_stdout_is_written_through(writers, tmp_path, cmd, sink):
    """-o a link to /proc/self/fd/1: the output, then the summary, go to stdout (a file or a pipe); the link stays."""
    import os

    link = tmp_path / "so.lnk"
    link.symlink_to("/proc/self/fd/1")
    argv = [*CHEEMS, *map(str, writers[cmd]), str(link)]
    if sink == "file":
        with open(tmp_path / "out.txt", "w") as fh:
            res = subprocess.run(argv, stdout=fh, stderr=subprocess.PIPE, text=True)
        text = (tmp_path / "out.txt").read_text()
    else:
        res = subprocess.run(argv, capture_output=True, text=True)
        text = res.stdout
    assert res.returncode == 0, res.stderr
    assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"
    rows, _, summary = text.partition("\n{\n")  # the rows are one-line JSON, the summary is indented
    assert rows and all(json.loads(line) for line in rows.splitlines())
    assert json.loads("{\n" + summary)["output"] == str(link)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt", "so.lnk"][sink == "pipe":]


@pytest.mark.parametrize("cmd", ["resolve", "preference", "score", "simulate", "train"])
def test_a_link_loop_as_output_is_one_line_exit_2_and_writes_nothing(writers, tmp_path, cmd):
    """-o a link to itself (ln -s a a): exit 2, one line naming it with a fix, no temporary or sibling file."""
    loop = tmp_path / "a"
    loop.symlink_to("a")
    res = run(*writers[cmd], loop)
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr[-2000:]
    assert res.stderr.startswith(f"cheems: {loop}: ") and "symbolic link" in res.stderr and "(fix: " in res.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["a"] and loop.is_symlink()


@pytest.mark.parametrize("cmd", ["resolve", "score"])
def test_an_output_linked_to_a_regular_file_is_written_there_and_stays_a_link(writers, tmp_path, cmd):
    """-o a link to a file elsewhere: that file gets the output (a score file's record beside it), the link stays."""
    import os

    (tmp_path / "real").mkdir()
    link = tmp_path / "o.lnk"
    link.symlink_to("real/o.jsonl")
    for _ in range(2):  # dangling at first, then a link to the file written the first time
        res = run(*writers[cmd], link)
        assert res.returncode == 0, res.stderr
        assert link.is_symlink() and os.readlink(link) == "real/o.jsonl"
    names = sorted(p.name for p in (tmp_path / "real").iterdir())
    assert names == (["o.jsonl", "o.jsonl.cheems.json"] if cmd == "score" else ["o.jsonl"])
    assert (tmp_path / "real/o.jsonl").read_text().count("\n") > 0 and sorted(os.listdir(tmp_path)) == ["o.lnk", "real"]



def _row(pid, content="x", rank=True):
    return json.dumps({"id": pid, "input": f"q {pid}", "responses": [{"id": "a", "content": content},
                                                                      {"id": "b", "content": "y"}],
                       "annotations": [["a", "b", "1"]], **({"rank": {"a": 0, "b": 1}} if rank else {})})


def _files(tmp_path, **files):
    for name, rows in files.items():
        (tmp_path / f"{name}.jsonl").write_text("".join(r + "\n" for r in rows), encoding="utf-8")
    write_scores([(p, r, float(r == "a")) for p in ("p", "q", "r") for r in "ab"], tmp_path / "s.jsonl")
    return [tmp_path / f"{name}.jsonl" for name in files]


def _command(command, tmp_path, paths):
    """Argument lists reading ``paths`` for each command that reads records (train only up to its checks)."""
    data = [a for p in paths for a in ("--data", p)]
    return {"resolve": ["resolve", paths[0], "-o", tmp_path / "o.jsonl"],
            "evaluate": ["evaluate", *data, "--scores", tmp_path / "s.jsonl", "--bootstrap", "0"],
            "score": ["score", "--model", "baseline:longest", *data, "-o", tmp_path / "o.jsonl"],
            "train": ["train", *data, "--model", "tiny-xs", "--epochs", "1", "--max-length", "32",
                      "--output", tmp_path / "rm"],
            "preference": ["preference", "--human", paths[0], "--gpt", paths[-1], "--scores", tmp_path / "s.jsonl",
                           "-o", tmp_path / "o.jsonl"]}[command]


READERS = ["resolve", "evaluate", "score", "train", "preference"]
SKIPPERS = ["resolve", "evaluate", "score", "train"]


@pytest.mark.parametrize("command", READERS)
def test_a_repeated_prompt_id_is_refused_by_every_command(tmp_path, command):
    """One prompt id twice (in one file, or across the files of one command): exit 2, one line naming both places."""
    a, b, c, d = _files(tmp_path, a=[_row("p"), _row("q"), _row("p", "z")],
                        b=[_row("p")], c=[_row("q"), _row("p")],  # an identical record across files: refused too
                        d=[_row("r")])
    cases = {"resolve": [[a]], "preference": [[a, d], [b, c]]}.get(command, [[a], [b, c]])
    for paths in cases:
        res = run(*_command(command, tmp_path, paths))
        first, repeat = (f"{a}:1", f"{a}:3") if paths[0] == a else (f"{b}:1", f"{c}:2")
        assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
        assert f"{repeat}: prompt id \"p\" repeats the record at {first}" in res.stderr and "fix:" in res.stderr
        assert not (tmp_path / "o.jsonl").exists() and not (tmp_path / "rm").exists()


@pytest.mark.parametrize("command", SKIPPERS[:3])
def test_skip_invalid_skips_and_counts_a_repeated_prompt_id(tmp_path, command):
    """With --skip-invalid the later record of a repeated id is skipped, printed and counted; the first is kept."""
    if command == "resolve":  # one input file: a repeat within it
        paths = _files(tmp_path, a=[_row("p"), _row("q"), _row("p", "z")])
    else:
        paths = _files(tmp_path, a=[_row("p"), _row("q")], b=[_row("r"), _row("p", "z")])
    res = run(*_command(command, tmp_path, paths), "--skip-invalid")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["skipped_invalid"] == 1 and "repeats the record at" in res.stderr


@pytest.mark.parametrize("command", READERS[1:])  # resolve reads one file
def test_the_same_file_given_twice_is_a_usage_error(tmp_path, command):
    """The same file twice (by one name or two) would double the data: exit 2 saying so, even with --skip-invalid."""
    (a,) = _files(tmp_path, a=[_row("p"), _row("q")])
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub/link.jsonl").symlink_to(a)
    for second in (a, tmp_path / "sub/link.jsonl"):
        extra = ["--skip-invalid"] if command in SKIPPERS else []
        res = run(*_command(command, tmp_path, [a, second]), *extra)
        assert res.returncode == 2 and "the same file is given twice" in res.stderr and "pass each file once" in res.stderr
        assert res.stderr.count("\n") == 1, res.stderr


@pytest.mark.parametrize("command", SKIPPERS)
def test_skip_invalid_on_a_file_with_no_valid_row_exits_2(tmp_path, command):
    """--skip-invalid that skips every row of a file is no success: exit 2, `FILE: no valid row (N skipped ...)`."""
    (bad,) = _files(tmp_path, bad=["not json", '{"input": 1}', _row("p") + " trailing"])
    res = run(*_command(command, tmp_path, [bad]), "--skip-invalid")
    assert res.returncode == 2, res.stderr
    assert res.stderr.splitlines()[-1].startswith(f"cheems: {bad}: no valid row (3 skipped as invalid)")
    assert f"skipped {bad}:1: malformed JSON" in res.stderr  # what was skipped is still listed
    assert not (tmp_path / "o.jsonl").exists() and not (tmp_path / "rm").exists()


def test_evaluate_skip_invalid_leaves_out_a_prompt_with_a_nan_score(tmp_path):
    """A NaN score (or no score) under --skip-invalid: the line and its prompt are skipped and counted. A record
    without rank is ranked on read from its annotations (one line says so), then left out like any unscored one."""
    (data,) = _files(tmp_path, d=[_row("p"), _row("q"), _row("r", rank=False)])
    (tmp_path / "s.jsonl").write_text("".join(json.dumps({"prompt_id": p, "response_id": r, "score": s}) + "\n"
                                              for p, r, s in [("p", "a", 1), ("p", "b", 0), ("q", "a", 1)])
                                      + '{"prompt_id": "q", "response_id": "b", "score": NaN}\n', encoding="utf-8")
    strict = run("evaluate", "--data", data, "--scores", tmp_path / "s.jsonl", "--bootstrap", "0")
    assert strict.returncode == 2 and "--skip-invalid" in strict.stderr
    res = run("evaluate", "--data", data, "--scores", tmp_path / "s.jsonl", "--bootstrap", "0", "--skip-invalid")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["d"]["prompts"] == 1 and out["d"]["accuracy"] == 1.0
    assert out["skipped_invalid"] == 3  # the NaN line, the prompt it leaves unscored, the unscored prompt ranked on read
    assert f"cheems: 1 record of {data} had no 'rank' and was ranked on read" in res.stderr
    assert out["resolved_on_read"] == {"records": 1, "conflicted": 0, "annotations": 1, "unreproduced": 0}
    assert f'{data}:3: prompt "r" left out' in res.stderr and "score NaN is not a finite number" in res.stderr
    assert f'{data}:2: prompt "q" left out: {tmp_path / "s.jsonl"} has no valid score for its response "b"' in res.stderr


def test_evaluate_bootstrap_is_bounded(tmp_path):
    """--bootstrap 1000000000000 is a one-line usage error naming the bound and why, not a numpy traceback."""
    (data,) = _files(tmp_path, d=[_row("p")])
    res = run("evaluate", "--data", data, "--scores", tmp_path / "s.jsonl", "--bootstrap", "1000000000000")
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
    assert "--bootstrap: must be <= 100,000" in res.stderr and "memory" in res.stderr


def test_seeds_numpy_cannot_take_are_refused_before_training(tmp_path):
    """A train or preference seed of 2**32 (accelerate seeds numpy with 32 bits) and --epochs 10**12: exit 2, one line."""
    (data,) = _files(tmp_path, d=[_row("p")])
    for extra, flag in ((["--seed", str(2**32)], "--seed"), (["--epochs", str(10**12)], "--epochs")):
        res = run(*_command("train", tmp_path, [data]), *extra)
        assert res.returncode == 2 and res.stderr.count("\n") == 1 and flag in res.stderr, res.stderr
    res = run(*_command("preference", tmp_path, [data, data]), "--seed", str(2**32))
    assert res.returncode == 2 and "--seed: must be <= 4,294,967,295" in res.stderr


def test_version_prints_the_package_version_without_torch():
    """`cheems --version` prints `cheems <version>` from the package metadata and imports no torch."""
    from importlib import metadata

    res = run("--version")
    assert res.returncode == 0 and res.stdout == f"cheems {metadata.version('cheems-lib')}\n"
    probe = ("import sys; from cheems_lib.cli import main\ntry: main(['--version'])\nexcept SystemExit: pass\n"
             "assert 'torch' not in sys.modules")
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode == 0


def test_messages_show_json_values_not_python_reprs(tmp_path):
    """A score file from another setup names the differing settings as JSON (false, null), not False or None."""
    (data,) = _files(tmp_path, d=[_row("p")])
    out = tmp_path / "o.jsonl"
    assert run("score", "--model", "baseline:longest", "--data", data, "-o", out).returncode == 0
    res = run("score", "--model", "baseline:longest", "--judge", "--data", data, "-o", out)
    assert res.returncode == 2 and "judge: false in the file, true now" in res.stderr, res.stderr
    assert "False" not in res.stderr and "None" not in res.stderr


# --- hub reward models: reward heads, custom code, device maps ---

@pytest.fixture(scope="module")
def custom_rm(tmp_path_factory):
    """A reward model with its own code (test_reward_heads' InternLM2-style checkpoint)."""
    from test_reward_heads import write_custom_checkpoint

    return write_custom_checkpoint(tmp_path_factory.mktemp("custom"))


@pytest.mark.parametrize("args, message", [
    (["--model", "{rm}", "--reward-token", "3"], "only --reward-head logit reads"),
    (["--model", "{judge}", "--judge", "--reward-head", "logit"], "--judge makes the model a judge"),
    (["--model", "{rm}", "--reward-head", "custom"], "auto_map"),
    (["--model", "{custom}"], "fix: add --trust-remote-code"),
    (["--model", "{judge}", "--reward-head", "logit", "--reward-token", "100000"], "is not a token id"),
    (["--model", "{rm}", "--max-tokens-per-batch", "0"], "--max-tokens-per-batch: must be >= 1"),
])
def test_score_bad_head_flags_are_one_line_and_write_nothing(scored_world, custom_rm, tmp_path, capsys, args, message):
    """A reward-head flag that cannot apply (a token without the logit head, a head with --judge, custom code
    not trusted or absent, a token outside the vocabulary, a zero budget): exit 2, one line naming the fix."""
    paths = {"{rm}": scored_world / "rm", "{judge}": scored_world / "judge", "{custom}": custom_rm}
    args = [str(paths.get(a, a)) for a in args]
    try:
        code = main(["score", *args, "--data", str(scored_world / "w/cheems_bench/open.jsonl"),
                     "-o", str(tmp_path / "s.jsonl")])
    except SystemExit as e:  # argparse's own refusals
        code = e.code
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and message in err and "fix" in err, err
    assert not list(tmp_path.glob("s.jsonl*"))


def test_score_with_a_device_map_gives_the_same_scores_and_resumes_without_it(scored_world, tmp_path):
    """--device-map auto (here: the CPU) loads through accelerate's placement and gives the same scores; it is
    not a setting of the score file, so a run resumes under another placement."""
    data = scored_world / "w/cheems_bench/open.jsonl"
    rm = ["--model", scored_world / "rm", "--trust-head"]
    plain, mapped = tmp_path / "plain.jsonl", tmp_path / "mapped.jsonl"
    assert run("score", *rm, "--data", data, "-o", plain).returncode == 0
    out = run("score", *rm, "--device-map", "auto", "--data", data, "-o", mapped)
    assert out.returncode == 0, out.stderr
    assert plain.read_bytes() == mapped.read_bytes()
    sidecar = json.loads((tmp_path / "mapped.jsonl.cheems.json").read_text())
    assert "device_map" not in sidecar and sidecar["reward_head"] is None and sidecar["trust_remote_code"] is None
    again = run("score", *rm, "--data", data, "-o", mapped)
    assert again.returncode == 0 and json.loads(again.stdout)["skipped"] == json.loads(out.stdout)["lines"]


def test_score_a_custom_code_reward_model_with_trust_remote_code(scored_world, custom_rm, tmp_path):
    """cheems score --trust-remote-code scores a checkpoint with its own code (its head picked automatically) and
    records the trust in the score file's settings, so a run without it is not mixed in."""
    data = scored_world / "w/cheems_bench/open.jsonl"
    out = tmp_path / "custom.jsonl"
    res = run("score", "--model", custom_rm, "--trust-remote-code", "--max-length", "64", "--data", data, "-o", out)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["scored"] == sum(len(r.responses) for r in read_records(data))
    assert json.loads((tmp_path / "custom.jsonl.cheems.json").read_text())["trust_remote_code"] is True


def test_evaluate_reads_a_compressed_data_file_and_names_it_without_its_suffixes(tmp_path):
    """`--data open.jsonl.xz` is read as shipped (data/real's human scores are xz) and keys the output as `open`."""
    import lzma

    good = make_record("p", "ab", [("a", "b", "1")], rank={"a": 0, "b": 1})
    write_records([good], tmp_path / "open.jsonl")
    with lzma.open(tmp_path / "open.jsonl.xz", "wb") as fh:
        fh.write((tmp_path / "open.jsonl").read_bytes())
    write_scores([("p", "a", 1.0), ("p", "b", 0.0)], tmp_path / "s.jsonl")
    res = run("evaluate", "--data", tmp_path / "open.jsonl.xz", "--scores", tmp_path / "s.jsonl", "--bootstrap", "0")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["open"]["accuracy"] == 1.0


def test_a_never_compared_response_is_reported_not_ranked_best(tmp_path):
    """One record, a > b annotated, c never compared: resolve leaves c unranked and says so; evaluate counts only
    a > b, so picking the longest answer (c, then b) scores 0, not 0.5 from a gold c > b nobody asserted."""
    from cheems_lib.baselines import length_scores

    rec = make_record("p", "abc", [("a", "b", "1")])
    rec.responses[2].content = "the longest answer of all three"
    rec.responses[1].content = "longer one"
    write_records([rec], tmp_path / "raw.jsonl")
    out = run("resolve", tmp_path / "raw.jsonl", "-o", tmp_path / "ranked.jsonl")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["unranked_responses"] == 1 and "1 response of" in out.stderr
    assert read_records(tmp_path / "ranked.jsonl")[0].rank == {"a": 0, "b": 1}
    write_scores([(p, r, s) for (p, r), s in length_scores([rec], prefer="longer").items()], tmp_path / "s.jsonl")
    for data in ("raw.jsonl", "ranked.jsonl"):  # ranked on read, or as resolved
        out = run("evaluate", "--data", tmp_path / data, "--scores", tmp_path / "s.jsonl")
        assert out.returncode == 0, out.stderr
        res = json.loads(out.stdout)
        assert res[data.removesuffix(".jsonl")]["accuracy"] == 0.0, data
        assert res[data.removesuffix(".jsonl")]["by_category"]["理解"]["comparisons"] == 1
        assert res["unranked_responses"] == {str(tmp_path / data): 1} and "1 response of" in out.stderr  # given rank too


def test_an_ambiguous_label_is_exit_2_in_one_line(tmp_path):
    """Responses named a and b, the winner's id written as the label: refused, not read as a position."""
    rec = {"id": "p", "input": "q", "responses": [{"id": "a", "content": "x"}, {"id": "b", "content": "yy"}],
           "annotations": [["b", "a", "a"]]}
    (tmp_path / "in.jsonl").write_text(json.dumps(rec) + "\n", encoding="utf-8")
    out = run("resolve", tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    assert 'label "a" is also the id of response "a"' in out.stderr and not (tmp_path / "out.jsonl").exists()


def _reading_commands(tmp_path, data):
    """Each command that reads records files, reading ``data`` (``-o`` into ``tmp_path``)."""
    good = ROOT / "data/examples/release/cheems_bench/open.jsonl"
    return {"resolve": ["resolve", data, "-o", tmp_path / "o.jsonl"],
            "evaluate": ["evaluate", "--data", data, "--scores", tmp_path / "s.jsonl"],
            "evaluate-scores": ["evaluate", "--data", good, "--scores", data],
            "score": ["score", "--model", "baseline:longest", "--data", data, "-o", tmp_path / "o.jsonl"],
            "train": ["train", "--data", data, "--model", "tiny-xs", "--epochs", "1", "--output", tmp_path / "run"],
            "preference": ["preference", "--human", good, "--gpt", data, "--scores", tmp_path / "s.jsonl",
                           "-o", tmp_path / "o.jsonl"],
            "import-dpo-zh": ["import", "dpo-zh", data, "-o", tmp_path / "o.jsonl"]}


@pytest.mark.parametrize("cmd", ["resolve", "evaluate", "evaluate-scores", "score", "train", "preference", "import-dpo-zh"])
@pytest.mark.parametrize("skip", [False, True], ids=["strict", "skip-invalid"])
def test_an_empty_input_is_exit_2_for_every_command(tmp_path, cmd, skip):
    """An empty file does nothing, so no command reports success on it: exit 2, one line, no output, with or without
    --skip-invalid (the help's promise: a file with no valid row is exit 2)."""
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    write_scores([], tmp_path / "s.jsonl")
    argv = _reading_commands(tmp_path, tmp_path / "empty.jsonl")[cmd]
    if skip and cmd not in ("preference", "import-dpo-zh"):
        argv = [*argv, "--skip-invalid"]
    out = run(*argv)
    assert out.returncode == 2, (cmd, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr and out.stderr.strip().splitlines()[-1].startswith("cheems: ")
    assert not (tmp_path / "o.jsonl").exists() and not (tmp_path / "run").exists()


@pytest.mark.parametrize("cmd", ["resolve", "evaluate", "evaluate-scores", "score", "preference", "import-dpo-zh"])
@pytest.mark.parametrize("content", [b"[" * 100_000, b'{"input": "\xff"}', '{"a": 1}'.encode("utf-16")],
                         ids=["deep", "latin1", "utf16"])
def test_malformed_input_is_one_line_for_every_command(tmp_path, cmd, content):
    """However deep or however encoded, bad input is one line naming the file and line: exit 2, no traceback."""
    (tmp_path / "bad.jsonl").write_bytes(content + b"\n")
    write_scores([], tmp_path / "s.jsonl")
    out = run(*_reading_commands(tmp_path, tmp_path / "bad.jsonl")[cmd])
    assert out.returncode == 2, (cmd, out.stderr)
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert f"{tmp_path / 'bad.jsonl'}:1: " in out.stderr


def test_evaluate_on_one_prompt_per_category_reports_insufficient_data(tmp_path):
    """Six prompts, one per category (a user's report printed accuracy_ci [0.7533, 0.7533]): exit 0, the required
    keys as they are, no interval but ci_note with the count, the pooled categories named; with two such files
    Overall has overall_ci_note instead of overall_ci."""
    cats = ["数学", "代码", "安全", "写作", "理解", "知识"]
    for name in ("a", "b"):
        recs = [make_record(f"{name}{i}", "abc", rank={"a": 0, "b": 1, "c": 2}, category=[c]) for i, c in enumerate(cats)]
        write_records(recs, tmp_path / f"{name}.jsonl")
    rng = random.Random(0)
    rows = [(f"{n}{i}", r, rng.random()) for n in "ab" for i in range(6) for r in "abc"]
    write_scores(rows[:18], tmp_path / "s.jsonl")
    write_scores(rows, tmp_path / "both.jsonl")
    res = run("evaluate", "--data", tmp_path / "a.jsonl", "--scores", tmp_path / "s.jsonl")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert {"accuracy", "exact_match", "by_category", "prompts", "prompts_without_comparisons"} <= set(out["a"])
    assert "accuracy_ci" not in out["a"] and "exact_match_ci" not in out["a"]
    assert out["a"]["ci_note"].startswith("insufficient data: 6 prompts with a comparison, needs at least 10")
    assert sorted(out["a"]["pooled_categories"]) == sorted(cats)
    both = json.loads(run("evaluate", "--data", tmp_path / "a.jsonl", "--data", tmp_path / "b.jsonl",
                          "--scores", tmp_path / "both.jsonl", "--bootstrap", "200").stdout)
    assert "overall" in both and "overall_ci" not in both
    assert both["overall_ci_note"].startswith("insufficient data: 6 prompts with a comparison")


def test_evaluate_keeps_real_intervals_and_names_no_pool(tmp_path):
    """Forty prompts in three categories of ten or more: the intervals are there, and no note or pool is added."""
    recs = [make_record(f"p{i}", "abc", rank={"a": 0, "b": 1, "c": 2}, category=["数学", "代码", "安全"][i % 3])
            for i in range(40)]
    write_records(recs, tmp_path / "d.jsonl")
    rng = random.Random(1)
    write_scores([(r.id, x, rng.random()) for r in recs for x in "abc"], tmp_path / "s.jsonl")
    out = json.loads(run("evaluate", "--data", tmp_path / "d.jsonl", "--scores", tmp_path / "s.jsonl",
                         "--bootstrap", "300").stdout)["d"]
    lo, hi = out["accuracy_ci"]
    assert lo < out["accuracy"] < hi and "exact_match_ci" in out
    assert "ci_note" not in out and "pooled_categories" not in out


# --- no output is an input; a rerun leaves what a fresh run does; one lock per output ---

@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """Read-only inputs of every writing command: a smoke world, score files of its preference subset (longer wins,
    shorter wins) and a source folder for `cheems import` (test_real_data's layout)."""
    from cheems_lib.baselines import length_scores
    from cheems_lib.world.simulation import WorldConfig, build_world
    from cheems_lib.world_files import write_world
    from test_real_data import _fake_src

    d = tmp_path_factory.mktemp("sources")
    write_world(build_world(WorldConfig(size="smoke", seed=3)), d / "w")
    gpt = read_records(d / "w/cheems_preference/gpt.jsonl")
    for name, prefer in (("s", "longer"), ("s2", "shorter")):
        write_scores([(p, r, s) for (p, r), s in length_scores(gpt, prefer=prefer).items()], d / f"{name}.jsonl")
    _fake_src(d)
    return d


def _copy_inputs(sources, tmp_path):
    """Copies of the inputs in ``tmp_path/in`` (a test that fails must not destroy the shared ones)."""
    import shutil
    src = tmp_path / "in"
    src.mkdir()
    for name in ("human", "gpt"):
        shutil.copy(sources / f"w/cheems_preference/{name}.jsonl", src / f"{name}.jsonl")
    shutil.copy(sources / "w/cheems_bench_gpt/open.jsonl", src / "raw.jsonl")
    for name in ("s", "s2"):
        shutil.copy(sources / f"{name}.jsonl", src / f"{name}.jsonl")
    shutil.copytree(sources / "src", src / "src")
    return src


def _inputs_are(tmp_path):
    from conftest import digest
    return digest(tmp_path)


# each: the arguments with {in} for the copied inputs, and the output (-o / --output) that is one of them
OUTPUT_IS_INPUT = {
    "resolve -o INPUT": (["resolve", "{in}/raw.jsonl"], "{in}/raw.jsonl"),
    "resolve -o a link to INPUT": (["resolve", "{in}/raw.jsonl"], "{in}/raw.lnk"),
    "resolve -o a hard link of INPUT": (["resolve", "{in}/raw.jsonl"], "{in}/raw.hard"),
    "preference -o --gpt": (["preference", "--human", "{in}/human.jsonl", "--gpt", "{in}/gpt.jsonl",
                             "--scores", "{in}/s.jsonl"], "{in}/gpt.jsonl"),
    "preference -o --human": (["preference", "--human", "{in}/human.jsonl", "--gpt", "{in}/gpt.jsonl",
                               "--scores", "{in}/s.jsonl"], "{in}/human.lnk"),
    "preference -o --scores": (["preference", "--human", "{in}/human.jsonl", "--gpt", "{in}/gpt.jsonl",
                                "--scores", "{in}/s.jsonl"], "{in}/s.jsonl"),
    "score -o a hard link of --data": (["score", "--model", "baseline:longest", "--data", "{in}/raw.jsonl"],
                                       "{in}/raw.hard"),
    "import dpo-zh -o INPUT": (["import", "dpo-zh", "{in}/src/dpo-zh/dpo_zh_500.jsonl"],
                               "{in}/src/dpo-zh/dpo_zh_500.jsonl"),
    "import llmzoo -o inside its folder": (["import", "llmzoo", "{in}/src/llmzoo-zh/review_zh"],
                                           "{in}/src/llmzoo-zh/review_zh/extra.jsonl"),
    "import llmzoo -o --questions": (["import", "llmzoo", "{in}/src/llmzoo-zh/review_zh", "--questions",
                                      "{in}/src/llmzoo-zh/questions-zh.jsonl"], "{in}/src/llmzoo-zh/questions-zh.jsonl"),
    "import writingpref -o its folder": (["import", "writingpref", "{in}/src/writingpref-zh"], "{in}/src/writingpref-zh"),
    "import real -o SRC": (["import", "real", "{in}/src"], "{in}/src"),
    "train --output holding --data": (["train", "--data", "{in}/human.jsonl", "--model", "tiny-xs", "--epochs", "1",
                                       "--output"], "{in}"),
}


@pytest.mark.parametrize("case", OUTPUT_IS_INPUT)
def test_an_output_that_is_an_input_is_refused_and_the_input_kept(sources, tmp_path, case):
    """-o naming a file (or folder) the same command reads, by its own name, a symbolic link or a hard link: exit 2
    with one line `cheems: OUT: ... (fix: ...)`, no traceback, every input byte-identical and nothing written."""
    import os
    src = _copy_inputs(sources, tmp_path)
    (src / "raw.lnk").symlink_to("raw.jsonl")
    (src / "human.lnk").symlink_to(src / "human.jsonl")
    os.link(src / "raw.jsonl", src / "raw.hard")
    args, out = OUTPUT_IS_INPUT[case]
    fill = lambda a: a.replace("{in}", str(src))
    before = _inputs_are(tmp_path)
    argv = [fill(a) for a in args] + ([] if args[-1] == "--output" else ["-o"]) + [fill(out)]
    res = run(*argv)
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr[-2000:]
    assert res.stderr.startswith(f"cheems: {fill(out)}: ") and "(fix: " in res.stderr and "Traceback" not in res.stderr
    assert any(w in res.stderr for w in ("is also a", "is also an input", "lies inside", "holds a")), res.stderr
    assert _inputs_are(tmp_path) == before


def _siblings(path):
    """What an output left: its files (a folder's, by relative path; a file and the files named after it beside it,
    by suffix), as SHA-256."""
    import hashlib
    from pathlib import Path

    from conftest import digest
    path = Path(path)
    if path.is_dir():
        return digest(path)
    return {p.name[len(path.name):]: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in path.parent.iterdir() if p.name.startswith(path.name) and p.is_file()}


def _rerun_case(case, src):
    """(first run's arguments, what changes before the rerun, the rerun's arguments), -o appended to each run."""
    import shutil

    def change_raw():
        shutil.copy(src / "human.jsonl", src / "raw.jsonl")

    def change_dpo():
        dpo = src / "src/dpo-zh/dpo_zh_500.jsonl"
        dpo.write_text(dpo.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")

    def old_layout_file(out):
        manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
        manifest["files"]["old/review.jsonl"] = {"content": "a file an older import wrote", "inputs": {}}
        (out / "old").mkdir()
        (out / "old/review.jsonl").write_text("{}\n")
        (out / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        change_dpo()

    pref = ["preference", "--human", src / "human.jsonl", "--gpt", src / "gpt.jsonl"]
    return {
        "resolve, input changed": (["resolve", src / "raw.jsonl"], change_raw, ["resolve", src / "raw.jsonl"]),
        "preference, scores and margin changed": ([*pref, "--scores", src / "s.jsonl"], None,
                                                  [*pref, "--scores", src / "s2.jsonl", "--margin", "0.5"]),
        "score, other data": (["score", "--model", "baseline:longest", "--data", src / "gpt.jsonl"], None,
                              ["score", "--model", "baseline:longest", "--data", src / "human.jsonl"]),
        "score baseline:random, other data after a killed run": (
            ["score", "--model", "baseline:random", "--data", src / "gpt.jsonl", "KILL"], None,
            ["score", "--model", "baseline:random", "--data", src / "human.jsonl", "--data", src / "gpt.jsonl"]),
        "import dpo-zh, input changed": (["import", "dpo-zh", src / "src/dpo-zh/dpo_zh_500.jsonl"], change_dpo,
                                         ["import", "dpo-zh", src / "src/dpo-zh/dpo_zh_500.jsonl"]),
        "import real, input changed, an older import's file": (["import", "real", src / "src"], old_layout_file,
                                                              ["import", "real", src / "src"]),
        "simulate, seed changed": (["simulate", "--size", "smoke", "--seed", "1"], None,
                                   ["simulate", "--size", "smoke", "--seed", "2"]),
    }[case]


RERUNS = ["resolve, input changed", "preference, scores and margin changed", "score, other data",
          "score baseline:random, other data after a killed run", "import dpo-zh, input changed",
          "import real, input changed, an older import's file", "simulate, seed changed"]


@pytest.mark.parametrize("case", RERUNS)
def test_a_rerun_into_an_existing_output_leaves_what_a_fresh_run_does(sources, tmp_path, case):
    """Run a command into OUT, change an input or a flag, run it into OUT again: OUT (and the files beside it that
    the command writes) is what a run into a new path leaves, byte for byte; nothing of the first run stays, also
    when that run was killed half-way (score's OUT.partial). (train: test_cli_train.py.)"""
    import inspect
    src = _copy_inputs(sources, tmp_path)
    first, change, again = _rerun_case(case, src)
    out, fresh = tmp_path / "out", tmp_path / "fresh"
    if first[-1] == "KILL":
        _interrupted([*CHEEMS, *map(str, first[:-1]), "-o", str(out)], "score.batch=1", "SIGKILL")
        assert (tmp_path / "out.partial").exists()
    else:
        assert run(*first, "-o", out).returncode == 0
    if change is not None:
        change(*([out] if inspect.signature(change).parameters else []))
    for path in (out, fresh):
        res = run(*again, "-o", path)
        assert res.returncode == 0, res.stderr[-2000:]
    assert _siblings(out) == _siblings(fresh)


LOCKED = {
    "resolve": (["resolve", "{in}/raw.jsonl"], "out.jsonl"),
    "preference": (["preference", "--human", "{in}/human.jsonl", "--gpt", "{in}/gpt.jsonl", "--scores", "{in}/s.jsonl"],
                   "out.jsonl"),
    "import dpo-zh": (["import", "dpo-zh", "{in}/src/dpo-zh/dpo_zh_500.jsonl"], "out.jsonl"),
    "import real": (["import", "real", "{in}/src"], "out"),
    "simulate": (["simulate", "--size", "smoke"], "out"),
}


@pytest.mark.parametrize("exists", [False, True], ids=["new", "existing"])
@pytest.mark.parametrize("cmd", LOCKED)
def test_a_second_writer_of_an_output_is_refused_and_writes_nothing(sources, tmp_path, cmd, exists):
    """While another process holds an output's lock (here the test process, as `cheems score` or a running command
    would), each command writing it stops at once: exit 2, the one line of the score lock (`another process (pid N)
    is writing this output`), and the output (new, or a previous run's) untouched."""
    import os

    from cheems_lib.outputs import OutputLock
    src = _copy_inputs(sources, tmp_path)
    args, name = LOCKED[cmd]
    argv = [a.replace("{in}", str(src)) for a in args]
    out = tmp_path / name
    if exists:
        assert run(*argv, "-o", out).returncode == 0
    before = _siblings(out) if exists else None
    with OutputLock(out):
        res = run(*argv, "-o", out)
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr[-2000:]
    assert res.stderr == (f"cheems: {out}: another process (pid {os.getpid()}) is writing this output (fix: wait for "
                          "it to finish, or choose another output path)\n")
    assert (_siblings(out) if exists else out.exists()) == (before if exists else False)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["in", *([name] if exists else [])])


@pytest.mark.parametrize("how", ["the lock's name is an input", "a file of the user's bears the lock's name"])
def test_the_lock_file_never_overwrites_or_deletes_a_file(tmp_path, how):
    """The lock is OUT.lock: an input of that name is refused like the output itself, and a file that is not a lock
    is refused rather than emptied and deleted when the command ends."""
    src = ROOT / "data/examples/annotations.jsonl"
    if how == "the lock's name is an input":
        (tmp_path / "data.lock").write_bytes(src.read_bytes())
        argv, kept = ["resolve", tmp_path / "data.lock", "-o", tmp_path / "data"], tmp_path / "data.lock"
    else:
        (tmp_path / "o.jsonl.lock").write_text('{"mine": 1}\n', encoding="utf-8")
        argv, kept = ["resolve", src, "-o", tmp_path / "o.jsonl"], tmp_path / "o.jsonl.lock"
    before = kept.read_bytes()
    out = run(*argv)
    assert out.returncode == 2 and "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert kept.read_bytes() == before and not (tmp_path / argv[-1]).exists()


def test_a_record_too_deep_to_write_back_is_one_line(tmp_path):
    """Read (orjson reads 1,024 levels) but not writable (it writes 254): one line naming the record, no traceback."""
    rec = {"id": "p", "input": "q", "responses": [{"id": "a", "content": "x"}, {"id": "b", "content": "yy"}],
           "annotations": [["a", "b", "1"]], "x": json.loads("[" * 400 + "]" * 400)}
    (tmp_path / "in.jsonl").write_text(json.dumps(rec) + "\n", encoding="utf-8")
    out = run("resolve", tmp_path / "in.jsonl", "-o", tmp_path / "o.jsonl")
    assert out.returncode == 2 and "Traceback" not in out.stderr and "in.jsonl:1: " in out.stderr
    assert not (tmp_path / "o.jsonl").exists()


def test_evaluate_on_a_file_without_comparisons_is_exit_2_not_nan(tmp_path):
    """Rankings that are empty or tie everything leave nothing to score: exit 2, never "accuracy": NaN."""
    recs = [make_record("p", "ab", rank={}), make_record("q", "ab", rank={"a": 0, "b": 0})]
    write_records(recs, tmp_path / "d.jsonl")
    write_scores([(r.id, x, 1.0) for r in recs for x in "ab"], tmp_path / "s.jsonl")
    out = run("evaluate", "--data", tmp_path / "d.jsonl", "--scores", tmp_path / "s.jsonl")
    assert out.returncode == 2 and "NaN" not in out.stdout and "has a comparison" in out.stderr
