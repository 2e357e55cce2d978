"""The model zoo reuses finished checkpoints and keys them by data, config and seed."""
from __future__ import annotations

from cheems_lib.simulation import WorldConfig, build_world
from cheems_lib.training import TrainConfig
from cheems_lib.zoo import train_or_load, zoo_key


def test_train_once_then_reuse(tmp_path):
    recs = build_world(WorldConfig(size="smoke")).files["cheems_preference/gpt.jsonl"][:24]
    cfg = TrainConfig(model="tiny-xs", epochs=1, max_length=128, tokenizer_vocab=400, max_tokens_per_batch=1024)
    path = train_or_load(recs, cfg, cache_dir=tmp_path)
    stamp = (path / "model.safetensors").stat().st_mtime_ns
    assert train_or_load(recs, cfg, cache_dir=tmp_path) == path
    assert (path / "model.safetensors").stat().st_mtime_ns == stamp  # not retrained
    other = TrainConfig(**{**cfg.__dict__, "seed": 1})
    assert zoo_key(recs, other) != zoo_key(recs, cfg) != zoo_key(recs[:-1], cfg)
