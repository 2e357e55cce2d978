"""cheems_lib.models.run_folder: the resume plan's refusals and the publish fallback with its recovery."""
from __future__ import annotations

import json

import pytest

from cheems_lib.models.training_config import TrainConfig, TrainError


def small_cfg(**kw):
    base = dict(model="tiny-xs", epochs=1, max_tokens_per_batch=1024, tokenizer_vocab=500, max_length=256)
    return TrainConfig(**{**base, **kw})


def _fake_unfinished(out, cfg, fingerprint="abc", processes=1, step=3):
    ckpt = out / "checkpoints" / f"step-{step:07d}"
    ckpt.mkdir(parents=True)
    (out / "checkpoints/latest").write_text(ckpt.name)
    (ckpt / "cheems_state.json").write_text(json.dumps(
        {"global_step": step, "config": cfg.__dict__, "data_fingerprint": fingerprint, "processes": processes}))


def test_resume_plan_refuses_other_settings_and_data(tmp_path):
    """A checkpoint of another seed, learning rate or data is refused with both values; bookkeeping fields may differ."""
    from cheems_lib.models.run_folder import _plan

    cfg = small_cfg()
    _fake_unfinished(tmp_path / "rm", cfg)
    plan = lambda c, fp="abc", **kw: _plan(tmp_path / "rm", "rm", c, fp, 1, resume=True, overwrite=False, **kw)
    assert plan(small_cfg(save_every=7, log_every=2, max_steps=5)).resume_dir.name == "step-0000003"
    with pytest.raises(TrainError) as e:
        plan(small_cfg(seed=1, learning_rate=1e-3))
    assert "seed 1 now vs 0 recorded" in str(e.value) and "learning_rate 0.001 now vs 0.002 recorded" in str(e.value)
    with pytest.raises(TrainError, match="data fingerprint"):
        plan(cfg, "other")
    with pytest.raises(TrainError, match="processes 2 now vs 1"):
        _plan(tmp_path / "rm", "rm", cfg, "abc", 2, resume=True, overwrite=False)
    with pytest.raises(TrainError, match="unfinished run .*--resume"):
        _plan(tmp_path / "rm", "rm", cfg, "abc", 1, resume=False, overwrite=False)


def test_publish_fallback_and_recovery(tmp_path, monkeypatch):
    """Without renameat2 the finished folder still replaces the old one; a kill between the two renames is repaired."""
    from cheems_lib.models import run_folder

    out, stage = tmp_path / "rm", tmp_path / ".rm.cheems-final"
    for d, tag in ((out, "old"), (stage, "new")):
        d.mkdir()
        (d / "cheems_train.json").write_text(tag)
    monkeypatch.setattr(run_folder, "_exchange", lambda a, b: False)
    run_folder._swap_in(stage, out)
    assert (out / "cheems_train.json").read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["rm"]
    # killed after `rename(out, old)`: the complete staged folder is moved in by the next run
    stage.mkdir()
    (stage / "cheems_train.json").write_text("newer")
    out.rename(tmp_path / ".rm.cheems-old")
    run_folder._recover(out)
    assert (out / "cheems_train.json").read_text() == "newer" and sorted(p.name for p in tmp_path.iterdir()) == ["rm"]


def test_trim_log_keeps_steps_up_to_the_checkpoint_and_drops_a_cut_line(tmp_path):
    """A resumed run's log keeps the lines up to its checkpoint; a line cut by a kill is dropped."""
    from cheems_lib.models.run_folder import append_json_line, trim_log

    log = tmp_path / "train_log.jsonl"
    for step in (1, 2, 3):
        append_json_line(log, {"step": step, "loss": 1.0 / step})
    with open(log, "a", encoding="utf-8") as fh:
        fh.write('{"step": 4, "lo')  # the kill
    trim_log(log, 2)
    assert [json.loads(line)["step"] for line in log.read_text().splitlines()] == [1, 2]
