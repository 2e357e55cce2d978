"""Discriminative scoring: one reward per (prompt, response), batched by length (paper §6.1).

Responses are sorted by token length and batched in that order, right-padded with an
attention mask. With causal attention and right padding a real token never attends to a
pad and keeps its position, so a score does not depend on the batch size or on its batch
neighbours (the tests check batch sizes 1, 3 and 16 agree to 1e-5 in float32), the
RewardBench problem of accuracy changing with batch size.

:func:`score_to_file` is ``cheems score``: a scorer from :func:`make_scorer` (a baseline, a
generative judge or a reward model) writes a resumable score file (:class:`ScoreOutput`),
each process of a data-parallel launch scoring its shard.
"""
from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Callable, Iterable, Sequence

from .records import DataError, Record

__all__ = ["score_records", "ScoreOutput", "score_to_file", "make_scorer"]

JUDGE_CHUNK = 16  # records judged between two writes of a judge run

# score(records, done, sink) -> report: scores what is not in ``done``, handing each batch to ``sink``
Scorer = Callable[[Sequence[Record], set, Callable[[dict], None]], dict]


def score_records(model, tokenizer, records: Sequence[Record], *, batch_size: int = 16, max_length: int | None = None,
                  progress: bool = False, skip: set | None = None,
                  on_batch: Callable[[dict], None] | None = None) -> tuple[dict[tuple[str, str], float], dict]:
    """Score every response of ``records``; returns ``(scores, report)``.

    ``max_length`` defaults to the model's maximum positions; longer sequences are cut at
    the end and counted in ``report["truncated"]``. Keys in ``skip`` (already scored, for
    resuming) are not scored again and are counted in ``report["skipped"]``. ``on_batch``
    receives each batch's ``{key: score}`` as soon as it is computed (to stream to disk).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if max_length is not None and max_length < 1:
        raise ValueError(f"max_length must be >= 1, got {max_length}")
    from .batching import forward_in_batches
    from .reward_model import check_pair, encode_pairs

    check_pair(model, tokenizer)
    limit = max_length or getattr(model.config, "max_position_embeddings", None) or 10**9
    skip = skip or set()
    todo = [(rec, r) for rec in records for r in rec.responses if (rec.id, r.id) not in skip]
    skipped = sum(len(rec.responses) for rec in records) - len(todo)
    encoded = encode_pairs(tokenizer, [(rec.prompt, r.content, rec.sys_prompt) for rec, r in todo])
    truncated = sum(len(ids) > limit for ids in encoded)
    items = [((rec.id, r.id), ids[:limit]) for (rec, r), ids in zip(todo, encoded)]
    items.sort(key=lambda kv: len(kv[1]))
    scores: dict[tuple[str, str], float] = {}
    rewards = forward_in_batches(model, [t for _, t in items], tokenizer.pad_token_id, batch_size,
                                 lambda logits, mask: logits.squeeze(-1).float().cpu().tolist(),
                                 progress=progress, desc="scoring")
    for start, out in rewards:
        batch = {key: float(s) for (key, _), s in zip(items[start:start + batch_size], out)}
        scores.update(batch)
        if on_batch is not None:
            on_batch(batch)
    return scores, {"scored": len(items), "truncated": truncated, "skipped": skipped}


class ScoreOutput:
    """The score file of one ``cheems score`` run: streamed, resumable, single-writer, one model.

    While scoring, whole lines are appended (and flushed) to ``OUT.partial`` as batches
    finish, one ``OUT.partial.K`` per process under data parallelism. :meth:`finish`
    writes ``OUT`` atomically in record order and removes the partial files, so ``OUT``
    is always absent, the previous complete file, or the new complete file. A rerun reads
    ``OUT`` and the partial files (dropping a torn last line) and scores only the rest.
    ``OUT.cheems.json`` records what produced the scores (model, judge, dtype, maximum
    length, seed); a rerun with anything else is refused, and so is an existing ``OUT``
    without it, which cheems did not write.
    """

    def __init__(self, path: str | Path, settings: dict, *, inputs: Iterable[str | Path] = (),
                 rank: int = 0, processes: int = 1):
        self.path = Path(path)
        self.settings = settings
        self.rank, self.processes = rank, processes
        self.partial = self.path.with_name(self.path.name + ".partial")
        self.sidecar = self.path.with_name(self.path.name + ".cheems.json")
        self.mine = self.partial if processes == 1 else self.partial.with_name(f"{self.partial.name}.{rank}")
        if self.path.exists() and not self.path.is_file():
            raise DataError(self.path, None, "is not a regular file; a score output is resumed from OUT.partial beside it",
                            "pass a file path (-o scores.jsonl)")
        for p in inputs:
            if self.path.exists() and Path(p).exists() and os.path.samefile(p, self.path):
                raise DataError(self.path, None, "the score output is also a --data input",
                                "write the scores to another file (-o)")

    def _parts(self) -> list[Path]:
        return [p for p in [self.path, self.partial, *sorted(self.partial.parent.glob(self.partial.name + ".*"))]
                if p.is_file()]

    def check(self) -> None:
        """Refuse an output that cheems did not write, or that holds another model's scores."""
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
            text = ", ".join(f"{k}: {a!r} in the file, {b!r} now" for k, (a, b) in differ.items())
            raise DataError(self.path, None, f"holds scores from another setup ({text})",
                            "choose another output path (-o), or delete the file to rescore")

    def start(self) -> None:
        """Record the settings (main process, after :meth:`check`)."""
        from .outputs import atomic_open

        with atomic_open(self.sidecar, "w", encoding="utf-8") as fh:
            json.dump(self.settings, fh, indent=2, ensure_ascii=False)

    def done(self) -> set[tuple[str, str]]:
        """Keys already scored, in OUT and every partial file; a torn last line is dropped first."""
        from .score_file import read_scores

        keys: set[tuple[str, str]] = set()
        for p in self._parts():
            if p != self.path and (p == self.mine or self.processes == 1 or self.rank == 0):
                _drop_torn_tail(p)
            try:
                keys |= set(read_scores(p))
            except DataError as e:  # not the user's data: skipping rows is no fix, starting over is
                raise DataError(p, None, f"line {e.line}: {e.problem}; this file cannot be resumed",
                                f"delete {p.name} (and {self.sidecar.name}) to score from scratch") from None
        return keys

    def append(self, scores: dict[tuple[str, str], float]) -> None:
        """Append whole lines to this process's partial file and flush them."""
        from .outputs import interrupt_point
        from .score_file import write_scores

        write_scores(((p, r, s) for (p, r), s in scores.items()), self.mine, append=True)
        interrupt_point("score.batch")

    def finish(self, records: Sequence[Record]) -> int:
        """Merge OUT and the partial files into OUT, atomically, in record order; returns the lines."""
        from .outputs import atomic_open
        from .score_file import read_scores, score_lines

        parts = self._parts()
        merged: dict[tuple[str, str], float] = {}
        for p in parts:
            merged.update(read_scores(p))
        order = [(rec.id, r.id) for rec in records for r in rec.responses if (rec.id, r.id) in merged]
        known = set(order)
        order += [k for k in merged if k not in known]  # earlier scores of other data stay
        with atomic_open(self.path, "wb") as fh:
            fh.write(score_lines(((p, r, merged[(p, r)]) for p, r in order), self.path))
        for p in parts:
            if p != self.path:
                p.unlink()
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
    the output is checked and before anything is written. Each process scores its shard of the
    records not yet scored; the main process merges the parts and returns
    ``{"processes", "lines", **scorer report, "skipped"}`` (the others return ``None``).
    """
    import torch
    from accelerate import PartialState

    from .outputs import OutputLock

    state = PartialState(cpu=not torch.cuda.is_available())
    out = ScoreOutput(path, settings, inputs=inputs, rank=state.process_index, processes=state.num_processes)
    with OutputLock(path) if state.is_main_process else contextlib.nullcontext():
        if state.is_main_process:
            out.check()  # before loading a model that may take minutes
        scorer = make(state)  # a model that cannot load stops here, before anything is written
        if state.is_main_process:
            out.start()
        state.wait_for_everyone()
        done = out.done()
        todo = [r for r in records if not all((r.id, x.id) in done for x in r.responses)]
        report = scorer(todo[state.process_index::state.num_processes], done, out.append)
        report["skipped"] = sum((r.id, x.id) in done for r in records for x in r.responses)  # already on disk
        state.wait_for_everyone()
        if state.is_main_process:
            return {"processes": state.num_processes, "lines": out.finish(records), **report}
    return None


def make_scorer(model: str, state, *, judge: bool = False, dtype: str | None = None, batch_size: int = 16,
                max_length: int | None = None, seed: int = 0, trust_head: bool = False) -> Scorer:
    """Load what scores ``model``: a baseline name (:data:`cheems_lib.baselines.NAMES`), a generative
    judge (``judge=True``) or a reward model, on ``state.device``.

    Each batch's scores go to the sink as soon as they exist, so an interrupt loses at most one batch.
    """
    import sys

    from .baselines import NAMES

    progress = sys.stderr.isatty() and state.is_main_process
    if model in NAMES:
        return _baseline_scorer(model, seed)
    if judge:
        return _judge_scorer(model, state, dtype=dtype, batch_size=batch_size, max_length=max_length, progress=progress)
    from .reward_model import load

    rm, tok = load(model, dtype=dtype, require_trained_head=not trust_head)
    rm.to(state.device)

    def reward(records, done, sink):
        return score_records(rm, tok, records, batch_size=batch_size, max_length=max_length,
                             progress=progress, skip=done, on_batch=sink)[1]
    return reward


def _baseline_scorer(name: str, seed: int) -> Scorer:
    from .baselines import named_scores

    def baseline(records, done, sink):
        scores = {k: v for k, v in named_scores(name, records, seed=seed).items() if k not in done}
        sink(scores)
        return {"scored": len(scores)}
    return baseline


def _judge_scorer(model: str, state, *, dtype, batch_size: int, max_length: int | None, progress: bool) -> Scorer:
    from .judging import judge_records, judge_scores, load_judge, position_consistency

    lm, tok = load_judge(model, dtype=dtype)
    lm.to(state.device)

    def judge(records, done, sink):
        verdicts, scored = [], 0
        chunks = range(0, len(records), JUDGE_CHUNK)
        if progress:
            from tqdm.auto import tqdm
            chunks = tqdm(chunks, desc="judging", unit="chunk")
        for start in chunks:  # whole records per chunk: a response's score needs all of its pairs
            part = judge_records(lm, tok, records[start:start + JUDGE_CHUNK], batch_size=batch_size,
                                 max_length=max_length)
            scores = judge_scores(part)
            sink(scores)
            verdicts += part
            scored += len(scores)
        return {"scored": scored, "position_consistency": position_consistency(verdicts), "pairs_judged": len(verdicts)}
    return judge
