"""The model zoo: train a reward model once, reuse it in every chapter.

``train_or_load(records, config)`` keys a checkpoint by the hash of the training data, the
config (model, hyperparameters, seed) and the training code, and returns its folder under
``cache_dir``; a finished run (``cheems_train.json`` present) is reused, an interrupted one
is resumed.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Sequence

import orjson

from .records import Record
from .training import TrainConfig, train

__all__ = ["data_fingerprint", "zoo_key", "train_or_load", "judge_or_load"]


def data_fingerprint(records: Sequence[Record]) -> str:
    """sha256 of the records as written (order matters: it changes batching)."""
    h = hashlib.sha256()
    for r in records:
        h.update(orjson.dumps(r.to_json()))
    return h.hexdigest()


def _code_fingerprint() -> str:
    here = Path(__file__).parent
    h = hashlib.sha256()
    for name in ("training.py", "batching.py", "reward_model.py"):
        h.update((here / name).read_bytes())
    return h.hexdigest()


def zoo_key(records: Sequence[Record], config: TrainConfig) -> str:
    blob = json.dumps({"data": data_fingerprint(records), "config": asdict(config), "code": _code_fingerprint()},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def train_or_load(records: Sequence[Record], config: TrainConfig, *, cache_dir: str | Path = "build/zoo",
                  name: str = "rm", progress: bool = False) -> Path:
    """Folder of a trained checkpoint for (records, config), training it if needed."""
    out = Path(cache_dir) / f"{name}-{zoo_key(records, config)}"
    if not (out / "cheems_train.json").exists():
        train(records, config, out, resume=(out / "checkpoints" / "latest").exists(), progress=progress,
              data_fingerprint=data_fingerprint(records))
    return out


def judge_or_load(records: Sequence[Record], *, cache_dir: str | Path = "build/zoo", progress: bool = False, **kw) -> Path:
    """Folder of a tiny judge (:func:`cheems_lib.judging.train_tiny_judge` with ``kw``), trained once."""
    from .judging import train_tiny_judge

    here = Path(__file__).parent
    blob = json.dumps({"data": data_fingerprint(records), "kw": kw,
                       "code": hashlib.sha256((here / "judging.py").read_bytes()).hexdigest()}, sort_keys=True, default=str)
    out = Path(cache_dir) / f"judge-{hashlib.sha256(blob.encode()).hexdigest()[:16]}"
    if not (out / "config.json").exists():
        tmp = out.with_name(out.name + ".tmp")
        train_tiny_judge(records, tmp, progress=progress, **kw)
        tmp.rename(out)
    return out
