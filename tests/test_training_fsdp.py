"""The trainer's FSDP path on the CPU: FSDP2 (fully_shard) over a 2-process gloo group (tests/fsdp_worker.py).

accelerate drives FSDP only on CUDA; the GPU smoke (benchmarks/gpu_smoke.py) runs the shipped FSDP config there,
with a kill and a resume. Here the trainer's own optimisation step runs on a sharded model."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cheems_lib.records import write_records
from cheems_lib.world.simulation import WorldConfig, build_world
from conftest import ROOT, free_port, one_launch_at_a_time


def _workers(n: int, data, out):
    with one_launch_at_a_time():
        done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(n),
                               "--master_port", str(free_port()), str(ROOT / "tests/fsdp_worker.py"), str(data), str(out)],
                              capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((out / "log.json").read_text())


def test_fsdp_step_on_two_processes_matches_one(tmp_path):
    """Under FSDP the step never enters no_sync (each backward reduce-scatters into sharded gradients), every process
    runs the same forwards in every step although the step's micro-batches split unevenly, the loss scale undoes
    FSDP's average, and the gathered full state dict, saved by the trainer's writer, loads with from_pretrained and
    equals a 1-process run of the same plan within rounding."""
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForSequenceClassification

    data = tmp_path / "d.jsonl"
    write_records(build_world(WorldConfig(size="smoke", seed=0)).files["cheems_preference/gpt.jsonl"][:40], data)
    one, two = _workers(1, data, tmp_path / "one"), _workers(2, data, tmp_path / "two")
    assert two["no_sync_calls"] == 0 and one["no_sync_calls"] == len(one["steps"])
    assert any(len(set(s["micro_batches"])) > 1 for s in two["steps"])  # some step gives one process fewer
    assert all(len(set(s["forwards"])) == 1 for s in two["steps"])
    assert [s["pairs"] for s in one["steps"]] == [s["pairs"] for s in two["steps"]]
    assert [s["loss"] for s in one["steps"]] == pytest.approx([s["loss"] for s in two["steps"]], rel=1e-5)
    a, b = load_file(str(tmp_path / "one/model.safetensors")), load_file(str(tmp_path / "two/model.safetensors"))
    assert a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=1e-4) for k in a)
    assert AutoModelForSequenceClassification.from_pretrained(tmp_path / "two").config.num_labels == 1


def test_a_prompt_over_the_budget_is_refused_before_the_first_fsdp_step():
    """Under FSDP a prompt larger than the token budget cannot be split (its chunked backward would put the
    processes' collectives out of order): every process refuses it at set-up, naming the budget it needs."""
    from cheems_lib.models.training import _fits_fsdp
    from cheems_lib.models.training_steps import global_batch_steps
    from cheems_lib.models.training_config import TrainConfig, TrainError

    lengths = [[100, 100], [300, 300, 299], [50]]
    steps = global_batch_steps(lengths, 4, 500, 2, seed=0, padded=True)
    with pytest.raises(TrainError, match="needs 900 padded tokens.*--max-tokens-per-batch 900 or more"):
        _fits_fsdp([steps], lengths, TrainConfig(max_tokens_per_batch=500))
    fits = [[100, 100], [50]]
    _fits_fsdp([global_batch_steps(fits, 4, 500, 2, seed=0, padded=True)], fits, TrainConfig(max_tokens_per_batch=500))
