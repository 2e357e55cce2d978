"""The model zoo reuses finished checkpoints and keys them by data, config and seed."""
from __future__ import annotations

import pytest

from cheems_lib.world.simulation import WorldConfig, build_world
from cheems_lib.models.training_config import TrainConfig
from cheems_lib.models.zoo import train_or_load, zoo_key


def test_train_once_then_reuse(tmp_path):
    """The zoo trains a configuration once and reuses it; its key tracks seed and data."""
    recs = build_world(WorldConfig(size="smoke")).files["cheems_preference/gpt.jsonl"][:24]
    cfg = TrainConfig(model="tiny-xs", epochs=1, max_length=128, tokenizer_vocab=400, max_tokens_per_batch=1024)
    path = train_or_load(recs, cfg, cache_dir=tmp_path)
    stamp = (path / "model.safetensors").stat().st_mtime_ns
    assert train_or_load(recs, cfg, cache_dir=tmp_path) == path
    assert (path / "model.safetensors").stat().st_mtime_ns == stamp  # not retrained
    other = TrainConfig(**{**cfg.__dict__, "seed": 1})
    assert zoo_key(recs, other) != zoo_key(recs, cfg) != zoo_key(recs[:-1], cfg)


def test_score_cache_is_reused_and_ignores_annotations(tmp_path, monkeypatch):
    """Cached scores are reused and do not depend on the records' annotations."""
    from cheems_lib.models import reward_model, zoo
    from cheems_lib.records import Record
    from cheems_lib.models.scoring import score_records

    w = build_world(WorldConfig(size="smoke"))
    recs = w.files["cheems_preference/gpt.jsonl"][:24]
    cfg = TrainConfig(model="tiny-xs", epochs=1, max_length=128, tokenizer_vocab=400, max_tokens_per_batch=1024)
    path = train_or_load(recs, cfg, cache_dir=tmp_path)
    bench = w.files["cheems_bench/open.jsonl"][:10]
    first = zoo.score_or_load(path, bench, batch_size=4)
    m, t = reward_model.load(path)
    direct, _ = score_records(m, t, bench, batch_size=7)
    assert first.keys() == direct.keys() and all(abs(first[k] - direct[k]) < 1e-5 for k in first)
    monkeypatch.setattr(reward_model, "load", lambda *a, **k: (_ for _ in ()).throw(AssertionError("reloaded")))
    same_responses = [Record(prompt=r.prompt, responses=r.responses, id=r.id, category=r.category) for r in bench]
    assert zoo.score_or_load(path, same_responses) == first  # cached: the model is not loaded again


