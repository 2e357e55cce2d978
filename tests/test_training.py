"""Bradley-Terry training: the loss by hand, learning, determinism, oversize prompts, resume, 2 processes."""
from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys

import pytest

from cheems_lib.records import write_records
from cheems_lib.world.simulation import WorldConfig, build_world
from cheems_lib.models.training import bt_loss, train
from cheems_lib.models.training_config import TrainConfig
from cheems_lib.models.training_pairs import encode_records
from conftest import accelerate_two


@pytest.fixture(scope="module")
def records():
    world = build_world(WorldConfig(size="smoke", seed=0))
    return world.files["cheems_preference/gpt.jsonl"][:48]


def small_cfg(**kw):
    base = dict(model="tiny-xs", epochs=1, max_tokens_per_batch=1024, tokenizer_vocab=500, max_length=256)
    return TrainConfig(**{**base, **kw})


def _weights(path):
    from safetensors.torch import load_file
    return load_file(str(path / "model.safetensors"))


def test_bt_loss_by_hand():
    """Rewards (1, 0, -1), pairs 0>1, 0>2, 1>2, reg 0.1: mean -log sigma(1, 2, 1) + 0.1 * mean(1, 0, 1)."""
    import torch

    loss, stats = bt_loss(torch.tensor([1.0, 0.0, -1.0]), [(0, 1), (0, 2), (1, 2)], 0.1)
    nls = lambda x: math.log1p(math.exp(-x))
    assert float(loss) == pytest.approx((nls(1) + nls(2) + nls(1)) / 3 + 0.1 * 2 / 3, rel=1e-6)
    assert stats["correct"] == 3 and stats["margin"] == pytest.approx(4.0)


def test_training_learns_and_writes_a_checkpoint(records, tmp_path):
    """Parameters change, the metrics log is written, the output loads with from_pretrained."""
    from transformers import AutoModelForSequenceClassification

    summary = train(records, small_cfg(epochs=2, max_length=32), tmp_path / "rm", progress=False)
    log = [json.loads(l) for l in (tmp_path / "rm/train_log.jsonl").read_text().splitlines()]
    assert {"loss", "accuracy", "margin", "reward_mean", "reward_std", "tokens_per_s", "lr"} <= set(log[0])
    assert summary["data"]["truncated_sequences"] > 0  # max_length 32 cuts sequences: counted, reported
    assert summary["pairs_used_per_epoch"] == summary["data"]["pairs"]
    model = AutoModelForSequenceClassification.from_pretrained(tmp_path / "rm")
    assert model.config.num_labels == 1
    from cheems_lib.models.reward_model import build_tiny, load
    _, tok = load(tmp_path / "rm")
    init = build_tiny("tiny-xs", tok, seed=0, max_length=32).state_dict()
    assert any(not (init[k] == v).all() for k, v in _weights(tmp_path / "rm").items() if k in init)


def test_same_seed_same_weights(records, tmp_path):
    """Training twice with one seed gives identical weights."""
    train(records, small_cfg(), tmp_path / "a", progress=False)
    train(records, small_cfg(), tmp_path / "b", progress=False)
    a, b = _weights(tmp_path / "a"), _weights(tmp_path / "b")
    assert all((a[k] == b[k]).all() for k in a)


def test_a_training_sets_seeds_share_its_tokenizer_and_encoding(records, tmp_path, monkeypatch):
    """The second seed of a training set reuses the tokenizer and encoding the first built (one tokenizer trained,
    one encoding), and its checkpoint is the same, file for file, as one trained with nothing kept."""
    from cheems_lib.models import reward_model, training

    calls = []
    real = reward_model.train_tokenizer
    monkeypatch.setattr(reward_model, "train_tokenizer", lambda *a, **k: calls.append(1) or real(*a, **k))
    training._PREPARED.clear()
    train(records, small_cfg(seed=0), tmp_path / "s0", progress=False)
    train(records, small_cfg(seed=1), tmp_path / "s1", progress=False)
    assert len(calls) == 1
    training._PREPARED.clear()
    train(records, small_cfg(seed=1), tmp_path / "fresh", progress=False)
    assert len(calls) == 2
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        assert (tmp_path / "s1" / name).read_bytes() == (tmp_path / "fresh" / name).read_bytes(), name
    train(records[:-1], small_cfg(seed=1), tmp_path / "other", progress=False)  # other records: a tokenizer of their own
    assert len(calls) == 3


