"""Baseline scorers that every leaderboard shows beside real reward models.

RewardBench users found that "pick the longer response" can beat a benchmark; a
benchmark is only informative if such baselines score near chance. Each baseline returns
a score table ``{(prompt_id, response_id): score}`` ready for :mod:`cheems_lib.metrics`.

- :func:`random_scores` -- uniform noise, seeded;
- :func:`length_scores` -- longest (or shortest) response wins;
- :func:`named_scores` -- one of :data:`NAMES` (``baseline:random``, ``baseline:longest``,
  ``baseline:shortest``), the names the CLI (``cheems score --model``) and every table use;
- :func:`chance_level` and :func:`chance_by_size` -- what uniformly random scores earn, exactly;
- :func:`null_controls` -- the null rows of every accuracy table: pick-longest, pick-shortest,
  random (one seeded draw) and chance (the exact expectation), per category;
- :class:`NgramProbe` -- ridge regression on hashed character n-grams: a cheap check of
  how much of the hidden quality is learnable from surface text.

The null controls are shown beside reward models, never ranked with them: they say what length
alone, or no information at all, earns on these rankings.
"""
from __future__ import annotations

import math
import zlib
from collections import Counter
from fractions import Fraction
from typing import Iterable, Mapping, Sequence

import numpy as np

from .metrics import evaluate_subset
from .records import Record, strict_pairs

__all__ = ["NAMES", "CONTROLS", "CHANCE", "named_scores", "random_scores", "length_scores", "chance_level",
           "rank_pattern", "chance_by_size", "chance_metrics", "null_controls", "NgramProbe"]

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


CHANCE = "chance (exact)"
"""The row of the exact expectation under uniformly random scores (:func:`chance_level`)."""
CONTROLS = {"baseline:longest": "pick-longest", "baseline:shortest": "pick-shortest", "baseline:random": "random",
            CHANCE: "chance"}
"""The null controls of every accuracy table, by row name, with the word tables use for them."""


def rank_pattern(rank: Mapping[str, int]) -> tuple[int, ...]:
    """The sizes of a ranking's tie groups, best first: ``{a: 0, b: 1, c: 1}`` -> ``(1, 2)``."""
    sizes = Counter(rank.values())
    return tuple(sizes[r] for r in sorted(sizes))


def chance_level(rank: Mapping[str, int]) -> tuple[Fraction, Fraction] | None:
    """Expected (accuracy, exact match) of one ranking under uniformly random scores, exactly.

    Independent continuous scores tie with probability 0, so they put the ``k`` ranked responses
    in a uniformly random strict order (each of the ``k!`` orders equally likely). The ranking's
    responses fall into tie groups of sizes ``n_1 .. n_m`` (equal ranks: never compared, spec §3).

    - Accuracy: each comparison ``i`` above ``j`` is right in exactly half of the orders (swap
      ``i`` and ``j``), so its expectation is 1/2 for every ranking; a category's comparisons are
      fixed, so its pooled accuracy has expectation 1/2 too.
    - Exact match: every comparison is right exactly when the order lists the groups best first,
      in any order inside each group: ``n_1! ... n_m!`` of the ``k!`` orders, so the chance is
      ``prod(n_g!) / k!`` (``1/k!`` for a strict ranking of ``k``; 1/2 for one pair).

    None when the ranking has no comparison (one tie group): exact match leaves such prompts out.
    ``tests/test_baselines.py`` checks both by enumerating every order for small ``k``.

    >>> chance_level({"a": 0, "b": 1, "c": 1})
    (Fraction(1, 2), Fraction(1, 3))
    """
    pattern = rank_pattern(rank)
    if len(pattern) < 2:
        return None
    return Fraction(1, 2), Fraction(math.prod(math.factorial(n) for n in pattern), math.factorial(sum(pattern)))


