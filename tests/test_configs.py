"""The accelerate configs in configs/ parse, and the paper preset follows Table 9."""
from __future__ import annotations

import pytest

from cheems_lib.paper import table
from cheems_lib.models.training_config import TrainConfig
from conftest import ROOT


MODELS_FILE = "models.yaml"  # the example models file of the leaderboard (tests/test_model_list.py), no accelerate config


@pytest.mark.parametrize("path", sorted(p for p in (ROOT / "configs").glob("*.yaml") if p.name != MODELS_FILE),
                         ids=lambda p: p.name)
def test_accelerate_reads_config(path):
    """Every shipped accelerate config loads and asks for several processes."""
    from accelerate.commands.config.config_args import load_config_from_file

    cfg = load_config_from_file(str(path))
    assert cfg.num_processes >= 2 and cfg.distributed_type is not None


def test_paper_preset_matches_table9():
    """TrainConfig.paper() holds Table 9's hyperparameters."""
    t9 = dict(table("table9_hyperparameters").values)
    p = TrainConfig.paper()
    assert p.max_length == int(t9["max_sequence_length"]) and p.epochs == int(t9["epochs"])
    assert p.reg_coef == float(t9["regularization_coefficient"]) and p.learning_rate == float(t9["learning_rate"])
    assert p.warmup_ratio == float(t9["warmup_ratio"]) and p.global_batch == int(t9["global_batch_size"])
