"""The model zoo: train a reward model once, reuse it in every chapter.

``train_or_load(records, config)`` keys a checkpoint by the hash of the training data, the
config (model, hyperparameters, seed) and the training code, and returns its folder under
``cache_dir``; a finished run (``cheems_train.json`` present) is reused, an interrupted one
is resumed. ``score_or_load(model_dir, records)`` caches a model's scores on a record set
next to the checkpoint, keyed on the records' content and the model's weights, so chapters
that evaluate the same model on the same benchmark score it once. A lock per entry
(:class:`cheems_lib.outputs.OutputLock` with ``wait=True``) lets chapters run in parallel processes: the second
process to need a model waits for the first to finish training it.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

import orjson

from ..outputs import LockedError, OutputLock, atomic_path
from ..records import Record, data_fingerprint
from . import reward_model
from .judging import train_tiny_judge
from .score_output import model_fingerprint
from .scoring import score_records
from .training import train
from .training_config import default_device, TrainConfig

__all__ = ["TRAINING_CODE", "SCORING_CODE", "Busy", "zoo_key", "train_or_load", "judge_or_load", "score_or_load", "busy_last", "score_all",
           "scores_of_reward_model"]


TRAINING_CODE = ("training.py", "bt_loss.py", "training_steps.py", "training_config.py", "training_pairs.py",
                 "run_folder.py", "batching.py", "chat_encoding.py", "last_token.py", "prefix_sharing.py",
                 "reward_model.py")
"""The modules of this package whose code is part of a trained checkpoint's key: :func:`cheems_lib.models.training.train`
and every module of this package it imports, directly or not (a test checks the list against the imports)."""


def _code_fingerprint() -> str:
    here = Path(__file__).parent
    h = hashlib.sha256()
    for name in TRAINING_CODE:
        h.update((here / name).read_bytes())
    return h.hexdigest()


Busy = LockedError
"""Another process holds the entry's lock: what :func:`train_or_load` raises with ``wait=False`` (the
:class:`cheems_lib.outputs.OutputLock` refusal; nothing else in the locked block takes a lock that refuses)."""


def zoo_key(records: Sequence[Record], config: TrainConfig) -> str:
    # the device too: a model trained on a GPU differs from the CPU's in its last bits, and a zoo may be shared
    blob = json.dumps({"data": data_fingerprint(records), "config": asdict(config), "code": _code_fingerprint(),
                       "device": default_device()}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def train_or_load(records: Sequence[Record], config: TrainConfig, *, cache_dir: str | Path = "build/zoo",
                  name: str = "rm", progress: bool = False, wait: bool = True) -> Path:
    """Folder of a trained checkpoint for (records, config), training it if needed.

    When another process is training the same entry, this waits for it; with ``wait=False`` it
    raises :class:`Busy` instead, so the caller can train something else meanwhile.
    """
    out = Path(cache_dir) / f"{name}-{zoo_key(records, config)}"
    if (out / "cheems_train.json").exists():
        return out
    with OutputLock(out, wait=wait):
        if not (out / "cheems_train.json").exists():
            train(records, config, out, resume=(out / "checkpoints" / "latest").exists(), progress=progress,
                  data_fingerprint=data_fingerprint(records))
    return out


def scores_of_reward_model(records: Sequence[Record], model: str | Path | None = None, *,
                           trained_on: Sequence[Record] = (), seed: int = 0,
                           progress: bool = False) -> tuple[Path | str, dict[tuple[str, str], float]]:
    """``(model, scores)``: ``records`` scored by the reward model ``model`` or, without one, by the tiny one the
    zoo trains on ``trained_on`` with ``seed`` (:func:`train_or_load`), on a GPU when there is one (``cheems
    preference`` without ``--scores``)."""
    model = model or train_or_load(trained_on, TrainConfig(seed=seed), progress=progress)
    loaded, tok = reward_model.load(model, device_map=reward_model.device_map_for(default_device()))
    scores, _ = score_records(loaded, tok, records, progress=progress)
    return model, scores


def judge_or_load(records: Sequence[Record], *, cache_dir: str | Path = "build/zoo", progress: bool = False, **kw) -> Path:
    """Folder of a tiny judge (:func:`cheems_lib.models.judging.train_tiny_judge` with ``kw``), trained once."""
    here = Path(__file__).parent
    blob = json.dumps({"data": data_fingerprint(records), "kw": kw, "device": default_device(),
                       "code": hashlib.sha256((here / "judging.py").read_bytes() + _code_fingerprint().encode()).hexdigest()},
                      sort_keys=True, default=str)  # judge training: the training code of TRAINING_CODE too
    out = Path(cache_dir) / f"judge-{hashlib.sha256(blob.encode()).hexdigest()[:16]}"
    if (out / "config.json").exists():
        return out
    with OutputLock(out, wait=True):
        if not (out / "config.json").exists():
            tmp = out.with_name(out.name + ".tmp")
            train_tiny_judge(records, tmp, progress=progress, **kw)
            tmp.rename(out)
    return out


SCORING_CODE = ("scoring.py", "score_output.py", "chat_encoding.py", "last_token.py", "prefix_sharing.py", "batching.py",
                "reward_heads.py", "reward_model.py", "judging.py", "training_config.py")
"""The modules of this package whose code is part of a cached score's key: :mod:`cheems_lib.models.scoring` and
every module of this package it imports, directly or not (a test checks the list against the imports)."""


def _responses_fingerprint(records: Sequence[Record]) -> str:
    """sha256 of what a scorer sees (ids, prompts, responses), not the annotations: the GPT-annotated
    copy of a benchmark shares its scores."""
    h = hashlib.sha256()
    for code in SCORING_CODE:  # a change in how scores are computed scores again
        h.update((Path(__file__).parent / code).read_bytes())
    for r in records:
        h.update(orjson.dumps([r.id, r.sys_prompt, r.prompt, [[x.id, x.content] for x in r.responses]]))
    return h.hexdigest()[:16]


def _placement_key(dtype, device, device_map) -> str:
    """What of the loading changes the scores: the dtype as asked (``auto``: the checkpoint's) and the kind of
    device that computes (``cpu``, ``cuda``): CPU float32 and GPU bfloat16 scores differ. Not the device's index
    nor the device map, which place the same computation elsewhere."""
    name = "auto" if dtype is None else str(dtype).removeprefix("torch.")
    if device_map is not None:
        places = set(device_map.values()) if isinstance(device_map, dict) else {None}
        kinds = {str(p).split(":")[0] if p is not None else default_device() for p in places}
        kinds = {"cuda" if k.isdigit() else k for k in kinds}  # accelerate's {"": 0} is GPU 0
    else:
        kinds = {str(device or "cpu").split(":")[0]}
    return f"dtype={name};device={'+'.join(sorted(kinds))}"


def score_or_load(model_dir: str | Path, records: Sequence[Record], *, batch_size: int = 32, device: str | None = None,
                  dtype=None, progress: bool = False, wait: bool = True, device_map=None) -> dict[tuple[str, str], float]:
    """Scores of the zoo model in ``model_dir`` on ``records``, computed once and cached beside it.

    The key is the records' content (:func:`_responses_fingerprint`), the weights
    (:func:`cheems_lib.models.score_output.model_fingerprint`: a folder retrained in place, or any folder
    passed here that changes, gets new scores), and the dtype and kind of device (:func:`_placement_key`), so a
    shared zoo never hands CPU float32 scores to a GPU bfloat16 caller. Scores do not depend on the batch size (see
    :mod:`cheems_lib.models.scoring`), so it is not part of the key; ``device`` and ``dtype`` are where
    and how the model is loaded (a GPU and bfloat16 for large models; the model loads straight onto
    ``device``), ``device_map`` (``"auto"``) spreads a model too large for one device. The cache is
    ``<model_dir>/scores/<fingerprint>.json``, written atomically. A lock per entry makes parallel chapters
    score it once: the second waits for the first, or with ``wait=False`` raises :class:`Busy`, so the caller
    can score something else meanwhile (:func:`score_all`).
    """
    where = _placement_key(dtype, device, device_map)
    key = hashlib.sha256(f"{_responses_fingerprint(records)}:{model_fingerprint(model_dir)}:{where}".encode()
                         ).hexdigest()[:16]
    path = Path(model_dir) / "scores" / f"{key}.json"
    if not path.exists():
        with OutputLock(path, wait=wait):
            if not path.exists():
                model, tok = reward_model.load(model_dir, dtype=dtype, device_map=device_map or
                                               reward_model.placement_for(model_dir, device or "cpu", dtype))
                scores, _ = score_records(model, tok, records, batch_size=batch_size, progress=progress)
                with atomic_path(path) as tmp:
                    tmp.write_bytes(orjson.dumps([[p, r, s] for (p, r), s in scores.items()]))
    return {(p, r): s for p, r, s in orjson.loads(path.read_bytes())}


def busy_last(jobs: Sequence, run, *, done=None) -> list:
    """``run(job, wait=...)`` of every job, results in ``jobs``' order: first with ``wait=False``, skipping the
    jobs another process holds (:class:`Busy`), then the skipped ones with ``wait=True``, so no core idles on a
    lock while there is other work. ``done(result)`` is called after each job (a progress bar)."""
    out: dict[int, Any] = {}
    for wait in (False, True):
        for i, job in enumerate(jobs):
            if i not in out:
                try:
                    out[i] = run(job, wait=wait)
                except Busy:
                    continue
                if done is not None:
                    done(out[i])
    return [out[i] for i in range(len(jobs))]


def score_all(jobs: Sequence[tuple[str | Path, Sequence[Record]]], **kw) -> list[dict[tuple[str, str], float]]:
    """:func:`score_or_load` of every ``(model_dir, records)`` job, results in ``jobs``' order (:func:`busy_last`):
    two chapters that need the same models score each once and neither idles behind the other."""
    return busy_last(jobs, lambda job, wait: score_or_load(*job, wait=wait, **kw))