def chance_by_size(subsets: Mapping[str, Sequence[Record]]):
    """The chance level per ranking size: one row per subset and number ``k`` of ranked responses, with its
    prompts, how many tie patterns they show, the exact chance accuracy (1/2), the exact-match chance of a
    strict ranking of ``k`` (``1/k!``, as a fraction) and the mean exact-match chance of these prompts with
    their ties (:func:`chance_level`). Prompts without a comparison are left out, as exact match leaves them out."""
    import pandas as pd

    rows = []
    for subset, records in subsets.items():
        by_size: dict[int, list] = {}
        for rec in records:
            level = chance_level(rec.rank or {})
            if level is not None:
                by_size.setdefault(len(rec.rank), []).append((rank_pattern(rec.rank), level))
        for k, found in sorted(by_size.items()):
            strict = Fraction(1, math.factorial(k))
            rows.append({"subset": subset, "ranked responses": k, "prompts": len(found),
                         "tie patterns": len({pattern for pattern, _ in found}),
                         "chance accuracy": float(found[0][1][0]), "chance exact match, strict ranking": f"1/{strict.denominator}",
                         "chance exact match, these rankings": float(sum(em for _, (_, em) in found) / len(found))})
    return pd.DataFrame(rows)


def chance_metrics(records: Sequence[Record]) -> dict:
    """The exact chance of one subset, shaped like :func:`cheems_lib.metrics.evaluate_subset`'s numbers:
    ``{"accuracy", "exact_match", "by_category": {category: {"accuracy", "exact_match", "prompts"}}}``,
    per category the mean of :func:`chance_level` over its prompts with a comparison, the subset's the
    unweighted mean over categories (as the benchmark macro-averages)."""
    levels: dict[str, list] = {}
    for rec in records:
        level = chance_level(rec.rank or {})
        if level is not None:
            levels.setdefault(rec.top_category, []).append(level)
    by_category = {cat: {"accuracy": 0.5, "exact_match": float(sum(em for _, em in lv) / len(lv)), "prompts": len(lv)}
                   for cat, lv in sorted(levels.items())}
    mean = lambda key: float(np.mean([v[key] for v in by_category.values()])) if by_category else float("nan")  # noqa: E731
    return {"accuracy": mean("accuracy"), "exact_match": mean("exact_match"), "by_category": by_category}


def null_controls(subsets: Mapping[str, Sequence[Record]], *, seed: int = 0):
    """The null rows of an accuracy table, per subset and top-level category: one row per control of
    :data:`CONTROLS` (pick-longest, pick-shortest, one random draw with ``seed`` over all the subsets'
    records, as the leaderboard's ``baseline:random``, and the exact chance, :func:`chance_metrics`), with
    its accuracy, exact match and prompts; category ``""`` is the subset's macro mean. A length tie counts
    wrong, as any score tie does."""
    import pandas as pd

    everything = [r for recs in subsets.values() for r in recs]
    scores = {name: named_scores(name, everything, seed=seed) for name in CONTROLS if name != CHANCE}
    rows = []
    for subset, records in subsets.items():
        results = {name: evaluate_subset(records, sc, n_boot=0) for name, sc in scores.items()}
        results[CHANCE] = chance_metrics(records)
        for name, res in results.items():
            res = res if isinstance(res, dict) else {"accuracy": res.accuracy, "exact_match": res.exact_match,
                                                     "by_category": res.by_category}
            rows.append({"control": name, "subset": subset, "category": "", "accuracy": res["accuracy"],
                         "exact_match": res["exact_match"], "prompts": sum(v["prompts"] for v in res["by_category"].values())})
            rows += [{"control": name, "subset": subset, "category": cat, "accuracy": v["accuracy"],
                      "exact_match": v["exact_match"], "prompts": v["prompts"]} for cat, v in res["by_category"].items()]
    return pd.DataFrame(rows)


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
        column: dict[str, int] = {}  # texts share most of their n-grams: each distinct one is hashed once
        for i, t in enumerate(texts):
            for n in self.ngrams:  # one size at a time: a long text's n-grams are never all held at once
                grams = [t[j:j + n] for j in range(len(t) - n + 1)]
                for g in set(grams).difference(column):
                    column[g] = zlib.crc32(g.encode("utf-8")) % self.n_features
                x[i] += np.bincount([column[g] for g in grams], minlength=self.n_features)  # whole counts: exact
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
