"""cheems_lib.models.training_config: range checks naming the flag, the tiny and Table 9 presets, the learning-rate guard."""
from __future__ import annotations

import math

import pytest

from cheems_lib.models.training_config import TrainConfig, TrainError


@pytest.mark.parametrize("field,value", [("epochs", 0), ("epochs", 1.5), ("learning_rate", float("nan")),
                                         ("learning_rate", -1e-3), ("max_length", 0), ("max_tokens_per_batch", 0),
                                         ("grad_accum", 0), ("reg_coef", float("inf")), ("warmup_ratio", -0.1),
                                         ("weight_decay", -1.0), ("max_grad_norm", -1.0), ("seed", -1),
                                         ("max_steps", -1), ("save_every", -1), ("log_every", 0),
                                         ("mixed_precision", "fp8"), ("tokenizer_vocab", 0)])
def test_validate_names_flag_value_and_range(field, value):
    """Each out-of-range field is refused before training, naming its flag, the value and the range."""
    with pytest.raises(TrainError, match=f"--{field.replace('_', '-')} {value}: out of range, must be"):
        TrainConfig(**{field: value}).validate()
    TrainConfig().validate()
    TrainConfig.paper().validate()


def test_for_model_keeps_tiny_defaults_and_gives_pretrained_table9():
    """A tiny name builds exactly TrainConfig(model=...); a hub name gets Table 9, scaled to the machine; flags win."""
    from dataclasses import asdict

    assert asdict(TrainConfig.for_model("tiny-xl", epochs=1, seed=3)) == asdict(TrainConfig(model="tiny-xl", epochs=1, seed=3))
    cpu = TrainConfig.for_model("Qwen/Qwen2.5-7B-Instruct", device="cpu", seed=2)
    gpu = TrainConfig.for_model("Qwen/Qwen2.5-7B-Instruct", device="cuda")
    paper = TrainConfig.paper()
    for c in (cpu, gpu):
        assert (c.learning_rate, c.max_length, c.warmup_ratio, c.reg_coef) == (
            paper.learning_rate, paper.max_length, paper.warmup_ratio, paper.reg_coef)
    assert cpu.mixed_precision == "no" and cpu.seed == 2
    assert cpu.global_batch == gpu.global_batch == paper.global_batch  # the same steps on any machine
    assert TrainConfig.for_model("some/model", "tiny").learning_rate == TrainConfig().learning_rate  # forced preset


def test_learning_rate_check_only_for_pretrained():
    """Above 1e-4 a pretrained checkpoint is refused (naming Table 9's 5e-06) unless forced; tiny models are free."""
    from cheems_lib.models.training_config import check_learning_rate

    check_learning_rate(TrainConfig(model="tiny", learning_rate=2e-3))
    with pytest.raises(TrainError, match=r"0\.002 .*5e-06.*--force-lr"):
        check_learning_rate(TrainConfig(model="some/model", learning_rate=2e-3))
    check_learning_rate(TrainConfig(model="some/model", learning_rate=2e-3), force=True)
    check_learning_rate(TrainConfig(model="some/model", learning_rate=1e-4))


def test_judge_warmup_is_the_named_fraction():
    """The judge's warm-up of warmup_fraction 0.1 is the old hidden max(1, batches // 10) for every count."""
    from cheems_lib.models.training_config import JudgeTrainConfig

    f = JudgeTrainConfig().warmup_fraction
    assert all(max(1, math.floor(f * n)) == max(1, n // 10) for n in range(1, 100_000))


def test_one_device_choice_for_training_the_chapters_and_the_book(monkeypatch):
    """``default_device`` is the one choice between the CPU and a GPU: with a GPU visible the chapters' worlds load
    models on it in bfloat16, the paper preset fits a GPU's budget and the book runs one chapter at a time; without
    one (or without torch) all three take the CPU's path."""
    import sys

    import torch

    from cheems_lib.analyses import world_folder
    from cheems_lib.models.training_config import default_device, paper_machine_settings
    from cheems_lib.publishing.build import default_jobs

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)
    assert default_device() == "cuda"
    assert world_folder._device() == ("cuda", torch.bfloat16)
    assert paper_machine_settings()["mixed_precision"] == "bf16"
    assert default_jobs("smoke") == 1
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert default_device() == "cpu" and world_folder._device() == (None, None)
    assert paper_machine_settings()["mixed_precision"] == "no"
    monkeypatch.setitem(sys.modules, "torch", None)  # torch not installed
    assert default_device() == "cpu"


def test_global_batch_and_accumulation_are_not_both_set():
    """--global-batch and --grad-accum both size the step: both given is refused in one line naming them."""
    from cheems_lib.models.training_config import TrainError

    with pytest.raises(TrainError, match="--global-batch 256 and --grad-accum 4"):
        TrainConfig(global_batch=256, grad_accum=4).validate()
    TrainConfig(global_batch=256).validate()
    TrainConfig(grad_accum=4).validate()
