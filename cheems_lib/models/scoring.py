"""Discriminative scoring: one reward per (prompt, response), batched by length (paper §6.1).

Responses are sorted by token length and batched in that order, right-padded with an
attention mask. With causal attention and right padding a real token never attends to a
pad and keeps its position, so a score does not depend on the batch size or on its batch
neighbours (the tests check batch sizes 1, 3 and 16 agree to 1e-5 in float32), the
RewardBench problem of accuracy changing with batch size.

:func:`score_to_file` is ``cheems score``: a scorer from :func:`make_scorer` (a baseline, a
generative judge or a reward model) writes a resumable score file (:class:`ScoreOutput`),
each process of a data-parallel launch scoring its shard.

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

from ..baselines import named_scores, NAMES
from ..fingerprint import file_hash
from ..outputs import atomic_open, classify_output, DIRECTORY, interrupt_point, LINK_DIRECTORY, LOOP, OutputLock
from ..records import DataError, Record, show
from ..score_file import read_scores, score_lines, write_scores
from .batching import budget_groups, forward_in_batches, forward_options, input_device, pad_right
from .judging import judge_records, judge_scores, load_judge, position_consistency
from .last_token import last_token_only
from .reward_heads import head_of, load, prepare, rewards
from .reward_model import (absent_pad_id, check_pair, device_map_for, embedding_rows, encode_pairs, ModelError,
                           spread_by_device_map)
from .training_config import default_device

__all__ = ["score_records", "ScoreOutput", "score_to_file", "make_scorer", "checkpoint_files", "model_fingerprint",
           "record_fingerprint", "MAX_TOKENS_PER_BATCH", "placement"]

JUDGE_CHUNK = 16  # records judged between two writes of a judge run
MAX_TOKENS_PER_BATCH = 16384
"""Padded tokens per forward pass of a model outside the tiny family (``cheems score --max-tokens-per-batch``):
activation memory grows with the tokens of a batch, not with its sequences, so the budget bounds it for any
mix of lengths (the paper preset's per-device token budget on a GPU)."""
ENCODED_SETS = 8
"""Tokenized record sets a process keeps (:func:`score_records`): the training seeds of one training set
share its tokenizer, so the zoo scores a benchmark once per seed but tokenizes it once per set."""
_ENCODED: dict[str, list] = {}  # key -> token ids as array('i'), oldest first

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
"""Files of a checkpoint folder that hold weights (all of them are fingerprinted)."""
MODEL_FILES = ("config.json", "cheems_train.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
               "tokenizer.model", "vocab.json", "vocab.txt", "merges.txt", "special_tokens_map.json", "added_tokens.json",
               "model.safetensors.index.json", "pytorch_model.bin.index.json")
"""Other files of a checkpoint folder that change its scores (a named list: a score file written
into the folder must not change the fingerprint)."""

# score(records, done, sink) -> report: scores what is not in ``done``, handing each batch to ``sink``
Scorer = Callable[[Sequence[Record], set, Callable[[dict], None]], dict]


def score_records(model, tokenizer, records: Sequence[Record], *, batch_size: int = 16, max_length: int | None = None,
                  progress: bool = False, skip: set | None = None, on_batch: Callable[[dict], None] | None = None,
                  max_tokens_per_batch: int | None = None) -> tuple[dict[tuple[str, str], float], dict]:
    """Score every response of ``records``; returns ``(scores, report)``.

    ``max_length`` defaults to the model's maximum positions; longer sequences are cut at
    the end and counted in ``report["truncated"]``; texts are cut to a character budget before
    tokenizing (:func:`cheems_lib.models.reward_model.text_budget`), which changes no score. Keys in ``skip`` (already scored, for
    resuming) are not scored again and are counted in ``report["skipped"]``. ``on_batch``
    receives each batch's ``{key: score}`` as soon as it is computed (to stream to disk).

    A model of the tiny family is forwarded ``batch_size`` sequences at a time (its scores, to the last bit, are
    the book's). Any other model, or any with ``max_tokens_per_batch``, is forwarded in batches of at most
    ``batch_size`` sequences and ``max_tokens_per_batch`` padded tokens (default :data:`MAX_TOKENS_PER_BATCH`;
    one longer sequence goes alone), longest first, so a budget the device cannot hold fails in the first
    batch, not after hours. The reward is read as the model's head says
    (:mod:`cheems_lib.models.reward_heads`), at each sequence's last real token: the batch is padded with an
    id none of its texts holds (:func:`cheems_lib.models.reward_model.absent_pad_id`).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if max_length is not None and max_length < 1:
        raise ValueError(f"max_length must be >= 1, got {max_length}")
    if max_tokens_per_batch is not None and max_tokens_per_batch < 1:
        raise ValueError(f"max_tokens_per_batch must be >= 1, got {max_tokens_per_batch}")

    check_pair(model, tokenizer)
    model.eval()
    head = head_of(model)
    limit = max_length or getattr(model.config, "max_position_embeddings", None) or 10**9
    skip = skip or set()
    todo = [(rec, r) for rec in records for r in rec.responses if (rec.id, r.id) not in skip]
    skipped = sum(len(rec.responses) for rec in records) - len(todo)
    # a custom model's reward token is appended after the cut, as its own scoring appends it to the whole text
    cut = limit - (head.end_token_id is not None)
    encoded = _encoded(tokenizer, [(rec.prompt, r.content, rec.sys_prompt) for rec, r in todo], max(cut, 1))
    truncated = sum(len(ids) > cut for ids in encoded)
    items = [((rec.id, r.id), prepare(head, ids[:cut])) for (rec, r), ids in zip(todo, encoded)]
    items.sort(key=lambda kv: len(kv[1]))
    pad_id = absent_pad_id(tokenizer, [t for _, t in items], embedding_rows(model)) if items else tokenizer.pad_token_id
    scores: dict[tuple[str, str], float] = {}
    tiny = getattr(model.config, "cheems_tiny_size", None) is not None
    if tiny and max_tokens_per_batch is None and head.kind == "classifier":
        batches = ({key: float(s) for (key, _), s in zip(items[start:start + batch_size], out)}
                   for start, out in forward_in_batches(model, [t for _, t in items], pad_id, batch_size,
                                                        lambda logits, mask: logits.squeeze(-1).float().cpu().tolist(),
                                                        progress=progress, desc="scoring"))
    else:
        batches = _budget_batches(model, head, items, pad_id, batch_size, max_tokens_per_batch or MAX_TOKENS_PER_BATCH,
                                  progress)
    # the last layer at the read position only (the same scores, faster); not for a model whose layers
    # accelerate's hooks move between devices (replacing a layer's forward would drop its hook)
    reading = contextlib.nullcontext() if spread_by_device_map(model) else last_token_only(model)
    with reading, _pad_token_id(model, pad_id):
        for batch in batches:
            scores.update(batch)
            if on_batch is not None:
                on_batch(batch)
    return scores, {"scored": len(items), "truncated": truncated, "skipped": skipped}


@contextlib.contextmanager
def _pad_token_id(model, pad_id: int):
    """``model``'s config pads with ``pad_id`` inside (transformers' classifiers pool at the rightmost other token,
    custom code often at the first pad): the same id the batches are padded with. Restored afterwards."""
    text = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    configs = [model.config] if text is model.config else [model.config, text]  # multimodal: the text config pools
    before = [(c, getattr(c, "pad_token_id", None)) for c in configs]
    for c in configs:
        c.pad_token_id = pad_id
    try:
        yield
    finally:
        for c, v in before:
            c.pad_token_id = v


def _budget_batches(model, head, items: list, pad_id: int, batch_size: int, max_tokens: int, progress: bool):
    """``{key: reward}`` per batch of ``items`` (sorted by length): :func:`cheems_lib.models.batching.forward_groups`
    under ``max_tokens`` padded tokens, at most ``batch_size`` sequences, longest first; a custom head gets
    batches of one length (no padding: its own pooling reads the last real token whatever it does)."""
    import torch

    lengths = [len(t) for _, t in items]
    ratio = 1.2 if head.pads else 1.0
    groups = budget_groups(lengths, max_tokens, batch_size, ratio=ratio)
    device, options = input_device(model), forward_options(model)
    if progress:
        from tqdm.auto import tqdm
        groups = tqdm(groups, desc="scoring", unit="batch")
    for g in groups:
        with torch.inference_mode():
            ids, mask = pad_right([items[j][1] for j in g], pad_id, device)
            try:
                out = rewards(head, model, ids, mask, options).float().cpu().tolist()
            except torch.OutOfMemoryError:
                raise ModelError(f"out of device memory on a batch of {len(g)} sequences x {ids.shape[1]} tokens "
                                 "(fix: lower --max-tokens-per-batch or --batch-size, or spread the model with "
                                 "--device-map auto)") from None
        yield {items[j][0]: float(s) for j, s in zip(g, out)}


def _encoding_key(tokenizer, pairs: list, limit: int) -> str | None:
    """What a tokenization depends on: the fast tokenizer's whole state (vocabulary, merges, normalizer,
    truncation; ``backend_tokenizer.to_str()``), its chat template, the length limit and the texts; None for
    a tokenizer without a serialisable backend (never cached)."""
    import orjson

    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return None
    h = hashlib.sha256(backend.to_str().encode())
    h.update(orjson.dumps([type(tokenizer).__name__, getattr(tokenizer, "chat_template", None), limit]))
    h.update(orjson.dumps(pairs))
    return h.hexdigest()


def _encoded(tokenizer, pairs: list, limit: int) -> list:
    """Token ids of ``pairs`` (:func:`cheems_lib.models.reward_model.encode_pairs`, each text cut to its character
    budget before tokenizing, so a huge response costs its budget, not its size), reused from the last
    :data:`ENCODED_SETS` tokenizations of this process when tokenizer, limit and texts are the same."""
    from array import array

    key = _encoding_key(tokenizer, pairs, limit)
    if key in _ENCODED:
        _ENCODED[key] = _ENCODED.pop(key)  # most recent last
        return _ENCODED[key]
    encoded = [array("i", ids) for ids in encode_pairs(tokenizer, pairs, max_length=limit)]
    if key is not None:
        _ENCODED[key] = encoded
        while len(_ENCODED) > ENCODED_SETS:
            _ENCODED.pop(next(iter(_ENCODED)))
    return encoded


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
    :func:`make_scorer`; else :func:`model_fingerprint` of ``settings["model"]``) identifies the
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


def placement(state, device_map=None):
    """The ``device_map`` a model of a ``cheems score`` process loads with (``state``: accelerate's ``PartialState``).

    None given: straight onto the process's device (``{"": "cuda:K"}``: no full copy in host memory first, which
    8 data-parallel processes would each make), and on the CPU as ever. ``"auto"`` (or another accelerate
    strategy) spreads one model over every device, for one that a device cannot hold: one process only, since
    each process of a data-parallel launch holds a copy of its own. It changes where layers run, not what they
    compute, so it is not a setting of the score file (a run may resume under another one).
    """
    if device_map is None:
        return device_map_for(state.device)
    if state.num_processes > 1:
        raise ModelError(f"--device-map {device_map} spreads one model over every device, but this launch runs "
                         f"{state.num_processes} processes that each load their own copy (fix: run one process "
                         "for --device-map, or leave it out to put one copy on each process's device)")
    return device_map


def make_scorer(model: str, state, *, judge: bool = False, dtype: str | None = None, batch_size: int = 16,
                max_length: int | None = None, seed: int = 0, trust_head: bool = False, device_map=None,
                trust_remote_code: bool = False, reward_head: str = "auto", reward_token: int = 0,
                max_tokens_per_batch: int | None = None) -> Scorer:
    """Load what scores ``model``: a baseline name (:data:`cheems_lib.baselines.NAMES`), a generative
    judge (``judge=True``) or a reward model, placed by :func:`placement` (``device_map``).

    ``trust_remote_code`` runs a checkpoint's own code; ``reward_head`` and ``reward_token`` say how a reward
    model is read (:mod:`cheems_lib.models.reward_heads`); ``max_tokens_per_batch`` bounds a batch's padded
    tokens (:func:`score_records`; a judge outside the tiny family too).
    Each batch's scores go to the sink as soon as they exist, so an interrupt loses at most one batch.
    The scorer's ``fingerprint`` attribute is :func:`model_fingerprint` of what it loaded.
    """
    import sys

    progress = sys.stderr.isatty() and state.is_main_process
    if model in NAMES:
        scorer = _baseline_scorer(model, seed)
        scorer.fingerprint = model_fingerprint(model)
        return scorer
    where = placement(state, device_map)
    if judge:
        return _judge_scorer(model, state, dtype=dtype, batch_size=batch_size, max_length=max_length, progress=progress,
                             device_map=where, trust_remote_code=trust_remote_code,
                             max_tokens_per_batch=max_tokens_per_batch)

    rm, tok = load(model, dtype=dtype, require_trained_head=not trust_head, device_map=where,
                   trust_remote_code=trust_remote_code, head=reward_head, reward_token=reward_token)

    def reward(records, done, sink):
        return score_records(rm, tok, records, batch_size=batch_size, max_length=max_length,
                             progress=progress, skip=done, on_batch=sink, max_tokens_per_batch=max_tokens_per_batch)[1]
    reward.fingerprint = model_fingerprint(model, rm.config)
    return reward


def _baseline_scorer(name: str, seed: int) -> Scorer:
    def baseline(records, done, sink):
        scores = {k: v for k, v in named_scores(name, records, seed=seed).items() if k not in done}
        sink(scores)
        return {"scored": len(scores)}
    return baseline


def _judge_scorer(model: str, state, *, dtype, batch_size: int, max_length: int | None, progress: bool,
                  device_map=None, trust_remote_code: bool = False, max_tokens_per_batch: int | None = None) -> Scorer:
    lm, tok = load_judge(model, dtype=dtype, device_map=device_map, trust_remote_code=trust_remote_code)
    if getattr(lm.config, "cheems_tiny_size", None) is None:  # a real judge: batches bounded by tokens
        max_tokens_per_batch = max_tokens_per_batch or MAX_TOKENS_PER_BATCH

    def judge(records, done, sink):
        verdicts, scored = [], 0
        chunks = range(0, len(records), JUDGE_CHUNK)
        if progress:
            from tqdm.auto import tqdm
            chunks = tqdm(chunks, desc="judging", unit="chunk")
        for start in chunks:  # whole records per chunk: a response's score needs all of its pairs
            part = judge_records(lm, tok, records[start:start + JUDGE_CHUNK], batch_size=batch_size,
                                 max_length=max_length, max_tokens_per_batch=max_tokens_per_batch)
            scores = judge_scores(part)
            sink(scores)
            verdicts += part
            scored += len(scores)
        return {"scored": scored, "position_consistency": position_consistency(verdicts), "pairs_judged": len(verdicts)}
    judge.fingerprint = model_fingerprint(model, lm.config)
    return judge
