"""Score files (spec §4): one ``{"prompt_id", "response_id", "score"}`` JSON line per response.

What ``cheems score`` writes and ``cheems evaluate`` reads. Kept apart from :mod:`records`
(the prompt records, spec §1) because a score file is its own format with its own checks:
finite scores, one line per response, and every score naming a response of the data files.
Errors are :class:`~cheems_lib.input_files.DataError`: one line naming the file, the line and the fix.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Iterable

import orjson

from .outputs import atomic_open
from .input_files import DataError, json_lines, show
from .records import Record

__all__ = ["ScoreTable", "read_scores", "check_scores_known", "score_lines", "write_scores"]


class ScoreTable(dict):
    """``{(prompt_id, response_id): score}`` remembering the file and line of each score."""

    def __init__(self, path: Path):
        super().__init__()
        self.path, self.lines = path, {}


def read_scores(path: str | Path, *, skipped: list | None = None) -> ScoreTable:
    """Read a score file (spec §4) into ``{(prompt_id, response_id): score}``.

    Raises on a missing field, a non-finite score or a duplicate (prompt, response); with
    ``skipped`` (a list) such lines are appended there instead, and the first score of a
    duplicated response is kept.
    """
    path = Path(path)
    out = ScoreTable(path)
    for n, obj in json_lines(path, skipped):
        try:
            key, score = _score_line(obj, path, n, out)
        except DataError as e:
            if skipped is None:
                raise
            skipped.append(e)
            continue
        out[key] = float(score)
        out.lines[key] = n
    return out


def _score_line(obj, path, n: int, seen: ScoreTable) -> tuple[tuple[str, str], float]:
    try:
        key, score = (str(obj["prompt_id"]), str(obj["response_id"])), obj["score"]
    except (KeyError, TypeError):
        raise DataError(path, n, "expected {\"prompt_id\", \"response_id\", \"score\"}") from None
    if not isinstance(score, (int, float)) or isinstance(score, bool) or not math.isfinite(score):
        raise DataError(path, n, f"score {show(score)} is not a finite number", "rescore this response")
    if key in seen:
        raise DataError(path, n, f"duplicate score for prompt {show(key[0])} response {show(key[1])}",
                        f"keep one line per response (first at line {seen.lines[key]})")
    return key, score


def check_scores_known(scores: ScoreTable, records: Iterable[Record]) -> None:
    """Raise on the first score whose (prompt, response) is in none of ``records``."""
    known = {(rec.id, r.id) for rec in records for r in rec.responses}
    for key in scores:
        if key not in known:
            raise DataError(scores.path, scores.lines.get(key), f"score for unknown prompt/response {show(key[0])}/{show(key[1])}",
                            "check that the scores were computed on these data files")


def score_lines(scores: Iterable[tuple[str, str, float]], path: str | Path | None = None) -> bytes:
    """Spec §4 lines of ``(prompt_id, response_id, score)`` triples; refuses a non-finite score."""
    out = []
    for pid, rid, s in scores:
        if not math.isfinite(s):
            raise DataError(path, None, f"refusing to write non-finite score for {pid}/{rid}")
        out.append(orjson.dumps({"prompt_id": pid, "response_id": rid, "score": float(s)}) + b"\n")
    return b"".join(out)


def write_scores(scores: Iterable[tuple[str, str, float]], path: str | Path, *, append: bool = False) -> int:
    """Write ``(prompt_id, response_id, score)`` triples as a spec §4 score file.

    A new file appears atomically; ``append=True`` adds whole lines to an existing file
    in one write, flushed (:class:`cheems_lib.models.score_output.ScoreOutput` streams its partial files the same
    way, through :func:`score_lines`).
    """
    scores = list(scores)
    data = score_lines(scores, path)
    if append:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with open(path, "ab") as fh:
            fh.write(data)
            fh.flush()  # a killed process keeps what was flushed; no fsync per batch (it would cost more than a batch)
    else:
        with atomic_open(path, "wb") as fh:
            fh.write(data)
    return len(scores)
