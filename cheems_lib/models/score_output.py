"""The score file of ``cheems score``: streamed, resumable, and reused only while its inputs are unchanged.

:func:`score_to_file` runs a scorer (:func:`cheems_lib.models.scoring.make_scorer`: a baseline, a generative
judge or a reward model) into a :class:`ScoreOutput`, each process of a data-parallel launch scoring its
shard, and a rerun scores only what is missing.

Scores are reused only while what they were computed from is unchanged: the sidecar
``OUT.cheems.json`` records the model's fingerprint (:func:`model_fingerprint`: its weight,
config, tokenizer and ``cheems_train.json`` files) and each record's (:func:`record_fingerprint`:
prompt, system prompt, category, each response's id and text). A rerun rescores every record
whose fingerprint changed, and everything when the model's did, and reports how many stale
scores it replaced (``rescored_stale``) or dropped (``dropped_stale``: stale scores of records
no longer in ``--data``).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Callable, Iterable, Sequence

from ..baselines import NAMES
from ..fingerprint import file_hash
from ..input_files import DataError, show
from ..outputs import atomic_open, classify_output, DIRECTORY, interrupt_point, LINK_DIRECTORY, LOOP, OutputLock
from ..records import Record
from ..score_file import read_scores, score_lines, write_scores
from .training_config import default_device

__all__ = ["ScoreOutput", "score_to_file", "checkpoint_files", "model_fingerprint", "record_fingerprint", "Scorer",
           "score_settings"]

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
"""Files of a checkpoint folder that hold weights (all of them are fingerprinted)."""
MODEL_FILES = ("config.json", "cheems_train.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
               "tokenizer.model", "vocab.json", "vocab.txt", "merges.txt", "special_tokens_map.json", "added_tokens.json",
               "model.safetensors.index.json", "pytorch_model.bin.index.json")
"""Other files of a checkpoint folder that change its scores (a named list: a score file written
into the folder must not change the fingerprint)."""

# score(records, done, sink) -> report: scores what is not in ``done``, handing each batch to ``sink``
Scorer = Callable[[Sequence[Record], set, Callable[[dict], None]], dict]


def score_settings(model: str, *, judge: bool = False, dtype: str = "auto", max_length: int | None = None,
                   seed: int = 0, reward_head: str = "auto", reward_token: int | None = None,
                   trust_remote_code: bool = False) -> dict:
    """The settings of a ``cheems score`` run that change its scores (``cheems score``'s options), recorded in
    the score file's sidecar: a rerun with other settings rescores. A setting added later is None at its
    default, so older score files still resume."""
    return {"model": model, "judge": judge, "dtype": dtype, "max_length": max_length,
            "seed": seed if model == "baseline:random" else None,
            "reward_head": None if reward_head == "auto" else reward_head,
            "reward_token": (reward_token or 0) if reward_head == "logit" else None,
            "trust_remote_code": True if trust_remote_code else None}


def _file_fingerprint(path: Path) -> str:
    """SHA-256 of a file's bytes (:func:`cheems_lib.fingerprint.file_hash`, the chapter cache's too): a file
    rewritten in place with its size and mtime kept is rescored. One over
    :data:`cheems_lib.fingerprint.FULL_HASH_BYTES` (a checkpoint's weights) is hashed once and its hash reused
    while its inode, size, mtime and ctime are unchanged (the hash cache), so a rerun costs a ``stat``."""
    return file_hash(path)


def checkpoint_files(folder: str | Path) -> list[Path]:
    """The files of a local checkpoint folder that change its scores (:data:`WEIGHT_SUFFIXES`, :data:`MODEL_FILES`),
    sorted; ``[]`` for anything that is not a folder (a hub name, a baseline)."""
    path = Path(folder).expanduser()
    if not path.is_dir():
        return []
    return [f for f in sorted(path.iterdir()) if f.is_file() and (f.suffix in WEIGHT_SUFFIXES or f.name in MODEL_FILES)]


def model_fingerprint(model: str | Path, config=None) -> str:
    """What identifies the weights that ``model`` names, for reusing its scores.

    A baseline: its name (its seed is a setting of its own). A local checkpoint folder: a hash
    of its weight files (:data:`WEIGHT_SUFFIXES`) and :data:`MODEL_FILES` (config, tokenizer,
    ``cheems_train.json``), each by :func:`_file_fingerprint`. A local file: its own. A hub
    name: the name and the commit that ``config`` (the loaded model's) was read from, when
    transformers recorded it, else the name alone.
    """
    if str(model) in NAMES:
        return str(model)
    path = Path(model)
    if path.is_dir():
        h = hashlib.sha256()
        for f in checkpoint_files(path):
            h.update(f"{f.name}:{_file_fingerprint(f)}\n".encode())
        return "sha256:" + h.hexdigest()
    if path.is_file():
        return "sha256:" + _file_fingerprint(path)
    commit = getattr(config, "_commit_hash", None)
    return f"hub:{model}@{commit}" if commit else f"hub:{model}"


def record_fingerprint(rec: Record) -> str:
    """sha256 (16 hex digits) of what any scorer reads from a record: prompt, system prompt,
    top category (the judge's prompt names it) and each response's id and text."""
    import orjson

    blob = orjson.dumps([rec.prompt, rec.sys_prompt, rec.top_category, [[x.id, x.content] for x in rec.responses]])
    return hashlib.sha256(blob).hexdigest()[:16]


class ScoreOutput:
    """The score file of one ``cheems score`` run: streamed, resumable, single-writer, one model.

    While scoring, whole lines are appended (and flushed) to ``OUT.partial`` as batches
    finish, one ``OUT.partial.K`` per process under data parallelism. :meth:`finish`
    writes ``OUT`` atomically in record order and removes the partial files, so ``OUT``
    is always absent, the previous complete file, or the new complete file. A rerun reads
    ``OUT`` and the partial files (dropping a torn last line) and scores only the rest.
    ``OUT.cheems.json`` records what produced the scores (model, judge, dtype, maximum
    length, seed); a rerun with anything else is refused, and so is an existing ``OUT``
    without it, which cheems did not write. It also records the model's fingerprint and each
    record's (``model_fingerprint``, ``records``): :meth:`start` marks the scores on disk that
    no longer match as stale (``stale``: keys of ``OUT`` not to reuse; stale lines of the
    partial files are cut at once), so they are rescored, and :meth:`finish` drops what is
    still stale. ``OUT`` itself is only replaced by :meth:`finish`.

    The output path is classified first (:func:`cheems_lib.outputs.classify_output`): a
    symbolic link to a regular file (or a dangling one) is resolved, so the partial files,
    the record and the lock lie beside the file it points to and the link stays a link; a
    device, a pipe or a link to one (``/dev/stdout``) is written through at the end, with
    no partial file, record or lock (there is nothing to resume into); a link loop or a
    folder is refused before anything is written.
    """

    def __init__(self, path: str | Path, settings: dict, *, inputs: Iterable[str | Path] = (),
                 rank: int = 0, processes: int = 1):
        given = classify_output(path)
        if given.kind == LOOP:
            raise DataError(path, None, "is a symbolic link loop", "point the link at a file, or pass another -o")
        if given.kind in (DIRECTORY, LINK_DIRECTORY):
            raise DataError(path, None, "is a folder; a score output is a file, resumed from OUT.partial beside it",
                            "pass a file path (-o scores.jsonl)")
        self.through = given.through
        if self.through and processes > 1:
            raise DataError(path, None, "is a device or pipe, which cannot collect the parts of several processes",
                            "write to a file (-o scores.jsonl)")
        self.path = given.target
        self.settings = settings
        self.rank, self.processes = rank, processes
        self.partial = self.path.with_name(self.path.name + ".partial")
        self.sidecar = self.path.with_name(self.path.name + ".cheems.json")
        self.mine = self.partial if processes == 1 else self.partial.with_name(f"{self.partial.name}.{rank}")
        self.held: dict[tuple[str, str], float] = {}  # the scores of a written-through output, until finish
        self.dropped_other = 0  # scores of other data that finish dropped
        for p in () if self.through else inputs:
            if self.path.exists() and Path(p).exists() and os.path.samefile(p, self.path):
                raise DataError(self.path, None, "the score output is also a --data input",
                                "write the scores to another file (-o)")

    def lock(self):
        """The single-writer lock on the output (none for a device or pipe)."""
        return contextlib.nullcontext() if self.through else OutputLock(self.path)

    def _parts(self) -> list[Path]:
        if self.through:
            return []
        return [p for p in [self.path, self.partial, *sorted(self.partial.parent.glob(self.partial.name + ".*"))]
                if p.is_file()]

    def check(self) -> None:
        """Refuse an output that cheems did not write, or that holds another model's scores."""
        if self.through:
            return
        existing = [p for p in self._parts()]
        if not self.sidecar.exists():
            if existing:
                raise DataError(existing[0], None, "exists but has no .cheems.json record of the model that wrote it",
                                "choose another output path (-o), or delete the file")
            return
        try:
            before = json.loads(self.sidecar.read_text(encoding="utf-8"))
        except ValueError:
            raise DataError(self.sidecar, None, "is not valid JSON", "delete it and the score file it describes") from None
        differ = {k: (before.get(k), v) for k, v in self.settings.items() if before.get(k) != v}
        if differ and existing:
            text = ", ".join(f"{k}: {show(a)} in the file, {show(b)} now" for k, (a, b) in differ.items())
            raise DataError(self.path, None, f"holds scores from another setup ({text})",
                            "choose another output path (-o), or delete the file to rescore")

    def _sidecar(self) -> dict:
        try:
            return json.loads(self.sidecar.read_text(encoding="utf-8")) if self.sidecar.exists() else {}
        except ValueError:
            raise DataError(self.sidecar, None, "is not valid JSON", "delete it and the score file it describes") from None

    def _write_sidecar(self, body: dict) -> None:
        if self.through:
            return

        with atomic_open(self.sidecar, "w", encoding="utf-8") as fh:
            json.dump(body, fh, indent=2, ensure_ascii=False)

    def start(self, records: Sequence[Record] = (), fingerprint: str | None = None) -> dict:
        """Record the settings and fingerprints (main process, after :meth:`check`) and mark what is stale.

        A score on disk is stale when the model's fingerprint differs from the one recorded, or
        its record's content fingerprint does, or an unfinished earlier run marked it so. Returns
        ``{"rescored_stale", "dropped_stale"}``: stale scores of ``records`` (rescored by this run)
        and of records not in ``records`` (dropped from ``OUT`` when it is rewritten).
        """
        before = self._sidecar()
        now = {r.id: record_fingerprint(r) for r in records}
        same_model = before.get("model_fingerprint") == fingerprint and "records" in before
        known = before.get("records", {}) if same_model else {}
        marked = {tuple(k) for k in before.get("stale", [])}

        def stale(key, in_out: bool) -> bool:
            return (not same_model or (in_out and key in marked)
                    or (key[0] in now and known.get(key[0]) != now[key[0]]))

        found: set[tuple[str, str]] = set()
        in_out: list[tuple[str, str]] = []
        for p in self._parts():
            if p != self.path:
                _drop_torn_tail(p)
            scores = self._read(p)
            bad = {k for k in scores if stale(k, p == self.path)}
            found |= bad
            if p == self.path:
                in_out = sorted(bad)
            elif bad:  # a partial file is ours: cut its stale lines now
                kept = [(x, y, v) for (x, y), v in scores.items() if (x, y) not in bad]
                write_scores(kept, p) if kept else p.unlink()
        # only this run's records: finish keeps no other scores, and a record not listed is rescored if it comes back
        self._write_sidecar({**self.settings, "model_fingerprint": fingerprint, "records": now,
                             "stale": [list(k) for k in in_out]})
        keys = {(r.id, x.id) for r in records for x in r.responses}
        return {"rescored_stale": len(found & keys), "dropped_stale": len(found - keys)}

    def _read(self, p: Path):
        try:
            return read_scores(p)
        except DataError as e:  # not the user's data: skipping rows is no fix, starting over is
            raise DataError(p, None, f"line {e.line}: {e.problem}; this file cannot be resumed",
                            f"delete {p.name} (and {self.sidecar.name}) to score from scratch") from None

    def done(self) -> set[tuple[str, str]]:
        """Keys already scored and not stale, in OUT and every partial file; a torn last line is dropped first."""
        keys: set[tuple[str, str]] = set()
        stale = {tuple(k) for k in self._sidecar().get("stale", [])}
        for p in self._parts():
            if p != self.path and (p == self.mine or self.processes == 1 or self.rank == 0):
                _drop_torn_tail(p)
            keys |= set(self._read(p)) - (stale if p == self.path else set())
        return keys

    def append(self, scores: dict[tuple[str, str], float]) -> None:
        """Append whole lines to this process's partial file and flush them."""
        if self.through:
            self.held.update(scores)
            return

        write_scores(((p, r, s) for (p, r), s in scores.items()), self.mine, append=True)
        interrupt_point("score.batch")

    def finish(self, records: Sequence[Record]) -> int:
        """Merge OUT (less its stale scores) and the partial files into OUT, atomically, in record
        order, then clear the sidecar's stale list; returns the lines. Only scores of ``records`` are
        kept: scores of other data (an earlier run's, on other files) are dropped and counted in
        ``dropped_other``, so a rerun into OUT leaves what a run into a new file would."""
        parts = self._parts()
        body = self._sidecar()
        stale = {tuple(k) for k in body.get("stale", [])}
        merged: dict[tuple[str, str], float] = {}
        for p in parts:
            merged.update({k: v for k, v in read_scores(p).items() if p != self.path or k not in stale})
        merged.update(self.held)
        order = [(rec.id, r.id) for rec in records for r in rec.responses if (rec.id, r.id) in merged]
        self.dropped_other = len(merged) - len(order)
        with atomic_open(self.path, "wb") as fh:
            fh.write(score_lines(((p, r, merged[(p, r)]) for p, r in order), self.path))
        for p in parts:
            if p != self.path:
                p.unlink()
        if stale:  # after OUT: a kill in between only rescores those keys once more
            self._write_sidecar({**body, "stale": []})
        return len(order)


def _drop_torn_tail(path: Path) -> None:
    """Cut a half-written last line (a killed run's) from a partial file this class owns."""
    with open(path, "rb+") as fh:
        data = fh.read()
        if data and not data.endswith(b"\n"):
            fh.truncate(data.rfind(b"\n") + 1)


def score_to_file(records: Sequence[Record], path: str | Path, settings: dict, make: Callable[[object], Scorer], *,
                  inputs: Iterable[str | Path] = ()) -> dict | None:
    """Score ``records`` into ``path`` (a :class:`ScoreOutput` with ``settings``), resuming what is on disk.

    ``make(state)`` loads the scorer (an accelerate ``PartialState``: device, main process) after
    the output is checked and before anything is written; its ``fingerprint`` attribute (from
    :func:`cheems_lib.models.scoring.make_scorer`; else :func:`model_fingerprint` of ``settings["model"]``) identifies the
    weights. Each process scores its shard of the records not yet scored (stale scores do not
    count as scored, see :class:`ScoreOutput`); the main process merges the parts and returns
    ``{"processes", "lines", **scorer report, "skipped", "rescored_stale", "dropped_stale"}``
    (the others return ``None``).
    """
    from accelerate import PartialState

    state = PartialState(cpu=default_device() == "cpu")
    out = ScoreOutput(path, settings, inputs=inputs, rank=state.process_index, processes=state.num_processes)
    with out.lock() if state.is_main_process else contextlib.nullcontext():
        if state.is_main_process:
            out.check()  # before loading a model that may take minutes
        scorer = make(state)  # a model that cannot load stops here, before anything is written
        fingerprint = getattr(scorer, "fingerprint", None) or model_fingerprint(settings.get("model", ""))
        if settings.get("model") == "baseline:random":  # one draw over all the records: other records, other scores
            fingerprint += ":" + hashlib.sha256("".join(f"{r.id}:{record_fingerprint(r)}\n" for r in records).encode()
                                                ).hexdigest()[:16]
        if state.is_main_process:
            stale = out.start(records, fingerprint)
        state.wait_for_everyone()
        done = out.done()
        todo = [r for r in records if not all((r.id, x.id) in done for x in r.responses)]
        report = scorer(todo[state.process_index::state.num_processes], done, out.append)
        report["skipped"] = sum((r.id, x.id) in done for r in records for x in r.responses)  # already on disk
        state.wait_for_everyone()
        if state.is_main_process:
            lines = out.finish(records)
            return {"processes": state.num_processes, "lines": lines, **report, **stale,
                    "dropped_other": out.dropped_other}
    return None
