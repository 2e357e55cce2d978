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

A judge's run also keeps each pair's verdicts of both orders beside the scores, in ``OUT.verdicts.jsonl``
(:func:`cheems_lib.models.judging.verdicts_path`), streamed, resumed and merged with them (:class:`ScoreOutput`).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
from itertools import combinations
from pathlib import Path
from typing import Callable, Iterable, Sequence

from ..baselines import NAMES
from ..fingerprint import file_hash
from ..input_files import DataError, show
from ..outputs import atomic_open, classify_output, DIRECTORY, interrupt_point, LINK_DIRECTORY, LOOP, OutputLock
from ..records import Record
from ..score_file import read_scores, score_lines
from .judging import PairVerdict, read_verdicts, verdict_lines, verdicts_path
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
# (``sink(scores)``; a judge ``sink(scores, verdicts)``, the PairVerdicts of the same records)
Scorer = Callable[[Sequence[Record], set, Callable[..., None]], dict]


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


class _Stream:
    """One file of a :class:`ScoreOutput` and its partial files: the scores, or a judge's verdicts beside them.

    ``read(path)`` gives ``{key: value}`` of one file, ``key[0]`` the prompt id (a key on two lines of a partial
    file keeps the later); ``lines(items, path)`` the bytes of ``(key, value)`` items; ``stale_field`` names
    the sidecar's list of the finished file's keys not to reuse.
    """

    def __init__(self, path: Path, stale_field: str, read: Callable, lines: Callable, *, sidecar: Path, rank: int,
                 processes: int, through: bool):
        self.path, self.stale_field, self._read, self._lines = path, stale_field, read, lines
        self.partial = path.with_name(path.name + ".partial")
        self.mine = self.partial if processes == 1 else self.partial.with_name(f"{self.partial.name}.{rank}")
        self.sidecar, self.rank, self.processes, self.through = sidecar, rank, processes, through

    def parts(self) -> list[Path]:
        """The finished file and the partial files that exist (none for a device or pipe)."""
        if self.through:
            return []
        return [p for p in [self.path, self.partial, *sorted(self.partial.parent.glob(self.partial.name + ".*"))]
                if p.is_file()]

    def read(self, p: Path) -> dict:
        """``{key: value}`` of one of :meth:`parts`."""
        try:
            return self._read(p)
        except DataError as e:  # not the user's data: skipping rows is no fix, starting over is
            raise DataError(p, None, f"line {e.line}: {e.problem}; this file cannot be resumed",
                            f"delete {p.name} (and {self.sidecar.name}) to score from scratch") from None

    def mark(self, changed: Callable[[tuple], bool], marked: set) -> tuple[set, list]:
        """The stale keys: ``changed(key)``, or ``marked`` in the finished file. Their lines in the partial files
        (ours) are cut at once; the finished file is only replaced by :meth:`merge`. Returns every stale key
        found and the finished file's, sorted, for the sidecar."""
        found, in_out = set(), []
        for p in self.parts():
            if p != self.path:
                _drop_torn_tail(p)
            table = self.read(p)
            bad = {k for k in table if changed(k) or (p == self.path and k in marked)}
            found |= bad
            if p == self.path:
                in_out = sorted(bad)
            elif bad:
                kept = [(k, v) for k, v in table.items() if k not in bad]
                self.write(kept, p) if kept else p.unlink()
        return found, [list(k) for k in in_out]

    def tidy(self) -> None:
        """Drop a torn last line from the partial files this process may cut: its own (all of them in one process).
        The main process cut every other one in :meth:`mark`, before the processes met; cutting another process's
        file here could race with that process appending to it, and lose a line it had just written."""
        for p in self.parts():
            if p != self.path and (p == self.mine or self.processes == 1):
                _drop_torn_tail(p)

    def keys(self, stale: set) -> set:
        """Keys on disk, less the finished file's ``stale`` ones (after :meth:`tidy`)."""
        self.tidy()
        keys: set = set()
        for p in self.parts():
            keys |= set(self.read(p)) - (stale if p == self.path else set())
        return keys

    def write(self, items, p: Path) -> None:
        """Replace ``p`` with ``items``' lines, atomically."""
        with atomic_open(p, "wb") as fh:
            fh.write(self._lines(items, p))

    def append(self, items) -> None:
        """Append ``items``' whole lines to this process's partial file in one write, flushed."""
        data = self._lines(items, self.mine)
        self.mine.parent.mkdir(parents=True, exist_ok=True)
        with open(self.mine, "ab") as fh:
            fh.write(data)
            fh.flush()  # a killed process keeps what was flushed; no fsync per batch (it would cost more than a batch)

    def merge(self, order: Sequence[tuple], stale: set, held: dict | None = None) -> tuple[int, int]:
        """Write the finished file (less its ``stale`` keys), the partial files and ``held``, atomically, keeping
        the keys of ``order`` in that order, then remove the partial files. Returns ``(lines, keys dropped)``."""
        parts = self.parts()
        merged: dict = {}
        for p in parts:
            merged.update({k: v for k, v in self.read(p).items() if p != self.path or k not in stale})
        merged.update(held or {})
        keys = [k for k in order if k in merged]
        self.write(((k, merged[k]) for k in keys), self.path)
        for p in parts:
            if p != self.path:
                p.unlink()
        return len(keys), len(merged) - len(keys)

    def remove(self) -> None:
        """Remove the finished file and the partial files."""
        for p in self.parts():
            p.unlink()