def test_oversize_prompt_gradient_is_exact(records):
    """Chunked gradient caching of a prompt over the budget equals the one-batch gradient."""
    import torch
    from accelerate import Accelerator

    from cheems_lib.models.reward_model import build_tiny, train_tokenizer
    from cheems_lib.models.training import _oversize_step, forward_rewards

    tok = train_tokenizer((r.prompt for r in records), vocab_size=400)
    model = build_tiny("tiny-xs", tok, seed=0)
    data = encode_records(records[:1], tok, 256)
    seqs, pairs = data.sequences[0], data.pairs[0]
    cfg = small_cfg(max_tokens_per_batch=max(len(s) for s in seqs) + 1)  # forces several groups
    r = forward_rewards(model, seqs, tok.pad_token_id, "cpu")
    loss, _ = bt_loss(r, pairs, 0.1)
    loss.backward()
    full = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    _oversize_step(model, Accelerator(cpu=True), seqs, pairs, cfg, tok.pad_token_id, "cpu", len(pairs), len(seqs), 1)
    for g, p in zip(full, model.parameters()):
        assert torch.allclose(g, p.grad, atol=1e-6, rtol=1e-4)


def _cli_train(args, **kw):
    return subprocess.Popen([sys.executable, "-m", "cheems_lib.cli", "train", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, **kw)


def _latest(out) -> int:
    return int((out / "checkpoints/latest").read_text().strip().split("-")[1])


TRAIN_ARGS = ["--model", "tiny-xs", "--epochs", "2", "--max-tokens-per-batch", "256", "--max-length", "128"]


def _train_killed_at(args, out, point):
    """Run CLI training that SIGKILLs itself at ``point`` (``NAME=N``, cheems_lib.outputs.interrupt_point)."""
    run = _cli_train(["--output", out, *args], env={**os.environ, "CHEEMS_TEST_INTERRUPT": f"{point}:SIGKILL"})
    assert run.wait(timeout=300) == -signal.SIGKILL, run.stderr.read().decode()[-2000:]
    assert not (out / "cheems_train.json").exists()


def test_resume_after_kill_matches_uninterrupted_run(records, tmp_path):
    """kill -9 twice (just after epoch 1's first checkpoint, then in epoch 2 two steps past a checkpoint, so
    the resume drops logged steps), --resume each time: bit-identical weights and metrics.

    Guaranteed on the CPU: the same process state is rebuilt (train mode, 64-byte aligned
    weights, the saved tokenizer, optimizer and scheduler), so every kernel sees the same
    inputs at the same alignment and rounds the same way.
    """
    data = tmp_path / "d.jsonl"
    write_records(records, data)
    args = ["--data", data, *TRAIN_ARGS, "--save-every", "3"]
    full = _cli_train(["--output", tmp_path / "full", *args])
    assert full.wait(timeout=300) == 0, full.stderr.read().decode()[-2000:]
    steps = json.loads((tmp_path / "full/cheems_train.json").read_text())["steps"]
    cut = tmp_path / "cut"
    _train_killed_at(args, cut, "checkpoint.saved=1")
    assert _latest(cut) == 3
    second = (steps // 2 + 3) // 3 * 3 + 2  # in epoch 2, two steps after a checkpoint (every 3 and at epoch ends)
    _train_killed_at([*args, "--resume"], cut, f"train.step={second - 3}")  # a resumed run counts from step 4
    assert _latest(cut) < second and json.loads((cut / "train_log.jsonl").read_text().splitlines()[-1])["step"] == second
    resumed = _cli_train(["--output", cut, *args, "--resume"])
    assert resumed.wait(timeout=300) == 0, resumed.stderr.read().decode()[-2000:]
    a, b = _weights(tmp_path / "full"), _weights(cut)
    assert all((a[k] == b[k]).all() for k in a)
    la = [{k: v for k, v in json.loads(l).items() if k != "tokens_per_s"} for l in (tmp_path / "full/train_log.jsonl").open()]
    lb = [{k: v for k, v in json.loads(l).items() if k != "tokens_per_s"} for l in (cut / "train_log.jsonl").open()]
    assert la == lb  # every step's metrics, not only the last


def test_loaded_weights_are_aligned_like_built_ones(records, tmp_path):
    """from_pretrained may leave weights at unaligned file offsets; load() re-homes them (the resume fix)."""
    from cheems_lib.models.reward_model import build_tiny, load, train_tokenizer

    tok = train_tokenizer((r.prompt for r in records), vocab_size=400)
    build_tiny("tiny-xs", tok, seed=0).save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    model, _ = load(tmp_path, require_trained_head=False)
    assert all(t.data_ptr() % 64 == 0 for t in [*model.parameters(), *model.buffers()])


def _launch_two(args, out):
    cmd = accelerate_two("train", *args, "--output", out, "--grad-accum", "1")
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_two_processes_match_one_process_with_accumulation(records, tmp_path):
    """accelerate launch, 2 CPU processes x 1 micro-batch == 1 process x 2 micro-batches: same steps and pairs,
    same weights up to rounding, every ordered pair used."""
    data = tmp_path / "d.jsonl"
    write_records(records, data)
    args = ["--data", data, "--model", "tiny-xs", "--epochs", "1", "--max-tokens-per-batch", "512", "--max-length", "128"]
    one = _cli_train([*args, "--output", tmp_path / "one", "--grad-accum", "2"])
    assert one.wait(timeout=300) == 0
    _launch_two(args, tmp_path / "two")
    s1 = json.loads((tmp_path / "one/cheems_train.json").read_text())
    s2 = json.loads((tmp_path / "two/cheems_train.json").read_text())
    assert s2["processes"] == 2 and s1["steps"] == s2["steps"]
    log1 = [json.loads(l) for l in (tmp_path / "one/train_log.jsonl").read_text().splitlines()]
    log2 = [json.loads(l) for l in (tmp_path / "two/train_log.jsonl").read_text().splitlines()]
    assert [l["pairs"] for l in log1] == [l["pairs"] for l in log2]
    assert sum(l["pairs"] for l in log2) == s2["data"]["pairs"]  # no pair lost
    # the same updates (the learning-rate schedule too: accelerate would step a prepared scheduler per process)
    assert [l["loss"] for l in log1] == pytest.approx([l["loss"] for l in log2], rel=1e-5)
    assert [l["lr"] for l in log1] == pytest.approx([l["lr"] for l in log2])
    a, b = _weights(tmp_path / "one"), _weights(tmp_path / "two")
    import torch
    # 1e-4: rare tokens' embedding rows get near-zero gradients, which Adam rescales to full steps
    assert all(torch.allclose(a[k], b[k], atol=1e-4) for k in a)


def test_training_from_a_local_checkpoint(records, tmp_path):
    """--model PATH goes through from_pretrained (the path real hub models take) and keeps the tokenizer."""
    first = tmp_path / "first"
    train(records, small_cfg(), first, progress=False)
    summary = train(records, small_cfg(model=str(first), max_steps=2), tmp_path / "second", progress=False)
    assert summary["final"]["step"] == 2
    from transformers import AutoTokenizer
    a, b = AutoTokenizer.from_pretrained(first), AutoTokenizer.from_pretrained(tmp_path / "second")
    texts = [r.prompt for r in records[:10]] + [x.content for x in records[0].responses]
    assert [a(t)["input_ids"] for t in texts] == [b(t)["input_ids"] for t in texts]


@pytest.mark.slow
def test_tiny_model_beats_length_on_the_default_world(tmp_path):
    """Issue 4's quality bar: trained on the golden human subset, +0.10 pairwise accuracy over length."""
    from cheems_lib.baselines import length_scores
    from cheems_lib.metrics import evaluate_subset
    from cheems_lib.models.reward_model import load
    from cheems_lib.models.scoring import score_records

    world = build_world(WorldConfig(size="default", seed=0))
    out = tmp_path / "rm"
    train(world.files["cheems_preference/human.jsonl"], TrainConfig(), out, progress=False)
    model, tok = load(out)
    for path in ("cheems_bench/open.jsonl", "cheems_bench/human.jsonl"):
        recs = world.files[path]
        scores, _ = score_records(model, tok, recs, batch_size=32)
        rm_acc = evaluate_subset(recs, scores, n_boot=0).accuracy
        assert rm_acc >= evaluate_subset(recs, length_scores(recs), n_boot=0).accuracy + 0.10


def test_step_metrics_line_by_hand():
    """StepMetrics sums micro-batches and gives per-pair means and the rewards' mean and std."""
    import torch

    from cheems_lib.models.training import StepMetrics

    m = StepMetrics()
    m.add({"pair_loss": 1.0, "correct": 1, "margin": 2.0, "pairs": 2}, torch.tensor([1.0, -1.0]), [[1, 2], [3]])
    m.add({"pair_loss": 3.0, "correct": 2, "margin": 4.0, "pairs": 2}, torch.tensor([3.0]), [[4]])
    line = m.line(step=5, epoch=1, seconds=2.0, lr=0.5)
    assert line == {"step": 5, "epoch": 1, "pairs": 4, "loss": 1.0, "accuracy": 0.75, "margin": 1.5,
                    "reward_mean": 1.0, "reward_std": math.sqrt(11 / 3 - 1), "tokens_per_s": 2.0, "lr": 0.5}
