"""Simulated annotators: human triple-wise rounds (§3.2) and GPT-4o all-pairs (§4.2).

Both perceive a response's hidden utility with noise and compare two responses through
``d = perceived(a) - perceived(b) + length_bias(len(a) - len(b)) [+ position bias]``:

- **Human** (§3.2, Fig. 15 a-b): five rounds of triple-wise comparisons of adjacent
  responses (round ``i`` shows responses ``i, i+1, i+2`` modulo N, in random order); one
  annotator per round perceives the three responses once, so a round is internally
  consistent (a weak order: perceived values sorted and split into tie groups where the
  gap exceeds a margin) and conflicts come from disagreement between rounds. No position bias. Length: prefers the longer response at moderate differences and
  the shorter one at large differences.
- **Human, complete ranking** (appendix D.2), used for the preference set's golden subset:
  one perception, every pair compared, ties allowed.
- **GPT** (§4.2, Fig. 15 c-d): every one of the C(N, 2) pairs in random order, each an
  independent call, no ties, noisier, favours the response shown second and the longer one.

Annotations are ``(i, j, p)`` with ``i`` shown first, ``p`` in ``"1"``/``"2"``/``"0"``
(:data:`cheems_lib.records.FIRST`/``SECOND``/``TIE``).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

from ..records import FIRST, SECOND, TIE

__all__ = ["HumanAnnotator", "GPTAnnotator", "triplewise_rounds", "annotate_rounds", "annotate_complete",
           "annotate_all_pairs", "length_preference", "position_share", "length_bias_curve", "decisions_per_prompt"]


@dataclass(frozen=True)
class HumanAnnotator:
    """A careful human annotator."""

    shared_noise: float = 0.3
    """Standard deviation of how people perceive a response, drawn once per response and
    shared by every round (annotators follow one guideline and review each other, D.1)."""
    noise: float = 0.0
    """Standard deviation of one round's own perception (fitted to Table 5 with the tie margins
    of :class:`cheems_lib.world.simulation.SubsetSpec`: the best fit is no noise at all, as conflicts
    already come from how a round's ties chain: ``a = b = c`` in one round, ``a > c`` in another)."""
    tie_margin: float = 0.5
    """Perceived differences smaller than this are marked as ties."""
    length_bias: float = 0.4
    """Peak utility bonus of the longer response at a moderate length difference."""
    length_peak: float = 80.0
    """Length difference (characters, before length scaling) where the bonus peaks; beyond
    about 1.7x this the shorter response is favoured (Fig. 15a)."""


@dataclass(frozen=True)
class GPTAnnotator:
    """An LLM judge shown one pair at a time."""

    noise: float = 0.78
    """Standard deviation of the perceived utility difference per call (fitted to Table 5)."""
    position_bias: float = 0.35
    """Utility bonus of the response shown second (Fig. 15d)."""
    length_bias: float = 0.75
    """Utility bonus of the longer response, saturating (Fig. 15c's direction); its size is
    fitted to Table 1's ratio of chosen to rejected length in the GPT-annotated subset."""
    length_peak: float = 80.0
    """Length difference (characters, before length scaling) at which the bonus saturates."""


def length_preference(delta: np.ndarray, annotator: HumanAnnotator | GPTAnnotator, length_scale: float = 1.0) -> np.ndarray:
    """Utility bonus from a length difference ``delta`` in characters, ``x = delta / peak``.

    GPT (pairwise, ``delta = len(a) - len(b)``): ``b * tanh(x)``, the longer always gains.
    Human (per response, ``delta = len - median length of the prompt's responses``):
    ``b * x * (1 - x^2 / 3)`` with ``x`` clipped to ``|x| <= 2.5``: a bonus for moderately
    longer than typical (peak at ``x = 1``), a penalty beyond ``x = sqrt(3)``, and the mirror
    image below the median. Pairwise this gives Fig. 15a: the longer response wins at
    moderate differences, the shorter one at large differences.
    """
    x = np.asarray(delta, dtype=float) / (annotator.length_peak * length_scale)
    if isinstance(annotator, HumanAnnotator):
        x = np.clip(x, -2.5, 2.5)
        return annotator.length_bias * x * (1 - x * x / 3)
    return annotator.length_bias * np.tanh(x)


def triplewise_rounds(n: int) -> list[tuple[int, ...]]:
    """The adjacent triples of the five-round protocol, generalised to N responses.

    >>> triplewise_rounds(5)
    [(0, 1, 2), (1, 2, 3), (2, 3, 4), (3, 4, 0), (4, 0, 1)]
    """
    if n < 3:
        return [tuple(range(n))] if n == 2 else []
    return [tuple((i + k) % n for k in range(3)) for i in range(n)]


def _weak_order(seen: np.ndarray, tie_margin: float) -> np.ndarray:
    """Tie groups of one annotator's ranking: sort, split where the gap exceeds the margin.

    Returns a group index per response (0 = best), so the round is transitive, ties
    included (appendix D.2: annotators integrate their judgments into ``A>C>B=D>E``).
    """
    order = np.argsort(-seen, kind="stable")
    group = np.zeros(len(seen), dtype=int)
    g = 0
    for prev, cur in zip(order, order[1:]):
        if seen[prev] - seen[cur] >= tie_margin:
            g += 1
        group[cur] = g
    return group


