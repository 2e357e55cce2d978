"""Bradley-Terry training: learning, determinism, oversize prompts, resume, 2 processes (the loss by hand: test_bt_loss)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from cheems_lib.records import write_records
from cheems_lib.world.simulation import WorldConfig, build_world
from cheems_lib.models.bt_loss import bt_loss
from cheems_lib.models.training import train
from cheems_lib.models.training_config import TrainConfig
from cheems_lib.models.training_pairs import encode_records
from conftest import launch_two


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


def test_a_one_step_run_learns(records, tmp_path):
    """A training set that fits one micro-batch trains in one step; warmup, which starts at learning rate 0, must
    leave that step out, or the model ends as it was initialised (the smoke books' small sets once did)."""
    from cheems_lib.models.reward_model import build_tiny, load

    summary = train(records[:6], small_cfg(max_length=64, max_tokens_per_batch=100_000), tmp_path / "rm",
                    progress=False)
    assert summary["steps"] == 1
    _, tok = load(tmp_path / "rm")
    init = build_tiny("tiny-xs", tok, seed=0, max_length=64).state_dict()
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
    from cheems_lib.models.training import _oversize_step
    from cheems_lib.models.bt_loss import forward_rewards

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


def _log(path):
    return [json.loads(l) for l in (path / "train_log.jsonl").read_text().splitlines()]


def _same_updates(one, two):
    """Two runs took the same steps over the same pairs and ended with the same weights up to rounding."""
    import torch

    log1, log2 = _log(one), _log(two)
    assert [l["pairs"] for l in log1] == [l["pairs"] for l in log2]
    # the same updates (the learning-rate schedule too: accelerate would step a prepared scheduler per process)
    assert [l["loss"] for l in log1] == pytest.approx([l["loss"] for l in log2], rel=1e-5)
    assert [l["lr"] for l in log1] == pytest.approx([l["lr"] for l in log2])
    a, b = _weights(one), _weights(two)
    # 1e-4: rare tokens' embedding rows get near-zero gradients, which Adam rescales to full steps
    assert all(torch.allclose(a[k], b[k], atol=1e-4) for k in a)


def test_two_processes_uneven_steps_resume_and_match_one_process(records, tmp_path):
    """accelerate launch, 2 CPU processes (DDP over gloo) x 1 micro-batch == 1 process x 2 micro-batches, on an epoch
    whose micro-batches are odd in number, so the last step gives one process nothing: every process runs the same
    forwards in every step; killed (kill -9, both processes) after a checkpoint and resumed, the run finishes, saves
    a model that from_pretrained loads, uses every ordered pair, and matches the 1-process weights within rounding."""
    from transformers import AutoModelForSequenceClassification

    data = tmp_path / "d.jsonl"
    write_records(records[:47], data)
    args = ["--data", data, "--model", "tiny-xs", "--epochs", "1", "--max-tokens-per-batch", "512", "--max-length", "128",
            "--save-every", "2"]
    one = _cli_train([*args, "--output", tmp_path / "one", "--grad-accum", "2"])
    assert one.wait(timeout=300) == 0, one.stderr.read().decode()[-2000:]
    s1 = json.loads((tmp_path / "one/cheems_train.json").read_text())
    assert s1["micro_batches_per_epoch"] % 2 == 1  # the uneven last step this test is about
    two = tmp_path / "two"
    cut = launch_two("train", *args, "--output", two, "--grad-accum", "1", env={"CHEEMS_TEST_INTERRUPT": "train.step=3:SIGKILL"})
    assert cut.returncode != 0 and _latest(two) == 2 and not (two / "cheems_train.json").exists(), cut.stderr[-2000:]
    done = launch_two("train", *args, "--output", two, "--grad-accum", "1", "--resume")
    assert done.returncode == 0, done.stderr[-3000:]
    s2 = json.loads((two / "cheems_train.json").read_text())
    assert s2["processes"] == 2 and s1["steps"] == s2["steps"]
    log2 = _log(two)
    assert len(log2) == s2["steps"] and all(len(set(l["forwards"])) == 1 and len(l["forwards"]) == 2 for l in log2)
    assert sum(l["pairs"] for l in log2) == s2["data"]["pairs"]  # no pair lost
    _same_updates(tmp_path / "one", two)
    assert AutoModelForSequenceClassification.from_pretrained(two).config.num_labels == 1


def test_global_batch_makes_the_same_steps_on_one_and_two_processes(records, tmp_path):
    """--global-batch N: 1 and 2 processes take the same steps (the same pairs each) and end with the same weights up to
    rounding; the steps average N sequences and the start line prints the global batch."""
    data = tmp_path / "d.jsonl"
    write_records(records, data)
    args = ["--data", data, "--model", "tiny-xs", "--epochs", "1", "--max-tokens-per-batch", "512", "--max-length", "128",
            "--global-batch", "40"]
    one = _cli_train([*args, "--output", tmp_path / "one"])
    assert one.wait(timeout=300) == 0, one.stderr.read().decode()[-2000:]
    assert "global batch 40 sequences" in one.stderr.read().decode()
    done = launch_two("train", *args, "--output", tmp_path / "two")
    assert done.returncode == 0, done.stderr[-3000:]
    _same_updates(tmp_path / "one", tmp_path / "two")
    s = json.loads((tmp_path / "two/cheems_train.json").read_text())
    assert s["effective"]["global_batch"] == 40 and abs(s["effective"]["sequences_per_step"] - 40) < 8


def _bf16_checkpoint(records, path):
    """A Qwen2 reward model saved in bfloat16, as hub checkpoints are (random weights, a tokenizer of its own)."""
    import torch

    from cheems_lib.models.reward_model import build_tiny, train_tokenizer

    tok = train_tokenizer((t for r in records for t in [r.prompt, *(x.content for x in r.responses)]), vocab_size=500)
    model = build_tiny("tiny-xs", tok, seed=0, max_length=256)
    del model.config.cheems_tiny_size  # a checkpoint from elsewhere
    model.to(torch.bfloat16).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def test_a_bf16_checkpoint_learns_with_the_paper_preset(records, tmp_path):
    """A bf16-stored checkpoint trained with the paper preset (lr 5e-6, 10 steps) moves every parameter tensor, the
    reward head and the norms included, in most of its elements (training runs on float32 master weights; in bf16
    nearly every update would round away); --save-dtype float32 saves float32, and auto keeps the source's bf16."""
    import torch
    from safetensors.torch import load_file

    base = _bf16_checkpoint(records, tmp_path / "base")
    data = tmp_path / "d.jsonl"
    write_records(records, data)
    flags = ["--data", data, "--model", base, "--max-length", "256", "--max-tokens-per-batch", "2048",
             "--grad-accum", "1", "--warmup-ratio", "0"]
    run = _cli_train([*flags, "--max-steps", "10", "--save-dtype", "float32", "--output", tmp_path / "rm"])
    assert run.wait(timeout=300) == 0, run.stderr.read().decode()[-2000:]
    before, after = load_file(str(base / "model.safetensors")), _weights(tmp_path / "rm")
    eff = json.loads((tmp_path / "rm/cheems_train.json").read_text())["effective"]
    assert eff["preset"] == "paper" and eff["global_batch"] == 0  # an explicit --grad-accum sets the step
    for name, w in after.items():
        assert w.dtype == torch.float32, name
        if name != "model.embed_tokens.weight":  # rows of tokens the data never shows get no gradient
            changed = float((w != before[name].float()).float().mean())
            assert changed > 0.5, f"{name}: {changed:.3f} of its elements changed"
    run = _cli_train([*flags, "--max-steps", "1", "--output", tmp_path / "auto"])
    assert run.wait(timeout=300) == 0, run.stderr.read().decode()[-2000:]
    assert {w.dtype for w in _weights(tmp_path / "auto").values()} == {torch.bfloat16}
    assert json.loads((tmp_path / "auto/config.json").read_text())["dtype"] == "bfloat16"


def test_a_tiny_run_then_a_bf16_run_in_one_process(records, tmp_path):
    """accelerate keeps one mixed precision per process: a tiny run (precision no), then a bf16-autocast run in the
    same process both train; deterministic kernels are switched back off after each."""
    import torch

    train(records, small_cfg(max_steps=1), tmp_path / "a", progress=False)
    assert not torch.are_deterministic_algorithms_enabled()
    summary = train(records, small_cfg(max_steps=2, mixed_precision="bf16"), tmp_path / "b", progress=False)
    assert summary["effective"]["mixed_precision"] == "bf16" and summary["final"]["step"] == 2
    assert not torch.are_deterministic_algorithms_enabled()


def test_gradient_checkpointing_gives_the_same_weights(records, tmp_path):
    """Recomputing activations in the backward pass changes memory, not the result."""
    import torch

    train(records, small_cfg(max_steps=3), tmp_path / "off", progress=False)
    summary = train(records, small_cfg(max_steps=3, gradient_checkpointing="on"), tmp_path / "on", progress=False)
    assert summary["effective"]["gradient_checkpointing"] is True
    a, b = _weights(tmp_path / "off"), _weights(tmp_path / "on")
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def test_forward_options_turn_the_cache_off_where_a_forward_takes_it():
    """Training and scoring forwards pass use_cache=False to models that name it, and nothing to those that do not."""
    import torch

    from cheems_lib.models.batching import forward_options
    from cheems_lib.models.reward_model import build_tiny, train_tokenizer

    class Plain(torch.nn.Module):
        def forward(self, input_ids, attention_mask=None):
            return input_ids

    tok = train_tokenizer(["a b c"], vocab_size=300)
    assert forward_options(build_tiny("tiny-xs", tok)) == {"use_cache": False}
    assert forward_options(Plain()) == {}


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
    """The quality bar: trained on the golden human subset, +0.10 pairwise accuracy over length."""
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


def test_training_reads_the_last_real_token_when_the_pad_is_the_closing_eos(records, tmp_path):
    """A tokenizer whose pad is the eos that closes every conversation (many Llama-3 fine-tunes): training pads with
    an id no training sequence holds and saves it as the config's pad, so transformers' classifier reads each
    reward at the closing eos, where scoring reads it too, not one token early."""
    from cheems_lib.models.reward_model import IM_END, build_tiny, train_tokenizer
    from cheems_lib.models.chat_encoding import encode_pair

    tok = train_tokenizer((t for r in records for t in [r.prompt, *(x.content for x in r.responses)]), vocab_size=500)
    tok.chat_template = "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>' }}{% endfor %}"
    tok.pad_token = IM_END
    model = build_tiny("tiny-xs", tok, seed=0, max_length=128)
    del model.config.cheems_tiny_size
    model.config.pad_token_id = tok.pad_token_id
    model.save_pretrained(tmp_path / "base")
    tok.save_pretrained(tmp_path / "base")
    assert encode_pair(tok, "p", "r")[-1] == tok.pad_token_id  # the conversation ends with the pad id
    train(records, small_cfg(model=str(tmp_path / "base"), max_steps=1, learning_rate=1e-4), tmp_path / "rm",
          progress=False)
    pad = json.loads((tmp_path / "rm/config.json").read_text())["pad_token_id"]
    ids = [encode_pair(tok, r.prompt, x.content)[:256] for r in records for x in r.responses]
    assert pad != tok.pad_token_id and not any(pad in s for s in ids)