def _score_lines(items, path: Path) -> bytes:
    return score_lines(((p, r, s) for (p, r), s in items), path)


def _verdict_table(path: Path) -> dict:
    return {(v.prompt_id, v.a, v.b): v for v in read_verdicts(path, allow_repeats=True)}  # the later line wins


def _verdict_lines(items, path: Path) -> bytes:
    return verdict_lines((v for _, v in items), path)


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

    A judge's run (``settings["judge"]``) keeps each judged pair's verdicts beside the scores in
    ``OUT.verdicts.jsonl`` (:func:`cheems_lib.models.judging.verdicts_path`), which lives as ``OUT`` does: streamed
    to ``OUT.verdicts.jsonl.partial`` (``.K``), before the scores of the same records (a kill in between leaves
    those records unscored, so they are judged again and the later line of a pair wins), its stale pairs
    (``stale_verdicts`` in the sidecar) rejudged, merged by :meth:`finish` in record order after ``OUT``, with
    only the pairs of the records scored. A record whose scores are reused keeps the verdicts on disk: scores
    of an older cheems, which kept none, leave their pairs out of the file (counted in ``verdicts_missing``;
    delete ``OUT`` to judge them again). Any other run removes a verdicts file left beside ``OUT``: it would be
    read as this model's. A device or pipe gets no verdicts file.

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
        self.sidecar = self.path.with_name(self.path.name + ".cheems.json")
        where = dict(sidecar=self.sidecar, rank=rank, processes=processes, through=self.through)
        self.scores = _Stream(self.path, "stale", read_scores, _score_lines, **where)
        self.verdicts = _Stream(verdicts_path(self.path), "stale_verdicts", _verdict_table, _verdict_lines, **where)
        self.judge = bool(settings.get("judge")) and not self.through  # writes the verdicts file
        self.held: dict[tuple[str, str], float] = {}  # the scores of a written-through output, until finish
        self.dropped_other = 0  # scores of other data that finish dropped
        self.verdicts_missing = 0  # pairs of the records without a verdict after finish (reused older scores)
        for p in () if self.through else inputs:
            for mine in (self.path, self.verdicts.path):
                if mine.exists() and Path(p).exists() and os.path.samefile(p, mine):
                    raise DataError(mine, None, "the score output is also a --data input",
                                    "write the scores to another file (-o)")

    def lock(self):
        """The single-writer lock on the output (none for a device or pipe)."""
        return contextlib.nullcontext() if self.through else OutputLock(self.path)

    def _streams(self) -> list[_Stream]:
        return [self.scores, self.verdicts] if self.judge else [self.scores]

    def check(self) -> None:
        """Refuse an output that cheems did not write, or that holds another model's scores."""
        if self.through:
            return
        existing = self.scores.parts() + self.verdicts.parts()
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
        and of records not in ``records`` (dropped from ``OUT`` when it is rewritten). A judge's verdicts
        are marked by the same rule, in ``stale_verdicts``.
        """
        before = self._sidecar()
        now = {r.id: record_fingerprint(r) for r in records}
        same_model = before.get("model_fingerprint") == fingerprint and "records" in before
        known = before.get("records", {}) if same_model else {}

        def changed(key) -> bool:  # key[0]: the prompt id, in the scores' keys and the verdicts'
            return not same_model or (key[0] in now and known.get(key[0]) != now[key[0]])

        # only this run's records: finish keeps no other scores, and a record not listed is rescored if it comes back
        body = {**self.settings, "model_fingerprint": fingerprint, "records": now}
        found: set[tuple[str, str]] = set()
        for stream in self._streams():
            bad, body[stream.stale_field] = stream.mark(changed, {tuple(k) for k in before.get(stream.stale_field, [])})
            found = bad if stream is self.scores else found
        self._write_sidecar(body)
        keys = {(r.id, x.id) for r in records for x in r.responses}
        return {"rescored_stale": len(found & keys), "dropped_stale": len(found - keys)}

    def done(self) -> set[tuple[str, str]]:
        """Keys already scored and not stale, in OUT and every partial file; a torn last line is dropped first."""
        if self.judge:
            self.verdicts.tidy()  # appended to next
        return self.scores.keys({tuple(k) for k in self._sidecar().get("stale", [])})

    def append(self, scores: dict[tuple[str, str], float], verdicts: Sequence[PairVerdict] = ()) -> None:
        """Append whole lines to this process's partial file and flush them; a judge's ``verdicts`` (of the
        records of ``scores``) first, to its verdicts' partial file."""
        if self.through:
            self.held.update(scores)
            return

        if self.judge and verdicts:
            self.verdicts.append(((v.prompt_id, v.a, v.b), v) for v in verdicts)
        self.scores.append(scores.items())
        interrupt_point("score.batch")

    def finish(self, records: Sequence[Record]) -> int:
        """Merge OUT (less its stale scores) and the partial files into OUT, atomically, in record
        order, then clear the sidecar's stale list; returns the lines. Only scores of ``records`` are
        kept: scores of other data (an earlier run's, on other files) are dropped and counted in
        ``dropped_other``, so a rerun into OUT leaves what a run into a new file would. A judge's verdicts
        are merged the same way after OUT, one line per pair of ``records`` that has one
        (``verdicts_missing``: those without)."""
        body = self._sidecar()

        def stale(stream: _Stream) -> set:
            return {tuple(k) for k in body.get(stream.stale_field, [])}

        order = [(rec.id, r.id) for rec in records for r in rec.responses]
        lines, self.dropped_other = self.scores.merge(order, stale(self.scores), self.held)
        if self.judge:
            pairs = [(rec.id, a, b) for rec in records for a, b in combinations(rec.response_ids, 2)]
            self.verdicts_missing = len(pairs) - self.verdicts.merge(pairs, stale(self.verdicts))[0]
        elif not self.through:
            self.verdicts.remove()
        cleared = {s.stale_field: [] for s in (self.scores, self.verdicts) if s.stale_field in body}
        if any(body[k] for k in cleared):  # after OUT: a kill in between only rescores those keys once more
            self._write_sidecar({**body, **cleared})
        return lines

    def report(self) -> dict:
        """What :func:`score_to_file` adds to its report: a judge's verdicts file and its pairs without a verdict."""
        return {"verdicts": str(self.verdicts.path), "verdicts_missing": self.verdicts_missing} if self.judge else {}


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
                    "dropped_other": out.dropped_other, **out.report()}
    return None