def _length_bonus(lengths: np.ndarray, annotator: HumanAnnotator, length_scale: float) -> np.ndarray:
    """Each response's length preference relative to the prompt's median response length.

    Fixed per response, so every round sees the same bonus (a bias, not a source of
    conflicts); pairwise it still yields Fig. 15a's shape."""
    return length_preference(lengths - np.median(lengths), annotator, length_scale)


def _verdict(first_group, second_group) -> str:
    """The preference between two responses of a weak order (lower group = better)."""
    return TIE if first_group == second_group else (FIRST if first_group < second_group else SECOND)


def _pairs_from_groups(shown: list[int], group: np.ndarray) -> list[tuple[int, int, str]]:
    return [(shown[x], shown[y], _verdict(group[x], group[y])) for x, y in combinations(range(len(shown)), 2)]


def annotate_rounds(utility: np.ndarray, lengths: np.ndarray, rng: np.random.Generator, annotator: HumanAnnotator,
                    *, noise_scale: float = 1.0, length_scale: float = 1.0) -> list[tuple[int, int, str]]:
    """Human triple-wise rounds over adjacent responses (one annotator per round)."""
    # what people see in each response, shared by every round
    base = utility + _length_bonus(lengths, annotator, length_scale) + rng.normal(0.0, annotator.shared_noise, size=len(utility))
    out = []
    for triple in triplewise_rounds(len(utility)):
        shown = [triple[k] for k in rng.permutation(len(triple))]
        seen = base[shown] + rng.normal(0.0, annotator.noise * noise_scale, size=len(shown))
        out += _pairs_from_groups(shown, _weak_order(seen, annotator.tie_margin))
    return out


def annotate_complete(utility: np.ndarray, lengths: np.ndarray, rng: np.random.Generator, annotator: HumanAnnotator,
                      *, noise_scale: float = 1.0, length_scale: float = 1.0) -> list[tuple[int, int, str]]:
    """Human complete ranking (appendix D.2): one consistent weak order, every pair in random order."""
    seen = (utility + _length_bonus(lengths, annotator, length_scale)
            + rng.normal(0.0, annotator.shared_noise, size=len(utility))
            + rng.normal(0.0, annotator.noise * noise_scale, size=len(utility)))
    group = _weak_order(seen, annotator.tie_margin)
    return [(a, b, _verdict(group[a], group[b])) for a, b in _shuffled_pairs(len(utility), rng)]


def _shuffled_pairs(n: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    pairs = list(combinations(range(n), 2))
    flip = rng.random(len(pairs)) < 0.5
    order = rng.permutation(len(pairs))
    return [(pairs[k][1], pairs[k][0]) if flip[k] else pairs[k] for k in order]


def annotate_all_pairs(utility: np.ndarray, lengths: np.ndarray, rng: np.random.Generator, annotator: GPTAnnotator,
                       *, noise_scale: float = 1.0, length_scale: float = 1.0) -> list[tuple[int, int, str]]:
    """GPT-4o style: every pair once, random order, independent noisy calls, no ties."""
    pairs = _shuffled_pairs(len(utility), rng)
    if not pairs:
        return []
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    d = (utility[a] - utility[b] + length_preference(lengths[a] - lengths[b], annotator, length_scale)
         - annotator.position_bias + rng.normal(0.0, annotator.noise * noise_scale, size=len(pairs)))
    return [(int(x), int(y), FIRST if v > 0 else SECOND) for x, y, v in zip(a, b, d)]


def position_share(records) -> float:
    """Share of strict annotations won by the response shown second (Fig. 15 b, d)."""
    strict = [p for r in records for _, _, p in r.annotations if p != TIE]
    return sum(p == SECOND for p in strict) / len(strict) if strict else float("nan")


def length_bias_curve(records, bins) -> list[dict]:
    """Fig. 15 a, c: share of strict decisions won by the first-shown response A, binned by
    ``len(A) - len(B)`` in characters. Ties are left out (0.5 means no preference)."""
    deltas, first = [], []
    for r in records:
        size = {x.id: len(x.content) for x in r.responses}
        for a, b, p in r.annotations:
            if p != TIE:
                deltas.append(size[a] - size[b])
                first.append(p == FIRST)
    deltas, first = np.array(deltas), np.array(first)
    out = []
    for lo, hi in zip(bins[:-1], bins[1:]):
        m = (deltas >= lo) & (deltas < hi)
        out.append({"bin_low": float(lo), "bin_high": float(hi), "center": (lo + hi) / 2, "n": int(m.sum()),
                    "share_first": float(first[m].mean()) if m.any() else float("nan")})
    return out


def decisions_per_prompt(records, low: float = -np.inf, high: float = np.inf) -> tuple[np.ndarray, np.ndarray]:
    """Per record: strict decisions won by the first-shown response A, and strict decisions, counting
    only pairs with ``low <= len(A) - len(B) < high`` (characters).

    One entry per prompt, for a bootstrap that resamples a prompt's decisions together
    (:func:`cheems_lib.estimates.ratio_estimate`): ``first.sum() / decisions.sum()`` is the share for A
    (Fig. 15 a, c), and one minus it the share for the second-shown response (Fig. 15 b, d).
    """
    first, decisions = np.zeros(len(records)), np.zeros(len(records))
    for k, r in enumerate(records):
        size = {x.id: len(x.content) for x in r.responses}
        for a, b, p in r.annotations:
            if p != TIE and low <= size[a] - size[b] < high:
                decisions[k] += 1
                first[k] += p == FIRST
    return first, decisions
