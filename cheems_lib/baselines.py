"""Baseline scorers that every leaderboard shows beside real reward models.

RewardBench users found that "pick the longer response" can beat a benchmark; a
benchmark is only informative if such baselines score near chance. Each baseline returns
a score table ``{(prompt_id, response_id): score}`` ready for :mod:`cheems_lib.metrics`.

- :func:`random_scores` -- uniform noise, seeded;
- :func:`length_scores` -- longest (or shortest) response wins;
- :func:`named_scores` -- one of :data:`NAMES` (``baseline:random``, ``baseline:longest``,
  ``baseline:shortest``), the names the CLI (``cheems score --model``) and every table use;
- :class:`NgramProbe` -- ridge regression on hashed character n-grams: a cheap check of
  how much of the hidden quality is learnable from surface text.
"""
from __future__ import annotations

import zlib
from typing import Iterable, Sequence

import numpy as np

from .records import Record

__all__ = ["NAMES", "named_scores", "random_scores", "length_scores", "NgramProbe"]

NAMES = ("baseline:random", "baseline:longest", "baseline:shortest")
"""The baselines by name: one spelling for ``cheems score --model`` and every leaderboard."""


def random_scores(records: Iterable[Record], *, seed: int | np.random.Generator = 0) -> dict[tuple[str, str], float]:
    """Independent uniform scores: the chance baseline."""
    rng = np.random.default_rng(seed)
    return {(r.id, x.id): float(rng.random()) for r in records for x in r.responses}


def length_scores(records: Iterable[Record], *, prefer: str = "longer") -> dict[tuple[str, str], float]:
    """Score = length in characters (``prefer="longer"``) or its negative (``"shorter"``)."""
    if prefer not in ("longer", "shorter"):
        raise ValueError("prefer must be 'longer' or 'shorter'")
    sign = 1.0 if prefer == "longer" else -1.0
    return {(r.id, x.id): sign * len(x.content) for r in records for x in r.responses}


def named_scores(name: str, records: Sequence[Record], *, seed: int = 0) -> dict[tuple[str, str], float]:
    """The scores of the baseline ``name`` (one of :data:`NAMES`); ``seed`` only matters for random."""
    if name not in NAMES:
        raise ValueError(f"{name!r} is not a baseline; use one of {', '.join(NAMES)}")
    kind = name.split(":", 1)[1]
    if kind == "random":
        return random_scores(records, seed=seed)
    return length_scores(records, prefer="longer" if kind == "longest" else "shorter")


class NgramProbe:
    """Ridge regression of a target on hashed character 1-3-grams of the response.

    ``fit(records, targets)`` with ``targets[(prompt_id, response_id)]`` (e.g. the hidden
    utility of the simulated world: clean labels), then ``score(records)``. Features are
    L2-normalised counts in ``n_features`` buckets (crc32 hash, so runs are reproducible).
    """

    def __init__(self, *, n_features: int = 4096, ngrams: Sequence[int] = (1, 2, 3), alpha: float = 1.0):
        self.n_features, self.ngrams, self.alpha = n_features, tuple(ngrams), alpha
        self.weights: np.ndarray | None = None

    def _features(self, texts: list[str]) -> np.ndarray:
        x = np.zeros((len(texts), self.n_features), dtype=np.float32)
        for i, t in enumerate(texts):
            for n in self.ngrams:
                for j in range(len(t) - n + 1):
                    x[i, zlib.crc32(t[j:j + n].encode("utf-8")) % self.n_features] += 1.0
        norm = np.linalg.norm(x, axis=1, keepdims=True)
        return np.hstack([x / np.maximum(norm, 1e-9), np.ones((len(texts), 1), np.float32)])

    def fit(self, records: Iterable[Record], targets: dict[tuple[str, str], float]) -> "NgramProbe":
        pairs = [(r.id, x) for r in records for x in r.responses if (r.id, x.id) in targets]
        if not pairs:
            raise ValueError("no response of these records has a target")
        x = self._features([resp.content for _, resp in pairs]).astype(np.float64)
        y = np.array([targets[(pid, resp.id)] for pid, resp in pairs])
        gram = x.T @ x + self.alpha * np.eye(x.shape[1])
        self.weights = np.linalg.solve(gram, x.T @ (y - y.mean()))
        return self

    def score(self, records: Iterable[Record]) -> dict[tuple[str, str], float]:
        if self.weights is None:
            raise RuntimeError("call fit() first")
        records = list(records)
        keys = [(r.id, x.id) for r in records for x in r.responses]
        s = self._features([x.content for r in records for x in r.responses]) @ self.weights
        return dict(zip(keys, map(float, s)))