def test_parallel_callers_train_once(tmp_path, monkeypatch):
    """Parallel callers of one configuration train it once."""
    import threading
    import time

    from cheems_lib.models import zoo

    calls = []

    def fake_train(records, config, out, **kw):
        calls.append(out)
        time.sleep(0.3)
        out.mkdir(parents=True, exist_ok=True)
        (out / "cheems_train.json").write_text("{}")

    monkeypatch.setattr(zoo, "train", fake_train)
    recs = build_world(WorldConfig(size="smoke")).files["cheems_preference/gpt.jsonl"][:5]
    got = []
    threads = [threading.Thread(target=lambda: got.append(zoo.train_or_load(recs, TrainConfig(), cache_dir=tmp_path)))
               for _ in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(calls) == 1 and len(set(got)) == 1


def test_score_cache_is_keyed_on_the_weights(tmp_path):
    """A checkpoint folder whose weights change in place (retrained) gets new scores, not the cached ones."""
    from cheems_lib.models import reward_model, zoo
    from cheems_lib.models.scoring import score_records

    w = build_world(WorldConfig(size="smoke"))
    recs = w.files["cheems_preference/gpt.jsonl"][:24]
    cfg = TrainConfig(model="tiny-xs", epochs=1, max_length=128, tokenizer_vocab=400, max_tokens_per_batch=1024)
    path = train_or_load(recs, cfg, cache_dir=tmp_path)
    bench = w.files["cheems_bench/open.jsonl"][:6]
    first = zoo.score_or_load(path, bench)
    m, t = reward_model.load(path)
    reward_model.build_tiny("tiny-xs", t, seed=11).save_pretrained(path)  # new weights under the same folder
    m, t = reward_model.load(path, require_trained_head=False)
    direct, _ = score_records(m, t, bench)
    again = zoo.score_or_load(path, bench)
    assert again != first and all(abs(again[k] - direct[k]) < 1e-5 for k in direct)


def test_busy_entry_refuses_or_waits(tmp_path, monkeypatch):
    """While another holder has an entry's lock (:class:`cheems_lib.outputs.OutputLock`, the library's one lock),
    ``train_or_load(wait=False)`` raises ``Busy`` at once and trains nothing; once it is released the entry trains,
    and the lock file is gone."""
    from cheems_lib.models import zoo
    from cheems_lib.outputs import OutputLock

    calls = []

    def fake_train(records, config, out, **kw):
        calls.append(out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "cheems_train.json").write_text("{}")

    monkeypatch.setattr(zoo, "train", fake_train)
    recs = build_world(WorldConfig(size="smoke")).files["cheems_preference/gpt.jsonl"][:5]
    entry = tmp_path / f"rm-{zoo_key(recs, TrainConfig())}"
    with OutputLock(entry):
        with pytest.raises(zoo.Busy, match="another process"):
            zoo.train_or_load(recs, TrainConfig(), cache_dir=tmp_path, wait=False)
    assert calls == []
    assert zoo.train_or_load(recs, TrainConfig(), cache_dir=tmp_path, wait=False) == entry and calls == [entry]
    assert not entry.with_name(entry.name + ".lock").exists()


def test_a_busy_score_entry_is_scored_last_and_once(tmp_path, monkeypatch):
    """score_or_load(wait=False) refuses an entry another holder is scoring (Busy, nothing scored);
    score_all scores the free jobs first, the busy one last (waiting for it), and returns jobs' order."""
    from cheems_lib.models import zoo
    from cheems_lib.outputs import OutputLock

    w = build_world(WorldConfig(size="smoke"))
    recs = w.files["cheems_preference/gpt.jsonl"][:24]
    cfg = TrainConfig(model="tiny-xs", epochs=1, max_length=128, tokenizer_vocab=400, max_tokens_per_batch=1024)
    path = train_or_load(recs, cfg, cache_dir=tmp_path)
    bench = w.files["cheems_bench/open.jsonl"][:4]
    scores_dir = path / "scores"
    scores_dir.mkdir(exist_ok=True)
    zoo.score_or_load(path, bench)  # learn the entry's file name
    entry = next(scores_dir.glob("*.json"))
    entry.unlink()
    with OutputLock(entry):
        with pytest.raises(zoo.Busy, match="another process"):
            zoo.score_or_load(path, bench, wait=False)
    assert not entry.exists()

    calls = []
    real = zoo.score_or_load

    def busy_first(model_dir, records, *, wait=True, **kw):
        calls.append((model_dir, wait))
        if model_dir == "busy" and not wait:
            raise zoo.Busy("held")
        return {("p", "r"): float(len(calls))} if model_dir != path else real(model_dir, records, **kw)

    monkeypatch.setattr(zoo, "score_or_load", busy_first)
    got = zoo.score_all([("busy", bench), ("free", bench), (path, bench)])
    assert calls == [("busy", False), ("free", False), (path, False), ("busy", True)]
    assert got[0] == {("p", "r"): 4.0} and got[1] == {("p", "r"): 2.0}  # jobs' order, not the order scored
    assert got[2] == real(path, bench)


def test_the_score_cache_is_keyed_on_dtype_and_kind_of_device(tmp_path):
    """A shared zoo keeps CPU float32 and GPU bfloat16 scores apart: dtype and the kind of device are in the key
    (the device's index and the device map are not: they place the same computation elsewhere)."""
    from cheems_lib.models import zoo
    from cheems_lib.models.reward_model import build_tiny, train_tokenizer

    key = zoo._placement_key
    assert key(None, None, None) == key(None, "cpu", None) != key("float32", None, None) != key("bfloat16", None, None)
    assert key("bfloat16", "cuda", None) == key("bfloat16", "cuda:1", None) == key("bfloat16", None, {"": "cuda:0"})
    assert key("bfloat16", None, {"": 0}) == key("bfloat16", "cuda", None) != key("bfloat16", "cpu", None)
    bench = build_world(WorldConfig(size="smoke")).files["cheems_bench/open.jsonl"][:4]
    tok = train_tokenizer([t for r in bench for t in [r.prompt, *(x.content for x in r.responses)]], vocab_size=400)
    build_tiny("tiny-xs", tok).save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    (tmp_path / "cheems_train.json").write_text("{}")  # a finished zoo entry
    auto = zoo.score_or_load(tmp_path, bench)
    f32 = zoo.score_or_load(tmp_path, bench, dtype="float32")
    assert len(list((tmp_path / "scores").glob("*.json"))) == 2 and auto == f32  # a float32 checkpoint either way


def _models_imports(name: str) -> set[str]:
    """The modules of cheems_lib/models that ``name`` imports (at the top or inside a function), directly or not."""
    import ast
    from pathlib import Path

    import cheems_lib.models

    here = Path(cheems_lib.models.__file__).parent
    seen, todo = set(), [name]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        for node in ast.walk(ast.parse((here / module).read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                todo += [f"{node.module.split('.')[0]}.py"] if node.module else [f"{a.name}.py" for a in node.names]
    return seen


@pytest.mark.parametrize("entry, listed", [("training.py", "TRAINING_CODE"), ("scoring.py", "SCORING_CODE")])
def test_every_module_that_decides_weights_or_scores_is_in_the_cache_key(entry, listed):
    """The zoo keys a checkpoint by the training code and a cached score by the scoring code: every module of
    models/ that the entry point imports, directly or not, is in the list (one left out would let a stale
    checkpoint or stale scores be reused after its code changed), and it lists nothing else."""
    from cheems_lib.models import zoo

    names = set(getattr(zoo, listed))
    assert _models_imports(entry) <= names, sorted(_models_imports(entry) - names)
    assert names <= _models_imports(entry), sorted(names - _models_imports(entry))  # no stale or missing name
